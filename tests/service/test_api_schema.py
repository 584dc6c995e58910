"""The JSON API against its own OpenAPI document, by schemathesis: requests generated from the
document (hypothesis, derandomized), sent in-process to the WSGI application as a student with
a real token; no answer may be a server error, and every answer must be one the document
describes (status, content type, body schema)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import hypothesis
import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import strategies
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from service_cast import GOOD, Cast

from service.accounts.models import ApiToken
from service.api.openapi import document
from service.submissions.intake import receive
from service.submissions.models import Kind, Submission

pytestmark = [pytest.mark.db]

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
EXAMPLES = 100  # per operation and mode: every branch of the two views, in seconds


@pytest.fixture
def in_process() -> Iterator[WSGIHandler]:
    """The WSGI application, served in this test's transaction: as with Django's own test
    client, a request's start and end must not close the connection the test's rows live in."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    try:
        yield WSGIHandler()
    finally:
        for signal in (request_started, request_finished):
            signal.connect(close_old_connections)


@pytest.fixture
def as_student(cast: Cast, settings: Any) -> dict[str, str]:
    # Limits high enough that generated uploads are received, not answered 429 after the tenth.
    settings.SELF_CHECKS_PER_WINDOW = settings.SUBMITS_PER_WINDOW = 10_000
    return {"Authorization": f"Token {ApiToken.issue(cast.student)}"}


def test_every_response_is_one_the_document_describes(
    cast: Cast, as_student: dict[str, str], in_process: WSGIHandler
) -> None:
    # Path values that exist, drawn beside generated ones (which almost never do), so that
    # uploads are received and reads answer 200: the student's own and someone else's.
    mine, theirs = (_received(cast, user) for user in (cast.student, cast.student2))
    known: dict[str, list[object]] = {"slug": ["a8", "b1"], "submission_id": [mine, theirs]}
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", in_process)
    seen: dict[str, set[int]] = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            names = [parameter.name for parameter in operation.path_parameters]
            fixed = [{name: value} for name in names for value in known.get(name, [])]
            cases = strategies.one_of(
                operation.as_strategy(mode), *(operation.as_strategy(mode, path_parameters=one) for one in fixed)
            )
            seen[f"{operation.label} {mode}"] = _statuses(cases, as_student)
    # The run reached what it should have: receipts, reads, and the refusals in between.
    assert {201, 404} <= seen["POST /api/v1/assignments/{slug}/submissions positive"]
    assert {400, 404} <= seen["POST /api/v1/assignments/{slug}/submissions negative"]
    assert {200, 404} <= seen["GET /api/v1/submissions/{submission_id} positive"]


def _statuses(cases: strategies.SearchStrategy[schemathesis.Case], headers: dict[str, str]) -> set[int]:
    """Send every case drawn, validate each answer; the statuses met."""
    met: set[int] = set()

    @hypothesis.settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(hypothesis.HealthCheck),
        phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
    )
    @hypothesis.given(case=cases)
    def check(case: schemathesis.Case) -> None:
        met.add(case.call_and_validate(headers=headers, checks=CHECKS).status_code)

    check()
    return met


def _received(cast: Cast, user: User) -> int:
    submission = receive(cast.assignment, user, Kind.SELF_CHECK, "autograd_lab.py", GOOD)
    assert isinstance(submission, Submission)
    return submission.pk


def test_the_document_lists_exactly_what_a_submission_answers(cast: Cast) -> None:
    submission = receive(cast.assignment, cast.student, Kind.SELF_CHECK, "autograd_lab.py", GOOD)
    assert isinstance(submission, Submission)
    described = document()["components"]["schemas"]["Submission"]
    assert set(described["properties"]) == set(submission.to_dict()) | {"queue_position"}
    assert set(described["required"]) == set(described["properties"])


def test_the_document_is_public_and_cacheable(cast: Cast) -> None:
    from django.test import Client

    client = Client()
    first = client.get("/api/v1/openapi.json")
    assert first.status_code == 200 and first.json()["openapi"].startswith("3.")
    assert "public" in first["Cache-Control"] and "max-age=3600" in first["Cache-Control"]
    again = client.get("/api/v1/openapi.json", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304
    assert client.post("/api/v1/openapi.json").status_code == 405
