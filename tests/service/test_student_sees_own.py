"""A student sees their own results and nothing of the machinery that produced them: no sandbox
image (tag or digest), no worker host, no runner, on any page or JSON body they can reach.
Staff still see all of it. Graded through the real path: the queue, a registered worker, the
Docker sandbox."""

from __future__ import annotations

import re
import socket
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from service_cast import BUGGY, GOOD, Cast
from service_worker import work

from grader.results_io import result_from_json
from service.accounts.models import ApiToken
from service.fleet.identity import current_recipe
from service.fleet.registry import Identity, Registration
from service.submissions.models import GradingRun, State, Submission
from service.submissions.queue import LANES

pytestmark = [pytest.mark.db]


def sandbox_image() -> tuple[str, str]:
    """The sandbox image's tag and digest, as a worker registers them (gradeworker's own way)."""
    from grader.docker_engine import docker_client
    from grader.image import ensure_image

    tag = ensure_image(log=lambda line: None)
    return tag, str(docker_client().images.get(tag).id)


def upload(client: Client, kind: str, body: bytes) -> int:
    response = client.post("/a/a8/", {"kind": kind, "file": SimpleUploadedFile("autograd_lab.py", body)})
    assert response.status_code == 302, response.content[:500]
    return int(response["Location"].strip("/").split("/")[-1])


def bodies(client: Client, pk: int, api_headers: dict[str, str]) -> dict[str, str]:
    """Every page and JSON body a viewer reaches for one submission."""
    answers = {
        "assignment page": client.get("/a/a8/"),
        "submission page": client.get(f"/submissions/{pk}/"),
        "status.json": client.get(f"/submissions/{pk}/status.json"),
        "feedback page": client.get(f"/submissions/{pk}/feedback/"),
        "API submission": Client().get(f"/api/v1/submissions/{pk}", **api_headers),  # type: ignore[arg-type]
    }
    for name, answer in answers.items():
        assert answer.status_code == 200, (name, answer.status_code)
    return {name: answer.content.decode() for name, answer in answers.items()}


def shows(text: str, value: str) -> bool:
    """``value`` in ``text`` as a whole word (a short host name may well occur inside a token)."""
    return re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w.-])", text) is not None


@pytest.mark.docker
@pytest.mark.django_db(transaction=True)
def test_a_student_sees_no_image_host_or_runner_and_staff_still_do(cast: Cast) -> None:
    tag, digest = sandbox_image()
    student = cast.client(cast.student)
    counted = upload(student, "submit", BUGGY)  # its hidden results are withheld until the deadline
    self_check = upload(student, "self_check", GOOD)  # nothing withheld: another path of the view
    with Registration(Identity(current_recipe(), tag, digest, LANES, 1)):
        work()

    token = ApiToken.issue(cast.student)
    headers: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Token {token}"}
    staff = cast.client(cast.instructor)
    for pk in (counted, self_check):
        submission = Submission.objects.get(pk=pk)
        assert submission.state == State.GRADED
        run = GradingRun.objects.get(submission=submission)
        result = result_from_json(submission.result_json)
        # What is to be kept from the student, as this submission's own records hold it.
        host = run.worker.rpartition(":")[0]
        recorded = {
            "run image": run.image_id,
            "result image": result.image,
            "worker": run.worker,
            "host": host,
            "image tag": tag,
        }
        for name, value in recorded.items():
            assert isinstance(value, str) and value, name
        assert run.image_id == digest and run.image_id.startswith("sha256:") and result.image.startswith("sha256:")
        assert host == socket.gethostname() and result.runner == "docker"
        hexes = {run.image_id.removeprefix("sha256:"), result.image.removeprefix("sha256:")}

        for page, body in bodies(student, pk, headers).items():
            for name, value in recorded.items():
                assert not shows(body, value), f"the student's {page} shows the {name} {value!r}"
            for hex_digest in hexes:
                assert hex_digest[:12] not in body, f"the student's {page} shows the image digest"
        feedback = student.get(f"/submissions/{pk}/feedback/").content.decode()
        assert "Runner" not in feedback and "Score" in feedback  # the line is gone, not left empty

        # Staff keep the machinery: which image and which worker graded it.
        staff_page = staff.get(f"/submissions/{pk}/").content.decode()
        assert run.image_id in staff_page and run.worker in staff_page
        staff_feedback = staff.get(f"/submissions/{pk}/feedback/").content.decode()
        assert result.image in staff_feedback and "Runner" in staff_feedback


def test_an_infrastructure_failure_is_told_to_the_student_without_its_machinery(cast: Cast) -> None:
    # The failure's own words name the engine, the image, a container: staff read them, the
    # student reads that it was not their fault.
    from dataclasses import replace

    from grader.results import LoadReport, Status, SubmissionResult
    from grader.results_io import result_to_json

    reason = "cannot look up sandbox image autograd-grader:0123456789ab: 500 Server Error on grader-7"
    result = SubmissionResult(
        "alice", "autograd_lab.py", Status.INFRA_ERROR, 0.0, 100.0, (), (),
        LoadReport(ok=True, mode="full", class_name="Value"), reason, "a8", "0" * 40, 1,
        "docker", "sha256:" + "d" * 64, 1.0,
    )  # fmt: skip
    student = cast.client(cast.student)
    pk = upload(student, "submit", GOOD)
    Submission.objects.filter(pk=pk).update(state=State.INFRA_ERROR, detail=reason, result_json=result_to_json(result))
    for path in (f"/submissions/{pk}/", f"/submissions/{pk}/feedback/"):
        page = student.get(path).content.decode()
        assert "autograd-grader" not in page and "grader-7" not in page and "d" * 12 not in page, path
    assert "not your submission" in student.get(f"/submissions/{pk}/").content.decode()
    staff = cast.client(cast.instructor)
    assert reason in staff.get(f"/submissions/{pk}/").content.decode()
    assert reason in staff.get(f"/submissions/{pk}/feedback/").content.decode()
    # A regrade that failed leaves the earlier result: the student is told that much.
    from service.submissions.models import REGRADE_FAILED

    graded = replace(result, status=Status.GRADED, status_detail="graded", score=50.0)
    Submission.objects.filter(pk=pk).update(
        state=State.GRADED, score=50.0, max_score=100.0, result_json=result_to_json(graded),
        detail=f"{REGRADE_FAILED} ({reason}); the earlier result stands",
    )  # fmt: skip
    page = student.get(f"/submissions/{pk}/").content.decode()
    assert "the earlier result stands" in page and "grader-7" not in page
