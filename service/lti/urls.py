"""LTI 1.3: what a department registers in its LMS for the grader (see docs/lms-admins.md)."""

from __future__ import annotations

from django.urls import path

from . import deep_linking, registering, views

urlpatterns = [
    path("login/", views.LoginView.as_view(), name="lti-login"),
    path("launch/", views.LaunchView.as_view(), name="lti-launch"),
    path("jwks/", views.jwks, name="lti-jwks"),
    path("deep-link/", deep_linking.picker, name="lti-deep-link"),
    path("register/", registering.register_without_code, name="lti-register"),
    path("register/<str:code>/", registering.register_with_code, name="lti-register-with-code"),
]
