"""Every URL of the service."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import converters  # noqa: F401  # registers the path converters used below
from .courses import policy, review_requests, similarity
from .courses import views as staff
from .fleet.metrics import metrics
from .lti import staff as lti_staff
from .submissions import health, review_views
from .submissions import views as student

urlpatterns = [
    path("", student.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("a/<assignment:slug>/", student.assignment_page, name="assignment"),
    path("a/<assignment:slug>/class/", staff.class_view, name="class-view"),
    path("a/<assignment:slug>/class/export/<filename:kind>", staff.export, name="export"),
    path("a/<assignment:slug>/class/report/", staff.class_report, name="class-report"),
    path("a/<assignment:slug>/class/audit/", staff.audit, name="audit"),
    path("a/<assignment:slug>/class/roster/", staff.roster, name="roster"),
    path("a/<assignment:slug>/class/lms-roster/", staff.sync_roster, name="sync-roster"),
    path("a/<assignment:slug>/class/regrade/", staff.regrade, name="regrade"),
    path("a/<assignment:slug>/class/unlock/", staff.unlock_sign_in, name="unlock-sign-in"),
    path("a/<assignment:slug>/class/lms-resend/", lti_staff.resend, name="lms-resend"),
    path("a/<assignment:slug>/class/policy/", policy.policy, name="policy"),
    path("a/<assignment:slug>/class/extension/", policy.extension, name="extension"),
    path("a/<assignment:slug>/class/similarity/", similarity.similarity, name="similarity"),
    path("a/<assignment:slug>/class/similarity.json", similarity.similarity_json, name="similarity-json"),
    path("a/<assignment:slug>/class/base-code/", similarity.base_code, name="base-code"),
    path("a/<assignment:slug>/class/requests/", review_requests.open_requests, name="review-requests"),
    path(
        "a/<assignment:slug>/class/requests/<row:request_id>/answer/",
        review_requests.answer,
        name="review-answer",
    ),
    path("submissions/<row:submission_id>/", student.submission_page, name="submission"),
    path("submissions/<row:submission_id>/status.json", student.submission_status, name="submission-status"),
    path("submissions/<row:submission_id>/feedback/", student.feedback, name="feedback"),
    path("submissions/<row:submission_id>/override/", staff.override, name="override"),
    path("submissions/<row:submission_id>/review/", review_views.ask_review, name="review-ask"),
    path(
        "submissions/<row:submission_id>/review/<row:request_id>/withdraw/",
        review_views.withdraw_review,
        name="review-withdraw",
    ),
    path("health/", health.health, name="health"),
    path("status/", health.status, name="status"),
    path("metrics", metrics, name="metrics"),
    path("api/v1/", include("service.api.urls")),
    path("lti/", include("service.lti.urls")),
    path("admin/", admin.site.urls),
]
