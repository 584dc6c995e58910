"""Staff's side of review requests: the open ones of an assignment, each answered in one form
that may also set the submission's score (the same override as the class view's)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from grader.report.view import format_number

from ..accounts.identity import signed_in
from ..submissions.models import AuditEntry, ReviewRequest, ReviewState, ScoreOverride
from ..submissions.reviews import MAX_ANSWER
from ..submissions.standing import counted_submission
from .people import full_name, labelled
from .refusals import form_errors
from .views import MAX_REASON, OverrideForm, _staff_assignment, record_override

MAX_OPEN_SHOWN = 200  # a class's open requests on one page; more are said, not listed
ANSWERED_PER_PAGE = 25


class AnswerForm(forms.Form):
    answer = forms.CharField(
        max_length=MAX_ANSWER,
        error_messages={
            "required": "Write an answer for the student.",
            "max_length": f"An answer is at most {MAX_ANSWER} characters (this one has %(show_value)d).",
        },
    )


@login_required
@require_GET
def open_requests(request: HttpRequest, slug: str) -> HttpResponse:
    """The assignment's open requests, oldest first, then the answered and withdrawn ones."""
    assignment = _staff_assignment(request, slug)
    requests = ReviewRequest.objects.filter(assignment=assignment).select_related(
        "student", "submission", "answered_by", "override"
    )
    waiting = list(requests.filter(state=ReviewState.OPEN).order_by("created", "pk")[:MAX_OPEN_SHOWN])
    counted: dict[int, int | None] = {}
    for review in waiting:
        if review.student_id not in counted:
            found = counted_submission(assignment, review.student_id)
            counted[review.student_id] = found.pk if found else None
        review.counts = counted[review.student_id] == review.submission_id  # type: ignore[attr-defined]
        review.limit = format_number(  # type: ignore[attr-defined]
            review.submission.max_score or assignment.rubric().total
        )
    closed = Paginator(
        requests.exclude(state=ReviewState.OPEN).order_by("-answered_at", "-pk"), ANSWERED_PER_PAGE
    ).get_page(request.GET.get("page"))
    context = {
        "assignment": assignment,
        "waiting": waiting,
        "more_waiting": requests.filter(state=ReviewState.OPEN).count() - len(waiting),
        "closed": closed,
        "max_answer": MAX_ANSWER,
        "max_reason": MAX_REASON,
    }
    return render(request, "courses/review_requests.html", context)


@login_required
@require_POST
def answer(request: HttpRequest, slug: str, request_id: int) -> HttpResponse:
    """Answer one open request; a score given with it is set as an override, audited and sent
    on exactly as the class view's override form does (``record_override``)."""
    assignment = _staff_assignment(request, slug)
    review = (
        ReviewRequest.objects.filter(pk=request_id, assignment=assignment)
        .select_related("submission__assignment", "submission__user", "student")
        .first()
    )
    if review is None:
        raise Http404
    form = AnswerForm(request.POST)
    if not form.is_valid():
        return form_errors(form, "The answer was not sent.")
    text = form.cleaned_data["answer"]
    submission = review.submission
    override_form = None
    if request.POST.get("score", "").strip():
        data = request.POST.copy()
        # Without a reason of its own, the override's reason is the answer the student reads.
        if not data.get("reason", "").strip():
            data["reason"] = f"Review request {review.pk}: {text}"[:MAX_REASON]
        limit = submission.max_score or assignment.rubric().total
        override_form = OverrideForm(data, limit=limit)
        if not override_form.is_valid():
            return form_errors(override_form, f"Nothing was changed: a score is between 0 and {limit:g}.")
    actor = signed_in(request)
    with transaction.atomic():
        locked = ReviewRequest.objects.select_for_update().get(pk=review.pk)
        if locked.state != ReviewState.OPEN:
            return HttpResponse(
                f"Nothing was changed: this request is already {locked.state}.",
                status=409,
                content_type="text/plain; charset=utf-8",
            )
        made: ScoreOverride | None = None
        if override_form is not None:
            made = record_override(
                submission, actor, override_form.cleaned_data["score"], override_form.cleaned_data["reason"]
            )
        locked.state = ReviewState.ANSWERED
        locked.answer = text
        locked.answered_by = actor
        locked.answered_at = timezone.now()
        locked.override = made
        locked.save(update_fields=["state", "answer", "answered_by", "answered_at", "override"])
        AuditEntry.objects.create(
            actor=actor,
            action="review_answer",
            assignment_id=review.assignment_id,
            student=review.student,
            submission=submission,
            detail=f"{labelled(review.student)}: review of {review.check_id} answered (request {review.pk})"
            + (f", score set to {made.score}" if made else ""),
        )
    said = f"Answered {full_name(review.student)}'s request about “{review.check_title}”"
    messages.success(request, said + (f"; the score is now {format_number(made.score)}." if made else "."))
    return redirect("review-requests", slug=assignment.slug)
