"""Which pages an LMS may frame: the pages a launch lands on, by the active registrations'
origins only; every other page stays unframeable. Headers here; a real browser framing a live
server from another origin in test_lti_framing_browser.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.http import HttpResponse
from lti_tool.models import LtiRegistration
from service_cast import Cast

from service.lti import framing
from service.submissions.views import feedback_policy

pytestmark = [pytest.mark.db]

LMS = "https://lms.example.edu"
AUTH = "https://auth.lms.example.edu:8443"  # the registration's auth URL's origin


@pytest.fixture(autouse=True)
def fresh_origins() -> Iterator[None]:
    framing.forget_platform_origins()  # a rolled-back registration of another test sends no signal
    yield
    framing.forget_platform_origins()


@pytest.fixture
def registered(cast: Cast) -> LtiRegistration:
    return LtiRegistration.objects.create(
        name="LMS",
        issuer=LMS,
        client_id="tool-1",
        auth_url="https://auth.lms.example.edu:8443/auth?x=1",
        token_url="https://lms.example.edu/token",
        keyset_url="https://lms.example.edu/jwks",
    )


def frame_ancestors(response: HttpResponse) -> str:
    policy = response["Content-Security-Policy"]
    found = [part.strip() for part in policy.split(";") if part.strip().startswith("frame-ancestors")]
    assert len(found) == 1, policy
    return found[0]


def framable_by_lms(response: HttpResponse) -> bool:
    ancestors = frame_ancestors(response)
    if ancestors == "frame-ancestors 'none'":
        assert response["X-Frame-Options"] == "DENY"
        return False
    assert "X-Frame-Options" not in response
    assert ancestors == f"frame-ancestors {AUTH} {LMS}"
    return True


def test_a_launch_s_pages_are_framable_by_the_registered_platform_only(cast: Cast, registered: LtiRegistration) -> None:
    student, instructor = cast.client(cast.student), cast.client(cast.instructor)
    for path in ("/", "/a/a8/"):
        assert framable_by_lms(student.get(path))
    assert framable_by_lms(student.get("/lti/login/", {"iss": LMS, "login_hint": "x", "target_link_uri": "x"}))
    assert framable_by_lms(student.post("/lti/launch/", {}))  # the refusal page shows in the frame too
    assert framable_by_lms(instructor.get("/lti/deep-link/"))
    # Everything else: staff pages, sign-in, the admin, health.
    assert not framable_by_lms(instructor.get("/a/a8/class/"))
    anonymous = cast.client(cast.student)
    anonymous.logout()
    for path in ("/accounts/login/", "/admin/login/", "/health/"):
        assert not framable_by_lms(anonymous.get(path)), path


def test_without_an_active_registration_nothing_is_framable(cast: Cast, registered: LtiRegistration) -> None:
    registered.is_active = False
    registered.save()  # forgets the cached origins in this process at once
    assert not framable_by_lms(cast.client(cast.student).get("/a/a8/"))


def test_an_issuer_that_is_not_a_plain_origin_never_reaches_the_header(cast: Cast) -> None:
    LtiRegistration.objects.create(
        name="Odd",
        issuer="https://lms.example.edu; script-src *",
        client_id="odd",
        auth_url="javascript:alert(1)",
        token_url="https://lms.example.edu/token",
        keyset_url="https://lms.example.edu/jwks",
    )
    response = cast.client(cast.student).get("/a/a8/")
    assert "script-src *" not in response["Content-Security-Policy"]
    assert framing.platform_origins() == ()
    assert response["X-Frame-Options"] == "DENY"


def test_the_feedback_page_s_own_policy_keeps_everything_but_its_ancestors() -> None:
    html = "<html><style>p{}</style></html>"
    policy = framing.with_frame_ancestors(feedback_policy(html), [LMS])
    assert policy.endswith(f"frame-ancestors {LMS}") and "'none'; frame" not in policy.replace("form-action 'none'", "")
    assert "script-src 'none'" in policy and policy.count("frame-ancestors") == 1
    response = framing.allow_framing(HttpResponse(html, headers={"Content-Security-Policy": feedback_policy(html)}), [])
    assert response["Content-Security-Policy"].endswith("frame-ancestors 'none'")  # no platform: unchanged


def test_origins_are_read_once_a_minute(cast: Cast, registered: LtiRegistration) -> None:
    assert framing.platform_origins() == (AUTH, LMS)
    LtiRegistration.objects.filter(pk=registered.pk).update(issuer="https://moved.example.edu")  # no signal
    assert framing.platform_origins() == (AUTH, LMS)  # cached
    framing.forget_platform_origins()
    assert framing.platform_origins() == (AUTH, "https://moved.example.edu")
    assert not User.objects.filter(username__startswith="lti-").exists()


def _cookie_settings(site_root: str, debug: str = "False") -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k != "DEBUG"}
    clean.update(SECRET_KEY="s" * 50, DATABASE_URL="postgresql://unused@127.0.0.1:1/x")
    clean.update(SITE_ROOT=site_root, DEBUG=debug)
    code = (
        "from service import settings as s; "
        "print(s.SESSION_COOKIE_SAMESITE, s.CSRF_COOKIE_SAMESITE, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE)"
    )
    done = subprocess.run([sys.executable, "-c", code], env=clean, capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_cookies_cross_into_the_lms_frame_over_https_only() -> None:
    # SameSite=None is accepted by browsers only on Secure cookies; over http they stay Lax.
    assert _cookie_settings("https://grader.example.edu") == ["None", "None", "True", "True"]
    assert _cookie_settings("http://127.0.0.1:8000") == ["Lax", "Lax", "False", "False"]
    assert _cookie_settings("https://grader.example.edu", debug="True") == ["Lax", "Lax", "False", "False"]
