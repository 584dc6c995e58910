"""LTI 1.3 launches from a fake platform: the OIDC login step, a signed id_token posted to the
launch, the user signed in and enrolled with their course role; and every refusal a 4xx page.

The platform lives in this file: an RSA key made here, its JWKS served on 127.0.0.1 by a
thread (pylti1p3 fetches it as it would from a real LMS; no other network), a registration
and deployment made with django-lti's models, and id_tokens signed with PyJWT.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.http import HttpResponse
from django.test import Client
from django.utils import timezone
from jwcrypto.jwk import JWK
from jwt.algorithms import RSAAlgorithm
from lti_tool.models import Key, LtiDeployment, LtiRegistration, LtiUser
from service_cast import Cast

from service.accounts.models import TokenBucket
from service.courses.models import Enrolment, Role
from service.lti import login_limits
from service.lti.claims import username_for
from service.lti.models import CourseLink

pytestmark = [pytest.mark.db]

ISSUER = "https://lms.example.edu"
CLIENT_ID = "grader-tool-7"
DEPLOYMENT = "deployment-1"
CONTEXT = "ctx-cs101-2026"
KID = "platform-key-1"
LTI = "https://purl.imsglobal.org/spec/lti/claim/"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
LEARNER = f"{MEMBERSHIP}#Learner"
INSTRUCTOR = f"{MEMBERSHIP}#Instructor"
TOP_LEVEL = {"iss", "aud", "sub", "exp", "iat", "nonce", "email", "name", "given_name", "family_name"}


@pytest.fixture(scope="module")
def platform_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def stranger_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def tool_jwk() -> JWK:
    return JWK.generate(kty="RSA", size=2048)


@pytest.fixture(scope="module")
def jwks_url(platform_key: rsa.RSAPrivateKey) -> Iterator[str]:
    """The platform's key set, served over HTTP on a free local port for the module."""
    jwk = json.loads(RSAAlgorithm.to_jwk(platform_key.public_key()))
    jwk.update(kid=KID, alg="RS256", use="sig")
    body = json.dumps({"keys": [jwk]}).encode()

    class KeySet(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), KeySet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/jwks"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass
class Platform:
    key: rsa.RSAPrivateKey
    registration: Any
    deployment: Any


@pytest.fixture
def platform(
    cast: Cast, platform_key: rsa.RSAPrivateKey, tool_jwk: JWK, jwks_url: str, monkeypatch: pytest.MonkeyPatch
) -> Platform:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # requests must reach the key set directly
    Key.objects.create_from_jwk(tool_jwk)  # the tool's own key pair: django-lti needs one for every registration
    registration = LtiRegistration.objects.create(
        name="Example LMS",
        issuer=ISSUER,
        client_id=CLIENT_ID,
        auth_url=f"{ISSUER}/auth",
        token_url=f"{ISSUER}/token",
        keyset_url=jwks_url,
    )
    deployment = LtiDeployment.objects.create(registration=registration, deployment_id=DEPLOYMENT, is_active=True)
    CourseLink.objects.create(deployment=deployment, context_id=CONTEXT, course=cast.course)
    return Platform(platform_key, registration, deployment)


def browser() -> Client:
    # CSRF checks on, as in a browser: the launch must pass because it is exempt, not because
    # the test client skips them.
    return Client(enforce_csrf_checks=True)


def oidc_login(client: Client, sub: str, deployment_id: str = DEPLOYMENT) -> tuple[str, str, str]:
    """Step 1, as the platform starts it: the state, the nonce and the launch path we are sent back with."""
    response = client.post(
        "/lti/login/",
        {
            "iss": ISSUER,
            "client_id": CLIENT_ID,
            "login_hint": sub,
            "target_link_uri": "https://grader.example.edu/lti/launch/",
            "lti_deployment_id": deployment_id,
        },
    )
    assert response.status_code == 302
    to = urlsplit(response["Location"])
    assert f"{to.scheme}://{to.netloc}{to.path}" == f"{ISSUER}/auth"
    query = {name: values[0] for name, values in parse_qs(to.query).items()}
    assert query["redirect_uri"] == settings.SITE_ROOT + "/lti/launch/"
    assert (query["client_id"], query["login_hint"], query["response_mode"]) == (CLIENT_ID, sub, "form_post")
    assert (query["scope"], query["response_type"], query["prompt"]) == ("openid", "id_token", "none")
    return query["state"], query["nonce"], urlsplit(query["redirect_uri"]).path


