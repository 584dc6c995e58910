from __future__ import annotations

from django.urls import path

from .. import converters  # noqa: F401  # registers the path converters used below
from . import openapi, views

urlpatterns = [
    path("openapi.json", openapi.openapi_json, name="api-openapi"),
    path("assignments/<assignment:slug>/submissions", views.submit, name="api-submit"),
    path("submissions/<row:submission_id>", views.submission, name="api-submission"),
]
