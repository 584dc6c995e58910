"""Grades to the LMS (LTI Assignment and Grade Services), against an LMS built on lti1p3platform.

A student launches from the LMS (the launch carries the AGS claim), a counted submission is
graded (through the service's own grading code, with the sandbox's result given: no Docker
here, except in the one slow test), and the score must reach the platform's score endpoint:
once, for the right userId, with the student's counted score, never a hidden result before its
release, in order through outages, and never to a host the registration does not name.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from ags_platform import Lms, serve_lms
from cryptography.hazmat.primitives.asymmetric import rsa
from django.db import connection
from django.test import Client, override_settings
from django.utils import timezone
from jwcrypto.jwk import JWK
from lti_tool.models import Key, LtiDeployment, LtiRegistration
from service_cast import GOOD, Cast
from test_lti import CLIENT_ID, CONTEXT, DEPLOYMENT, ISSUER, KID, LEARNER, browser, launch, lti_user

from grader.results import Status, Visibility
from service.courses.models import Assignment, HiddenDetails
from service.lti import ags, passback
from service.lti.claims import AGS_ENDPOINT
from service.lti.models import CourseLink, GradebookLink, LineItem, LmsLearner, ScoreTarget
from service.submissions import grading
from service.submissions.models import AuditEntry, Kind, State, Submission

pytestmark = [pytest.mark.db, pytest.mark.django_db(transaction=True)]

SCOPES = [ags.LINEITEM, ags.SCORE, ags.RESULT_READONLY]


@pytest.fixture(scope="module")
def platform_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def tool_jwk() -> JWK:
    return JWK.generate(kty="RSA", size=2048)


@pytest.fixture
def lms(cast: Cast, platform_key: rsa.RSAPrivateKey, tool_jwk: JWK, monkeypatch: pytest.MonkeyPatch) -> Iterator[Lms]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,127.0.0.2")  # pylti1p3 fetches the key set with requests
    Key.objects.create_from_jwk(tool_jwk)
    ags.forget_tokens()
    # The platform knows the tool's public keys as the tool serves them at /lti/jwks/.
    tool_keys = Client().get("/lti/jwks/").json()
    with serve_lms(platform_key, ISSUER, CLIENT_ID, tool_keys, KID) as platform:
        registration = LtiRegistration.objects.create(
            name="Example LMS",
            issuer=ISSUER,
            client_id=CLIENT_ID,
            auth_url=f"{ISSUER}/auth",
            token_url=f"{platform.base}/token",
            keyset_url=f"{platform.base}/jwks",
        )
        deployment = LtiDeployment.objects.create(registration=registration, deployment_id=DEPLOYMENT, is_active=True)
        CourseLink.objects.create(deployment=deployment, context_id=CONTEXT, course=cast.course)
        Assignment.objects.filter(pk=cast.assignment.pk).update(hidden_details=HiddenDetails.VISIBLE)
        yield platform
    ags.forget_tokens()


def ags_claim(platform: Lms | str, **changes: Any) -> dict[str, Any]:
    base = platform if isinstance(platform, str) else platform.base
    return {"scope": SCOPES, "lineitems": f"{base}/lineitems", **changes}


def student_launch(platform: Lms, sub: str, claim: dict[str, Any] | None = None) -> Client:
    client = browser()
    claims = {AGS_ENDPOINT: claim or ags_claim(platform)}
    response = launch(client, platform.key, sub, [LEARNER], custom={"assignment": "a8"}, **claims)
    assert response.status_code == 302, response.content[:300]
    return client


def learner(sub: str) -> Any:
    return LmsLearner.objects.get(sub=sub).user


def graded(
    monkeypatch: pytest.MonkeyPatch, user: Any, score: float, visible: float = 20.0, submission_id: int | None = None
) -> Submission:
    """A counted submission of ``user`` (or a regrade of ``submission_id``) graded by the service's
    own grading code, with the sandbox's result given: ``score`` of 100, ``visible`` of it from
    the 40 points of visible checks."""
    if submission_id is None:
        submission = Submission.objects.create(
            assignment=Assignment.objects.get(slug="a8"),
            user=user,
            kind=Kind.SUBMIT,
            filename="autograd_lab.py",
            sha256="0" * 64,
            size=len(GOOD),
            content=GOOD,
        )
        submission_id = submission.pk
    checks = (
        SimpleNamespace(visibility=Visibility.VISIBLE, points=visible, max_points=40.0),
        SimpleNamespace(visibility=Visibility.HIDDEN, points=score - visible, max_points=60.0),
    )
    result = SimpleNamespace(
        status=Status.GRADED, seed=None, score=score, max_score=100.0, checks=checks, scored=True, status_detail=""
    )
    monkeypatch.setattr(grading, "runner", lambda: SimpleNamespace())
    monkeypatch.setattr(grading, "grade_source", lambda *args, **kwargs: SimpleNamespace(result=result))
    monkeypatch.setattr(grading, "result_to_json", lambda result: "{}")
    assert grading.grade(submission_id, final_attempt=True) == "graded"
    return Submission.objects.get(pk=submission_id)


def drain(rounds: int = 30, *, finish: bool = True) -> None:
    """Run the lms queue's jobs until none is left (or for ``rounds`` rounds when not
    ``finish``), letting each retry's wait pass at once."""
    from procrastinate.contrib.django import app

    for _ in range(rounds):
        with app.replace_connector(app.connector.get_worker_connector()):
            app.run_worker(queues=["lms"], wait=False, install_signal_handlers=False, listen_notify=False)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE procrastinate_jobs SET scheduled_at = now() WHERE queue_name = 'lms' AND status = 'todo'"
            )
            if cursor.rowcount == 0:
                return
    assert not finish, "the lms queue did not drain"


