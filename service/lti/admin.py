from __future__ import annotations

from django.contrib import admin

from .models import CourseLink, RegistrationCode


@admin.register(CourseLink)
class CourseLinkAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    list_display = ("course", "deployment", "context_id", "created_at")
    list_filter = ("course", "deployment__registration")
    list_select_related = ("course", "deployment__registration")
    search_fields = ("context_id", "course__slug", "deployment__deployment_id")
    raw_id_fields = ("deployment",)


@admin.register(RegistrationCode)
class RegistrationCodeAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    """Codes are made by manage.py lti_registration_url (the code itself is shown once, there)."""

    list_display = ("created_by", "created_at", "expires_at", "used_at", "registration")
    list_select_related = ("registration",)
    readonly_fields = ("digest", "created_by", "created_at", "expires_at", "used_at", "registration")

    def has_add_permission(self, request: object) -> bool:
        return False
