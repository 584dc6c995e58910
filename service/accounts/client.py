"""The network address a request came from, as the service's own proxies saw it.

Behind a reverse proxy every request's REMOTE_ADDR is the proxy itself: limits keyed on it
would put a whole class in one bucket. Each trusted proxy appends the address it heard from to
X-Forwarded-For, so the client is the TRUSTED_PROXY_COUNT-th entry from the right. Entries to
the left of it were written by the client and are never believed.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def _valid(text: str) -> str | None:
    """``text`` as a canonical IP address, or None when it is not one."""
    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        return None


def client_address(request: HttpRequest) -> str:
    """The client's IP address, canonical; "" when not even REMOTE_ADDR is an address (a
    request that did not come over TCP)."""
    direct = _valid(request.META.get("REMOTE_ADDR", "")) or ""
    hops: int = settings.TRUSTED_PROXY_COUNT
    if hops < 1:
        return direct
    entries = request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
    if len(entries) < hops:
        # Fewer entries than proxies: the request did not come through all of them.
        return direct
    return _valid(entries[-hops]) or direct
