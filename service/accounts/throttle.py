"""Password sign-in throttling: django-axes, with one limit per account and another per address.

axes counts failures per username and per client address (AXES_LOCKOUT_PARAMETERS), but
compares both with one AXES_FAILURE_LIMIT. A campus NAT puts a lab room behind one address,
so the address needs the higher limit: the handler below reports failures so that axes's one
comparison locks exactly when either count reaches its own limit.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username
from axes.models import AccessAttempt
from axes.utils import reset
from django.conf import settings
from django.db.models import QuerySet, Sum
from django.http import HttpRequest
from django.utils import timezone

from .client import client_address


def cool_off(request: HttpRequest | None = None) -> timedelta:
    """AXES_COOLOFF_TIME: read at each use, so that tests can shorten it."""
    return timedelta(seconds=settings.LOGIN_COOLOFF_SECONDS)


def axes_address(request: HttpRequest) -> str | None:
    """AXES_CLIENT_IP_CALLABLE: axes stores addresses in an inet column, so none is None."""
    return client_address(request) or None


def axes_username(request: HttpRequest, credentials: dict[str, Any] | None = None) -> str | None:
    """AXES_USERNAME_CALLABLE: the name tried, as axes's 255-character column can hold it.
    Django's sign-in form does not enforce its own length limit, and a longer name must be
    a failure counted like any other, not a database error."""
    source: Any = credentials if credentials else getattr(request, "POST", {})
    name = source.get("username")
    return name.replace("\x00", "")[:255] if isinstance(name, str) else None


def _recent(now: datetime) -> QuerySet[Any]:
    # axes keeps a row per (username, address, user agent), its time the row's latest failure,
    # and counts a row while that time is within the cool-off.
    rows: QuerySet[Any] = AccessAttempt.objects.filter(attempt_time__gte=now - cool_off())
    return rows


def _limits(username: str | None, address: str | None) -> list[tuple[dict[str, Any], int]]:
    return [
        ({"username": username}, settings.LOGIN_FAILURES_PER_ACCOUNT),
        ({"ip_address": address}, settings.LOGIN_FAILURES_PER_ADDRESS),
    ]


def _failures(rows: QuerySet[Any]) -> int:
    return int(rows.aggregate(total=Sum("failures_since_start"))["total"] or 0)


def _request_limits(request: HttpRequest, credentials: dict[str, Any] | None) -> list[tuple[dict[str, Any], int]]:
    return _limits(get_client_username(request, credentials), request.axes_ip_address)  # type: ignore[attr-defined]


class SignInThrottle(AxesDatabaseHandler):  # type: ignore[misc]  # axes is untyped
    """axes's database handler with a limit per lockout parameter."""

    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        # axes locks when this reaches AXES_FAILURE_LIMIT: report how far the count nearest to
        # its own limit is from it, on that scale.
        limit: int = settings.AXES_FAILURE_LIMIT
        rows = _recent(request.axes_attempt_time)  # type: ignore[attr-defined]
        nearest = max(_failures(rows.filter(**match)) - own for match, own in _request_limits(request, credentials))
        return limit + nearest

    def reset_user_attempts(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        """On a successful sign-in (AXES_RESET_ON_SUCCESS): forget that account's failures from
        this address only, the owner's own typos. Failures on other accounts from here still
        count against the address, and other addresses' failures on this account still count."""
        username = get_client_username(request, credentials)
        found = AccessAttempt.objects.filter(username=username, ip_address=request.axes_ip_address)  # type: ignore[attr-defined]
        count: int = found.delete()[0]
        return count


def locked_until(request: HttpRequest, credentials: dict[str, Any] | None) -> datetime:
    """When the request's account and address may both try again. A count falls as its
    oldest rows leave the cool-off window; while locked nothing new is recorded
    (AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT is off), so the time holds."""
    now = timezone.now()
    window = cool_off()
    until: datetime | None = None
    for match, limit in _request_limits(request, credentials):
        rows = _recent(now).filter(**match).order_by("attempt_time")
        left = _failures(rows)
        for at, failures in rows.values_list("attempt_time", "failures_since_start"):
            if left < limit:
                break
            left -= failures
            until = at + window if until is None else max(until, at + window)
    return until or now  # unlocked since the refusal (by staff, or the window moved on)


def locked_usernames(usernames: Iterable[str]) -> set[str]:
    """Which of these accounts are locked now (their own count; not their address's)."""
    rows = (
        _recent(timezone.now())
        .filter(username__in=list(usernames))
        .values("username")
        .annotate(total=Sum("failures_since_start"))
        .filter(total__gte=settings.LOGIN_FAILURES_PER_ACCOUNT)
    )
    return {row["username"] for row in rows}


def unlock(username: str) -> int:
    """Forget every failure recorded for ``username``; the number of rows removed."""
    return int(reset(username=username))
