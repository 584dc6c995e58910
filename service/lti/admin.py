from __future__ import annotations

from django.contrib import admin

from .models import CourseLink


@admin.register(CourseLink)
class CourseLinkAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    list_display = ("course", "deployment", "context_id", "created_at")
    list_filter = ("course", "deployment__registration")
    list_select_related = ("course", "deployment__registration")
    search_fields = ("context_id", "course__slug", "deployment__deployment_id")
    raw_id_fields = ("deployment",)
