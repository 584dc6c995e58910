from __future__ import annotations

from django.apps import AppConfig


class LtiConfig(AppConfig):
    name = "service.lti"
    label = "service_lti"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)
