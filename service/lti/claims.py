"""Reading an LTI 1.3 launch's claims: who the user is, their role in the course, which course
and assignment the link names. Pure functions over the validated id_token body.

The token's signature, issuer, audience, nonce and deployment were checked by pylti1p3 before
anything here runs; these functions check the shape of what we keep from it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from ..courses.models import Role

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
ROLES = LTI + "roles"
CONTEXT = LTI + "context"
CUSTOM = LTI + "custom"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"

MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"

Claims = Mapping[str, object]

# OIDC bounds ``sub`` at 255 ASCII characters; we keep at most 64 of them readable in a username.
_READABLE_SUB = re.compile(r"[A-Za-z0-9._-]{1,64}")
_MAX_SUB = 255


class ClaimProblem(Exception):
    """A signed launch whose claims we cannot use, in words for the page."""


def text(claims: Claims, name: str, limit: int) -> str:
    """A string claim cut to ``limit`` characters, or "" when absent or not a string."""
    value = claims.get(name)
    return value[:limit].strip() if isinstance(value, str) else ""


def subject(claims: Claims) -> tuple[str, str]:
    """The platform's issuer and the user's ``sub``, both checked for shape."""
    issuer, sub = claims.get("iss"), claims.get("sub")
    if not isinstance(issuer, str) or not issuer or len(issuer) > _MAX_SUB:
        raise ClaimProblem("The launch has no usable issuer.")
    if not isinstance(sub, str) or not sub or len(sub) > _MAX_SUB or not sub.isprintable():
        raise ClaimProblem("The launch has no usable user id (sub).")
    return issuer, sub


LTI_PREFIX = "lti-"  # the accounts launches make; roster usernames may not take it


def username_for(issuer: str, client_id: str, sub: str) -> str:
    """A Django username that only this (registration, sub) pair can have: at most 81 characters.

    The registration is the issuer with the client id: several registrations may share an issuer
    (every Canvas Cloud tenant is ``https://canvas.instructure.com``), and a ``sub`` is unique
    only within one, so an issuer alone would let one LMS sign in as another's user.
    ``lti-<12 hex of the registration>-<sub>`` when the sub is short and plain, else
    ``lti-<12 hex of the registration>+<32 hex of the sub>``: "+" never occurs in a readable
    sub, so the two forms cannot meet. Everything is within Django's username alphabet ([\\w.@+-]).
    """
    platform = hashlib.sha256(f"{issuer}\n{client_id}".encode()).hexdigest()[:12]
    if _READABLE_SUB.fullmatch(sub):
        return f"{LTI_PREFIX}{platform}-{sub}"
    return f"{LTI_PREFIX}{platform}+{hashlib.sha256(sub.encode()).hexdigest()[:32]}"


def email(claims: Claims) -> str:
    """The email claim when it is a valid address that fits Django's column, else ""."""
    value = claims.get("email")
    if not isinstance(value, str) or len(value) > 254:
        return ""
    try:
        validate_email(value)
    except ValidationError:
        return ""
    return value


def names(claims: Claims) -> tuple[str, str]:
    """First and last name for Django's 150-character columns; ``name`` when no parts are given."""
    first, last = text(claims, "given_name", 150), text(claims, "family_name", 150)
    if not first and not last:
        first = text(claims, "name", 150)
    return first, last


def _context_roles(claims: Claims) -> set[str]:
    """The membership roles as short names, sub-roles as Principal#Sub ("Instructor#TeachingAssistant").

    Institution and system roles (other vocabularies) are not roles in this course and are dropped.
    """
    raw = claims.get(ROLES)
    found: set[str] = set()
    for role in raw if isinstance(raw, list) else []:
        if not isinstance(role, str):
            continue
        if re.fullmatch(r"\w+", role):  # LTI 1.3 allows a context role's short name alone
            found.add(role)
        elif role.startswith((MEMBERSHIP + "#", MEMBERSHIP + "/")):
            found.add(role[len(MEMBERSHIP) + 1 :])
    return found


def course_role(claims: Claims) -> Role:
    """Our role for the launch's context roles.

    A teaching assistant arrives as the sub-role Instructor#TeachingAssistant, usually beside the
    principal role Instructor that the spec asks platforms to send with it: the sub-role decides,
    or every TA would become an instructor. Administrator (of the context) is an instructor.
    Learner, and anything we do not know (Mentor, ContentDeveloper, none), is a student.
    """
    roles = _context_roles(claims)
    if "Administrator" in roles:
        return Role.INSTRUCTOR
    if any(role == "TeachingAssistant" or role.endswith("#TeachingAssistant") for role in roles):
        return Role.TA
    if "Instructor" in roles:
        return Role.INSTRUCTOR
    return Role.STUDENT


def context_id(claims: Claims) -> str:
    """The LMS course's context id, or "" when the launch has no usable context claim."""
    context = claims.get(CONTEXT)
    if not isinstance(context, dict):
        return ""
    value = context.get("id")
    return value if isinstance(value, str) and 0 < len(value) <= 255 else ""


def context_title(claims: Claims) -> str:
    context = claims.get(CONTEXT)
    title = context.get("title") if isinstance(context, dict) else None
    return title[:200].strip() if isinstance(title, str) else ""


def custom_text(claims: Claims, name: str) -> str | None:
    """A custom parameter of the link (platforms send them as strings), cut to 100 characters;
    None when the link does not set it. Its shape is checked by the lookup that uses it."""
    custom = claims.get(CUSTOM)
    value = custom.get(name) if isinstance(custom, dict) else None
    return value.strip()[:100] if isinstance(value, str) and value.strip() else None


def canvas_user_id(claims: Claims) -> str:
    """Canvas's own user id, when the tool's custom fields ask for it (``canvas_user_id=$Canvas.user.id``):
    the id a Canvas gradebook import matches rows by. "" when absent or not a plain number."""
    value = custom_text(claims, "canvas_user_id")
    return value if value is not None and value.isascii() and value.isdigit() and len(value) <= 20 else ""


AGS_ENDPOINT = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
_MAX_SERVICE_URL = 1000


def ags_endpoint(claims: Claims) -> tuple[str, str, tuple[str, ...]] | None:
    """The Assignment and Grade Services claim: the line items URL, the link's own line item URL
    ("" for either when absent) and the AGS scopes granted; None when the launch has no usable
    claim. Where the URLs point is checked against the registration by the caller."""
    endpoint = claims.get(AGS_ENDPOINT)
    if not isinstance(endpoint, dict):
        return None
    urls = []
    for name in ("lineitems", "lineitem"):
        value = endpoint.get(name)
        if value is not None and (not isinstance(value, str) or len(value) > _MAX_SERVICE_URL):
            return None
        urls.append(value or "")
    raw = endpoint.get("scope")
    scopes = tuple(sorted({s for s in raw if isinstance(s, str) and len(s) <= 200})) if isinstance(raw, list) else ()
    if not any(urls) or not scopes:
        return None
    return urls[0], urls[1], scopes[:10]
