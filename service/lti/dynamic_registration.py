"""LTI Dynamic Registration (IMS LTI Dynamic Registration 1.0), as Moodle 4 and Canvas run it.

The LMS opens our registration URL with ``openid_configuration`` (the platform's OpenID
configuration URL) and ``registration_token``. We read that configuration, post our tool's
client metadata to its ``registration_endpoint`` with the token as Bearer, and keep the client
id and deployment id it answers as a django-lti registration and deployment, both inactive
until a site operator switches them on.

Everything here talks to a server named by a request, so: https only (http when
LTI_ALLOW_HTTP, for development and tests), no redirects, a size cap on every
body and a time limit on every exchange; the configuration's issuer must be on the origin it
was fetched from, and the registration token goes only to that origin.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse
from lti_tool.models import LtiDeployment, LtiRegistration

from .framing import origin_of

MAX_BODY = 64 * 1024  # a platform configuration is a few KiB
CONNECT_SECONDS = 5.0
TOTAL_SECONDS = 15.0  # the whole exchange, however slowly a server trickles its body
MAX_URL = 200  # django-lti's URL columns
TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"
PLATFORM_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-platform-configuration"
SCOPES = (
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
    "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
    "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",
)
CLAIMS = ("iss", "sub", "name", "given_name", "family_name", "email")


class RegistrationProblem(Exception):
    """A registration that cannot go ahead, in words for the page."""


@dataclass(frozen=True)
class Platform:
    issuer: str
    auth_url: str
    token_url: str
    keyset_url: str
    registration_endpoint: str
    name: str
    scopes: tuple[str, ...]


def _allowed_schemes() -> tuple[str, ...]:
    return ("https", "http") if settings.LTI_ALLOW_HTTP else ("https",)


def checked_url(value: object, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_URL or not value.isprintable() or " " in value:
        raise RegistrationProblem(f"The platform's {what} is missing or not a usable URL.")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError:
        raise RegistrationProblem(f"The platform's {what} is not a usable URL.") from None
    if parts.scheme not in _allowed_schemes() or not parts.hostname or parts.username:
        raise RegistrationProblem(f"The platform's {what} must be an https URL.")
    return value


def _read(response: requests.Response, started: float) -> bytes:
    body = b""
    for chunk in response.iter_content(chunk_size=8192):
        body += chunk
        if len(body) > MAX_BODY:
            raise RegistrationProblem("The platform answered with more than 64 KiB.")
        if time.monotonic() - started > TOTAL_SECONDS:
            raise RegistrationProblem("The platform took too long to answer.")
    return body


def _exchange(method: str, url: str, token: str = "", body: dict[str, object] | None = None) -> dict[str, object]:
    """One bounded request; its JSON object answer."""
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    started = time.monotonic()
    try:
        with requests.request(
            method,
            url,
            json=body,
            headers=headers,
            timeout=(CONNECT_SECONDS, TOTAL_SECONDS),
            allow_redirects=False,
            stream=True,
        ) as response:
            if not 200 <= response.status_code < 300:
                raise RegistrationProblem(f"The platform answered {response.status_code} to {method} {url[:100]}.")
            raw = _read(response, started)
    except requests.RequestException as error:
        raise RegistrationProblem(f"The platform could not be reached: {type(error).__name__}.") from None
    try:
        answer = json.loads(raw)
    except ValueError:
        raise RegistrationProblem("The platform's answer is not JSON.") from None
    if not isinstance(answer, dict):
        raise RegistrationProblem("The platform's answer is not a JSON object.")
    return answer


def _text(value: object, limit: int) -> str:
    return value.strip()[:limit] if isinstance(value, str) else ""


def platform_configuration(openid_configuration: str) -> Platform:
    """The platform's OpenID configuration, checked: its issuer on the origin it came from."""
    url = checked_url(openid_configuration, "OpenID configuration URL")
    config = _exchange("GET", url)
    issuer = config.get("issuer")
    if not isinstance(issuer, str) or not issuer or len(issuer) > 255:
        raise RegistrationProblem("The platform's configuration has no usable issuer.")
    here = origin_of(url)
    if origin_of(issuer) != here:
        raise RegistrationProblem("The platform's issuer is not on the origin its configuration came from.")
    endpoint = checked_url(config.get("registration_endpoint"), "registration endpoint")
    if origin_of(endpoint) != here:  # the registration token goes nowhere else
        raise RegistrationProblem("The platform's registration endpoint is not on its own origin.")
    details = config.get(PLATFORM_CONFIGURATION)
    product = _text(details.get("product_family_code"), 100) if isinstance(details, dict) else ""
    supported = config.get("scopes_supported")
    scopes = tuple(scope for scope in SCOPES if scope in supported) if isinstance(supported, list) else SCOPES
    return Platform(
        issuer=issuer,
        auth_url=checked_url(config.get("authorization_endpoint"), "authorization endpoint"),
        token_url=checked_url(config.get("token_endpoint"), "token endpoint"),
        keyset_url=checked_url(config.get("jwks_uri"), "key set URL"),
        registration_endpoint=endpoint,
        name=f"{product or 'LMS'} at {urlsplit(issuer).hostname}"[:255],
        scopes=scopes,
    )


