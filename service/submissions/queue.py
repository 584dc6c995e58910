"""The queue's lanes: self-checks first, counted submissions next, regrades last."""

from __future__ import annotations

from enum import Enum

from .models import PENDING, Submission


class Lane(str, Enum):
    SELF_CHECK = "self_check"
    SUBMIT = "submit"
    REGRADE = "regrade"


# procrastinate takes higher priorities first; regrades also have their own queue so that a
# worker can be kept for students' jobs alone.
LANE_PRIORITY = {Lane.SELF_CHECK: 20, Lane.SUBMIT: 10, Lane.REGRADE: 0}
LANES = tuple(lane.value for lane in Lane)


def students_queue_depth() -> int:
    """Jobs waiting in the students' lanes: a class regrade, however long, turns no self-check away."""
    return Submission.objects.filter(state__in=PENDING, lane__in=(Lane.SELF_CHECK.value, Lane.SUBMIT.value)).count()
