"""A course's members as its LMS lists them (LTI Names and Role Provisioning Services 2.0).

pylti1p3's NamesRolesProvisioningService asks for an access token (OAuth 2 client credentials,
the assertion a JWT signed with the tool's key) and reads one page of members through its
ServiceConnector. Around it, what pylti1p3 leaves to the tool:

- every URL gets the tool's token only when platform_urls says it is on the platform (the
  registration's own origins, or a host in LTI_SERVICE_HOSTS): a launch's claims are signed by
  the platform, but a page's ``Link`` header is not, and must not lead our token or the
  roster's answer anywhere else;
- every request has a deadline, follows no redirect, and reads at most LTI_ROSTER_PAGE_BYTES;
- pages are followed through ``Link: <...>; rel="next"`` (read here with its case kept:
  pylti1p3 lowercases the whole header, URL included), at most LTI_ROSTER_MAX_PAGES of them;
- each member is checked for shape before anything is kept from it.

Any failure is a RosterRefused in words for staff; nothing is half applied.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import requests
from django.conf import settings
from lti_tool.models import Key, LtiRegistration
from pylti1p3.exception import LtiException
from pylti1p3.names_roles import NamesRolesProvisioningService
from pylti1p3.service_connector import ServiceConnector

from .platform_urls import MAX_URL, OffPlatform, checked

MAX_MEMBERS = 20_000
ACTIVE = "Active"


class RosterRefused(Exception):
    """Why a roster could not be read, in words for the class view."""


@dataclass(frozen=True)
class Member:
    """One person of the LMS course, as far as we keep them; ``claims`` reads like a launch's."""

    user_id: str
    active: bool
    claims: Mapping[str, object]


def check_service_url(url: object, registration: LtiRegistration) -> str:
    """``url`` when the tool may send its token there (platform_urls), else RosterRefused."""
    try:
        return checked(url, registration)
    except OffPlatform as problem:
        raise RosterRefused(f"the roster address {problem}: the grader does not send its token there") from None


class BoundedSession(requests.Session):
    """A session whose every request has a deadline, follows no redirect (a redirect could take
    the bearer token elsewhere) and reads at most ``max_bytes`` of body."""

    def __init__(self, timeout: float, max_bytes: int) -> None:
        super().__init__()
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.headers["User-Agent"] = "grader-lti-tool"
        # Compressed answers are not asked for, and not unpacked: the cap counts what is kept.
        self.headers["Accept-Encoding"] = "identity"

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.update(timeout=(self.timeout, self.timeout), allow_redirects=False, stream=True)
        deadline = time.monotonic() + self.timeout
        response = super().request(method, url, *args, **kwargs)
        try:
            if response.is_redirect:
                raise RosterRefused(f"the LMS answered {response.status_code} (a redirect): not followed")
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                raise RosterRefused(f"the LMS's answer is larger than {self.max_bytes} bytes")
            body = bytearray()
            # read1 returns what has arrived: a platform that sends slowly meets the deadline.
            while chunk := response.raw.read1(64 * 1024, decode_content=False):
                body += chunk
                if len(body) > self.max_bytes:
                    raise RosterRefused(f"the LMS's answer is larger than {self.max_bytes} bytes")
                if time.monotonic() > deadline:
                    raise RosterRefused(f"the LMS did not finish answering within {self.timeout:g} s")
        finally:
            response.close()
        response._content = bytes(body)  # what requests keeps once a body is read
        return response


def _text(value: object, limit: int) -> str:
    return value.strip()[:limit] if isinstance(value, str) else ""


def _member(raw: object) -> Member | None:
    """A member entry checked for shape; None for one without a usable user id."""
    if not isinstance(raw, dict):
        return None
    user_id = raw.get("user_id")
    if not isinstance(user_id, str) or not user_id or len(user_id) > 255 or not user_id.isprintable():
        return None
    roles = raw.get("roles")
    roles = (
        [role for role in roles if isinstance(role, str) and len(role) <= 300][:50] if isinstance(roles, list) else []
    )
    claims = {name: _text(raw.get(name), 500) for name in ("given_name", "family_name", "name", "email")}
    claims["https://purl.imsglobal.org/spec/lti/claim/roles"] = roles  # type: ignore[assignment]
    status = raw.get("status", ACTIVE)
    return Member(user_id, status == ACTIVE, claims)


def _next_page(headers: Mapping[str, str], current: str) -> str | None:
    """The ``rel="next"`` target of the Link header(s), resolved against the page it came on."""
    value = ", ".join(v for k, v in headers.items() if k.lower() == "link")
    if not value or len(value) > 4 * MAX_URL:
        return None
    for link in requests.utils.parse_header_links(value):
        if "next" in link.get("rel", "").lower().split() and link.get("url"):
            return urljoin(current, link["url"])
    return None


def fetch_members(registration: LtiRegistration, memberships_url: str) -> list[Member]:
    """Every member the LMS lists for the course at ``memberships_url``, all pages; RosterRefused
    when any step fails (the caller changes nothing then)."""
    if not registration.is_active:
        raise RosterRefused(f"the LMS registration {registration} is switched off")
    url = check_service_url(memberships_url, registration)
    session = BoundedSession(settings.LTI_SERVICE_TIMEOUT_SECONDS, settings.LTI_ROSTER_PAGE_BYTES)
    try:
        tool_registration = registration.to_registration()
    except Key.DoesNotExist:
        raise RosterRefused("the grader has no signing key yet: run grader service keys") from None
    service = NamesRolesProvisioningService(
        ServiceConnector(tool_registration, session), {"context_memberships_url": url}
    )
    members: list[Member] = []
    seen = set()
    for _page in range(settings.LTI_ROSTER_MAX_PAGES):
        seen.add(url)
        try:
            data = service.get_nrps_data(url)
        except RosterRefused:
            raise
        except LtiException as error:  # an error status from the token or memberships endpoint
            status = getattr(getattr(error, "response", None), "status_code", "?")
            raise RosterRefused(f"the LMS refused the request (HTTP {status})") from None
        except requests.Timeout:
            raise RosterRefused(f"the LMS did not answer within {settings.LTI_SERVICE_TIMEOUT_SECONDS} s") from None
        except (ValueError, KeyError, TypeError, RecursionError):
            # A token answer without access_token, or a body that is not JSON (requests' JSON error
            # is also a RequestException: caught here first).
            raise RosterRefused("the LMS's answer is not the JSON the service describes") from None
        except requests.RequestException as error:
            raise RosterRefused(f"the LMS could not be reached ({type(error).__name__})") from None
        body = data.get("body")
        if not isinstance(body, dict) or not isinstance(body.get("members"), list):
            raise RosterRefused("the LMS's answer is not a membership container (no members list)")
        members.extend(member for member in map(_member, body["members"]) if member is not None)
        if len(members) > MAX_MEMBERS:
            raise RosterRefused(f"the LMS lists more than {MAX_MEMBERS} members")
        following = _next_page(data.get("headers") or {}, url)
        if following is None:
            return members
        if following in seen:
            raise RosterRefused("the LMS's pages lead back to a page already read")
        url = check_service_url(following, registration)
    raise RosterRefused(f"the roster has more than {settings.LTI_ROSTER_MAX_PAGES} pages (LTI_ROSTER_MAX_PAGES)")
