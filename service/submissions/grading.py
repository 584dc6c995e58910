"""One grading of one stored submission, through the grader's own pipeline.

Idempotent, keyed by submission id: a job that finds its submission already finished does
nothing, and every write is guarded by the claim it follows (the row still running, with the
attempt number this run took), so a job retried after its worker died, or run twice at once,
ends exactly once, and a stale run never overwrites a newer one.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import json
import threading
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from grader.errors import GraderError
from grader.judge.progress import OnSection, SettledSection
from grader.judge.status import MACHINE_LATE_DETAIL
from grader.pipeline import grade_source
from grader.results import Status, Visibility
from grader.results_io import result_to_json
from grader.rubric import Rubric
from grader.runners.base import ContainerLimits, Runner
from grader.runners.warm_pool import WarmPool

from ..fleet import registry
from ..lti.passback import score_changed
from .models import REGRADE_FAILED, GradingRun, Kind, State, Submission
from .queue import Lane

log = logging.getLogger(__name__)
_runners = threading.local()


MACHINE_LATE_TRIES = 2


class InfraFailure(Exception):
    """The grader, not the submission, failed: the job is retried and no attempt is counted."""


_warm: list[WarmPool] = []  # this worker process's warm sandboxes, when it keeps any


def start_warm_pool(size: int, *, idle_seconds: float, expect: ContainerLimits | None = None) -> WarmPool:
    """Warm sandboxes for every grading thread of this process (``grader worker`` starts them)."""
    from grader.runners.docker import DockerRunner

    if not _warm:
        first = DockerRunner()
        _warm.append(first.start_warm(size, idle_seconds=idle_seconds, expect=expect))
    return _warm[0]


def stop_warm_pool() -> None:
    while _warm:
        _warm.pop().close()


def runner() -> Runner:
    """One runner per worker thread (the Docker client is not shared between threads); the warm
    pool, if any, is shared by all of them."""
    found: Runner | None = getattr(_runners, "runner", None)
    if found is None:
        if settings.GRADER_SANDBOX == "local":
            from grader.runners.local import LocalRunner

            found = LocalRunner()
        else:
            from grader.runners.docker import DockerRunner

            found = DockerRunner(pool=_warm[0] if _warm else None)
        _runners.runner = found
    return found


def _prefer_self_checks(sandbox: Runner, submission: Submission) -> None:
    """A self-check takes any warm sandbox; a counted job or a regrade leaves one for it."""
    pool = getattr(sandbox, "pool", None)
    if pool is not None:
        sandbox.warm_reserve = 0 if submission.lane == Lane.SELF_CHECK.value or pool.size < 2 else 1  # type: ignore[attr-defined]


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
        submission.progress_json = ""  # an earlier attempt's sections are not this one's
        submission.save(update_fields=["state", "started_at", "attempts", "progress_json"])
        run = GradingRun.objects.create(submission=submission, worker=WORKER[:200], image_id=registry.image_id()[:100])
        return submission, run


def _ours(submission: Submission) -> QuerySet[Submission]:
    """The row as this run claimed it: still running, and no later claim since."""
    return Submission.objects.filter(pk=submission.pk, state=State.RUNNING, attempts=submission.attempts)


def _restore_before_regrade(submission: Submission, reason: str, now: datetime) -> bool:
    """A regrade that cannot be done leaves the earlier result standing (it was the student's
    grade, and an infrastructure failure is never theirs); False when this was no regrade."""
    if submission.lane != Lane.REGRADE.value:
        return False
    earlier = submission.regrades.order_by("-at", "-pk").first()
    if earlier is None:
        return False
    _ours(submission).update(
        state=earlier.old_state,
        score=earlier.old_score,
        result_json=earlier.old_result_json,
        detail=f"{REGRADE_FAILED} ({reason[:300]}); the earlier result stands",
        finished_at=now,
    )
    return True


def _superseded_meanwhile(submission: Submission, now: datetime) -> bool:
    """A counted upload put back in the queue after an infrastructure failure yields to a later
    one the student sent meanwhile: one pending counted job per student and assignment."""
    if submission.kind != Kind.SUBMIT or submission.lane != Lane.SUBMIT.value:
        return False
    with connection.cursor() as cursor:  # the lock intake takes for this student's counted uploads
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [submission.assignment_id, submission.user_id])
    newer = (
        Submission.objects.filter(
            assignment_id=submission.assignment_id,
            user_id=submission.user_id,
            kind=Kind.SUBMIT,
            received_at__gt=submission.received_at,
        )
        .exclude(state=State.UNGRADABLE)
        .order_by("received_at")
        .first()
    )
    if newer is None:
        return False
    _ours(submission).update(state=State.SUPERSEDED, finished_at=now, detail=f"replaced by submission #{newer.pk}")
    return True


def _mismatch(submission: Submission, *, final_attempt: bool) -> str:
    """Why this worker must not grade the job ("" when it may): another sandbox recipe (its
    queue keeps such jobs away; this is the last guard) or another rubric file on this host.

    A rubric that differs on every host that tried (the last attempt) was edited after the job
    was queued: the job is graded with the rubric the assignment has now, and says so."""
    from ..fleet.identity import current_recipe, rubric_sha256

    if submission.recipe and submission.recipe != current_recipe():
        return f"the job needs sandbox recipe {submission.recipe}; this worker has {current_recipe()}"
    path = submission.assignment.rubric_path()
    if submission.rubric_sha256 and path.is_file() and rubric_sha256(path) != submission.rubric_sha256:
        if final_attempt:
            submission.rubric_sha256 = rubric_sha256(path)
            Submission.objects.filter(pk=submission.pk).update(rubric_sha256=submission.rubric_sha256)
            log.warning(
                "submission %s: %s changed after it was queued; graded with the current file", submission.pk, path.name
            )
            return ""
        return f"the rubric {path.name} on this host differs from the one the job was queued with"
    return ""


def _give_back(
    submission: Submission, run: GradingRun, reason: str, *, final_attempt: bool, result_json: str = ""
) -> None:
    """Not graded here: retried (never scored, never an attempt), or infra_error at the last try
    (a regrade's earlier result stands instead); ``result_json``: the grader's own infra page."""
    now = timezone.now()
    with transaction.atomic():
        GradingRun.objects.filter(pk=run.pk).update(finished_at=now, outcome=State.INFRA_ERROR)
        if final_attempt:
            if not _restore_before_regrade(submission, reason, now):
                _ours(submission).update(
                    state=State.INFRA_ERROR, score=None, result_json=result_json, detail=reason, finished_at=now
                )
            return
        if _superseded_meanwhile(submission, now):
            return
        _ours(submission).update(state=State.QUEUED, detail=f"the grader failed and will retry: {reason}")
    raise InfraFailure(reason)


def progress_writer(submission: Submission, rubric: Rubric) -> OnSection:
    """Each settled section onto the row (under this run's claim), for the submission's page to
    show while the rest still runs. It is called on the runner's reader thread: a connection
    opened there is closed at once."""
    order = [s.tag for s in rubric.sections]
    titles = {s.tag: s.title for s in rubric.sections}
    settled: dict[str, dict[str, object]] = {}
    lock = threading.Lock()
    owner = threading.get_ident()
    current = [-1]  # the sandbox run whose sections are shown: a retried run's replace the first's

    def heard(section: SettledSection) -> None:
        visible = [c for c in section.checks if c.visibility is Visibility.VISIBLE]
        with lock:
            if section.attempt < current[0]:
                return  # a late word from a run that was retried
            if section.attempt > current[0]:
                current[0] = section.attempt
                settled.clear()
            settled[section.tag] = {
                "tag": section.tag,
                "title": titles.get(section.tag, section.tag),
                "points": round(sum(c.points for c in section.checks), 2),
                "max_points": round(sum(c.max_points for c in section.checks), 2),
                "visible_points": round(sum(c.points for c in visible), 2),
                "visible_max_points": round(sum(c.max_points for c in visible), 2),
                # When it settled says something of how long hidden probes ran: shown before
                # the end only to whoever may see hidden results (Submission.progress).
                "reads_hidden": section.reads_hidden,
            }
            body = json.dumps([settled[tag] for tag in order if tag in settled])
            try:
                _ours(submission).update(progress_json=body)
            finally:
                if threading.get_ident() != owner:
                    connection.close()

    return heard


def grade(submission_id: int, *, final_attempt: bool) -> str:
    """Grade one submission; returns its final state. Raises InfraFailure to be retried."""
    claimed = claim(submission_id)
    if claimed is None:
        return "skipped"
    submission, run = claimed
    assignment = submission.assignment
    mismatch = _mismatch(submission, final_attempt=final_attempt)
    if mismatch:
        _give_back(submission, run, mismatch, final_attempt=final_attempt)
        return State.INFRA_ERROR.value
    try:
        sandbox = runner()
    except GraderError as error:  # no engine, no image: the grader's failure, never the student's
        _stop_if_engine_gone()
        _give_back(submission, run, str(error), final_attempt=final_attempt)
        return State.INFRA_ERROR.value
    _prefer_self_checks(sandbox, submission)
    try:
        rubric = assignment.rubric()
        graded = grade_source(
            bytes(submission.content),
            "",
            student=submission.user.get_username(),
            rubric=rubric,
            runner=sandbox,
            seed=assignment.seed,  # the assignment's own, never the public rubric's
            visible_only=submission.kind == Kind.SELF_CHECK,
            on_section=progress_writer(submission, rubric),
        )
    except Exception as error:  # a rubric gone from this host, a fault of the grader's own: never the student's
        log.exception("grading submission %s failed in the grader", submission.pk)
        _give_back(
            submission, run, f"the grader failed: {type(error).__name__}: {error}"[:500], final_attempt=final_attempt
        )
        return State.INFRA_ERROR.value
    result = graded.result
    if result.status is Status.INFRA_ERROR:
        _stop_if_engine_gone()
        # A grading that ran into its real-time net held a slot for the whole of it: one more
        # try (the machine may have been busy), not five, so no file keeps a slot for hours.
        late = result.status_detail == MACHINE_LATE_DETAIL and submission.attempts >= MACHINE_LATE_TRIES
        _give_back(
            submission,
            run,
            result.status_detail,
            final_attempt=final_attempt or late,
            result_json=result_to_json(result),
        )
        return State.INFRA_ERROR.value
    now = timezone.now()
    visible = [c for c in result.checks if c.visibility is Visibility.VISIBLE]
    with transaction.atomic():
        # Written only under this run's claim: a run that lost it (a later claim) writes nothing.
        written = _ours(submission).update(
            state=State(result.status.value),
            seed=result.seed,
            score=result.score,
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
        if written and submission.kind == Kind.SUBMIT:
            score_changed(submission.assignment_id, submission.user_id)  # to the LMS, in this transaction
    if not written:
        log.warning("submission %s changed while it was graded; result not written", submission.pk)
    return str(result.status.value)
