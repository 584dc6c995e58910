"""Review requests in templates: ``{% my_review_requests assignment as mine %}``, the signed-in
student's own on an assignment (latest first, bounded), and ``{% open_review_count assignment
as waiting %}``, how many wait for staff."""

from __future__ import annotations

from typing import Any

from django import template

from ..models import ReviewRequest, ReviewState
from ..reviews import MAX_TOTAL

register = template.Library()


@register.simple_tag(takes_context=True)
def my_review_requests(context: dict[str, Any], assignment: Any) -> list[ReviewRequest]:
    user = context["request"].user
    if not user.is_authenticated:
        return []
    found = ReviewRequest.objects.filter(student_id=user.pk, assignment=assignment).select_related(
        "override", "submission__assignment"
    ).defer("submission__content", "submission__result_json")
    mine = list(found.order_by("-created", "-pk")[:MAX_TOTAL])
    # A score set in an answer is not told while the hidden results are withheld (``outcome_of``).
    staff = bool(context.get("is_staff"))
    withheld: dict[int, bool] = {}
    for review in mine:
        if review.submission_id not in withheld:
            withheld[review.submission_id] = review.submission.hides_hidden(viewer_is_staff=staff)
        review.score_withheld = withheld[review.submission_id]  # type: ignore[attr-defined]
    return mine


@register.simple_tag
def open_review_count(assignment: Any) -> int:
    """How many review requests on the assignment wait for staff (for the class view's link)."""
    return ReviewRequest.objects.filter(assignment=assignment, state=ReviewState.OPEN).count()
