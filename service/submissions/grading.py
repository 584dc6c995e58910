"""One grading of one stored submission, through the grader's own pipeline.

Idempotent, keyed by submission id: a job that finds its submission already finished does
nothing, and the result is written only if the row is still the one this run started, so a
job retried after its worker died ends exactly once.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from grader.errors import GraderError
from grader.pipeline import grade_source
from grader.results import Status, Visibility
from grader.results_io import result_to_json
from grader.runners.base import Runner

from ..fleet import registry
from .models import GradingRun, Kind, State, Submission

log = logging.getLogger(__name__)
_runners = threading.local()


class InfraFailure(Exception):
    """The grader, not the submission, failed: the job is retried and no attempt is counted."""


def runner() -> Runner:
    """One runner per worker thread (the Docker client is not shared between threads)."""
    found: Runner | None = getattr(_runners, "runner", None)
    if found is None:
        if settings.GRADER_SANDBOX == "local":
            from grader.runners.local import LocalRunner

            found = LocalRunner()
        else:
            from grader.runners.docker import DockerRunner

            found = DockerRunner()
        _runners.runner = found
    return found


WORKER = f"{socket.gethostname()}:{os.getpid()}"


def _stop_if_engine_gone() -> None:
    """A worker whose Docker engine stopped answering takes no more jobs: it drains (SIGTERM to
    itself: the jobs in hand finish or are given back) and its jobs are retried by other
    workers; its service manager restarts it, and it grades again once the engine is back."""
    if settings.GRADER_SANDBOX != "docker" or not registry.image_id():
        return  # only a registered worker process drains itself
    from grader.docker_engine import docker_client
    from grader.errors import SandboxUnavailable

    try:
        docker_client().close()
    except SandboxUnavailable as error:
        log.error("the Docker engine is unreachable (%s): this worker stops taking jobs", error)
        os.kill(os.getpid(), signal.SIGTERM)


def claim(submission_id: int) -> tuple[Submission, GradingRun] | None:
    """Mark the submission running and open a run; None when there is nothing to do."""
    with transaction.atomic():
        submission = (
            Submission.objects.select_for_update().select_related("assignment", "user").filter(pk=submission_id).first()
        )
        if submission is None or submission.state not in (State.QUEUED, State.RUNNING):
            return None
        submission.state = State.RUNNING
        submission.started_at = timezone.now()
        submission.attempts += 1
        submission.save(update_fields=["state", "started_at", "attempts"])
        run = GradingRun.objects.create(submission=submission, worker=WORKER[:200], image_id=registry.image_id()[:100])
        return submission, run


def _mismatch(submission: Submission) -> str:
    """Why this worker must not grade the job ("" when it may): another sandbox recipe (its
    queue keeps such jobs away; this is the last guard) or another rubric file on this host."""
    from ..fleet.identity import current_recipe, rubric_sha256

    if submission.recipe and submission.recipe != current_recipe():
        return f"the job needs sandbox recipe {submission.recipe}; this worker has {current_recipe()}"
    path = submission.assignment.rubric_path()
    if submission.rubric_sha256 and path.is_file() and rubric_sha256(path) != submission.rubric_sha256:
        return f"the rubric {path.name} on this host differs from the one the job was queued with"
    return ""


def _give_back(submission: Submission, run: GradingRun, reason: str, *, final_attempt: bool) -> None:
    """Not graded here: retried (never scored, never an attempt), or infra_error at the last try."""
    now = timezone.now()
    with transaction.atomic():
        GradingRun.objects.filter(pk=run.pk).update(finished_at=now, outcome=State.INFRA_ERROR)
        Submission.objects.filter(pk=submission.pk, state=State.RUNNING).update(
            state=State.INFRA_ERROR if final_attempt else State.QUEUED,
            detail=reason if final_attempt else f"the grader failed and will retry: {reason}",
            finished_at=now if final_attempt else None,
        )
    if not final_attempt:
        raise InfraFailure(reason)


def grade(submission_id: int, *, final_attempt: bool) -> str:
    """Grade one submission; returns its final state. Raises InfraFailure to be retried."""
    claimed = claim(submission_id)
    if claimed is None:
        return "skipped"
    submission, run = claimed
    assignment = submission.assignment
    mismatch = _mismatch(submission)
    if mismatch:
        _give_back(submission, run, mismatch, final_attempt=final_attempt)
        return State.INFRA_ERROR.value
    try:
        sandbox = runner()
    except GraderError as error:  # no engine, no image: the grader's failure, never the student's
        _stop_if_engine_gone()
        _give_back(submission, run, str(error), final_attempt=final_attempt)
        return State.INFRA_ERROR.value
    rubric = assignment.rubric()
    graded = grade_source(
        bytes(submission.content),
        "",
        student=submission.user.get_username(),
        rubric=rubric,
        runner=sandbox,
        seed=rubric.seed,
        visible_only=submission.kind == Kind.SELF_CHECK,
    )
    result = graded.result
    now = timezone.now()
    if result.status is Status.INFRA_ERROR:
        _stop_if_engine_gone()
    if result.status is Status.INFRA_ERROR and not final_attempt:
        with transaction.atomic():
            GradingRun.objects.filter(pk=run.pk).update(finished_at=now, outcome=State.INFRA_ERROR)
            Submission.objects.filter(pk=submission.pk, state=State.RUNNING).update(
                state=State.QUEUED, detail=f"the grader failed and will retry: {result.status_detail}"
            )
        raise InfraFailure(result.status_detail)
    visible = [c for c in result.checks if c.visibility is Visibility.VISIBLE]
    with transaction.atomic():
        # Written only while the row is still running: a run that lost its claim writes nothing.
        written = Submission.objects.filter(pk=submission.pk, state=State.RUNNING).update(
            state=State(result.status.value),
            seed=result.seed,
            score=None if result.status is Status.INFRA_ERROR else result.score,
            max_score=result.max_score,
            visible_score=round(sum(c.points for c in visible), 2) if result.scored else None,
            visible_max_score=round(sum(c.max_points for c in visible), 2),
            result_json=result_to_json(result),
            detail=result.status_detail,
            finished_at=now,
        )
        GradingRun.objects.filter(pk=run.pk).update(
            finished_at=now, outcome=result.status.value if written else "discarded"
        )
    if not written:
        log.warning("submission %s changed while it was graded; result not written", submission.pk)
    return result.status.value