def tool_metadata(platform: Platform) -> dict[str, object]:
    """Our OpenID client registration, with the LTI tool configuration claim."""
    root = settings.SITE_ROOT
    launch = root + reverse("lti-launch")
    return {
        "application_type": "web",
        "response_types": ["id_token"],
        "grant_types": ["implicit", "client_credentials"],
        "initiate_login_uri": root + reverse("lti-login"),
        "redirect_uris": [launch],
        "client_name": "Autograder",
        "jwks_uri": root + reverse("lti-jwks"),
        "token_endpoint_auth_method": "private_key_jwt",
        "scope": " ".join(platform.scopes),
        TOOL_CONFIGURATION: {
            "domain": urlsplit(root).netloc,
            "target_link_uri": launch,
            "claims": list(CLAIMS),
            "messages": [
                {"type": "LtiResourceLinkRequest", "target_link_uri": launch},
                {"type": "LtiDeepLinkingRequest", "target_link_uri": launch, "label": "Autograder assignment"},
            ],
            "description": "Grades Python lab submissions and reports scores to the gradebook.",
        },
    }


def register(openid_configuration: str, registration_token: str) -> LtiRegistration:
    """Register with the platform; the stored, inactive registration (with its deployment,
    when the platform names one)."""
    platform = platform_configuration(openid_configuration)
    answer = _exchange("POST", platform.registration_endpoint, registration_token, tool_metadata(platform))
    client_id = answer.get("client_id")
    if not isinstance(client_id, str) or not client_id or len(client_id) > 255:
        raise RegistrationProblem("The platform's answer has no usable client_id.")
    configuration = answer.get(TOOL_CONFIGURATION)
    deployment_id = configuration.get("deployment_id") if isinstance(configuration, dict) else None
    if deployment_id is not None and (not isinstance(deployment_id, str) or not 0 < len(deployment_id) <= 255):
        raise RegistrationProblem("The platform's answer has an unusable deployment_id.")
    try:
        with transaction.atomic():
            registration = LtiRegistration.objects.create(
                name=platform.name,
                issuer=platform.issuer,
                client_id=client_id,
                auth_url=platform.auth_url,
                token_url=platform.token_url,
                keyset_url=platform.keyset_url,
                is_active=False,  # an operator switches it on (Admin, LTI registrations)
            )
            if deployment_id:
                LtiDeployment.objects.create(registration=registration, deployment_id=deployment_id, is_active=False)
    except IntegrityError:
        raise RegistrationProblem("The grader already has a registration with this issuer and client id.") from None
    return registration
