from __future__ import annotations

from django.apps import AppConfig


class LtiConfig(AppConfig):
    name = "service.lti"
    label = "service_lti"
