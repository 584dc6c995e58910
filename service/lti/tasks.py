"""Queue jobs that call the LMS (grade pushes, roster syncs) in the ``lms`` queue, so a slow platform
never holds up grading; the sweeps run in ``maintenance``."""

from __future__ import annotations

from django.db import DatabaseError
from procrastinate import JobContext, RetryStrategy
from procrastinate.contrib.django import app

from . import lms_roster, passback
from .ags import PlatformUnavailable

# A platform that is down or slow is tried again after 4, 16, 64, 256 and 1024 seconds (about
# 23 minutes in all); after that the cell stays wanted, and the sweep below queues it again
# every five minutes for as long as the platform stays down.
PUSH_RETRY = RetryStrategy(max_attempts=6, exponential_wait=4, retry_exceptions={PlatformUnavailable, DatabaseError})


@app.task(name="push_score_to_lms", queue=passback.LMS_QUEUE, retry=PUSH_RETRY)
def push_score(target_id: int) -> str:
    return passback.push(target_id)


@app.periodic(cron="* * * * *")
@app.task(name="send_released_scores", queue="maintenance", queueing_lock="send_released_scores", pass_context=True)
def send_released_scores(context: JobContext, timestamp: int) -> int:
    return passback.send_released()


@app.periodic(cron="*/5 * * * *")
@app.task(name="resend_unsent_scores", queue="maintenance", queueing_lock="resend_unsent_scores", pass_context=True)
def resend_unsent_scores(context: JobContext, timestamp: int) -> int:
    return passback.defer_unsent()


# Not retried: a failed sync is recorded for staff ("last sync: failed: why"), who ask again.
@app.task(name="sync_roster", queue=passback.LMS_QUEUE)
def sync_roster(course_id: int, actor_id: int) -> str:
    return lms_roster.sync_course(course_id, actor_id)
