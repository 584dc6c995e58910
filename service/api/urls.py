from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("assignments/<str:slug>/submissions", views.submit, name="api-submit"),
    path("submissions/<int:submission_id>", views.submission, name="api-submission"),
]
