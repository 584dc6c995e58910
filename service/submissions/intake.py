"""What happens when a file arrives: check it, store it, queue it, in one transaction.

The web process only stores bytes and metadata: it never imports or runs a submission.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from grader.intake.source import source_problem

from ..accounts.models import TokenBucket
from ..courses.models import Assignment
from .models import PENDING, Kind, State, Submission
from .queue import Lane, job_priority, student_lock, student_rank, students_queue_depth

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

    from ..courses.access import has_left

    now = timezone.now()
    user_id = int(user.pk)
    if has_left(user_id, assignment.course_id):
        return Refusal(403, "you are no longer enrolled in this course (your LMS says so): nothing can be submitted")
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
        # One student's uploads to an assignment are received one at a time, so two at once
        # cannot both stay queued (each would miss the other's uncommitted row).
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
        lane = Lane.SELF_CHECK if kind is Kind.SELF_CHECK else Lane.SUBMIT
        supersede_queued(submission, lane, now)
        enqueue(submission, lane)
    return submission


def supersede_queued(submission: Submission, lane: Lane, now: datetime) -> int:
    """One queued job per student, assignment and lane: the older ones are superseded (kept,
    marked, their jobs cancelled), never silently dropped. A running one finishes; a staff
    regrade is not the student's to cancel (it has its own lane)."""
    from procrastinate.contrib.django.models import ProcrastinateJob

    older = Submission.objects.filter(
        assignment_id=submission.assignment_id,
        user_id=submission.user_id,
        kind=submission.kind,
        state=State.QUEUED,
        lane=lane.value,
    ).exclude(pk=submission.pk)
    job_ids = [job_id for job_id in older.values_list("job_id", flat=True) if job_id is not None]
    count = older.update(state=State.SUPERSEDED, finished_at=now, detail=f"replaced by submission #{submission.pk}")
    if job_ids:  # a worker that fetched one meanwhile finds it superseded and skips it
        ProcrastinateJob.objects.filter(id__in=job_ids, status="todo").update(status="cancelled")
    return count


def position(submission: Submission) -> int | None:
    """Where the job stands in its lane (1 = next): the jobs of the lane that run now or will be
    taken before it (a higher priority, or the same and queued earlier)."""
    from procrastinate.contrib.django.models import ProcrastinateJob

    if submission.state not in PENDING:
        return None
    if submission.state == State.RUNNING or submission.job_id is None:
        return 1
    mine = ProcrastinateJob.objects.filter(id=submission.job_id).values_list("priority", flat=True).first()
    if mine is None:
        return 1
    lane_jobs = ProcrastinateJob.objects.filter(
        queue_name__startswith=f"{submission.lane}.", status__in=("todo", "doing")
    )
    ahead = lane_jobs.filter(
        Q(status="doing") | Q(priority__gt=mine) | Q(priority=mine, id__lt=submission.job_id)
    ).exclude(id=submission.job_id)
    return ahead.count() + 1


def enqueue(submission: Submission, lane: Lane) -> None:
    """Queue the grading job in the caller's transaction, naming the sandbox recipe and the
    rubric it must be graded with (the job's queue carries the recipe)."""
    from ..fleet.identity import current_recipe, queue_for, rubric_sha256
    from .tasks import grade_submission

    submission.recipe = current_recipe()
    submission.rubric_sha256 = rubric_sha256(submission.assignment.rubric_path())
    submission.lane = lane.value
    submission.queued_at = timezone.now()
    rank = student_rank(submission.user_id, lane, exclude=submission.pk)
    submission.job_id = grade_submission.configure(
        queue=queue_for(lane), priority=job_priority(lane, rank), lock=student_lock(submission.user_id, lane)
    ).defer(submission_id=submission.pk)
    submission.save(update_fields=["recipe", "rubric_sha256", "lane", "queued_at", "job_id"])
