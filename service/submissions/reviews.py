"""Review requests: a student asks staff to look again at one check of a graded submission.

The rules live here, once: only the submission's owner asks; only about a counted, graded
submission and a check its feedback page shows them by name (a hidden check stays unaskable
while its results are withheld); one open request per student, assignment and check; at most
``MAX_OPEN`` open and ``MAX_TOTAL`` in all per student and assignment. Every change is audited.
"""

from __future__ import annotations

from django import forms
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from grader.report.html import check_anchor
from grader.report.site_frame import CheckReview, ReviewNote
from grader.report.view import format_number, group_by_section
from grader.results import SubmissionResult, Visibility

from ..courses.models import Enrolment
from ..courses.people import full_name, labelled
from .models import SCORED, AuditEntry, Kind, ReviewRequest, ReviewState, Submission

MAX_MESSAGE = 1000
MAX_ANSWER = 2000
MAX_OPEN = 5
MAX_TOTAL = 20
CHECK_ID_MAX = 100  # ReviewRequest.check_id's column
TITLE_MAX = 300  # ReviewRequest.check_title's column


class AskForm(forms.Form):
    # Django's CharField refuses a NUL; lengths are checked before anything is looked up.
    check = forms.CharField(max_length=CHECK_ID_MAX)
    message = forms.CharField(
        max_length=MAX_MESSAGE,
        error_messages={
            "required": "Write what staff should look at again.",
            "max_length": f"A request is at most {MAX_MESSAGE} characters (this one has %(show_value)d).",
        },
    )


