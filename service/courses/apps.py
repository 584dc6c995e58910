from __future__ import annotations

from django.apps import AppConfig


class CoursesConfig(AppConfig):
    name = "service.courses"
    label = "courses"
