from __future__ import annotations

from django.contrib import admin

from .models import Assignment, Course, Enrolment, Extension


@admin.register(Course)
class CourseAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    list_display = ("slug", "title")
    search_fields = ("slug", "title")


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    list_display = (
        "slug",
        "title",
        "course",
        "due_at",
        "grace_minutes",
        "late_penalty_per_day",
        "hard_close_at",
        "counted",
    )
    list_filter = ("course", "counted", "hidden_details")
    list_select_related = ("course",)
    search_fields = ("slug", "title")


@admin.register(Enrolment)
class EnrolmentAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    list_display = ("user", "course", "role")
    list_filter = ("course", "role")
    list_select_related = ("user", "course")
    search_fields = ("user__username", "user__email")
    raw_id_fields = ("user",)


@admin.register(Extension)
class ExtensionAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    list_display = ("assignment", "user", "due_at")
    list_select_related = ("assignment", "user")
    raw_id_fields = ("user",)
