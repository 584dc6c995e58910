"""LTI Dynamic Registration against a fake platform on loopback (http allowed here): it serves
its OpenID configuration and a registration endpoint, as Moodle 4 and Canvas do. A one-time
code from ``grader service lti-registration-url`` is what lets a browser register; the stored
registration is inactive. Hostile platforms: an issuer on another origin, a huge answer, a
registration endpoint elsewhere, a server that never answers.
"""

from __future__ import annotations

import io
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from lti_tool.models import LtiDeployment, LtiRegistration
from service_cast import Cast

from service.lti import dynamic_registration
from service.lti.models import RegistrationCode
from service.lti.registering import new_registration_url

pytestmark = [pytest.mark.db]

TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"
TOKEN = "registration-token-from-the-lms"


@dataclass
class FakePlatform:
    """What the platform serves (changed per test) and what it was sent."""

    origin: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    raw_config: bytes | None = None  # served instead of the JSON of ``config``
    hang: bool = False
    received: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (path, Authorization, body)

    @property
    def configuration_url(self) -> str:
        return f"{self.origin}/mod/lti/openid-configuration.php"


@pytest.fixture
def lms(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[FakePlatform]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setattr(dynamic_registration, "TOTAL_SECONDS", 1.0)  # a server that never answers: 1 s, not 15
    settings.LTI_ALLOW_HTTP = True
    platform = FakePlatform()
    release = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, body: bytes) -> None:
            if platform.hang:
                release.wait(10)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
            self._answer(platform.raw_config or json.dumps(platform.config).encode())

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            platform.received.append((self.path, self.headers.get("Authorization", ""), body))
            self._answer(
                json.dumps({"client_id": "dyn-client-1", TOOL_CONFIGURATION: {"deployment_id": "dep-9"}}).encode()
            )

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    platform.origin = f"http://127.0.0.1:{server.server_port}"
    platform.config = {
        "issuer": platform.origin,
        "authorization_endpoint": f"{platform.origin}/mod/lti/auth.php",
        "token_endpoint": f"{platform.origin}/mod/lti/token.php",
        "jwks_uri": f"{platform.origin}/mod/lti/certs.php",
        "registration_endpoint": f"{platform.origin}/mod/lti/openid-registration.php",
        "scopes_supported": list(dynamic_registration.SCOPES) + ["openid"],
        "https://purl.imsglobal.org/spec/lti-platform-configuration": {"product_family_code": "moodle"},
    }
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield platform
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join()


def open_from_lms(url: str, platform: FakePlatform, token: str = TOKEN) -> Any:
    """The LMS opens the pasted URL in its admin's browser, adding its own parameters."""
    return Client().get(
        urlsplit(url).path, {"openid_configuration": platform.configuration_url, "registration_token": token}
    )


def test_a_registration_url_registers_the_lms_inactive(cast: Cast, lms: FakePlatform) -> None:
    out = io.StringIO()
    call_command("lti_registration_url", "--hours", "2", stdout=out)
    url = out.getvalue().strip()
    assert re.fullmatch(re.escape(settings.SITE_ROOT) + r"/lti/register/[A-Za-z0-9_-]{32}/", url)
    assert RegistrationCode.objects.get().expires_at > timezone.now()

    response = open_from_lms(url, lms)
    assert response.status_code == 200, response.content.decode()[:2000]
    registration = LtiRegistration.objects.get()
    assert (registration.issuer, registration.client_id) == (lms.origin, "dyn-client-1")
    assert registration.auth_url == f"{lms.origin}/mod/lti/auth.php"
    assert registration.token_url == f"{lms.origin}/mod/lti/token.php"
    assert registration.keyset_url == f"{lms.origin}/mod/lti/certs.php"
    assert not registration.is_active  # until an operator switches it on
    deployment = LtiDeployment.objects.get()
    assert (deployment.registration, deployment.deployment_id, deployment.is_active) == (registration, "dep-9", False)

    # What the platform was sent: our client metadata, with its token as Bearer.
    [(path, authorization, body)] = lms.received
    assert path == "/mod/lti/openid-registration.php" and authorization == f"Bearer {TOKEN}"
    root = settings.SITE_ROOT
    assert body["initiate_login_uri"] == f"{root}/lti/login/"
    assert body["redirect_uris"] == [f"{root}/lti/launch/"] and body["jwks_uri"] == f"{root}/lti/jwks/"
    assert set(body["scope"].split()) == set(dynamic_registration.SCOPES)
    tool = body[TOOL_CONFIGURATION]
    assert tool["domain"] == urlsplit(root).netloc and tool["target_link_uri"] == f"{root}/lti/launch/"
    assert [m["type"] for m in tool["messages"]] == ["LtiResourceLinkRequest", "LtiDeepLinkingRequest"]
    assert {"sub", "iss", "email"} <= set(tool["claims"])

    # The page tells the LMS it is done through a static script, and the LMS may frame it.
    page = response.content.decode()
    assert "lti/close_registration.js" in page and f'data-origin="{lms.origin}"' in page and "<script>" not in page
    assert re.search(f"frame-ancestors {re.escape(lms.origin)}(;|$)", response["Content-Security-Policy"])
    assert "X-Frame-Options" not in response
    # The code is spent.
    again = open_from_lms(url, lms)
    assert again.status_code == 403 and LtiRegistration.objects.count() == 1 and len(lms.received) == 1
    assert RegistrationCode.objects.get().registration == registration


