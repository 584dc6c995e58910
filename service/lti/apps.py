from __future__ import annotations

from django.apps import AppConfig


class LtiConfig(AppConfig):
    name = "service.lti"
    label = "service_lti"

    def ready(self) -> None:
        from . import checks, framing  # noqa: F401  (register the system checks; forget origins on a save)
