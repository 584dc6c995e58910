"""Every HTML route of the service, found by walking its URL patterns (the admin and the JSON
API aside: schemathesis covers the API), sent hostile path values, query strings and forms
as an anonymous visitor, a student and an instructor. Nothing may answer 500 or end in an
unhandled exception: a request that cannot be served is refused with a 4xx that says why.

Hypothesis draws the requests, derandomized: the same requests each run."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import hypothesis
import pytest
from django.contrib.auth.forms import AuthenticationForm
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.signals import got_request_exception
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import strategies as st
from service_cast import BUGGY, GOOD, REPO, Cast
from test_review_requests import graded_result

from grader.results_io import result_to_json
from service.submissions.intake import receive
from service.submissions.models import Kind, ReviewRequest, State, Submission

pytestmark = [pytest.mark.db]

SKIPPED = ("admin/", "api/")  # Django's own admin; the API has its schemathesis run
EXAMPLES = 12  # per route: drawn combinations beyond the systematic passes
PLACEHOLDER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


@dataclass(frozen=True)
class Route:
    template: str  # as written in the URL modules, e.g. a/<assignment:slug>/class/
    name: str | None

    @property
    def parameters(self) -> list[str]:
        return [match["name"] for match in PLACEHOLDER.finditer(self.template)]

    def fill(self, values: dict[str, str]) -> str:
        return "/" + PLACEHOLDER.sub(lambda match: values[match["name"]], self.template)


def _walk(patterns: list[URLPattern | URLResolver], prefix: str = "") -> Iterator[Route]:
    for entry in patterns:
        route = prefix + str(entry.pattern)
        if route.startswith(SKIPPED):
            continue
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, route)
        else:
            yield Route(route, entry.name)


ROUTES = list(_walk(get_resolver().url_patterns))

# The fields the service's forms send (read from its templates), the sign-in form's, and the
# parameters an LMS sends to the LTI login and launch (IMS LTI 1.3 and OIDC).
TEMPLATE_FIELDS = {
    match
    for path in (REPO / "service").rglob("*.html")
    for match in re.findall(r'<(?:input|select|textarea|button)[^>]*\bname="([^"]+)"', path.read_text())
}
FIELDS = sorted(
    TEMPLATE_FIELDS
    | set(AuthenticationForm.base_fields)
    | {"iss", "login_hint", "target_link_uri", "client_id", "lti_message_hint", "lti_deployment_id"}
    | {"id_token", "state", "json", "csrfmiddlewaretoken"}
    | {"check", "message"}  # the review request form under each check of the grader's feedback page
)
FILE_FIELDS = sorted(
    match
    for path in (REPO / "service").rglob("*.html")
    for match in re.findall(r'<input[^>]*\btype="file"[^>]*\bname="([^"]+)"', path.read_text())
)

# Values no form of the service sends: each has broken a web service somewhere.
HOSTILE_TEXT = [
    "",
    " ",
    "\x00",
    "a8\x00",
    "x" * 5000,
    "nan",
    "inf",
    "-inf",
    "1e309",
    "-1",
    "9" * 30,
    "1_000",
    "\uff11\uff12",  # full-width digits: Python's float() reads them
    "..",
    "../../etc/passwd",
    "<script>alert(1)</script>",
    "ü€😀",
    "\u202e",
    "'; DROP TABLE x; --",
    "%00",
    "9999-12-31T23:59",
    "0001-01-01T00:00",
]
# Path segments, already as they travel (the test client decodes escapes as a server does).
HOSTILE_SEGMENTS = [
    "%00",
    "a8%00",
    "a8%00x",
    "x" * 5000,
    "%ff",
    "%c3%28",
    "%ed%a0%80",  # an encoded surrogate: not UTF-8
    "99999999999999999999999999999",
    "9223372036854775808",  # one past bigint
    "-1",
    "0",
    "..",
    "%2e%2e",
    "%C3%BC",
    "A8",
    "a8%20",
    "grades.csv%00",
]
# A form each view would accept, field by field: one hostile field among valid ones gets past
# the checks of the others (an override reason is only stored when its score is valid).
BASELINE = {
    "kind": "self_check",
    "which": "latest",
    "score": "1",
    "reason": "checked by hand",
    "due_at": "2090-01-01T00:00",
    "hard_close_at": "",
    "grace_minutes": "0",
    "late_penalty_per_day": "0",
    "counted": "latest",
    "hidden_details": "visible",
    "username": "alice",
    "password": "a-long-enough-password",
    "next": "/",
    "assignment": "a8",  # the deep-linking picker's choice
    "course": "c1",  # the picker's course to link an LMS course to
    "JWT": "x",  # the deep-linking answer, posted to the LMS (never to us)
    "check": "api.check1",  # a review request's check, and the student's words
    "message": "please look again",
    "answer": "looked again",  # staff's answer to it
    "back": "sort=total&dir=desc",  # the class view a staff form returns to
    "sort": "name",  # the class view's filter bar (a GET form)
    "dir": "asc",
    "show": "all",
    "status": "",
    "q": "alice",
}
CORE_HOSTILE = ["\x00", "x" * 5000, "nan", "9" * 30, "\uff11\uff12"]
HOSTILE_UPLOADS = [
    ("a\x00.py", GOOD),
    ("roster.csv", b"username,email,name\nbob,b@x.org,B\x00"),
    ("x.py", b"\xff\x00"),
]
RAW_FORM_PIECES = ["x=%ff", "x=%00", "%ff=1", "reason=%c3%28", "score=%00", "a=%zz", "&&=="]


@pytest.fixture
def known(cast: Cast, settings: Any) -> dict[str, list[str]]:
    """Path values that exist, so that hostile forms reach the views behind them."""
    settings.SELF_CHECKS_PER_WINDOW = settings.SUBMITS_PER_WINDOW = 10_000
    graded = receive(cast.assignment, cast.student, Kind.SUBMIT, "autograd_lab.py", BUGGY)
    queued = receive(cast.assignment, cast.student, Kind.SELF_CHECK, "autograd_lab.py", GOOD)
    assert isinstance(graded, Submission) and isinstance(queued, Submission)
    Submission.objects.filter(pk=graded.pk).update(
        state=State.GRADED, score=50.0, max_score=100.0, result_json=result_to_json(graded_result("alice"))
    )
    review = ReviewRequest.objects.create(
        submission=graded, student=cast.student, assignment=cast.assignment, check_id="api.check1", check_title="t"
    )
    return {
        "slug": ["a8", "b1"],
        "submission_id": [str(graded.pk), str(queued.pk)],
        "kind": ["grades.csv", "canvas.csv", "gradescope.json", "prairielearn.json", "nothing.csv"],
        "code": ["no-such-registration-code"],
        "request_id": [str(review.pk)],
    }


def _segment(known: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(known or ["x"]),
        st.sampled_from(HOSTILE_SEGMENTS),
        st.text(min_size=1, max_size=40).map(lambda text: quote(text, safe="")),
    )


def _value() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=60))


def _fields() -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=20)), _value(), max_size=6)


def _upload() -> st.SearchStrategy[SimpleUploadedFile]:
    names = st.one_of(st.sampled_from(["autograd_lab.py", "roster.csv", "a\x00.py", "é.py", "x" * 300]), st.text())
    contents = st.one_of(
        st.sampled_from([GOOD, b"", b"\x00" * 10, b"\xff\xfe\xfd", b"username,email,name\nbob\x00,b@x.org,B\x00"]),
        st.binary(max_size=200),
        st.text(max_size=200).map(str.encode),
    )
    return st.builds(lambda name, body: SimpleUploadedFile(name or "f", body), names, contents)


@dataclass
class Seen:
    """Every request that answered 500 or raised, as (method, URL, who, what)."""

    failures: list[tuple[str, str, str, str]]
    statuses: dict[str, set[int]]


def _send(client: Client, method: str, url: str, draw: st.DrawFn) -> Any:
    query = draw(_fields())
    if query or draw(st.booleans()):
        url += "?" + urlencode(query) + draw(st.sampled_from(["", "&x=%ff", "&x=%00", "&%ff"]))
    if method == "GET":
        return client.get(url)
    form = draw(_fields())
    encoding = draw(st.sampled_from(["urlencoded", "multipart", "raw"]))
    if encoding == "multipart":
        files = draw(st.dictionaries(st.sampled_from(FILE_FIELDS), _upload(), max_size=2))
        return client.post(url, {**form, **files})
    body = urlencode(form)
    if encoding == "raw":
        body += "&" + "&".join(draw(st.lists(st.sampled_from(RAW_FORM_PIECES), min_size=1, max_size=3)))
    return client.post(url, body.encode(), content_type="application/x-www-form-urlencoded")


def _fuzz(route: Route, known: dict[str, list[str]], cast: Cast, seen: Seen) -> None:
    people = {"anonymous": None, "student": cast.student, "instructor": cast.instructor}

    @hypothesis.settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(hypothesis.HealthCheck),
        phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
    )
    @hypothesis.given(data=st.data())
    def one(data: st.DataObject) -> None:
        who = data.draw(st.sampled_from(sorted(people)))
        method = data.draw(st.sampled_from(["GET", "POST"]))
        values = {name: data.draw(_segment(known.get(name, []))) for name in route.parameters}
        url = route.fill(values)
        client = Client(raise_request_exception=False)
        user = people[who]
        if user is not None:
            client.force_login(user)
        raised: list[BaseException] = []

        def record(sender: object, **kwargs: object) -> None:
            error = sys.exc_info()[1]  # the signal is sent from inside the handler's except block
            if error is not None:
                raised.append(error)

        got_request_exception.connect(record)
        try:
            response = _send(client, method, url, data.draw)
        finally:
            got_request_exception.disconnect(record)
        seen.statuses.setdefault(route.template, set()).add(response.status_code)
        if response.status_code >= 500 or raised:
            what = repr(raised[0]) if raised else f"status {response.status_code}"
            seen.failures.append((method, url[:200], who, what[:300]))

    one()


def _client(user: Any) -> Client:
    client = Client(raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    return client


def _check(response: Any, method: str, url: str, who: str, seen: Seen) -> None:
    seen.statuses.setdefault(url.split("?")[0][:80], set()).add(response.status_code)
    if response.status_code >= 500 or getattr(response, "exc_info", None):
        seen.failures.append((method, url[:200], who, f"status {response.status_code}"))


def _valid(route: Route, known: dict[str, list[str]]) -> str:
    return route.fill({name: known[name][0] for name in route.parameters})


def test_routes_are_found_by_walking_the_url_patterns() -> None:
    templates = {route.template for route in ROUTES}
    assert {"a/<assignment:slug>/", "submissions/<row:submission_id>/override/", "lti/launch/"} <= templates
    assert not any(template.startswith(SKIPPED) for template in templates)
    assert len(ROUTES) >= 20


def test_every_form_field_has_a_baseline_value() -> None:
    # A new form field must be given one here, or the field passes below would skip it.
    assert set(TEMPLATE_FIELDS) - set(FILE_FIELDS) <= set(BASELINE)


def test_each_hostile_path_value_in_each_parameter_is_refused_not_an_error(
    cast: Cast, known: dict[str, list[str]]
) -> None:
    seen = Seen([], {})
    client = _client(cast.instructor)  # staff pass every gate a student does
    for route in ROUTES:
        for name in route.parameters:
            for hostile in HOSTILE_SEGMENTS:
                url = route.fill({other: known[other][0] for other in route.parameters} | {name: hostile})
                for method in ("GET", "POST"):
                    response = client.get(url) if method == "GET" else client.post(url, BASELINE)
                    _check(response, method, url, "instructor", seen)
                    assert response.status_code in (400, 404, 405), (method, url[:100], response.status_code)
    assert not seen.failures, "\n".join(" ".join(failure) for failure in seen.failures)


def test_each_hostile_value_in_each_form_field_is_refused_not_an_error(cast: Cast, known: dict[str, list[str]]) -> None:
    seen = Seen([], {})
    for route in ROUTES:
        # Staff reach every form a student does; a fresh client per route, since a refused LTI
        # launch or a sign-out ends the session it came with.
        client = _client(cast.instructor)
        url = _valid(route, known)
        if route.name == "logout" or client.post(url, BASELINE).status_code == 405:
            continue  # a view that takes no form reads none; the random pass signs out
        for field in sorted(BASELINE):
            for hostile in CORE_HOSTILE:
                sent = f"{url} {field}={hostile[:9]!r}"
                _check(client.post(url, {**BASELINE, field: hostile}), "POST", sent, "instructor", seen)
        for field in FILE_FIELDS:
            for upload in HOSTILE_UPLOADS:
                sent = f"{url} {field}={upload[0]!r}"
                _check(
                    client.post(url, {**BASELINE, field: SimpleUploadedFile(*upload)}), "POST", sent, "instructor", seen
                )
    for who, user in (("student", cast.student), ("instructor", cast.instructor)):
        for route in ROUTES:  # queries: every field at once, each hostile value in turn
            client = _client(user)
            for hostile in CORE_HOSTILE[1:]:
                url = _valid(route, known) + "?" + urlencode({field: hostile for field in FIELDS})
                _check(client.get(url), "GET", url, who, seen)
            url = _valid(route, known) + "?" + urlencode({field: "a\x00" for field in FIELDS})  # refused first
            response = client.get(url)
            _check(response, "GET", url, who, seen)
            assert response.status_code == 400 and b"NUL" in response.content
    assert not seen.failures, "\n".join(" ".join(failure) for failure in seen.failures)
    # The pass reached past the gates: forms refused with a reason, and some accepted.
    assert {302, 400} <= set().union(*seen.statuses.values())


def test_random_hostile_requests_as_anyone_never_meet_a_server_error(cast: Cast, known: dict[str, list[str]]) -> None:
    seen = Seen([], {})
    for route in ROUTES:
        _fuzz(route, known, cast, seen)
    assert not seen.failures, "\n".join(" ".join(failure) for failure in seen.failures)
    # The walk reached past the gates: pages served, forms refused, redirects to sign in.
    everything = set().union(*seen.statuses.values())
    assert {200, 302, 400, 404} <= everything
