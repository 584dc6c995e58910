"""Which submission counts for a student: the latest or the best scored one."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from ..courses.models import Assignment, Counted
from .models import PENDING, SCORED, Kind, Submission
from .queue import Lane


def latest_scored(assignment: Assignment, user_id: int) -> Submission | None:
    return _scored(assignment, user_id).order_by("-received_at", "-id").first()


def _scored(assignment: Assignment, user_id: int) -> QuerySet[Submission]:
    # A submission waiting for its regrade keeps its score until the new one is written: a
    # regrade never takes a student's grade away, even for a while.
    counted = Q(state__in=SCORED) | Q(state__in=PENDING, lane=Lane.REGRADE.value, score__isnull=False)
    scored = Submission.objects.filter(counted, assignment=assignment, user_id=user_id, kind=Kind.SUBMIT)
    return scored.defer("content", "result_json").prefetch_related("overrides")


def counted_submission(assignment: Assignment, user_id: int) -> Submission | None:
    if assignment.counted == Counted.LATEST:
        return latest_scored(assignment, user_id)
    scored = _scored(assignment, user_id)
    best: Submission | None = None
    for candidate in scored:
        score = candidate.counted_score
        if best is None or (score is not None and score > (best.counted_score or 0.0)):
            best = candidate
    return best
