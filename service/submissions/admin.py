from __future__ import annotations

from django.contrib import admin

from ..courses.people import labelled
from .models import AuditEntry, ScoreOverride, Submission


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    list_display = ("id", "user", "assignment", "kind", "state", "score", "received_at", "attempts")
    list_filter = ("state", "kind", "lane", "assignment")
    list_select_related = ("user", "assignment")
    search_fields = ("user__username", "sha256")
    raw_id_fields = ("user",)
    readonly_fields = ("sha256", "size", "received_at", "result_json", "job_id", "attempts")
    exclude = ("content",)  # student code is never shown as a form field


@admin.register(ScoreOverride)
class ScoreOverrideAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    list_display = ("submission", "score", "by", "at")
    raw_id_fields = ("submission", "by")
    readonly_fields = ("at",)


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    list_display = ("at", "actor_name", "action", "assignment", "student", "submission", "detail")
    list_filter = ("action",)
    list_select_related = ("actor", "assignment", "student")
    readonly_fields = ("at", "actor", "action", "assignment", "student", "submission", "detail")

    @admin.display(description="actor", ordering="actor__last_name")
    def actor_name(self, entry: AuditEntry) -> str:
        return labelled(entry.actor)
