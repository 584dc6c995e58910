"""What happens when a file arrives: check it, store it, queue it, in one transaction.

The web process only stores bytes and metadata: it never imports or runs a submission.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.utils import timezone

from grader.intake.source import source_problem

from ..accounts.models import TokenBucket
from ..courses.models import Assignment
from .models import PENDING, Kind, State, Submission
from .queue import LANE_PRIORITY, Lane, students_queue_depth

MAX_NAME = 200


@dataclass(frozen=True)
class Refusal:
    """An upload that was not accepted at all (nothing stored): status and words."""

    status: int
    error: str
    retry_after: int = 0


def body_too_large(meta: dict[str, object]) -> bool:
    """An upload may not exceed the file cap by more than the form's own overhead (the body
    limit middleware has already refused anything larger than the largest form)."""
    try:
        length = int(str(meta.get("CONTENT_LENGTH") or 0))
    except ValueError:
        return True
    return length > settings.MAX_UPLOAD_BYTES + 64 * 1024


def upload_problem(name: str, raw: bytes, filename: str, max_bytes: int) -> str:
    """Why these bytes cannot be graded, in a sentence the student can act on ("" if none)."""
    if not name.endswith(".py"):
        return f"{name[:MAX_NAME]!r} is not a Python file: upload {filename}"
    if not raw.strip():
        return f"{name} is empty"
    return source_problem(raw, name, max_bytes)


def receive(assignment: Assignment, user: AbstractBaseUser, kind: Kind, name: str, raw: bytes) -> Submission | Refusal:
    """Store one upload and, when it can be graded, queue its grading job in the same
    transaction: an accepted upload is never lost between the web and the queue."""
    from .tasks import grade_submission  # the task module imports Django models: import late

    now = timezone.now()
    user_id = int(user.pk)
    if kind is Kind.SUBMIT and assignment.closed_for(user_id, now):
        return Refusal(403, "this assignment is closed: no more counted submissions")
    if kind is Kind.SUBMIT:
        wait = TokenBucket.take(
            TokenBucket.submit_key(user_id, assignment.pk),
            settings.SUBMITS_PER_WINDOW,
            timedelta(seconds=settings.SELF_CHECK_WINDOW_SECONDS),
        )
        if wait:
            seconds = max(1, int(wait + 0.999))
            return Refusal(429, f"submission limit reached: next one possible in {seconds} s", retry_after=seconds)
    if kind is Kind.SELF_CHECK:
        if students_queue_depth() >= settings.QUEUE_LIMIT:
            return Refusal(503, "the grading queue is full; try the self-check again shortly", retry_after=60)
        wait = TokenBucket.take(
            TokenBucket.self_check_key(user_id, assignment.pk),
            settings.SELF_CHECKS_PER_WINDOW,
            timedelta(seconds=settings.SELF_CHECK_WINDOW_SECONDS),
        )
        if wait:
            seconds = max(1, int(wait + 0.999))
            return Refusal(429, f"self-check limit reached: next one possible in {seconds} s", retry_after=seconds)
    rubric = assignment.rubric()
    max_bytes = min(settings.MAX_UPLOAD_BYTES, rubric.limits.max_file_kb * 1024)
    problem = upload_problem(name, raw, rubric.filename, max_bytes)
    with transaction.atomic():
        if kind is Kind.SUBMIT:
            # One student's counted uploads are received one at a time, so two at once cannot
            # both stay queued (each would miss the other's uncommitted row).
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [assignment.pk, user_id])
        submission = Submission.objects.create(
            assignment=assignment,
            user_id=user_id,
            kind=kind,
            received_at=now,
            filename=name[:MAX_NAME],
            sha256=hashlib.sha256(raw).hexdigest(),
            size=len(raw),
            content=raw if len(raw) <= max_bytes else b"",  # an oversized upload keeps its hash, not its bytes
            problem=problem,
            state=State.UNGRADABLE if problem else State.QUEUED,
            late_penalty=assignment.late_penalty(user_id, now) if kind is Kind.SUBMIT else 0.0,
        )
        if problem:
            submission.detail = problem
            submission.finished_at = now
            submission.save(update_fields=["detail", "finished_at"])
            return submission
        if kind is Kind.SUBMIT:
            # One pending counted job per student and assignment: the older one is superseded
            # (kept, marked), never silently dropped.
            # A staff regrade of an older one is not the student's to cancel: submit lane only.
            (
                Submission.objects.filter(
                    assignment=assignment, user_id=user_id, kind=Kind.SUBMIT, state=State.QUEUED, lane=Lane.SUBMIT.value
                )
                .exclude(pk=submission.pk)
                .update(state=State.SUPERSEDED, finished_at=now, detail=f"replaced by submission #{submission.pk}")
            )
        lane = Lane.SELF_CHECK if kind is Kind.SELF_CHECK else Lane.SUBMIT
        enqueue(submission, lane)
    return submission


def position(submission: Submission) -> int | None:
    """How many jobs of the same lane were received before this one and wait or run (1 = next)."""
    if submission.state not in PENDING:
        return None
    ahead = Submission.objects.filter(
        lane=submission.lane, state__in=PENDING, received_at__lte=submission.received_at
    ).exclude(pk=submission.pk)
    return ahead.count() + 1


def enqueue(submission: Submission, lane: Lane) -> None:
    """Queue the grading job in the caller's transaction, naming the sandbox recipe and the
    rubric it must be graded with (the job's queue carries the recipe)."""
    from ..fleet.identity import current_recipe, queue_for, rubric_sha256
    from .tasks import grade_submission

    submission.recipe = current_recipe()
    submission.rubric_sha256 = rubric_sha256(submission.assignment.rubric_path())
    submission.lane = lane.value
    submission.job_id = grade_submission.configure(queue=queue_for(lane), priority=LANE_PRIORITY[lane]).defer(
        submission_id=submission.pk
    )
    submission.save(update_fields=["recipe", "rubric_sha256", "lane", "job_id"])
