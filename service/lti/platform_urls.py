"""Where the tool may send its access token, a signed message or students' data: the one rule.

A signed launch can still carry a URL that points elsewhere (a typo in the LMS, a platform
whose admin is not the one who registered it), and a service's answer (a ``Link`` header, a
line item's id) is not signed at all. Grade passback (ags.py), roster sync (nrps.py) and the
deep linking answer (deep_linking.py) all ask this module before anything leaves.

A URL is on the platform when its origin (scheme, host, port) is one of:

- the origin of the registration's issuer, auth (login) URL or access token URL, as entered in
  the admin or stored by dynamic registration: the same scheme, host and port (443 or 80 when
  the URL names none). Another port of the same host is another server, and refused;
- a host the operator named in ``LTI_SERVICE_HOSTS`` (``host`` or ``host:port``), for every
  registration: Canvas serves line items and memberships from each school's own domain, not
  from its issuer's. Such a host is reached over https, on 443 unless a port is named.

Plain http counts only when ``LTI_ALLOW_HTTP`` is on (by default when ``DEBUG`` is, and in the
tests, whose platforms listen on loopback): then an http registration URL's own origin, and a
named host over http (on 80 unless a port is named), are on the platform too. An https
registration is never answered over http either way. A URL with a user name or password in it
is never on the platform.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit

from django.conf import settings
from lti_tool.models import LtiRegistration

MAX_URL = 2000
DEFAULT_PORTS = {"https": 443, "http": 80}


class Origin(NamedTuple):
    scheme: str
    host: str
    port: int


class OffPlatform(ValueError):
    """Why a URL is not one the tool sends to, as a phrase that follows "the ... address"."""


def _schemes() -> tuple[str, ...]:
    return ("https", "http") if settings.LTI_ALLOW_HTTP else ("https",)


def origin(url: str) -> Origin | None:
    """The origin of an absolute http(s) URL without credentials in it, lowercased; else None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a port that is not a number, a bracket left open
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").rstrip(".")
    if scheme not in DEFAULT_PORTS or not host or parts.username is not None or parts.password is not None:
        return None
    return Origin(scheme, host, port or DEFAULT_PORTS[scheme])


def allowed_origins(registration: LtiRegistration) -> frozenset[Origin]:
    """The origins the tool may send to for ``registration`` (see the module's text)."""
    schemes = _schemes()
    own = (origin(url) for url in (registration.issuer, registration.auth_url, registration.token_url))
    # An LTI_SERVICE_HOSTS entry is ``host`` or ``host:port`` (settings.py checks its shape).
    named = (origin(f"{scheme}://{entry}/") for entry in settings.LTI_SERVICE_HOSTS for scheme in schemes)
    return frozenset(o for o in (*own, *named) if o is not None and o.scheme in schemes)


def checked(url: object, registration: LtiRegistration) -> str:
    """``url`` when the tool may send to it on behalf of ``registration``, else OffPlatform."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL or not url.isprintable() or " " in url:
        raise OffPlatform("is missing or not a usable URL")
    found = origin(url)
    if found is None:
        raise OffPlatform("is not an http(s) URL, or carries a user name or password")
    if found.scheme not in _schemes():
        raise OffPlatform(f"is not https: {url[:200]}")
    if found not in allowed_origins(registration):
        where = found.host if found.port == DEFAULT_PORTS[found.scheme] else f"{found.host}:{found.port}"
        raise OffPlatform(f"is on {where}, not on this LMS's registered host(s) nor in LTI_SERVICE_HOSTS")
    return url


def on_platform(url: object, registration: LtiRegistration) -> bool:
    try:
        checked(url, registration)
    except OffPlatform:
        return False
    return True
