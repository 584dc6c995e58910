from __future__ import annotations

from django.contrib import admin

from .models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not subscriptable at run time
    list_display = ("user", "lookup", "created", "last_used")
    search_fields = ("user__username", "lookup")
    readonly_fields = ("lookup", "digest", "created", "last_used")
    raw_id_fields = ("user",)
