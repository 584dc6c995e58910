"""Anonymous LTI logins: a rate per client address, and a bound on the state they leave behind.

Anyone may start an OIDC login (the platform sends the browser without credentials), and each
one stores a nonce until the launch comes back. So: a few logins a minute per address (a
network's /64 for IPv6, where one host holds billions), each login's state kept minutes, not a
day, and no new login once the store holds its bound of live entries. The store is never culled
to make room: a launch in progress is never evicted by a flood; new ones wait instead.
"""

from __future__ import annotations

import ipaddress
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from ..accounts.client import client_address
from ..accounts.models import TokenBucket

BUCKET_PREFIX = "lti-login:"
WINDOW = timedelta(minutes=1)


def _network(address: str) -> str:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address[:64]
    if parsed.version == 6:
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


def seconds_until_allowed(request: object) -> int:
    """0 when this client may start a login now, else the whole seconds to wait."""
    key = BUCKET_PREFIX + _network(client_address(request))  # type: ignore[arg-type]
    wait = TokenBucket.take(key, settings.LTI_LOGINS_PER_MINUTE, WINDOW)
    return max(1, int(wait + 0.999)) if wait else 0


def _cache_table() -> str:
    return str(settings.CACHES["default"]["LOCATION"])


def live_entries() -> int:
    """Entries of the launch-state store that have not expired (pylti1p3's nonces, states, launches)."""
    table = connection.ops.quote_name(_cache_table())
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table} WHERE expires > %s", [timezone.now()])  # noqa: S608
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def store_full() -> bool:
    return live_entries() >= settings.LTI_STATE_MAX


def purge() -> tuple[int, int]:
    """Expired store entries and refilled login buckets removed: (entries, buckets)."""
    table = connection.ops.quote_name(_cache_table())
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE expires <= %s", [timezone.now()])  # noqa: S608
        entries = cursor.rowcount
    # A bucket untouched for a whole window is full again: the same as no bucket at all.
    stale = TokenBucket.objects.filter(key__startswith=BUCKET_PREFIX, updated__lt=timezone.now() - WINDOW)
    buckets, _ = stale.delete()
    return entries, buckets
