"""A student's review requests: asked from a check on their feedback page, withdrawn there."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from ..accounts.identity import signed_in
from ..courses.access import submission_for
from ..lti.framing import frameable_by_platforms
from .models import ReviewRequest, Submission
from .reviews import AskForm, Refused, ask, askable_checks, check_anchors, reviewable, withdraw
from .views import shown_result


def _refused(request: HttpRequest, submission: Submission, refusal: Refused) -> HttpResponse:
    context = {"s": submission, "reason": refusal.reason}
    return render(request, "submissions/review_refused.html", context, status=refusal.status)


@frameable_by_platforms  # the feedback page it is sent from may be inside the LMS's iframe
@login_required
@require_POST
def ask_review(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission, role = submission_for(request.user, submission_id)
    student = signed_in(request)
    if submission.user_id != student.pk:
        # Staff reach the submission, but a request is its student's to make.
        return _refused(request, submission, Refused(403, "Only the student who submitted it can ask for a review."))
    if not reviewable(submission):
        reason = "Only a graded submission (not a self-check, not one still waiting) can be reviewed."
        return _refused(request, submission, Refused(400, reason))
    form = AskForm(request.POST)
    if not form.is_valid():
        said = " ".join(str(error) for errors in form.errors.values() for error in errors)
        return _refused(request, submission, Refused(400, f"The request was not sent: {said}"))
    shown = shown_result(submission, role)
    check_id, message = form.cleaned_data["check"], form.cleaned_data["message"]
    # Unknown and not-shown-to-you checks are refused alike: an id cannot be probed.
    title = askable_checks(submission, shown).get(check_id)
    if title is None:
        return _refused(request, submission, Refused(400, "There is no such check on this submission's feedback."))
    try:
        ask(submission, student, check_id, title, message)
    except Refused as refusal:
        return _refused(request, submission, refusal)
    messages.success(request, f"Your review request about “{title}” was sent to staff.")
    anchor = check_anchors(shown).get(check_id, "")
    return redirect(reverse("feedback", args=[submission.pk]) + (f"#{anchor}" if anchor else ""))


@frameable_by_platforms
@login_required
@require_POST
def withdraw_review(request: HttpRequest, submission_id: int, request_id: int) -> HttpResponse:
    submission, _ = submission_for(request.user, submission_id)
    student = signed_in(request)
    review = ReviewRequest.objects.filter(pk=request_id, submission=submission, student=student).first()
    if review is None:
        raise Http404  # someone else's request, or none: the same answer
    if withdraw(review, student):
        messages.success(request, f"Your review request about “{review.check_title}” was withdrawn.")
    else:
        messages.info(request, "That review request was already answered or withdrawn.")
    return redirect("feedback", submission_id=submission.pk)
