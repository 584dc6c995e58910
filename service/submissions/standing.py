"""Which submission counts for a student: the latest or the best scored one."""

from __future__ import annotations

from ..courses.models import Assignment, Counted
from .models import SCORED, Kind, Submission


def counted_submission(assignment: Assignment, user_id: int) -> Submission | None:
    scored = Submission.objects.filter(assignment=assignment, user_id=user_id, kind=Kind.SUBMIT, state__in=SCORED)
    scored = scored.defer("content", "result_json").prefetch_related("overrides")
    if assignment.counted == Counted.LATEST:
        return scored.order_by("-received_at", "-id").first()
    best: Submission | None = None
    for candidate in scored:
        score = candidate.counted_score
        if best is None or (score is not None and score > (best.counted_score or 0.0)):
            best = candidate
    return best