def id_token(key: rsa.RSAPrivateKey, nonce: str, sub: str, roles: list[str], **changes: Any) -> str:
    """The platform's signed launch message. ``changes`` replace claims, LTI ones by their short
    name (``context=...``), others by their full name; None removes one."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": ISSUER,
        "aud": CLIENT_ID,
        "sub": sub,
        "exp": now + 300,
        "iat": now,
        "nonce": nonce,
        "given_name": "Ada",
        "family_name": "Lovelace",
        "email": f"{sub}@lms.example.edu",
        LTI + "message_type": "LtiResourceLinkRequest",
        LTI + "version": "1.3.0",
        LTI + "deployment_id": DEPLOYMENT,
        LTI + "target_link_uri": "https://grader.example.edu/lti/launch/",
        LTI + "resource_link": {"id": "link-1", "title": "Autograd lab"},
        LTI + "roles": roles,
        LTI + "context": {"id": CONTEXT, "label": "CS101", "title": "Intro to autograd"},
        LTI + "custom": {},
    }
    for name, value in changes.items():
        claim = name if name in TOP_LEVEL or name.startswith("https://") else LTI + name
        if value is None:
            claims.pop(claim, None)
        else:
            claims[claim] = value
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": KID})


def launch(
    client: Client,
    key: rsa.RSAPrivateKey,
    sub: str = "student-1",
    roles: list[str] | None = None,
    **changes: Any,
) -> HttpResponse:
    state, nonce, path = oidc_login(client, sub, changes.get("deployment_id", DEPLOYMENT))
    token = id_token(key, nonce, sub, [LEARNER] if roles is None else roles, **changes)
    response: HttpResponse = client.post(path, {"id_token": token, "state": state})
    return response


def lti_user(sub: str) -> User:
    return User.objects.get(username=username_for(ISSUER, CLIENT_ID, sub))


def nobody_signed_in_from_lti() -> bool:
    return not User.objects.filter(username__startswith="lti-").exists()


def test_a_learner_launch_creates_signs_in_and_enrols_a_student(cast: Cast, platform: Platform) -> None:
    client = browser()
    response = launch(client, platform.key, "student-1", [LEARNER])
    assert (response.status_code, response["Location"]) == (302, "/")
    user = lti_user("student-1")
    assert (user.email, user.first_name, user.last_name) == ("student-1@lms.example.edu", "Ada", "Lovelace")
    assert not user.has_usable_password()
    assert Enrolment.objects.get(user=user).course == cast.course
    assert Enrolment.objects.get(user=user).role == Role.STUDENT
    assert LtiUser.objects.get(registration=platform.registration, sub="student-1").auth_user == user
    home = client.get("/")
    assert home.status_code == 200
    assert "Course one" in home.content.decode() and "Course two" not in home.content.decode()
    assert client.get("/a/a8/").status_code == 200


@pytest.mark.parametrize(
    ("roles", "role"),
    [
        ([INSTRUCTOR], Role.INSTRUCTOR),
        (["Instructor"], Role.INSTRUCTOR),  # LTI 1.3 allows a context role's short name
        ([f"{MEMBERSHIP}#Administrator"], Role.INSTRUCTOR),
        ([INSTRUCTOR, f"{MEMBERSHIP}/Instructor#TeachingAssistant"], Role.TA),
        ([f"{MEMBERSHIP}#Mentor"], Role.STUDENT),
        (["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator"], Role.STUDENT),
        ([], Role.STUDENT),
    ],
)
def test_context_roles_map_to_course_roles(cast: Cast, platform: Platform, roles: list[str], role: Role) -> None:
    response = launch(browser(), platform.key, "someone", roles)
    assert response.status_code == 302
    assert Enrolment.objects.get(user=lti_user("someone"), course=cast.course).role == role


def test_an_instructor_launch_reaches_the_class_view(cast: Cast, platform: Platform) -> None:
    client = browser()
    assert launch(client, platform.key, "teacher-1", [INSTRUCTOR]).status_code == 302
    assert Enrolment.objects.get(user=lti_user("teacher-1")).role == Role.INSTRUCTOR
    assert client.get("/a/a8/class/").status_code == 200


def test_a_role_change_in_the_lms_updates_the_enrolment(cast: Cast, platform: Platform) -> None:
    assert launch(browser(), platform.key, "person-1", [LEARNER]).status_code == 302
    assert launch(browser(), platform.key, "person-1", [INSTRUCTOR], email="new@lms.example.edu").status_code == 302
    user = lti_user("person-1")
    assert [e.role for e in Enrolment.objects.filter(user=user)] == [Role.INSTRUCTOR]
    assert user.email == "new@lms.example.edu"
    assert User.objects.filter(username__startswith="lti-").count() == 1


def test_it_refuses_a_token_signed_by_another_key(
    cast: Cast, platform: Platform, stranger_key: rsa.RSAPrivateKey
) -> None:
    client = browser()
    response = launch(client, stranger_key, "student-1", [INSTRUCTOR])
    assert response.status_code == 400
    assert "could not be verified" in response.content.decode() and "Signature" in response.content.decode()
    assert nobody_signed_in_from_lti() and not LtiUser.objects.exists()
    assert client.get("/").status_code == 302  # to the sign-in page


def test_it_refuses_an_inactive_deployment(cast: Cast, platform: Platform) -> None:
    platform.deployment.is_active = False
    platform.deployment.save()
    client = browser()
    response = launch(client, platform.key, "student-1")
    assert response.status_code == 403
    assert "not active" in response.content.decode() and DEPLOYMENT in response.content.decode()
    assert nobody_signed_in_from_lti()
    assert client.get("/").status_code == 302


def test_an_unknown_deployment_is_recorded_inactive_and_refused(cast: Cast, platform: Platform) -> None:
    response = launch(browser(), platform.key, "student-1", deployment_id="deployment-new")
    assert response.status_code == 403
    assert not LtiDeployment.objects.get(deployment_id="deployment-new").is_active  # for staff to switch on
    assert nobody_signed_in_from_lti()


def test_it_refuses_a_message_type_it_does_not_know(cast: Cast, platform: Platform) -> None:
    response = launch(browser(), platform.key, "student-1", message_type="LtiSomethingNew")
    assert response.status_code == 400 and "Unrecognized message type" in response.content.decode()
    assert nobody_signed_in_from_lti()


def test_it_refuses_a_learner_s_deep_linking_launch(cast: Cast, platform: Platform) -> None:
    # Deep linking itself is tested in test_lti_deep_linking.py; a learner may not add content.
    settings_claim = {
        "deep_link_return_url": f"{ISSUER}/deep-link-return",
        "accept_types": ["ltiResourceLink"],
        "accept_presentation_document_targets": ["window"],
    }
    response = launch(
        browser(),
        platform.key,
        "student-1",
        [LEARNER],
        message_type="LtiDeepLinkingRequest",
        **{"https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings": settings_claim},
    )
    assert response.status_code == 403 and "Instructors only" in response.content.decode()
    assert nobody_signed_in_from_lti()


def test_it_refuses_a_course_that_is_not_linked(cast: Cast, platform: Platform) -> None:
    client = browser()
    response = launch(client, platform.key, "student-1", context={"id": "ctx-unlinked", "title": "Other"})
    assert response.status_code == 403
    page = response.content.decode()
    assert "not linked" in page and "ctx-unlinked" in page and DEPLOYMENT in page
    # Naming a course in the custom claim reaches it only when the course is open to this deployment.
    named = launch(client, platform.key, "student-1", context={"id": "ctx-unlinked"}, custom={"course": "c2"})
    assert named.status_code == 403
    assert nobody_signed_in_from_lti() and client.get("/").status_code == 302


def test_a_custom_course_claim_reaches_a_course_open_to_the_deployment(cast: Cast, platform: Platform) -> None:
    CourseLink.objects.create(deployment=platform.deployment, context_id="", course=cast.other_course)
    response = launch(browser(), platform.key, "student-1", context={"id": "ctx-new"}, custom={"course": "c2"})
    assert response.status_code == 302
    assert Enrolment.objects.get(user=lti_user("student-1")).course == cast.other_course
    # A linked context keeps its course: a link naming another one is a misconfiguration, refused.
    conflict = launch(browser(), platform.key, "student-2", custom={"course": "c2"})
    assert conflict.status_code == 403 and "is linked to c1" in conflict.content.decode()


def test_an_open_link_enrols_students_only_whatever_role_the_lms_claims(cast: Cast, platform: Platform) -> None:
    # Any teacher of any course of the deployment can make a link naming course=c2; being an
    # instructor of that other course must not make anyone staff here.
    CourseLink.objects.create(deployment=platform.deployment, context_id="", course=cast.other_course)
    claimed = launch(
        browser(), platform.key, "teacher-9", [INSTRUCTOR], context={"id": "ctx-sandbox"}, custom={"course": "c2"}
    )
    assert claimed.status_code == 302
    user = lti_user("teacher-9")
    assert Enrolment.objects.get(user=user, course=cast.other_course).role == Role.STUDENT
    # A role staff gave (roster, admin) is kept: the open link neither raises nor lowers it.
    Enrolment.objects.filter(user=user, course=cast.other_course).update(role=Role.TA)
    again = launch(
        browser(), platform.key, "teacher-9", [LEARNER], context={"id": "ctx-sandbox"}, custom={"course": "c2"}
    )
    assert again.status_code == 302
    assert Enrolment.objects.get(user=user, course=cast.other_course).role == Role.TA
    # Through the exact link of the course's own context, the LMS's role counts.
    launch(browser(), platform.key, "teacher-9", [INSTRUCTOR])
    assert Enrolment.objects.get(user=user, course=cast.course).role == Role.INSTRUCTOR


def test_a_launch_records_canvas_s_user_id_for_the_gradebook_export(cast: Cast, platform: Platform) -> None:
    assert launch(browser(), platform.key, "student-1", custom={"canvas_user_id": "40123"}).status_code == 302
    assert Enrolment.objects.get(user=lti_user("student-1")).lms_user_id == "40123"
    # Anything but a plain number is not Canvas's id, and a later launch without it keeps it.
    launch(browser(), platform.key, "student-1", custom={"canvas_user_id": "1; DROP"})
    launch(browser(), platform.key, "student-1")
    assert Enrolment.objects.get(user=lti_user("student-1")).lms_user_id == "40123"


def test_it_lands_on_the_assignment_the_link_names(cast: Cast, platform: Platform) -> None:
    client = browser()
    response = launch(client, platform.key, "student-1", custom={"assignment": "a8"})
    assert (response.status_code, response["Location"]) == (302, "/a/a8/")
    # An assignment of another course, or none at all, lands on the home page.
    assert launch(browser(), platform.key, "student-1", custom={"assignment": "b1"})["Location"] == "/"
    assert launch(browser(), platform.key, "student-1", custom={"assignment": "nope"})["Location"] == "/"


def test_a_replayed_launch_is_refused(cast: Cast, platform: Platform) -> None:
    client = browser()
    state, nonce, path = oidc_login(client, "student-1")
    form = {"id_token": id_token(platform.key, nonce, "student-1", [LEARNER]), "state": state}
    assert client.post(path, form).status_code == 302
    # pylti1p3 alone would accept the same pair again, even from a browser without the state cookie.
    for again in (browser(), client):
        replay = again.post(path, form)
        assert replay.status_code == 400 and "already used" in replay.content.decode()
    assert browser().get("/").status_code == 302


def test_it_refuses_a_token_without_an_expiry(cast: Cast, platform: Platform) -> None:
    response = launch(browser(), platform.key, "student-1", exp=None)
    assert response.status_code == 400
    assert nobody_signed_in_from_lti()


def test_a_platform_never_signs_in_a_staff_account(cast: Cast, platform: Platform) -> None:
    assert launch(browser(), platform.key, "operator").status_code == 302
    User.objects.filter(username=username_for(ISSUER, CLIENT_ID, "operator")).update(is_staff=True)
    client = browser()
    response = launch(client, platform.key, "operator")
    assert response.status_code == 403
    assert client.get("/").status_code == 302


def test_login_refuses_what_is_not_a_registered_login(cast: Cast, platform: Platform) -> None:
    client = browser()
    unknown = client.post(
        "/lti/login/", {"iss": "https://elsewhere.example", "login_hint": "x", "target_link_uri": "x"}
    )
    assert unknown.status_code == 400 and "not registered" in unknown.content.decode()
    wrong_client = client.get(
        "/lti/login/", {"iss": ISSUER, "client_id": "someone-else", "login_hint": "x", "target_link_uri": "x"}
    )
    assert wrong_client.status_code == 400
    assert client.get("/lti/login/", {"iss": ISSUER, "client_id": CLIENT_ID, "login_hint": "x"}).status_code == 400
    assert client.post("/lti/launch/", {"state": "state-x", "id_token": "not.a.token"}).status_code == 400
    assert client.post("/lti/launch/", {}).status_code == 400


def test_jwks_serves_the_tools_public_keys_only(cast: Cast, platform: Platform) -> None:
    client = browser()
    response = client.get("/lti/jwks/")
    assert response.status_code == 200
    keys = response.json()["keys"]
    assert len(keys) == 1 and keys[0]["kty"] == "RSA" and keys[0]["alg"] == "RS256"
    assert "d" not in keys[0]  # no private part
    assert client.post("/lti/jwks/").status_code in (403, 405)


def test_usernames_are_bounded_and_cannot_collide() -> None:
    readable = username_for(ISSUER, CLIENT_ID, "a6d5c443-1f51-4783-ba1a-7686ffe3b54a")
    assert readable.endswith("-a6d5c443-1f51-4783-ba1a-7686ffe3b54a") and readable.startswith("lti-")
    odd = username_for(ISSUER, CLIENT_ID, "user with spaces/ü" + "x" * 240)
    assert "+" in odd and len(odd) <= 81
    assert username_for(ISSUER, CLIENT_ID, "1") != username_for("https://other.example", CLIENT_ID, "1")
    # Two registrations of one issuer (Canvas Cloud tenants) never share an account.
    assert username_for(ISSUER, CLIENT_ID, "1") != username_for(ISSUER, "another-tenant", "1")
    for name in (readable, odd):
        User._meta.get_field("username").run_validators(name)  # Django's alphabet and length


# Anonymous logins: rate-limited per client address, their state bounded in count and age, and a
# launch in progress never lost to a flood.

LOGIN = {
    "iss": ISSUER,
    "client_id": CLIENT_ID,
    "login_hint": "someone",
    "target_link_uri": "https://grader.example.edu/lti/launch/",
    "lti_deployment_id": DEPLOYMENT,
}


def start_launch(sub: str) -> tuple[Any, str, str, str]:
    client = browser()
    state, nonce, path = oidc_login(client, sub)
    return client, state, nonce, path


def finish_launch(platform: Platform, started: tuple[Any, str, str, str], sub: str) -> None:
    client, state, nonce, path = started
    response = client.post(path, {"id_token": id_token(platform.key, nonce, sub, [LEARNER]), "state": state})
    assert (response.status_code, response["Location"]) == (302, "/"), response.content[:300]
    assert lti_user(sub).is_active


@pytest.mark.db
@pytest.mark.django_db(transaction=True)
def test_a_login_keeps_its_state_minutes_and_an_address_gets_a_few_a_minute(
    cast: Cast, platform: Platform, settings: Any
) -> None:
    settings.LTI_LOGINS_PER_MINUTE = 5
    before = timezone.now()
    started = start_launch("early")
    assert login_limits.live_entries() >= 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT max(expires) FROM service_cache")
        latest = cursor.fetchone()[0]
    lifetime = (latest - before).total_seconds()
    assert settings.LTI_LOGIN_STATE_SECONDS - 5 <= lifetime <= settings.LTI_LOGIN_STATE_SECONDS + 5
    statuses = [browser().post("/lti/login/", LOGIN).status_code for _ in range(8)]
    assert statuses[:4] == [302] * 4 and statuses[4:] == [429] * 4  # the launch above took the fifth
    refused = browser().post("/lti/login/", LOGIN)
    assert int(refused["Retry-After"]) >= 1 and b"try again in" in refused.content
    # Another address is not this one's business.
    assert browser().post("/lti/login/", LOGIN, REMOTE_ADDR="192.0.2.7").status_code == 302
    # IPv6: one /64 is one client.
    six = [browser().post("/lti/login/", LOGIN, REMOTE_ADDR=f"2001:db8:1:2::{n:x}").status_code for n in range(7)]
    assert six.count(429) == 2
    finish_launch(platform, started, "early")


@pytest.mark.db
@pytest.mark.django_db(transaction=True)
def test_a_full_store_refuses_new_logins_and_never_evicts_one_in_progress(
    cast: Cast, platform: Platform, settings: Any
) -> None:
    settings.LTI_STATE_MAX = 100
    started = start_launch("in-progress")
    statuses = Counter(
        browser().post("/lti/login/", LOGIN, REMOTE_ADDR=f"198.51.100.{n % 250}").status_code for n in range(150)
    )
    assert statuses[503] > 0 and set(statuses) <= {302, 429, 503}
    assert login_limits.live_entries() <= settings.LTI_STATE_MAX
    finish_launch(platform, started, "in-progress")
    # Expired entries and refilled buckets go at the next purge; live ones stay.
    with connection.cursor() as cursor:
        cursor.execute("UPDATE service_cache SET expires = %s", [timezone.now()])
    TokenBucket.objects.filter(key__startswith=login_limits.BUCKET_PREFIX).update(
        updated=timezone.now() - login_limits.WINDOW * 2
    )
    entries, buckets = login_limits.purge()
    assert entries > 0 and buckets > 0 and login_limits.live_entries() == 0
    assert browser().post("/lti/login/", LOGIN, REMOTE_ADDR="198.51.100.1").status_code == 302


@pytest.mark.db
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_ten_thousand_anonymous_logins_leave_the_store_bounded_and_a_launch_completes(
    cast: Cast, platform: Platform, live_server: Any, settings: Any
) -> None:
    started = start_launch("before-the-flood")
    entries_before = login_limits.live_entries()
    url = f"{live_server.url}/lti/login/"
    local = threading.local()

    def send(_: int) -> int:
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = requests.Session()
        return session.post(url, data=LOGIN, allow_redirects=False, timeout=30).status_code

    began = time.monotonic()
    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = Counter(pool.map(send, range(10_000)))
    minutes = (time.monotonic() - began) / 60
    assert set(statuses) <= {302, 429}, statuses  # never a 500, never a full store
    allowed = settings.LTI_LOGINS_PER_MINUTE * (minutes + 1)
    assert statuses[302] <= allowed, (statuses, minutes)
    assert login_limits.live_entries() <= entries_before + statuses[302] <= settings.LTI_STATE_MAX
    assert TokenBucket.objects.filter(key__startswith=login_limits.BUCKET_PREFIX).count() == 1
    finish_launch(platform, started, "before-the-flood")
