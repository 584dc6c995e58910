"""The page an LMS admin's browser opens for LTI Dynamic Registration.

Who may register: whoever holds a one-time code a site operator made
(``grader service lti-registration-url``), in the URL itself. The LMS opens the URL in its own page,
often in an iframe where our sign-in cookie does not reach, so a signed-in operator would not
be seen there; without a code, an anonymous visitor could make registrations for any issuer.
A registration is stored inactive either way: an operator switches it on in the admin.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from datetime import timedelta

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from .dynamic_registration import RegistrationProblem, register
from .framing import allow_framing, origin_of
from .models import RegistrationCode

logger = logging.getLogger(__name__)

MAX_CODE = 64
MAX_TOKEN = 4096  # Canvas and Moodle send a JWT of a few hundred characters


def code_digest(code: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), f"lti-registration\n{code}".encode(), hashlib.sha256).hexdigest()


def new_registration_url(created_by: str, hours: int) -> str:
    """A registration URL with a fresh one-time code, valid ``hours``; only the digest is kept."""
    code = secrets.token_urlsafe(24)
    RegistrationCode.objects.create(
        digest=code_digest(code), created_by=created_by[:150], expires_at=timezone.now() + timedelta(hours=hours)
    )
    return settings.SITE_ROOT + reverse("lti-register-with-code", args=[code])


def _page(request: HttpRequest, status: int, title: str, message: str, platform_origin: str | None) -> HttpResponse:
    response = render(
        request,
        "lti/registered.html",
        {"title": title, "message": message, "platform_origin": platform_origin, "done": status == 200},
        status=status,
    )
    # The LMS shows this page in its own frame; it is not registered yet, so its origin comes
    # from the request: framing by it risks nothing, the page acts only with a valid code.
    return allow_framing(response, [platform_origin] if platform_origin else [])  # type: ignore[return-value]


@require_GET
def register_without_code(request: HttpRequest) -> HttpResponse:
    return _page(
        request,
        403,
        "A registration code is needed",
        "Ask the grader's operators for a registration URL (grader service lti-registration-url) and paste that "
        "one into your LMS.",
        None,
    )


@require_GET
def register_with_code(request: HttpRequest, code: str) -> HttpResponse:
    configuration = request.GET.get("openid_configuration", "")
    token = request.GET.get("registration_token", "")
    platform_origin = origin_of(configuration) if len(configuration) <= 200 else None
    if not configuration or len(token) > MAX_TOKEN or len(code) > MAX_CODE:
        return _page(request, 400, "Not a registration request", "The LMS sent no usable openid_configuration.", None)
    digest = code_digest(code)
    now = timezone.now()
    # Claimed before any request leaves, so two tabs cannot both use it; given back on failure.
    claimed = RegistrationCode.objects.filter(digest=digest, used_at__isnull=True, expires_at__gt=now).update(
        used_at=now
    )
    if not claimed:
        return _page(request, 403, "This registration URL is not valid", "It was used already, or has expired.", None)
    try:
        registration = register(configuration, token)
    except RegistrationProblem as problem:
        RegistrationCode.objects.filter(digest=digest).update(used_at=None)
        logger.info("LTI dynamic registration from %r refused: %s", configuration[:200], problem)
        return _page(request, 400, "The registration failed", str(problem), platform_origin)
    RegistrationCode.objects.filter(digest=digest).update(registration=registration)
    logger.info(
        "LTI dynamic registration: %s, issuer %s, client id %s (inactive)",
        registration.name,
        registration.issuer,
        registration.client_id,
    )
    return _page(
        request,
        200,
        "Registered",
        f"The grader is registered with {registration.issuer} (client id {registration.client_id}). The "
        "grader's operators must activate the registration and its deployment before the first launch.",
        platform_origin,
    )
