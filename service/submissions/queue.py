"""The queue's lanes, and how students take turns within one.

Lanes: self-checks first, counted submissions next, regrades last (procrastinate takes higher
priorities first). Within a lane students are served in turn, by two rules procrastinate
enforces when a worker fetches a job:

- a job's priority is its lane's, less the number of jobs the same student already had waiting
  or running in that lane when it was queued: a student's second pending job waits behind every
  other student's first, whenever those arrive;
- a job carries a lock per student: jobs with the same lock run one at a time, so one student
  never holds more than one sandbox slot of the students' lanes, however many jobs they queue
  (a regrade has a lock of its own: staff's work never waits on a student's self-check).

Chosen over procrastinate's ``queueing_lock`` (which refuses a second job instead of ordering
it) and over a scheduler of our own (a second moving part that every worker must agree with):
the order lives in the job rows, in the same transaction as the submission.
"""

from __future__ import annotations

from enum import Enum

from .models import PENDING, Submission


class Lane(str, Enum):
    SELF_CHECK = "self_check"
    SUBMIT = "submit"
    REGRADE = "regrade"


# Regrades also have their own queue, so that a worker can be kept for students' jobs alone.
LANE_PRIORITY = {Lane.SELF_CHECK: 2000, Lane.SUBMIT: 1000, Lane.REGRADE: 0}
LANES = tuple(lane.value for lane in Lane)
# Ranks beyond this share one priority: lanes never overlap (bands are 1000 apart).
MAX_RANK = 999


def student_rank(user_id: int, lane: Lane, *, exclude: int | None = None) -> int:
    """How many jobs this student has waiting or running in the lane (``exclude``: the job being queued)."""
    pending = Submission.objects.filter(user_id=user_id, lane=lane.value, state__in=PENDING)
    if exclude is not None:
        pending = pending.exclude(pk=exclude)
    return min(pending.count(), MAX_RANK)


def job_priority(lane: Lane, rank: int) -> int:
    return LANE_PRIORITY[lane] - min(max(rank, 0), MAX_RANK)


def student_lock(user_id: int, lane: Lane) -> str:
    """One running job per student in the students' lanes, one per student among regrades."""
    return f"regrade-{user_id}" if lane is Lane.REGRADE else f"student-{user_id}"


def students_queue_depth() -> int:
    """Jobs waiting in the students' lanes: a class regrade, however long, turns no self-check away."""
    return Submission.objects.filter(state__in=PENDING, lane__in=(Lane.SELF_CHECK.value, Lane.SUBMIT.value)).count()
