from __future__ import annotations

from django.contrib import admin

from .models import CourseLink, GradebookLink, RegistrationCode, RosterSource, RosterSync, ScoreTarget


@admin.register(CourseLink)
class CourseLinkAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    list_display = ("course", "deployment", "context_id", "created_at")
    list_filter = ("course", "deployment__registration")
    list_select_related = ("course", "deployment__registration")
    search_fields = ("context_id", "course__slug", "deployment__deployment_id")
    raw_id_fields = ("deployment",)


@admin.register(GradebookLink)
class GradebookLinkAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("course", "deployment", "context_id", "lineitems_url", "updated_at")
    list_select_related = ("course", "deployment__registration")
    search_fields = ("context_id", "course__slug")
    readonly_fields = ("deployment", "context_id", "course", "lineitems_url", "scopes", "updated_at")


@admin.register(ScoreTarget)
class ScoreTargetAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Operators read where each LMS cell stands; staff resend from the class view."""

    list_display = ("user", "line_item", "wanted_version", "sent_version", "sent_at", "problem")
    list_filter = ("line_item__assignment",)
    list_select_related = ("user", "line_item__assignment", "line_item__link__course")
    search_fields = ("user__username", "problem")
    raw_id_fields = ("user", "line_item")
    readonly_fields = ("wanted", "wanted_version", "wanted_at", "sent_version", "sent_at", "refused_version")


@admin.register(RosterSource)
class RosterSourceAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    list_display = ("link", "memberships_url", "seen_at")
    list_select_related = ("link__course", "link__deployment")
    readonly_fields = ("seen_at",)


@admin.register(RosterSync)
class RosterSyncAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    list_display = ("course", "requested_at", "finished_at", "ok", "message")
    list_select_related = ("course",)
    readonly_fields = ("requested_at", "finished_at", "ok", "message")


@admin.register(RegistrationCode)
class RegistrationCodeAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    """Codes are made by grader service lti-registration-url (the code itself is shown once, there)."""

    list_display = ("created_by", "created_at", "expires_at", "used_at", "registration")
    list_select_related = ("registration",)
    readonly_fields = ("digest", "created_by", "created_at", "expires_at", "used_at", "registration")

    def has_add_permission(self, request: object) -> bool:
        return False
