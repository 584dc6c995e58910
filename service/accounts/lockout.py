"""The page a locked-out sign-in gets (AXES_LOCKOUT_CALLABLE): 429, Retry-After, and when to
come back in words. It names no account and is the same for every username, existing or
not: a lockout must not tell which usernames exist."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from .throttle import locked_until


def _wait_words(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = math.ceil(seconds / 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


def _clock(moment: datetime, now: datetime) -> str:
    local, today = timezone.localtime(moment), timezone.localtime(now)
    day = "" if local.date() == today.date() else f" on {local:%-d %B}"
    return f"{local:%H:%M} {local.tzname()}{day}"


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict[str, Any] | None = None
) -> HttpResponse:
    now = timezone.now()
    until = locked_until(request, credentials)
    seconds = max(1, math.ceil((until - now).total_seconds()))
    context = {"wait": _wait_words(seconds), "at": _clock(until, now)}
    response = render(request, "registration/locked_out.html", context, status=429)
    response["Retry-After"] = str(seconds)
    return response
