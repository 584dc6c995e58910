"""``{% my_review_requests assignment as mine %}``: the signed-in student's review requests on
an assignment, for the assignment page (theirs only, latest first, bounded)."""

from __future__ import annotations

from typing import Any

from django import template

from ..models import ReviewRequest
from ..reviews import MAX_TOTAL

register = template.Library()


@register.simple_tag(takes_context=True)
def my_review_requests(context: dict[str, Any], assignment: Any) -> list[ReviewRequest]:
    user = context["request"].user
    if not user.is_authenticated:
        return []
    found = ReviewRequest.objects.filter(student_id=user.pk, assignment=assignment).select_related("override")
    return list(found.order_by("-created", "-pk")[:MAX_TOTAL])
