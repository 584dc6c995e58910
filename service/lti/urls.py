"""LTI 1.3: what a department registers in its LMS for the grader (see the README)."""

from __future__ import annotations

from django.urls import path

from . import deep_linking, views

urlpatterns = [
    path("login/", views.LoginView.as_view(), name="lti-login"),
    path("launch/", views.LaunchView.as_view(), name="lti-launch"),
    path("jwks/", views.jwks, name="lti-jwks"),
    path("deep-link/", deep_linking.picker, name="lti-deep-link"),
]
