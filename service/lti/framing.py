"""Which pages an LMS may show in its iframe, and which LMSs.

Every LMS places a tool in an iframe by default. The pages a launch leads to (the launch and
login themselves, home, the assignment, a submission and its feedback, the deep-linking picker)
may be framed by the origins of the active platform registrations, and by no one else; every
other page keeps ``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``.

The origins are read from the database at most once a minute per process (and again at once in
the process that saves or deletes a registration): a new registration is frameable within a
minute everywhere.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.http import HttpResponseBase
from lti_tool.models import LtiRegistration

ORIGINS_SECONDS = 60.0

# A CSP source must not carry ";", "," or spaces: anything but a plain host is dropped rather
# than written into the header (issuers are free text in the admin).
_HOST = re.compile(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?")

_lock = threading.Lock()
_cached: tuple[float, tuple[str, ...]] = (0.0, ())

View = TypeVar("View", bound=Callable[..., Any])


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, lowercased; None for anything else."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname or ""
    if parts.scheme not in ("http", "https") or not _HOST.fullmatch(host):
        return None
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def platform_origins() -> tuple[str, ...]:
    """The origins of every active registration's issuer and auth (login) URL, sorted."""
    global _cached
    now = time.monotonic()
    with _lock:
        expires, origins = _cached
        if now < expires:
            return origins
    rows = LtiRegistration.objects.filter(is_active=True).values_list("issuer", "auth_url")
    found = tuple(sorted({origin for row in rows for url in row if (origin := origin_of(url))}))
    with _lock:
        _cached = (now + ORIGINS_SECONDS, found)
    return found


def forget_platform_origins() -> None:
    global _cached
    with _lock:
        _cached = (0.0, ())


@receiver(post_save, sender=LtiRegistration)
@receiver(post_delete, sender=LtiRegistration)
def _registration_changed(**kwargs: object) -> None:
    forget_platform_origins()


def allow_framing(response: HttpResponseBase, origins: Iterable[str]) -> HttpResponseBase:
    """Let ``origins`` (and only them) frame this response; with none, it stays unframeable."""
    ancestors = list(origins)
    if not ancestors:
        return response
    response.xframe_options_exempt = True  # type: ignore[attr-defined]  # read by XFrameOptionsMiddleware
    if "Content-Security-Policy" in response:  # a page that wrote its own policy (the feedback page)
        response["Content-Security-Policy"] = with_frame_ancestors(response["Content-Security-Policy"], ancestors)
    else:
        response._csp_replace = {"frame-ancestors": ancestors}  # type: ignore[attr-defined]  # read by django-csp
    return response


def with_frame_ancestors(policy: str, ancestors: list[str]) -> str:
    """``policy`` with its frame-ancestors directive replaced (or added)."""
    kept = [part.strip() for part in policy.split(";") if part.strip() and part.split()[0] != "frame-ancestors"]
    return "; ".join([*kept, "frame-ancestors " + " ".join(ancestors)])


def frameable_by_platforms(view: View) -> View:
    """A view whose pages the registered platforms may frame."""

    @functools.wraps(view)
    def framed(*args: Any, **kwargs: Any) -> HttpResponseBase:
        return allow_framing(view(*args, **kwargs), platform_origins())

    return framed  # type: ignore[return-value]
