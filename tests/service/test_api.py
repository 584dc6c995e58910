"""The JSON API: receipts, limits, bad input, and that nobody reads another's submissions."""

from __future__ import annotations

import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from service_cast import BUGGY, GOOD, Cast

from service.accounts.models import ApiToken
from service.submissions.models import State, Submission

pytestmark = [pytest.mark.db]


def api(cast: Cast, user: object) -> tuple[Client, dict[str, str]]:
    token = ApiToken.issue(user)  # type: ignore[arg-type]
    return Client(), {"HTTP_AUTHORIZATION": f"Token {token}"}


def post(client: Client, headers: dict[str, str], slug: str, kind: str, body: bytes, name: str = "autograd_lab.py"):
    return client.post(
        f"/api/v1/assignments/{slug}/submissions",
        {"kind": kind, "file": SimpleUploadedFile(name, body)},
        **headers,
    )


def test_it_receipts_an_upload_and_queues_it_in_the_same_transaction(cast: Cast) -> None:
    client, headers = api(cast, cast.student)
    response = post(client, headers, "a8", "submit", BUGGY)
    assert response.status_code == 201
    body = response.json()
    assert set(body) >= {"id", "received_at", "sha256", "kind", "status", "queue_position"}
    assert body["sha256"] == hashlib.sha256(BUGGY).hexdigest()
    assert (body["kind"], body["status"], body["queue_position"]) == ("submit", "queued", 1)
    stored = Submission.objects.get(pk=body["id"])
    assert bytes(stored.content) == BUGGY and stored.job_id is not None
    from procrastinate.contrib.django.models import ProcrastinateJob

    job = ProcrastinateJob.objects.get(id=stored.job_id)
    from service.fleet.identity import current_recipe

    queue = f"submit.{current_recipe()}"  # the lane, and the sandbox recipe it must be graded with
    assert (job.task_name, job.args, job.queue_name) == ("grade_submission", {"submission_id": stored.pk}, queue)
    assert stored.recipe == current_recipe() and len(stored.rubric_sha256) == 64


def test_it_refuses_a_missing_or_wrong_token(cast: Cast) -> None:
    client = Client()
    assert client.get("/api/v1/submissions/1").status_code == 401
    bad = client.get("/api/v1/submissions/1", HTTP_AUTHORIZATION="Token agt_nottherealtoken1234567890")
    assert bad.status_code == 401 and "error" in bad.json()


def test_a_student_cannot_read_another_students_submission(cast: Cast) -> None:
    client, headers = api(cast, cast.student)
    mine = post(client, headers, "a8", "self_check", GOOD).json()["id"]
    other_client, other_headers = api(cast, cast.student2)
    others = other_client.get(f"/api/v1/submissions/{mine}", **other_headers)
    assert others.status_code == 404 and others.json() == {"error": "no such resource"}
    outsider_client, outsider_headers = api(cast, cast.outsider)
    assert outsider_client.get(f"/api/v1/submissions/{mine}", **outsider_headers).status_code == 404
    assert outsider_client.get("/api/v1/submissions/999999", **outsider_headers).status_code == 404
    staff_client, staff_headers = api(cast, cast.ta)
    assert staff_client.get(f"/api/v1/submissions/{mine}", **staff_headers).status_code == 200


def test_every_api_error_is_json_django_s_own_too(cast: Cast) -> None:
    client, headers = api(cast, cast.student)
    nowhere = client.get("/api/v1/nowhere", **headers)
    assert nowhere.status_code == 404 and nowhere.json() == {"error": "no such resource"}
    wrong_method = client.get("/api/v1/assignments/a8/submissions", **headers)
    assert wrong_method.status_code == 405 and "GET" in wrong_method.json()["error"]
    assert wrong_method["Allow"] == "POST"
    unknown = client.post("/api/v1/assignments/zz/submissions", {"kind": "submit"}, **headers)
    assert unknown.status_code == 404 and "error" in unknown.json()


def test_an_outsider_cannot_submit_to_another_course(cast: Cast) -> None:
    client, headers = api(cast, cast.outsider)
    assert post(client, headers, "a8", "submit", GOOD).status_code == 404
    assert post(client, headers, "no-such-assignment", "submit", GOOD).status_code == 404


