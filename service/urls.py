"""Every URL of the service."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from .courses import policy, similarity
from .courses import views as staff
from .fleet.metrics import metrics
from .submissions import health
from .submissions import views as student

urlpatterns = [
    path("", student.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("a/<str:slug>/", student.assignment_page, name="assignment"),
    path("a/<str:slug>/class/", staff.class_view, name="class-view"),
    path("a/<str:slug>/class/export/<str:kind>", staff.export, name="export"),
    path("a/<str:slug>/class/report/", staff.class_report, name="class-report"),
    path("a/<str:slug>/class/roster/", staff.roster, name="roster"),
    path("a/<str:slug>/class/lms-roster/", staff.sync_roster, name="sync-roster"),
    path("a/<str:slug>/class/regrade/", staff.regrade, name="regrade"),
    path("a/<str:slug>/class/unlock/", staff.unlock_sign_in, name="unlock-sign-in"),
    path("a/<str:slug>/class/policy/", policy.policy, name="policy"),
    path("a/<str:slug>/class/extension/", policy.extension, name="extension"),
    path("a/<str:slug>/class/similarity/", similarity.similarity, name="similarity"),
    path("a/<str:slug>/class/similarity.json", similarity.similarity_json, name="similarity-json"),
    path("a/<str:slug>/class/base-code/", similarity.base_code, name="base-code"),
    path("submissions/<int:submission_id>/", student.submission_page, name="submission"),
    path("submissions/<int:submission_id>/status.json", student.submission_status, name="submission-status"),
    path("submissions/<int:submission_id>/feedback/", student.feedback, name="feedback"),
    path("submissions/<int:submission_id>/override/", staff.override, name="override"),
    path("health/", health.health, name="health"),
    path("status/", health.status, name="status"),
    path("metrics", metrics, name="metrics"),
    path("api/v1/", include("service.api.urls")),
    path("lti/", include("service.lti.urls")),
    path("admin/", admin.site.urls),
]
