from __future__ import annotations

from django.contrib import admin

from .models import CourseLink, RosterSource, RosterSync


@admin.register(CourseLink)
class CourseLinkAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    list_display = ("course", "deployment", "context_id", "created_at")
    list_filter = ("course", "deployment__registration")
    list_select_related = ("course", "deployment__registration")
    search_fields = ("context_id", "course__slug", "deployment__deployment_id")
    raw_id_fields = ("deployment",)


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
