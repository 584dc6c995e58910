"""The guards around one grading: a regrade never takes a grade away, a stale run never writes,
a retried counted upload yields to a newer one, and a stranded submission is queued again.
The sandbox is replaced by one that fails (these are the grader's failures, never the student's)."""

from __future__ import annotations

from typing import Any

import pytest
from service_cast import Cast
from test_pages import upload

from service.submissions import grading, stranded
from service.submissions.models import PENDING, GradingRun, Kind, Regrade, State, Submission
from service.submissions.standing import counted_submission

pytestmark = [pytest.mark.db]


class EngineDown:
    name = "docker"
    isolates = True

    def run(self, *args: Any, **kwargs: Any) -> Any:
        from grader.errors import InfraError

        raise InfraError("the Docker engine did not answer")


def graded(submission: Submission, score: float) -> None:
    Submission.objects.filter(pk=submission.pk).update(
        state=State.GRADED, score=score, max_score=100.0, result_json='{"kept": true}'
    )


def test_a_regrade_keeps_the_counted_grade_while_it_waits_and_when_it_cannot_be_done(
    cast: Cast, monkeypatch: pytest.MonkeyPatch
) -> None:
    submission = upload(cast.client(cast.student))
    graded(submission, 80.0)
    assert cast.client(cast.instructor).post("/a/a8/class/regrade/", {"which": "all"}).status_code == 302
    waiting = Submission.objects.get(pk=submission.pk)
    assert waiting.state == State.QUEUED and waiting.lane == "regrade"
    counted = counted_submission(cast.assignment, cast.student.pk)
    assert counted is not None and counted.pk == submission.pk and counted.counted_score == 80.0
    assert b'<td class="num">80</td>' in cast.client(cast.instructor).get("/a/a8/class/").content  # the total
    monkeypatch.setattr(grading, "runner", lambda: EngineDown())
    assert grading.grade(submission.pk, final_attempt=True) == State.INFRA_ERROR
    after = Submission.objects.get(pk=submission.pk)
    assert after.state == State.GRADED and after.score == 80.0 and after.result_json == '{"kept": true}'
    assert "the earlier result stands" in after.detail
    assert list(after.runs.values_list("outcome", flat=True)) == [State.INFRA_ERROR]
    assert Regrade.objects.filter(submission=after, old_score=80.0).count() == 1


def test_a_double_clicked_regrade_queues_each_submission_once(cast: Cast) -> None:
    submission = upload(cast.client(cast.student))
    graded(submission, 70.0)
    staff = cast.client(cast.instructor)
    for _ in range(2):
        assert staff.post("/a/a8/class/regrade/", {"which": "all"}).status_code == 302
    assert Regrade.objects.filter(submission_id=submission.pk).count() == 1


def test_a_run_that_lost_its_claim_writes_nothing(cast: Cast) -> None:
    submission = upload(cast.client(cast.student))
    first = grading.claim(submission.pk)
    second = grading.claim(submission.pk)  # the same job again: its worker was taken for dead
    assert first is not None and second is not None
    assert not grading._ours(first[0]).exists()  # the older run can no longer write
    assert grading._ours(second[0]).exists()
    assert GradingRun.objects.filter(submission_id=submission.pk).count() == 2


def test_a_counted_upload_retried_after_a_newer_one_arrived_yields_to_it(
    cast: Cast, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = cast.client(cast.student)
    older = upload(client)
    assert grading.claim(older.pk) is not None  # running when the newer one arrives: not superseded then
    newer = upload(client)
    monkeypatch.setattr(grading, "runner", lambda: EngineDown())
    assert grading.grade(older.pk, final_attempt=False) == State.INFRA_ERROR  # no retry left to raise
    assert Submission.objects.get(pk=older.pk).state == State.SUPERSEDED
    pending = Submission.objects.filter(user=cast.student, kind=Kind.SUBMIT, state__in=PENDING)
    assert list(pending.values_list("pk", flat=True)) == [newer.pk]


def test_a_stranded_submission_is_queued_again_in_its_lane(cast: Cast) -> None:
    from procrastinate.contrib.django.models import ProcrastinateJob

    from service.fleet.identity import queue_for

    client = cast.client(cast.student)
    failed = upload(client, kind="self_check")
    ProcrastinateJob.objects.filter(id=failed.job_id).update(status="failed")  # out of retries
    Submission.objects.filter(pk=failed.pk).update(state=State.RUNNING)
    orphan = upload(client)
    ProcrastinateJob.objects.filter(id=orphan.job_id).update(queue_name="submit.0123456789ab")  # a release gone
    healthy = upload(cast.client(cast.student2))
    assert stranded.requeue_stranded() == 2
    for before, lane in ((failed, "self_check"), (orphan, "submit")):
        after = Submission.objects.get(pk=before.pk)
        assert after.state == State.QUEUED and after.lane == lane and after.job_id != before.job_id
        job = ProcrastinateJob.objects.get(id=after.job_id)
        assert job.status == "todo" and job.queue_name == queue_for(lane)
    assert ProcrastinateJob.objects.get(id=orphan.job_id).status == "cancelled"  # no old worker takes it too
    assert Submission.objects.get(pk=healthy.pk).job_id == healthy.job_id
    assert stranded.requeue_stranded() == 0


def test_a_grading_that_ran_into_its_real_time_net_is_tried_once_more_not_five_times(
    cast: Cast, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from grader.judge.status import MACHINE_LATE_DETAIL
    from grader.results import Status

    late = SimpleNamespace(result=SimpleNamespace(status=Status.INFRA_ERROR, status_detail=MACHINE_LATE_DETAIL))
    monkeypatch.setattr(grading, "runner", lambda: EngineDown())  # never used: the grading is replaced
    monkeypatch.setattr(grading, "grade_source", lambda *args, **kwargs: late)
    monkeypatch.setattr(grading, "result_to_json", lambda result: "{}")
    submission = upload(cast.client(cast.student))
    with pytest.raises(grading.InfraFailure):
        grading.grade(submission.pk, final_attempt=False)  # the machine may have been busy: once more
    assert Submission.objects.get(pk=submission.pk).state == State.QUEUED
    assert grading.grade(submission.pk, final_attempt=False) == State.INFRA_ERROR  # no third slot-long try
    ended = Submission.objects.get(pk=submission.pk)
    assert (ended.state, ended.score, ended.detail) == (State.INFRA_ERROR, None, MACHINE_LATE_DETAIL)
