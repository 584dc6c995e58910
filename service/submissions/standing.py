"""Which submission counts for a student: the latest or the best scored one."""

from __future__ import annotations

from collections.abc import Iterable

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


def counts(submission: Submission) -> bool:
    """The same test as ``_scored``'s, for a submission already read (a whole class at once)."""
    if submission.state in SCORED:
        return True
    return submission.state in PENDING and submission.lane == Lane.REGRADE.value and submission.score is not None


def counted_among(rule: str, newest_first: Iterable[Submission]) -> Submission | None:
    """The counted one of a student's submissions (given newest first, overrides prefetched)."""
    best: Submission | None = None
    for candidate in newest_first:
        if not counts(candidate):
            continue
        if rule == Counted.LATEST:
            return candidate
        score = candidate.counted_score
        if best is None or (score is not None and score > (best.counted_score or 0.0)):
            best = candidate
    return best


def counted_submission(assignment: Assignment, user_id: int) -> Submission | None:
    if assignment.counted == Counted.LATEST:
        return latest_scored(assignment, user_id)
    return counted_among(Counted.BEST, _scored(assignment, user_id))