def test_only_the_platform_s_scopes_are_asked_for(cast: Cast, lms: FakePlatform) -> None:
    lms.config["scopes_supported"] = ["openid", dynamic_registration.SCOPES[1]]
    assert open_from_lms(new_registration_url("ops", 1), lms).status_code == 200
    assert lms.received[0][2]["scope"] == dynamic_registration.SCOPES[1]


def test_without_a_valid_code_nothing_is_registered_and_the_platform_is_not_called(
    cast: Cast, lms: FakePlatform
) -> None:
    query = {"openid_configuration": lms.configuration_url, "registration_token": TOKEN}
    assert Client().get("/lti/register/", query).status_code == 403
    assert Client().get("/lti/register/guessed-code/", query).status_code == 403
    expired = new_registration_url("ops", 1)
    RegistrationCode.objects.update(expires_at=timezone.now())
    assert open_from_lms(expired, lms).status_code == 403
    # Even a signed-in operator needs the code.
    operator = cast.client(cast.instructor)
    cast.instructor.is_superuser = True
    cast.instructor.save()
    assert operator.get("/lti/register/", query).status_code == 403
    assert not LtiRegistration.objects.exists() and lms.received == []


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"issuer": "https://elsewhere.example"}, "issuer is not on the origin"),
        ({"issuer": None}, "no usable issuer"),
        ({"registration_endpoint": "https://elsewhere.example/register"}, "registration endpoint is not on its own"),
        ({"token_endpoint": "ftp://x/token"}, "token endpoint"),
        ({"jwks_uri": "http://127.0.0.1/" + "k" * 300}, "key set URL"),
    ],
)
def test_a_configuration_that_does_not_hold_together_is_refused(
    cast: Cast, lms: FakePlatform, change: dict[str, Any], reason: str
) -> None:
    lms.config.update(change)
    url = new_registration_url("ops", 1)
    response = open_from_lms(url, lms)
    assert response.status_code == 400 and reason in response.content.decode()
    assert not LtiRegistration.objects.exists() and lms.received == []  # the token went nowhere
    # The code is given back: the LMS admin may try again once their LMS is fixed.
    lms.config = {**lms.config, **{k: v for k, v in _good(lms).items() if k in change}}
    assert open_from_lms(url, lms).status_code == 200


def _good(lms: FakePlatform) -> dict[str, Any]:
    return {
        "issuer": lms.origin,
        "registration_endpoint": f"{lms.origin}/mod/lti/openid-registration.php",
        "token_endpoint": f"{lms.origin}/mod/lti/token.php",
        "jwks_uri": f"{lms.origin}/mod/lti/certs.php",
    }


def test_a_huge_configuration_is_refused(cast: Cast, lms: FakePlatform) -> None:
    lms.raw_config = b'{"issuer": "' + b"x" * (dynamic_registration.MAX_BODY + 10) + b'"}'
    response = open_from_lms(new_registration_url("ops", 1), lms)
    assert response.status_code == 400 and "64 KiB" in response.content.decode()
    assert not LtiRegistration.objects.exists()


def test_a_platform_that_never_answers_is_given_up_on(cast: Cast, lms: FakePlatform) -> None:
    lms.hang = True
    began = time.monotonic()
    response = open_from_lms(new_registration_url("ops", 1), lms)
    assert response.status_code == 400 and "could not be reached" in response.content.decode()
    assert time.monotonic() - began < 9  # the server would hold it for 10 s
    assert not LtiRegistration.objects.exists()


def test_https_is_required_unless_allowed(cast: Cast, lms: FakePlatform, settings: Any) -> None:
    settings.LTI_ALLOW_HTTP = False
    response = open_from_lms(new_registration_url("ops", 1), lms)
    assert response.status_code == 400 and "https" in response.content.decode()
    assert not LtiRegistration.objects.exists()


def test_odd_requests_get_a_page_not_an_error(cast: Cast, lms: FakePlatform) -> None:
    url = urlsplit(new_registration_url("ops", 1)).path
    assert Client().get(url).status_code == 400  # no openid_configuration
    assert Client().get(url, {"openid_configuration": "not a url"}).status_code == 400
    assert (
        Client().get(url, {"openid_configuration": lms.configuration_url, "registration_token": "t" * 5000}).status_code
        == 400
    )
    assert Client().post(url).status_code == 405
    assert Client().get("/lti/register/" + "c" * 300 + "/", {"openid_configuration": "x"}).status_code == 400
    assert not LtiRegistration.objects.exists()