def jobs(status: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM procrastinate_jobs WHERE queue_name = 'lms' AND status = %s", [status])
        return int(cursor.fetchone()[0])


def test_a_graded_score_reaches_the_lms_once_for_the_students_lms_id(
    cast: Cast, lms: Lms, monkeypatch: pytest.MonkeyPatch
) -> None:
    student_launch(lms, "s-1")
    link = GradebookLink.objects.get()
    assert (link.context_id, link.lineitems_url, link.course) == (CONTEXT, f"{lms.base}/lineitems", cast.course)
    submission = graded(monkeypatch, learner("s-1"), 72.0)
    drain()
    [item] = lms.gradebook.line_items.values()
    assert (item["label"], item["scoreMaximum"], item["resourceId"]) == ("A8", 100, "a8")
    [score] = lms.gradebook.taken_for("s-1")
    assert (score["scoreGiven"], score["scoreMaximum"]) == (72.0, 100)
    assert (score["activityProgress"], score["gradingProgress"]) == ("Completed", "FullyGraded")
    assert f"http://127.0.0.1:8000/submissions/{submission.pk}/feedback/" in score["comment"]
    assert datetime.fromisoformat(score["timestamp"]).tzinfo is not None
    assert [path for _, path, _ in lms.gradebook.answered].count("/lineitems/1/scores") == 1
    # Nothing more to send: running the queue again, or a new push job, sends nothing twice.
    passback.defer_push(ScoreTarget.objects.get().pk)
    drain()
    assert len(lms.gradebook.taken_for("s-1")) == 1
    assert lms.gradebook.tokens_issued == 1  # one token, kept until it expires
    assert LineItem.objects.get().url == item["id"]
    page = cast.client(cast.instructor).get("/a/a8/class/").content.decode()
    assert '<th scope="col">LMS</th>' in page and "<td>sent <form" in page


def test_a_regrade_and_an_override_send_the_new_score(cast: Cast, lms: Lms, monkeypatch: pytest.MonkeyPatch) -> None:
    student_launch(lms, "s-1")
    submission = graded(monkeypatch, learner("s-1"), 72.0)
    drain()
    staff = cast.client(cast.instructor)
    assert staff.post("/a/a8/class/regrade/", {"which": "latest"}).status_code == 302
    graded(monkeypatch, learner("s-1"), 55.0, submission_id=submission.pk)
    drain()
    response = staff.post(f"/submissions/{submission.pk}/override/", {"score": "90", "reason": "a fair reading"})
    assert response.status_code == 302
    drain()
    taken = lms.gradebook.taken_for("s-1")
    assert [s["scoreGiven"] for s in taken] == [72.0, 55.0, 90.0]
    stamps = [datetime.fromisoformat(s["timestamp"]) for s in taken]
    assert stamps == sorted(stamps) and len(set(stamps)) == 3


def test_a_late_policy_change_sends_the_repriced_score(cast: Cast, lms: Lms, monkeypatch: pytest.MonkeyPatch) -> None:
    student_launch(lms, "s-1")
    graded(monkeypatch, learner("s-1"), 80.0)
    drain()
    # The due date moves to before the submission: one started day late at 10% a day.
    Submission.objects.update(received_at=timezone.now() - timedelta(hours=1))
    form = {
        "due_at": (timezone.localtime() - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M"),
        "grace_minutes": "0",
        "late_penalty_per_day": "10",
        "hard_close_at": "",
        "counted": "latest",
        "hidden_details": "visible",
    }
    assert cast.client(cast.instructor).post("/a/a8/class/policy/", form).status_code == 302
    drain()
    assert [s["scoreGiven"] for s in lms.gradebook.taken_for("s-1")] == [80.0, 72.0]


def test_no_hidden_result_reaches_the_lms_before_its_release(
    cast: Cast, lms: Lms, monkeypatch: pytest.MonkeyPatch
) -> None:
    Assignment.objects.filter(pk=cast.assignment.pk).update(hidden_details=HiddenDetails.AFTER_DUE_DATE)
    student_launch(lms, "s-1")
    graded(monkeypatch, learner("s-1"), 83.0, visible=31.0)
    drain()
    [pending] = lms.gradebook.taken_for("s-1")
    assert pending["gradingProgress"] == "Pending" and pending["activityProgress"] == "Submitted"
    assert "scoreGiven" not in pending
    # Numbers that are not scores are left out: the timestamp ("...:31:48.952") and the feedback
    # link's row id (submission 311); any other 83, 52 or 31 would be the score, its hidden part
    # or its visible part.
    assert set(pending) <= {"scoreMaximum", "activityProgress", "gradingProgress", "timestamp", "userId", "comment"}
    body = re.sub(r"/submissions/\d+/", "/submissions/N/", json.dumps({**pending, "timestamp": "T"}))
    assert "/submissions/N/feedback/" in body
    assert re.search(r"(?<![\d.])(83|52|31)(\.\d+)?(?![\d.])", body) is None, body
    # The periodic sweep before the release sends nothing more.
    assert passback.send_released() == 0
    drain()
    assert len(lms.gradebook.taken_for("s-1")) == 1
    # The release comes (the deadline passes): the next sweep sends the score.
    Assignment.objects.filter(pk=cast.assignment.pk).update(due_at=timezone.now() - timedelta(minutes=1))
    assert passback.send_released() == 1
    drain()
    released = lms.gradebook.taken_for("s-1")[-1]
    assert (released["scoreGiven"], released["gradingProgress"]) == (83.0, "FullyGraded")
    assert passback.send_released() == 0  # once


def test_an_lms_down_for_a_while_gets_every_score_in_order_and_none_twice(
    cast: Cast, lms: Lms, monkeypatch: pytest.MonkeyPatch
) -> None:
    student_launch(lms, "s-1")
    student_launch(lms, "s-2")
    lms.gradebook.fail_scores = 1000
    first = graded(monkeypatch, learner("s-1"), 72.0)
    graded(monkeypatch, learner("s-2"), 64.0)
    drain(rounds=2, finish=False)
    assert not lms.gradebook.scores
    assert "waiting: the LMS is not answering" in cast.client(cast.instructor).get("/a/a8/class/").content.decode()
    # A newer score while the LMS is down: the retries send it, never the older one after it.
    staff = cast.client(cast.instructor)
    staff.post(f"/submissions/{first.pk}/override/", {"score": "91", "reason": "regraded by hand"})
    drain()  # every retry spent: the jobs gave up, the cells stay wanted
    assert jobs("failed") == 2 and not lms.gradebook.scores
    assert ScoreTarget.objects.filter(sent_version=0).count() == 2
    lms.gradebook.fail_scores = 0
    assert passback.defer_unsent() == 2  # the periodic sweep
    drain()
    assert [s["scoreGiven"] for s in lms.gradebook.taken_for("s-1")] == [91.0]
    assert [s["scoreGiven"] for s in lms.gradebook.taken_for("s-2")] == [64.0]
    assert not [a for a in lms.gradebook.answered if a[2] == 409]  # no score older than one taken
    assert passback.defer_unsent() == 0
    # Three 503s, then a second override: it arrives after the first, with a later timestamp.
    lms.gradebook.fail_scores = 3
    staff.post(f"/submissions/{first.pk}/override/", {"score": "93", "reason": "one more look"})
    drain()
    taken = lms.gradebook.taken_for("s-1")
    assert [s["scoreGiven"] for s in taken] == [91.0, 93.0]
    assert taken[0]["timestamp"] < taken[1]["timestamp"]


def test_a_refused_score_is_shown_to_staff_and_resent_by_the_button(
    cast: Cast, lms: Lms, monkeypatch: pytest.MonkeyPatch
) -> None:
    student_launch(lms, "s-1")
    user = learner("s-1")
    lms.gradebook.refuse_users = {"s-1"}
    graded(monkeypatch, user, 70.0)
    drain()
    assert not lms.gradebook.scores and jobs("todo") == 0  # a 4xx is not retried on its own
    assert passback.defer_unsent() == 0
    page = cast.client(cast.instructor).get("/a/a8/class/").content.decode()
    assert "not sent to the LMS: the LMS answered 400" in page and "Resend to the LMS" in page
    # Only the course's staff, with the CSRF token, can resend.
    form = {"username": user.username}
    assert cast.client(cast.student).post("/a/a8/class/lms-resend/", form).status_code == 404
    assert cast.client(cast.outsider).post("/a/a8/class/lms-resend/", form).status_code == 404
    forged = Client(enforce_csrf_checks=True)
    forged.force_login(cast.instructor)
    assert forged.post("/a/a8/class/lms-resend/", form).status_code == 403
    assert cast.client(cast.ta).post("/a/a8/class/lms-resend/", {"username": "nobody"}).status_code == 404
    lms.gradebook.refuse_users = set()
    assert cast.client(cast.ta).post("/a/a8/class/lms-resend/", form).status_code == 302
    drain()
    assert [s["scoreGiven"] for s in lms.gradebook.taken_for("s-1")] == [70.0]
    entry = AuditEntry.objects.get(action="lms-resend")
    assert entry.actor == cast.ta and user.username in entry.detail
    assert "<td>sent <form" in cast.client(cast.instructor).get("/a/a8/class/").content.decode()


def test_the_launchs_own_line_item_is_used(cast: Cast, lms: Lms, monkeypatch: pytest.MonkeyPatch) -> None:
    own = f"{lms.base}/lineitems/7"
    lms.gradebook.line_items[own] = {"id": own, "label": "Set in the LMS", "scoreMaximum": 10}
    student_launch(lms, "s-1", ags_claim(lms, lineitem=own))
    graded(monkeypatch, learner("s-1"), 60.0)
    drain()
    assert [li for li, _ in lms.gradebook.scores] == [own]
    assert len(lms.gradebook.line_items) == 1  # none created


def test_ags_urls_on_another_host_get_no_token_and_no_score(
    cast: Cast, lms: Lms, platform_key: rsa.RSAPrivateKey, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    with serve_lms(platform_key, ISSUER, CLIENT_ID, {"keys": []}, KID, host="127.0.0.2") as elsewhere:
        with caplog.at_level(logging.WARNING, logger="service.lti.gradebook"):
            student_launch(lms, "s-1", ags_claim(elsewhere))
            student_launch(lms, "s-2", ags_claim(lms, lineitem=f"{elsewhere.base}/lineitems/1"))
            # Same host, another port: another origin.
            student_launch(lms, "s-3", ags_claim(lms.base.rsplit(":", 1)[0] + ":1"))
        assert caplog.text.count("another host than its registration's") == 3
        assert not GradebookLink.objects.exists() and not LmsLearner.objects.exists()
        for sub in ("s-1", "s-2", "s-3"):
            graded(monkeypatch, lti_user(sub), 75.0)
        drain()
        assert elsewhere.gradebook.answered == []
    assert lms.gradebook.answered and not lms.gradebook.scores  # only the launches' key set was fetched


def test_ags_urls_on_a_host_in_lti_service_hosts_get_scores_and_any_other_host_no_token(
    cast: Cast, lms: Lms, platform_key: rsa.RSAPrivateKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool_keys = Client().get("/lti/jwks/").json()
    # The school's own domain serves the gradebook (as Canvas does); the token still comes from
    # the registration's token URL.
    with (
        serve_lms(platform_key, ISSUER, CLIENT_ID, tool_keys, KID, host="127.0.0.2") as school,
        serve_lms(platform_key, ISSUER, CLIENT_ID, tool_keys, KID, host="127.0.0.3") as stranger,
        override_settings(LTI_SERVICE_HOSTS=(school.base.removeprefix("http://"),)),
    ):
        student_launch(lms, "s-1", ags_claim(school))
        assert GradebookLink.objects.get().lineitems_url == f"{school.base}/lineitems"
        graded(monkeypatch, learner("s-1"), 80.0)
        drain()
        assert [s["scoreGiven"] for s in school.gradebook.taken_for("s-1")] == [80.0]
        assert lms.gradebook.tokens_issued >= 1 and not lms.gradebook.scores
        # A host not named there (nor the registration's) is refused before a token is asked for.
        issued = lms.gradebook.tokens_issued
        gradebook = ags.Gradebook(LtiRegistration.objects.get(), f"{stranger.base}/lineitems", tuple(SCOPES))
        score = ags.Score("s-1", 80.0, 100.0, "Completed", "FullyGraded", timezone.now().isoformat(), "")
        with pytest.raises(ags.PlatformRefused, match="registered host"):
            ags.post_score(gradebook, f"{stranger.base}/lineitems/1", score)
        with pytest.raises(ags.PlatformRefused, match="registered host"):
            ags.find_or_create_line_item(gradebook, "a8", "Lab", "grader")
        assert lms.gradebook.tokens_issued == issued and stranger.gradebook.answered == []


def test_a_platform_answering_a_huge_or_malformed_body_is_recorded_not_retried(
    cast: Cast, lms: Lms, monkeypatch: pytest.MonkeyPatch
) -> None:
    student_launch(lms, "s-1")
    lms.gradebook.huge_lineitems = True
    graded(monkeypatch, learner("s-1"), 70.0)
    drain()
    target = ScoreTarget.objects.get()
    assert "more than 1048576 bytes" in target.problem and target.refused_version == target.wanted_version
    lms.gradebook.huge_lineitems, lms.gradebook.malformed_lineitems = False, True
    passback.resend(cast.assignment, target.user_id)
    drain()
    assert "not JSON" in ScoreTarget.objects.get().problem
    assert not lms.gradebook.scores and not LineItem.objects.exclude(url="").exists()
    # A score post answered by a redirect is not taken for sent, and the redirect is not followed.
    with serve_lms(lms.key, ISSUER, CLIENT_ID, {"keys": []}, KID, host="127.0.0.2") as elsewhere:
        lms.gradebook.malformed_lineitems, lms.gradebook.redirect_scores = False, f"{elsewhere.base}/scores"
        passback.resend(cast.assignment, target.user_id)
        drain()
        assert elsewhere.gradebook.answered == []
    target = ScoreTarget.objects.get()
    assert "redirect (307)" in target.problem and not target.in_lms


@override_settings(LTI_SERVICE_TIMEOUT_SECONDS=1)
def test_a_token_endpoint_that_never_answers_is_given_up_on_and_retried_later(
    cast: Cast, lms: Lms, monkeypatch: pytest.MonkeyPatch
) -> None:
    student_launch(lms, "s-1")
    lms.gradebook.hang_token = True
    with monkeypatch.context() as patched:
        patched.setattr(passback, "defer_push", lambda target_id: None)  # the push is run here instead
        graded(monkeypatch, learner("s-1"), 70.0)
    target = ScoreTarget.objects.get()
    with pytest.raises(ags.PlatformUnavailable):
        passback.push(target.pk)
    assert "not answering" in ScoreTarget.objects.get().problem
    lms.gradebook.hang_token = False
    assert passback.push(target.pk) == "sent"
    assert [s["scoreGiven"] for s in lms.gradebook.taken_for("s-1")] == [70.0]


@pytest.mark.slow
@pytest.mark.docker
def test_a_real_worker_grades_an_lms_students_upload_and_sends_the_score(cast: Cast, lms: Lms) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile
    from test_faults import _stop, _worker

    student_launch(lms, "s-1")
    client = cast.client(learner("s-1"))  # the launched student, without the browser's CSRF dance
    response = client.post("/a/a8/", {"kind": "submit", "file": SimpleUploadedFile("autograd_lab.py", GOOD)})
    assert response.status_code == 302
    worker = _worker(concurrency=1, NO_PROXY="127.0.0.1")
    try:
        deadline = time.monotonic() + 600
        while not lms.gradebook.taken_for("s-1") and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        _stop(worker)
    submission = Submission.objects.get(kind=Kind.SUBMIT)
    assert submission.state == State.GRADED
    [score] = lms.gradebook.taken_for("s-1")
    assert score["scoreGiven"] == round(submission.score / submission.max_score * 100, 2)
    assert score["gradingProgress"] == "FullyGraded"