class Refused(Exception):
    """A request that was not recorded, and why, in words for the student."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def reviewable(submission: Submission) -> bool:
    """A counted upload whose grading produced a score (a self-check counts for nothing)."""
    return submission.kind == Kind.SUBMIT and submission.state in SCORED and bool(submission.result_json)


def askable_checks(submission: Submission, shown: SubmissionResult) -> dict[str, str]:
    """Check id -> title, for the checks the owner may ask about, from the result as they see
    it (``visibility.student_view``). While hidden results are withheld only visible checks
    count: a hidden check shown early for its counterexample has no title to ask about."""
    if not reviewable(submission):
        return {}
    withheld = submission.hides_hidden(viewer_is_staff=False)
    return {
        c.check_id: c.title[:TITLE_MAX]
        for c in shown.checks
        if c.check_id and (not withheld or c.visibility is Visibility.VISIBLE)
    }


def check_anchors(shown: SubmissionResult) -> dict[str, str]:
    """Check id -> the id of its card on the feedback page, numbered as that page numbers it."""
    return {n.check.check_id: check_anchor(n.number) for g in group_by_section(shown) for n in g.checks}


def ask(submission: Submission, student: User, check_id: str, title: str, message: str) -> ReviewRequest:
    assignment = submission.assignment
    with transaction.atomic():
        # One student's requests on a course are taken one at a time, so the counts below hold.
        Enrolment.objects.select_for_update().filter(user=student, course_id=assignment.course_id).first()
        mine = ReviewRequest.objects.filter(student=student, assignment=assignment)
        if mine.filter(check_id=check_id, state=ReviewState.OPEN).exists():
            raise Refused(409, "You already have an open review request about this check; staff will answer it.")
        if mine.filter(state=ReviewState.OPEN).count() >= MAX_OPEN:
            raise Refused(
                409,
                f"You have {MAX_OPEN} open review requests on this assignment, the most at once: "
                "ask again once staff have answered one, or withdraw one.",
            )
        if mine.count() >= MAX_TOTAL:
            raise Refused(409, f"You have asked for {MAX_TOTAL} reviews on this assignment, the most there can be.")
        try:
            with transaction.atomic():
                made = ReviewRequest.objects.create(
                    submission=submission,
                    student=student,
                    assignment=assignment,
                    check_id=check_id,
                    check_title=title,
                    message=message,
                )
        except IntegrityError:  # the one-open-request constraint, should the lock ever be missed
            raise Refused(409, "You already have an open review request about this check; staff will answer it.")
        AuditEntry.objects.create(
            actor=student,
            action="review_ask",
            assignment=assignment,
            student=student,
            submission=submission,
            detail=f"{labelled(student)}: review of {check_id} asked (request {made.pk})",
        )
    return made


def withdraw(review: ReviewRequest, student: User) -> bool:
    """The student takes back their own open request; False when it was no longer open."""
    with transaction.atomic():
        changed = ReviewRequest.objects.filter(pk=review.pk, student=student, state=ReviewState.OPEN).update(
            state=ReviewState.WITHDRAWN, answered_at=timezone.now()
        )
        if changed:
            AuditEntry.objects.create(
                actor=student,
                action="review_withdraw",
                assignment_id=review.assignment_id,
                student=student,
                submission_id=review.submission_id,
                detail=f"{labelled(student)}: review of {review.check_id} withdrawn (request {review.pk})",
            )
    return bool(changed)


STATE_LABELS = {
    ReviewState.OPEN: "Waiting for staff",
    ReviewState.ANSWERED: "Answered",
    ReviewState.WITHDRAWN: "Withdrawn",
}


def when(moment: object) -> str:
    return f"{timezone.localtime(moment):%Y-%m-%d %H:%M}" if moment else ""  # type: ignore[arg-type]


WITHHELD_OUTCOME = "A new score was set: it shows after the deadline, with the hidden checks' results."


def outcome_of(review: ReviewRequest, withheld: bool = False) -> str:
    """The score an answer set. While the student's hidden results are withheld it is not told:
    a total set by hand, beside the visible checks' points, would tell the hidden ones' points
    (the submission page shows no override then either)."""
    if review.override is None:
        return ""
    if withheld:
        return WITHHELD_OUTCOME
    out_of = review.submission.max_score
    score = format_number(review.override.score)
    return f"Score set to {score}" + (f" / {format_number(out_of)}" if out_of else "")


def note_of(review: ReviewRequest, withdraw_action: str = "", withheld: bool = False) -> ReviewNote:
    return ReviewNote(
        state=review.state,
        state_label=STATE_LABELS.get(ReviewState(review.state), review.state),
        message=review.message,
        asked=when(review.created),
        answer=review.answer,
        answered=when(review.answered_at) if review.state == ReviewState.ANSWERED else "",
        by=full_name(review.answered_by) if review.answered_by else "",
        outcome=outcome_of(review, withheld),
        withdraw_action=withdraw_action if review.state == ReviewState.OPEN else "",
    )


def reviews_for_page(
    submission: Submission, viewer: User, shown: SubmissionResult, *, staff: bool
) -> tuple[dict[str, CheckReview], str]:
    """What the feedback page shows under each check (the requests made from this submission,
    and for its owner a form, or why there is none), and a notice for the top of the page when
    a limit leaves no form at all. Staff read the requests; they answer them on the class's
    requests page."""
    owner = submission.user_id == viewer.pk
    withheld = submission.hides_hidden(viewer_is_staff=staff)
    on_page = {c.check_id for c in shown.checks}
    here = list(
        ReviewRequest.objects.filter(submission=submission)
        .select_related("answered_by", "override", "submission")
        .order_by("created", "pk")[:MAX_TOTAL]
    )
    notes: dict[str, list[ReviewNote]] = {}
    for review in here:
        if review.check_id not in on_page:
            continue
        action = reverse("review-withdraw", args=[submission.pk, review.pk]) if owner else ""
        notes.setdefault(review.check_id, []).append(note_of(review, action, withheld))
    boxes = {check_id: CheckReview(requests=tuple(found), max_length=MAX_MESSAGE) for check_id, found in notes.items()}
    askable = askable_checks(submission, shown) if owner else {}
    if not askable:
        return boxes, ""
    mine = ReviewRequest.objects.filter(student=viewer, assignment_id=submission.assignment_id)
    open_on = dict(mine.filter(state=ReviewState.OPEN).values_list("check_id", "submission_id"))
    total = mine.count()
    full = ""
    if len(open_on) >= MAX_OPEN:
        full = (
            f"You have {MAX_OPEN} open review requests on this assignment, the most at once: "
            "ask for another once staff have answered one, or withdraw one."
        )
    elif total >= MAX_TOTAL:
        full = f"You have asked for {MAX_TOTAL} reviews on this assignment, the most there can be."
    ask_at = reverse("review-ask", args=[submission.pk])
    for check_id in askable:
        found = tuple(notes.get(check_id, ()))
        if check_id in open_on:
            elsewhere = open_on[check_id] != submission.pk
            note = f"Your open request about this check is on submission {open_on[check_id]}." if elsewhere else ""
            boxes[check_id] = CheckReview(note=note, requests=found, max_length=MAX_MESSAGE)
        elif not full:
            boxes[check_id] = CheckReview(action=ask_at, requests=found, max_length=MAX_MESSAGE)
    return boxes, full
