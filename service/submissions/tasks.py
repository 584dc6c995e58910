"""Queue jobs: ids in, never model objects (the row is read fresh by the job)."""

from __future__ import annotations

import datetime

from django.conf import settings
from django.db import DatabaseError
from procrastinate import JobContext, RetryStrategy
from procrastinate.contrib.django import app

from . import grading, stranded

# Infrastructure failures (Docker down, an image missing, the database restarting under a
# job) are retried with growing waits; the last attempt records infra_error, which is never
# scored and never counts as an attempt. A retried job finds its submission still running
# and grades it; only the run that writes the result counts.
GRADE_RETRY = RetryStrategy(max_attempts=6, exponential_wait=5, retry_exceptions={grading.InfraFailure, DatabaseError})


@app.task(name="grade_submission", pass_context=True, retry=GRADE_RETRY)
def grade_submission(context: JobContext, submission_id: int) -> str:
    attempts = context.job.attempts if context.job else 0
    return grading.grade(submission_id, final_attempt=attempts + 1 >= (GRADE_RETRY.max_attempts or 1))


@app.periodic(cron="* * * * *")
@app.task(name="retry_stalled_jobs", queue="maintenance", queueing_lock="retry_stalled_jobs", pass_context=True)
async def retry_stalled_jobs(context: JobContext, timestamp: int) -> None:
    await retry_stalled()


async def retry_stalled() -> int:
    """Jobs of a worker that stopped heartbeating (killed, host lost) run again; the grading
    itself is idempotent, so each submission still ends exactly once."""
    stalled = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=settings.STALLED_WORKER_SECONDS)
    count = 0
    for job in stalled:
        await app.job_manager.retry_job(job, retry_at=datetime.datetime.now(datetime.timezone.utc))
        count += 1
    return count


@app.periodic(cron="*/2 * * * *")
@app.task(name="requeue_stranded_submissions", queue="maintenance", queueing_lock="requeue_stranded", pass_context=True)
def requeue_stranded_submissions(context: JobContext, timestamp: int) -> int:
    return stranded.requeue_stranded()


@app.periodic(cron="* * * * *")
@app.task(name="purge_anonymous_state", queue="maintenance", queueing_lock="purge_anonymous_state", pass_context=True)
def purge_anonymous_state(context: JobContext, timestamp: int) -> tuple[int, int]:
    from ..lti import login_limits

    return login_limits.purge()
