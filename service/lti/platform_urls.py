"""Whether a URL a platform sent is on that platform.

A signed launch can still carry a URL that points elsewhere (a typo in the LMS, or a platform
whose admin is not the one who registered it); before the tool sends a signed message or a
token there, the URL's host must be one of the registration's own: its issuer's, its auth
(login) URL's or its token URL's.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from lti_tool.models import LtiRegistration

MAX_URL = 2000


def registration_hosts(registration: LtiRegistration) -> set[str]:
    hosts = set()
    for url in (registration.issuer, registration.auth_url, registration.token_url):
        try:
            host = urlsplit(url).hostname
        except ValueError:
            continue
        if host:
            hosts.add(host)
    return hosts


def on_platform(url: object, registration: LtiRegistration) -> bool:
    """True when ``url`` is an absolute https URL (http only for a registration whose issuer is
    itself http, a development LMS) on one of the registration's hosts."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL or not url.isprintable() or " " in url:
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError:
        return False
    allowed = ("https", "http") if registration.issuer.startswith("http://") else ("https",)
    return parts.scheme in allowed and parts.hostname in registration_hosts(registration) and not parts.username
