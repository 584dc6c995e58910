"""LMS jobs, on the queue ``lms``: slow platforms never hold up grading."""

from __future__ import annotations

from procrastinate.contrib.django import app

from . import lms_roster

LMS_QUEUE = "lms"


# Not retried: a failed sync is recorded for staff ("last sync: failed: why"), who ask again.
@app.task(name="sync_roster", queue=LMS_QUEUE)
def sync_roster(course_id: int, actor_id: int) -> str:
    return lms_roster.sync_course(course_id, actor_id)
