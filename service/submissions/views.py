"""Students' pages: the assignment (upload, history), a submission as it is graded, feedback."""

from __future__ import annotations

import base64
import hashlib

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from grader.report.html import render_feedback_html
from grader.report.site_frame import Crumb, SiteFrame
from grader.results import SubmissionResult
from grader.results_io import result_from_json

from ..accounts.identity import signed_in
from ..courses.access import assignment_for, submission_for
from ..courses.frames import assignment_crumbs, site_frame
from ..courses.models import STAFF_ROLES, Assignment, Counted, Enrolment, HiddenDetails
from ..lti.framing import frameable_by_platforms
from .intake import Refusal, body_too_large, position, receive
from .models import Kind, Submission
from .reviews import reviews_for_page
from .standing import counted_submission
from .visibility import detail_for, student_view


@frameable_by_platforms  # a launch lands here, inside the LMS's iframe
@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    enrolments = (
        Enrolment.objects.filter(user=signed_in(request))
        .select_related("course")
        .prefetch_related("course__assignments")
    )
    return render(request, "submissions/home.html", {"enrolments": enrolments})


def _counted_for(assignment: Assignment, user_id: int, staff: bool) -> Submission | None:
    """Which submission counts, as the student may see it: with the best one counting and hidden
    results withheld, pointing at it would tell which upload did better on the hidden checks."""
    withheld = (
        not staff
        and assignment.counted == Counted.BEST
        and assignment.hidden_details == HiddenDetails.AFTER_DUE_DATE
        and timezone.now() < assignment.hidden_released_at(user_id)
    )
    return None if withheld else counted_submission(assignment, user_id)


@frameable_by_platforms  # a launch lands here, inside the LMS's iframe
@login_required
@require_http_methods(["GET", "POST"])
def assignment_page(request: HttpRequest, slug: str) -> HttpResponse:
    user = signed_in(request)
    assignment, role = assignment_for(user, slug)
    refusal: Refusal | None = None
    if request.method == "POST" and body_too_large(request.META):
        refusal = Refusal(413, f"the upload is larger than {settings.MAX_UPLOAD_BYTES // 1024} KiB")
    elif request.method == "POST":
        upload = request.FILES.get("file")
        kind = request.POST.get("kind", "")
        if upload is None or kind not in Kind.values:
            refusal = Refusal(400, "choose a file, then Self-check or Submit")
        else:
            raw = upload.read(assignment.rubric().limits.max_file_kb * 1024 + 1)
            outcome = receive(assignment, user, Kind(kind), upload.name or "", raw)
            if isinstance(outcome, Submission):
                return redirect("submission", submission_id=outcome.pk)
            refusal = outcome
    mine = list(Submission.objects.filter(assignment=assignment, user=user).defer("content", "result_json")[:200])
    for one in mine:
        one.shown = one.shown_score(role in STAFF_ROLES)  # type: ignore[attr-defined]
        one.state_shown = one.shown_state(role in STAFF_ROLES)  # type: ignore[attr-defined]
    context = {
        "assignment": assignment,
        "rubric": assignment.rubric(),
        "role": role,
        "is_staff": role in STAFF_ROLES,
        "due": assignment.due_for(user.pk),
        "released": assignment.hidden_released_at(user.pk),
        "history": mine,
        "counted": _counted_for(assignment, user.pk, role in STAFF_ROLES),
        "refusal": refusal,
    }
    response = render(request, "submissions/assignment.html", context, status=refusal.status if refusal else 200)
    if refusal and refusal.retry_after:
        response["Retry-After"] = str(refusal.retry_after)
    return response


@frameable_by_platforms  # a launch lands here, inside the LMS's iframe
@login_required
@require_GET
def submission_page(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission, role = submission_for(request.user, submission_id)
    staff = role in STAFF_ROLES
    score, max_score = submission.shown_score(staff)
    withheld = submission.hides_hidden(staff)
    state = submission.shown_state(staff)
    detail = detail_for(submission, staff)
    context = {
        "s": submission,
        "position": position(submission),
        "progress": submission.progress(staff),
        "is_staff": staff,
        "score": score,
        "max_score": max_score,
        "withheld": withheld,
        "state": state,
        # The grader's "graded" for a graded run says nothing the status word does not.
        "detail": "" if detail.strip().lower() == state.lower() else detail,
        # The score shown is an override's when staff set one (and no hidden result is withheld).
        "override": None if withheld else max(submission.overrides.all(), key=lambda o: (o.at, o.pk), default=None),
        # Which worker and sandbox image graded it: staff only, never a student.
        "runs": submission.runs.order_by("started_at", "pk") if staff else (),
    }
    return render(request, "submissions/submission.html", context)


@login_required
@require_GET
def submission_status(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission, role = submission_for(request.user, submission_id)
    body = submission.to_dict(viewer_is_staff=role in STAFF_ROLES)
    body["queue_position"] = position(submission)
    return JsonResponse(body)


@frameable_by_platforms  # a launch lands here, inside the LMS's iframe
@login_required
@require_GET
def feedback(request: HttpRequest, submission_id: int) -> HttpResponse:
    """The grader's own feedback page, with what this viewer may see decided first."""
    submission, role = submission_for(request.user, submission_id)
    if not submission.result_json:
        return redirect("submission", submission_id=submission.pk)
    result = shown_result(submission, role)
    html = render_feedback_html(result, feedback_frame(request, submission, result, role in STAFF_ROLES))
    response = HttpResponse(html)
    response["Content-Security-Policy"] = feedback_policy(html, site=True)
    return response


def shown_result(submission: Submission, role: str) -> SubmissionResult:
    """The result as this viewer's feedback page shows it (numbering included)."""
    result = result_from_json(submission.result_json)
    return result if role in STAFF_ROLES else student_view(result, submission)


def feedback_frame(request: HttpRequest, submission: Submission, shown: SubmissionResult, staff: bool) -> SiteFrame:
    """The service's header around the grader's page, the way back included, and the review
    requests under its checks."""
    reviews, notice = reviews_for_page(submission, signed_in(request), shown, staff=staff)
    crumbs = (
        *assignment_crumbs(submission.assignment),
        Crumb(f"Submission {submission.pk}", reverse("submission", args=[submission.pk])),
        Crumb("Feedback"),
    )
    return site_frame(request, crumbs, (("info", notice),) if notice else (), reviews=reviews)


def feedback_policy(html: str, *, site: bool = False) -> str:
    """No script at all; the page's own inline style blocks allowed by hash, nothing else. A
    page the service frames (``site``) also takes the service's own stylesheets and posts its
    forms (sign out, review requests) to the service only."""
    hashes = []
    start = 0
    while (open_at := html.find("<style>", start)) != -1:
        close_at = html.index("</style>", open_at)
        body = html[open_at + len("<style>") : close_at]
        hashes.append("'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'")
        start = close_at
    styles = " ".join(["'self'", *hashes] if site else hashes) or "'none'"
    form_action = "'self'" if site else "'none'"
    return (
        "default-src 'none'; script-src 'none'; img-src 'self' data:; "
        f"style-src {styles}; base-uri 'none'; form-action {form_action}; frame-ancestors 'none'"
    )