@pytest.mark.parametrize(
    ("name", "body", "words"),
    [
        ("autograd_lab.py", b"", "is empty"),
        ("autograd_lab.py", b"\x00\x01binary", "not a text file"),
        ("autograd_lab.py", "x = '\u00e9'".encode("latin-1"), "UTF-8"),
        ("autograd_lab.txt", GOOD, "not a Python file"),
        ("autograd_lab.py", b"#" * (1024 * 1024 + 10), "limit"),
    ],
)
def test_bad_input_is_stored_with_its_reason_and_never_queued(cast: Cast, name: str, body: bytes, words: str) -> None:
    client, headers = api(cast, cast.student)
    response = post(client, headers, "a8", "submit", body, name)
    assert response.status_code == 201
    stored = Submission.objects.get(pk=response.json()["id"])
    assert stored.state == State.UNGRADABLE and words in stored.problem and stored.job_id is None


def test_a_new_submit_supersedes_the_queued_one(cast: Cast) -> None:
    client, headers = api(cast, cast.student)
    first = post(client, headers, "a8", "submit", BUGGY).json()["id"]
    second = post(client, headers, "a8", "submit", GOOD).json()["id"]
    older = Submission.objects.get(pk=first)
    assert older.state == State.SUPERSEDED and f"#{second}" in older.detail
    assert client.get(f"/api/v1/submissions/{first}", **headers).json()["status"] == "superseded"
    assert Submission.objects.get(pk=second).state == State.QUEUED


def test_self_checks_are_rate_limited_with_retry_after(cast: Cast, settings: object) -> None:
    settings.SELF_CHECKS_PER_WINDOW = 2  # type: ignore[attr-defined]
    client, headers = api(cast, cast.student)
    assert [post(client, headers, "a8", "self_check", GOOD).status_code for _ in range(2)] == [201, 201]
    refused = post(client, headers, "a8", "self_check", GOOD)
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "self-check limit" in refused.json()["error"]
    # Counted submissions are not rate limited, and another student has their own bucket.
    assert post(client, headers, "a8", "submit", GOOD).status_code == 201
    other_client, other_headers = api(cast, cast.student2)
    assert post(other_client, other_headers, "a8", "self_check", GOOD).status_code == 201


def test_a_full_queue_refuses_self_checks_but_still_receipts_submissions(cast: Cast, settings: object) -> None:
    settings.QUEUE_LIMIT = 1  # type: ignore[attr-defined]
    client, headers = api(cast, cast.student)
    assert post(client, headers, "a8", "submit", GOOD).status_code == 201
    refused = post(client, headers, "a8", "self_check", GOOD)
    assert refused.status_code == 503 and refused["Retry-After"] == "60"
    assert post(client, headers, "a8", "submit", BUGGY).status_code == 201


def test_a_class_regrade_however_long_turns_no_self_check_away(cast: Cast, settings: object) -> None:
    from service.submissions.models import State, Submission

    settings.QUEUE_LIMIT = 2  # type: ignore[attr-defined]
    client, headers = api(cast, cast.student)
    ids = [post(client, headers, "a8", "submit", GOOD).json()["id"] for _ in range(3)]
    Submission.objects.filter(pk__in=ids).update(state=State.GRADED, score=100.0, max_score=100.0)
    staff = cast.client(cast.instructor)
    assert staff.post("/a/a8/class/regrade/", {"which": "all"}).status_code == 302
    assert Submission.objects.filter(lane="regrade", state=State.QUEUED).count() == 3  # past the limit
    assert post(client, headers, "a8", "self_check", GOOD).status_code == 201


def test_kind_and_file_are_required(cast: Cast) -> None:
    client, headers = api(cast, cast.student)
    assert post(client, headers, "a8", "resubmit", GOOD).status_code == 400
    missing = client.post("/api/v1/assignments/a8/submissions", {"kind": "submit"}, **headers)
    assert missing.status_code == 400 and "file" in missing.json()["error"]


def test_a_huge_body_is_refused_before_it_is_read(cast: Cast) -> None:
    client, headers = api(cast, cast.student)
    response = client.post(
        "/api/v1/assignments/a8/submissions",
        {"kind": "submit", "file": SimpleUploadedFile("autograd_lab.py", b"#" * (3 * 1024 * 1024))},
        **headers,
    )
    assert response.status_code == 413 and "larger than" in response.json()["error"]
    assert not Submission.objects.exists()
