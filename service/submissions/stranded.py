"""Submissions left waiting with no job that can grade them are queued again.

A submission can be stranded two ways: its job ended while the row still says queued or
running (the job failed after its database retries ran out, or an operator cancelled it), or
its job waits on the queue of a sandbox recipe no worker has run for a while (every host moved
to a new release). Either way it is queued afresh, with today's recipe and rubric, in its own
lane; it never waits forever and never counts against the student.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from ..fleet.identity import current_recipe
from ..fleet.models import GradingWorker
from .models import PENDING, State, Submission
from .queue import Lane

ENDED = ("succeeded", "failed", "cancelled", "aborted")
# A recipe is gone once no worker of it has been heard from for this long (a rolling upgrade
# keeps old workers heartbeating until they drain).
RECIPE_GONE_AFTER = timedelta(minutes=10)


def requeue_stranded() -> int:
    """Queue every stranded submission again; returns how many. Run by a worker (its recipe is live)."""
    from procrastinate.contrib.django.models import ProcrastinateJob

    from .intake import enqueue

    since = timezone.now() - RECIPE_GONE_AFTER
    heard = set(
        GradingWorker.objects.filter(last_heartbeat__gte=since).values_list("recipe", flat=True)
    ) | {current_recipe()}
    waiting = Submission.objects.filter(state__in=PENDING).exclude(lane="")
    jobs = {
        job.id: job
        for job in ProcrastinateJob.objects.filter(id__in=waiting.values("job_id")).only("id", "status", "queue_name")
    }
    moved = 0
    for submission_id, job_id in waiting.values_list("pk", "job_id"):
        job = jobs.get(job_id) if job_id is not None else None
        ended = job is None or job.status in ENDED
        orphaned = job is not None and job.status == "todo" and job.queue_name.rpartition(".")[2] not in heard
        if not (ended or orphaned):
            continue
        with transaction.atomic():
            submission = Submission.objects.select_for_update().filter(pk=submission_id, state__in=PENDING).first()
            if submission is None or submission.job_id != job_id:
                continue  # graded or queued again meanwhile
            if orphaned:
                # Taken off its dead queue, so no later worker of that release grades it as well.
                ProcrastinateJob.objects.filter(id=job_id, status="todo").update(status="cancelled")
            Submission.objects.filter(pk=submission.pk).update(
                state=State.QUEUED, started_at=None, detail="queued again: its earlier job could not finish"
            )
            enqueue(submission, Lane(submission.lane))
        moved += 1
    return moved
