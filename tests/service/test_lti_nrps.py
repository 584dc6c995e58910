"""The roster from the LMS (LTI Names and Role Provisioning Services): a platform built on
``lti1p3platform`` serves the OAuth 2 token endpoint and the memberships endpoint on loopback,
and the tool reads the course's members through pylti1p3 with a signed client assertion.

The platform's own code decides whether the tool's assertion and bearer token are valid
(``LTI1P3PlatformConfAbstract.get_access_token``, ``validate_token``); this file adds what it
leaves out (the assertion's audience and issuer) and a Link header for the next page, as the
NRPS specification wants (lti1p3platform puts ``next`` in the body instead).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth.models import User
from django.test import Client
from jwcrypto.jwk import JWK
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.registration import Registration as PlatformRegistration
from lti1p3platform.request import Request as PlatformRequest
from lti1p3platform.request import TRequest
from lti1p3platform.service_connector import NamesRoleProvisioningService, TPage
from lti_tool.models import Key, LtiDeployment, LtiRegistration, LtiUser
from procrastinate.contrib.django.models import ProcrastinateJob
from pylti1p3.registration import Registration as ToolRegistration
from service_cast import GOOD, Cast
from test_lti import (  # noqa: F401  (fixtures: the launch tests' platform, used here for launches)
    INSTRUCTOR,
    LEARNER,
    jwks_url,
    launch,
    platform,
    platform_key,
    stranger_key,
    tool_jwk,
)
from test_lti import Platform as LaunchPlatform

from service.courses.models import Enrolment, Role
from service.lti import lms_roster
from service.lti.claims import username_for
from service.lti.models import CourseLink, RosterSource, RosterSync
from service.lti.nrps import RosterRefused, check_service_url
from service.submissions.models import AuditEntry, Kind, Submission

pytestmark = [pytest.mark.db]

CLIENT_ID = "nrps-tool-1"
DEPLOYMENT = "nrps-deployment"
CONTEXT = "ctx-nrps-2026"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
PAGE = 15


def _pem(key: rsa.RSAPrivateKey) -> tuple[str, str]:
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


def person(number: int, role: str = "Learner") -> dict[str, Any]:
    return {
        "user_id": f"u{number:03d}",
        "roles": [f"{MEMBERSHIP}#{role}"],
        "given_name": f"Given{number}",
        "family_name": f"Family{number}",
        "name": f"Given{number} Family{number}",
        "email": f"u{number}@lms.example.edu",
    }


@dataclass
class Lms:
    """What the platform serves, what it was asked, and how it misbehaves."""

    base: str = ""
    members: list[dict[str, Any]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    tokens_issued: int = 0
    # path -> a function of the handler that answers instead of the platform (the hostile cases)
    override: dict[str, Callable[[BaseHTTPRequestHandler], None]] = field(default_factory=dict)
    next_url: Callable[[str], str] | None = None  # rewrites the next page's URL (hostile cases)
    tool_key_set: dict[str, Any] = field(default_factory=dict)

    @property
    def memberships_url(self) -> str:
        return f"{self.base}/api/contexts/{CONTEXT}/memberships?limit={PAGE}"


class _Config(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs: Any) -> None:
        self._lms: Lms = kwargs["lms"]
        private, public = kwargs["keys"]
        self._registration = (
            PlatformRegistration()
            .set_iss(self._lms.base)
            .set_client_id(CLIENT_ID)
            .set_deployment_id(DEPLOYMENT)
            .set_platform_private_key(private)
            .set_platform_public_key(public)
            .set_tool_key_set(self._lms.tool_key_set)  # type: ignore[arg-type]
        )

    def get_registration_by_params(self, **kwargs: Any) -> PlatformRegistration:
        assert self._registration is not None
        return self._registration


class _Members(NamesRoleProvisioningService):
    def __init__(self, request: PlatformRequest, config: _Config, lms: Lms) -> None:
        super().__init__(request, config, f"{lms.base}/api/contexts/{CONTEXT}/memberships")
        self.lms = lms

    def get_member_data_page(
        self, page: int = 1, limit: int | None = None, role: str | None = None, since: str | None = None
    ) -> TPage:
        size = limit or len(self.lms.members)
        start = (page - 1) * size
        chunk = self.lms.members[start : start + size]
        return {"content": [dict(m) for m in chunk], "has_next": start + size < len(self.lms.members)}

    def get_context_by_id(self) -> Context:
        return Context(id=CONTEXT, label="CS-NRPS", title="Roster course")


class _HttpRequest(PlatformRequest):
    def build_metadata(self, request: Any) -> TRequest:
        handler, body = request
        parts = urlsplit(handler.path)
        query = {k: int(v[0]) if v[0].isdigit() else v[0] for k, v in parse_qs(parts.query).items()}
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        return {
            "method": handler.command,
            "form_data": form,
            "get_data": query,
            "headers": dict(handler.headers),
            "content_type": handler.headers.get("Content-Type"),
            "path": parts.path,
            "json": None,
        }


def _answer(handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.wfile.write(body)


@contextmanager
def _serve(lms: Lms, keys: tuple[str, str]) -> Iterator[Lms]:
    class Handler(BaseHTTPRequestHandler):
        def _dispatch(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path = urlsplit(self.path).path
            lms.requests.append(f"{self.command} {self.path}")
            if path in lms.override:
                lms.override[path](self)
                return
            config = _Config(lms=lms, keys=keys)
            request = _HttpRequest((self, body))
            if path == "/token" and self.command == "POST":
                self._token(config, request)
            elif path == f"/api/contexts/{CONTEXT}/memberships" and self.command == "GET":
                service = _Members(request, config, lms)
                try:
                    answer = service.handle_resp(service.handle_get_members)
                except Exception:  # an invalid bearer token raises from the platform's check
                    answer = None
                if answer is None or answer.code != 200:
                    _answer(self, answer.code if answer else 401, b'{"error": "unauthorized"}')
                    return
                result = dict(answer.result)
                headers = {"Content-Type": answer.media_type}
                following = result.pop("next", None)
                if following:
                    following = lms.next_url(following) if lms.next_url else following
                    headers["Link"] = f'<{following}>; rel="next"'
                _answer(self, 200, json.dumps(result).encode(), headers)
            else:
                _answer(self, 404, b"{}")

        def _token(self, config: _Config, request: _HttpRequest) -> None:
            form = request.form_data
            try:
                # What lti1p3platform leaves out: the assertion is the tool's, for this endpoint.
                claims = jwt.decode(form.get("client_assertion", ""), options={"verify_signature": False})
                assert claims["iss"] == claims["sub"] == CLIENT_ID
                assert claims["aud"] == f"{lms.base}/token"
                config.get_registration()
                answer = config.get_access_token(form)
            except Exception:
                _answer(self, 401, b'{"error": "invalid_client"}')
                return
            lms.tokens_issued += 1
            _answer(self, 200, json.dumps(answer).encode())

        do_GET = _dispatch  # noqa: N815 (the names http.server calls)
        do_POST = _dispatch  # noqa: N815

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    lms.base = f"http://127.0.0.1:{server.server_port}"
    try:
        yield lms
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def lms_keys() -> tuple[str, str]:
    return _pem(rsa.generate_private_key(public_exponent=65537, key_size=2048))


@dataclass
class Setup:
    lms: Lms
    registration: LtiRegistration
    link: CourseLink
    staff: Client


@pytest.fixture
def nrps(cast: Cast, lms_keys: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    tool_key = JWK.generate(kty="RSA", size=2048)
    Key.objects.create_from_jwk(tool_key)
    key = Key.objects.active().latest()
    lms = Lms(tool_key_set={"keys": [ToolRegistration.get_jwk(key.public_key)]})
    with _serve(lms, lms_keys):
        registration = LtiRegistration.objects.create(
            name="Loopback LMS",
            issuer=lms.base,
            client_id=CLIENT_ID,
            auth_url=f"{lms.base}/auth",
            token_url=f"{lms.base}/token",
            keyset_url=f"{lms.base}/jwks",
        )
        deployment = LtiDeployment.objects.create(registration=registration, deployment_id=DEPLOYMENT, is_active=True)
        link = CourseLink.objects.create(deployment=deployment, context_id=CONTEXT, course=cast.course)
        RosterSource.objects.create(link=link, memberships_url=lms.memberships_url, seen_at=time_now())
        yield Setup(lms, registration, link, cast.client(cast.instructor))


def time_now() -> Any:
    from django.utils import timezone

    return timezone.now()


def sync_via_button(setup: Setup, cast: Cast) -> str:
    """Staff press the button; the job it queued runs (as the worker would run it)."""
    response = setup.staff.post("/a/a8/class/lms-roster/")
    assert response.status_code == 302
    job = ProcrastinateJob.objects.filter(task_name="sync_roster", status="todo").order_by("-id").first()
    assert job is not None and job.queue_name == "lms"
    assert job.args == {"course_id": cast.course.pk, "actor_id": cast.instructor.pk}
    ProcrastinateJob.objects.filter(id=job.id).update(status="succeeded")  # taken by the "worker" below
    return lms_roster.sync_course(**job.args)


def lms_user(setup: Setup, number: int) -> User:
    return User.objects.get(username=username_for(setup.lms.base, CLIENT_ID, f"u{number:03d}"))


def roster_of_40(lms: Lms) -> None:
    lms.members = [person(n) for n in range(1, 38)] + [person(38, "Instructor"), person(39, "TeachingAssistant")]
    lms.members.append(
        {**person(40), "roles": [f"{MEMBERSHIP}#Instructor", f"{MEMBERSHIP}#Instructor#TeachingAssistant"]}
    )


def test_it_enrols_forty_members_from_three_pages_with_names_and_roles(cast: Cast, nrps: Setup) -> None:
    roster_of_40(nrps.lms)
    outcome = sync_via_button(nrps, cast)
    assert "40 listed by the LMS, 40 in the course (40 newly enrolled), 0 left" in outcome, outcome
    pages = [r for r in nrps.lms.requests if "/memberships" in r]
    assert len(pages) == 3 and "page=2" in pages[1] and "page=3" in pages[2]
    assert nrps.lms.tokens_issued == 1  # one token, kept for the three pages
    seven = lms_user(nrps, 7)
    assert (seven.first_name, seven.last_name, seven.email) == ("Given7", "Family7", "u7@lms.example.edu")
    assert not seven.has_usable_password()
    roles = {e.user.username[-4:]: e.role for e in Enrolment.objects.filter(course=cast.course).select_related("user")}
    assert (roles["u007"], roles["u038"], roles["u039"], roles["u040"]) == (
        Role.STUDENT,
        Role.INSTRUCTOR,
        Role.TA,
        Role.TA,
    )
    assert LtiUser.objects.filter(registration=nrps.registration).count() == 40
    # Staff see it: the status line, the audit entry, the names.
    page = nrps.staff.get("/a/a8/class/").content.decode()
    assert "Last sync" in page and "40 newly enrolled" in page
    assert f'<span title="{seven.username}">Given7 Family7</span>' in page
    assert AuditEntry.objects.filter(action="lms_roster", actor=cast.instructor, detail__contains="40 listed").exists()
    # Local accounts (the CSV roster's, the cast's) are not the LMS's: untouched.
    assert Enrolment.objects.filter(course=cast.course, left_at__isnull=False).count() == 0


def test_members_who_leave_become_inactive_keep_their_work_and_cannot_submit(cast: Cast, nrps: Setup) -> None:
    roster_of_40(nrps.lms)
    sync_via_button(nrps, cast)
    leaver = lms_user(nrps, 3)
    kept = Submission.objects.create(
        assignment=cast.assignment, user=leaver, kind=Kind.SUBMIT, filename="autograd_lab.py", sha256="0" * 64, size=1
    )
    gone = {"u001", "u002", "u003", "u004", "u005"}
    nrps.lms.members = [m for m in nrps.lms.members if m["user_id"] not in gone]
    nrps.lms.members[0] = {**nrps.lms.members[0], "status": "Inactive"}  # u006: listed, but inactive
    outcome = sync_via_button(nrps, cast)
    assert "6 left" in outcome, outcome
    left = set(
        Enrolment.objects.filter(course=cast.course, left_at__isnull=False).values_list("user__username", flat=True)
    )
    assert {name[-4:] for name in left} == gone | {"u006"}
    assert Submission.objects.filter(pk=kept.pk).exists()  # kept, never deleted
    assert Enrolment.objects.filter(course=cast.course, left_at__isnull=True, user=cast.student).exists()
    # They read their own work, and submit nothing more.
    student = Client()
    student.force_login(leaver)
    assert student.get(f"/submissions/{kept.pk}/").status_code == 200
    refused = student.post("/a/a8/", {"kind": "submit", "file": _upload()})
    assert refused.status_code == 403 and b"no longer enrolled" in refused.content
    assert Submission.objects.filter(user=leaver).count() == 1
    page = nrps.staff.get("/a/a8/class/").content.decode()
    assert "left the course" in page
    # Listed again: back in the course.
    nrps.lms.members.append(person(3))
    assert "1 newly enrolled" not in sync_via_button(nrps, cast)
    assert Enrolment.objects.get(course=cast.course, user=leaver).left_at is None


def _upload() -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("autograd_lab.py", GOOD)


def test_it_never_sends_its_token_to_a_host_that_is_not_the_platforms(cast: Cast, nrps: Setup) -> None:
    roster_of_40(nrps.lms)
    elsewhere = nrps.lms.memberships_url.replace("127.0.0.1", "localhost")  # same machine, another host name
    with pytest.raises(RosterRefused, match="not on this LMS's registered host"):
        check_service_url(elsewhere, nrps.registration)
    RosterSource.objects.filter(link=nrps.link).update(memberships_url=elsewhere)
    outcome = sync_via_button(nrps, cast)
    assert outcome.startswith("failed:") and "registered host" in outcome
    assert nrps.lms.requests == [] and nrps.lms.tokens_issued == 0
    assert "failed: the roster address is on localhost" in nrps.staff.get("/a/a8/class/").content.decode()
    assert not Enrolment.objects.filter(user__username__startswith="lti-").exists()


def test_a_roster_on_a_host_in_lti_service_hosts_is_read_and_any_other_host_gets_no_token(
    cast: Cast, nrps: Setup, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    roster_of_40(nrps.lms)
    port = nrps.lms.base.rsplit(":", 1)[1]
    # The school's own domain serves the roster (as Canvas does): named by the operator.
    settings.LTI_SERVICE_HOSTS = (f"localhost:{port}",)
    school = nrps.lms.memberships_url.replace("127.0.0.1", "localhost")
    assert check_service_url(school, nrps.registration) == school
    RosterSource.objects.filter(link=nrps.link).update(memberships_url=school)
    outcome = sync_via_button(nrps, cast)
    assert "40 listed by the LMS, 40 in the course" in outcome, outcome
    # Another host, or the named host on another port, is refused before any token is asked for.
    issued, asked = nrps.lms.tokens_issued, len(nrps.lms.requests)
    for stranger in (school.replace("localhost", "127.0.0.2"), school.replace(f":{port}", ":1")):
        with pytest.raises(RosterRefused, match="not on this LMS's registered host"):
            check_service_url(stranger, nrps.registration)
        RosterSource.objects.filter(link=nrps.link).update(memberships_url=stranger)
        assert "registered host" in sync_via_button(nrps, cast)
    assert (nrps.lms.tokens_issued, len(nrps.lms.requests)) == (issued, asked)


def test_a_next_page_on_another_host_stops_the_sync_and_changes_nothing(cast: Cast, nrps: Setup) -> None:
    roster_of_40(nrps.lms)
    nrps.lms.next_url = lambda url: url.replace("127.0.0.1", "localhost")
    outcome = sync_via_button(nrps, cast)
    assert "registered host" in outcome
    assert len([r for r in nrps.lms.requests if "/memberships" in r]) == 1  # page 2 never asked for
    assert not Enrolment.objects.filter(user__username__startswith="lti-").exists()  # page 1 not applied either


def _slow(seconds: float) -> Callable[[BaseHTTPRequestHandler], None]:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        time.sleep(seconds)
        _answer(handler, 200, b'{"access_token": "late"}')

    return answer


@pytest.mark.parametrize(
    ("path", "behaviour", "said"),
    [
        ("/token", _slow(4), "did not answer within 1 s"),
        ("/token", lambda h: _answer(h, 200, b'{"token_type": "bearer"}'), "not the JSON"),
        ("/token", lambda h: _answer(h, 400, b'{"error": "invalid_client"}'), "refused the request (HTTP 400)"),
        (f"/api/contexts/{CONTEXT}/memberships", lambda h: _answer(h, 200, b"x" * 9000), "larger than 8192 bytes"),
        (f"/api/contexts/{CONTEXT}/memberships", lambda h: _answer(h, 200, b"{not json"), "not the JSON"),
        (f"/api/contexts/{CONTEXT}/memberships", lambda h: _answer(h, 200, b"[" * 4000 + b"]" * 4000), "not the JSON"),
        (f"/api/contexts/{CONTEXT}/memberships", lambda h: _answer(h, 200, b'{"members": 7}'), "not a membership"),
        (
            f"/api/contexts/{CONTEXT}/memberships",
            lambda h: _answer(h, 302, b"", {"Location": "http://localhost/steal"}),
            "a redirect",
        ),
    ],
)
def test_a_hostile_or_broken_platform_is_bounded_recorded_and_shown(
    cast: Cast, nrps: Setup, settings: Any, path: str, behaviour: Any, said: str
) -> None:
    settings.LTI_SERVICE_TIMEOUT_SECONDS = 1
    settings.LTI_ROSTER_PAGE_BYTES = 8192
    roster_of_40(nrps.lms)
    sync_via_button(nrps, cast)  # a good sync first: a failed one must not make anyone leave
    nrps.lms.override[path] = behaviour
    outcome = sync_via_button(nrps, cast)
    assert outcome.startswith("failed:") and said in outcome, outcome
    sync = RosterSync.objects.get(course=cast.course)
    assert sync.ok is False and said in sync.message
    assert said in nrps.staff.get("/a/a8/class/").content.decode().replace("&#x27;", "'")
    assert (
        Enrolment.objects.filter(course=cast.course, left_at__isnull=True, user__username__startswith="lti-").count()
        == 40
    )


def test_more_pages_than_the_cap_is_a_failure_not_a_partial_roster(cast: Cast, nrps: Setup, settings: Any) -> None:
    settings.LTI_ROSTER_MAX_PAGES = 2
    roster_of_40(nrps.lms)
    assert "more than 2 pages" in sync_via_button(nrps, cast)
    assert not Enrolment.objects.filter(user__username__startswith="lti-").exists()


def test_only_course_staff_may_ask_for_a_sync(cast: Cast, nrps: Setup) -> None:
    for user in (cast.student, cast.outsider):
        assert cast.client(user).post("/a/a8/class/lms-roster/").status_code == 404
    assert cast.client(cast.ta).get("/a/a8/class/lms-roster/").status_code == 405
    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(cast.instructor)
    assert csrf.post("/a/a8/class/lms-roster/").status_code == 403
    assert not ProcrastinateJob.objects.filter(task_name="sync_roster", status="todo").exists()


# --- launches: the memberships URL remembered, a sync asked for, a leaver back -----------------


def _nrps_claim(url: str) -> dict[str, Any]:
    return {NRPS_CLAIM: {"context_memberships_url": url, "service_versions": ["2.0"]}}


def test_an_instructor_launch_remembers_the_roster_address_and_queues_one_sync(
    cast: Cast,
    platform: LaunchPlatform,  # noqa: F811 (the fixture imported above)
) -> None:
    url = "https://lms.example.edu/api/lti/courses/7/names_and_roles"
    assert launch(Client(), platform.key, sub="teacher-1", roles=[INSTRUCTOR], **_nrps_claim(url)).status_code == 302
    source = RosterSource.objects.get(link__course=cast.course)
    assert source.memberships_url == url
    jobs = ProcrastinateJob.objects.filter(task_name="sync_roster", queue_name="lms")
    assert jobs.count() == 1
    # Within LTI_ROSTER_EVERY_MINUTES, another instructor launch queues nothing more.
    ProcrastinateJob.objects.filter(task_name="sync_roster").update(status="succeeded")
    assert launch(Client(), platform.key, sub="teacher-1", roles=[INSTRUCTOR], **_nrps_claim(url)).status_code == 302
    assert jobs.count() == 1
    # A student's launch never does.
    RosterSync.objects.update(requested_at=None)
    assert launch(Client(), platform.key, sub="student-9", roles=[LEARNER], **_nrps_claim(url)).status_code == 302
    assert jobs.count() == 1


def test_a_launch_naming_a_foreign_roster_address_is_not_remembered(
    cast: Cast,
    platform: LaunchPlatform,  # noqa: F811 (the fixture imported above)
) -> None:
    claim = _nrps_claim("https://attacker.example.net/names_and_roles")
    assert launch(Client(), platform.key, sub="teacher-1", roles=[INSTRUCTOR], **claim).status_code == 302
    assert not RosterSource.objects.exists()
    assert not ProcrastinateJob.objects.filter(task_name="sync_roster").exists()


def test_a_launch_brings_back_someone_who_had_left(
    cast: Cast,
    platform: LaunchPlatform,  # noqa: F811 (the fixture imported above)
) -> None:
    assert launch(Client(), platform.key, sub="student-5").status_code == 302
    enrolment = Enrolment.objects.get(course=cast.course, user__username__endswith="-student-5")
    Enrolment.objects.filter(pk=enrolment.pk).update(left_at=time_now())
    assert launch(Client(), platform.key, sub="student-5").status_code == 302
    enrolment.refresh_from_db()
    assert enrolment.left_at is None


def test_a_worker_on_the_lms_queue_runs_the_sync(cast: Cast, nrps: Setup, transactional_db: Any) -> None:
    from procrastinate.contrib.django import app
    from procrastinate.contrib.django.django_connector import DjangoConnector

    roster_of_40(nrps.lms)
    assert nrps.staff.post("/a/a8/class/lms-roster/").status_code == 302
    assert "A sync is waiting for the worker." in nrps.staff.get("/a/a8/class/").content.decode()
    assert isinstance(app.connector, DjangoConnector)
    with app.replace_connector(app.connector.get_worker_connector()):
        app.run_worker(queues=["lms"], wait=False, concurrency=1, install_signal_handlers=False, listen_notify=False)
    job = ProcrastinateJob.objects.filter(task_name="sync_roster").order_by("-id").first()
    assert job is not None and job.status == "succeeded"
    assert Enrolment.objects.filter(course=cast.course, user__username__startswith="lti-").count() == 40
    page = nrps.staff.get("/a/a8/class/").content.decode()
    assert "40 newly enrolled" in page and "waiting for the worker" not in page
