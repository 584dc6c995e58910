"""Staff pages: the class view, score overrides, regrades, exports."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, replace
from datetime import datetime
from urllib.parse import unquote

from django import forms
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.validators import MaxValueValidator
from django.db import transaction
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from grader.report.canvas import canvas_csv
from grader.report.class_report import render_class_report
from grader.report.csv_export import grades_csv, text_cell
from grader.report.gradescope import to_gradescope
from grader.report.prairielearn import to_prairielearn
from grader.results import SubmissionResult
from grader.results_io import result_from_json

from ..accounts.identity import signed_in
from ..accounts.throttle import locked_usernames, unlock
from ..lti.claims import LTI_PREFIX
from ..lti.lms_roster import request_sync
from ..lti.models import RosterSource, RosterSync
from ..lti.passback import class_status, score_changed
from ..numbers import StrictFloatField
from ..submissions.intake import enqueue
from ..submissions.models import PENDING, SCORED, AuditEntry, Kind, Regrade, ScoreOverride, State, Submission
from ..submissions.queue import Lane
from ..submissions.standing import counted_submission
from ..submissions.views import feedback_policy
from .access import assignment_for, posted_username, submission_for
from .models import STAFF_ROLES, Assignment, Counted, Enrolment, HiddenDetails, Role
from .people import full_name, labelled
from .refusals import form_errors
from .roster import RosterError, enrol_csv
from .similarity import headline

MAX_REASON = 2000


class OverrideForm(forms.Form):
    score = StrictFloatField(min_value=0.0)
    reason = forms.CharField(
        max_length=MAX_REASON,
        error_messages={"max_length": f"A reason is at most {MAX_REASON} characters (this one has %(show_value)d)."},
    )

    def __init__(self, data: QueryDict, *, limit: float) -> None:
        super().__init__(data)
        self.fields["score"].validators.append(MaxValueValidator(limit))


def _staff_assignment(request: HttpRequest, slug: str) -> Assignment:
    assignment, role = assignment_for(request.user, slug)
    if role not in STAFF_ROLES:
        raise Http404  # students cannot tell a staff page from a missing one
    return assignment


@dataclass(frozen=True)
class Row:
    user: User
    counted: Submission | None
    score: float | None
    submissions: list[Submission]
    before_regrade: float | None = None  # the score before the latest regrade, when there was one
    lms: str = ""  # where the score stands in the LMS gradebook ("" when not launched from one)
    left_at: datetime | None = None  # when the LMS stopped listing them (their work is kept)


def _rows(assignment: Assignment) -> list[Row]:
    students = Enrolment.objects.filter(course=assignment.course, role=Role.STUDENT).select_related("user")
    rows = []
    lms = class_status(assignment)
    for enrolment in students.order_by("user__username"):
        counted = counted_submission(assignment, enrolment.user_id)
        tries = Submission.objects.filter(assignment=assignment, user_id=enrolment.user_id, kind=Kind.SUBMIT)
        regrade = counted.regrades.order_by("-at").first() if counted else None
        rows.append(
            Row(
                enrolment.user,
                counted,
                counted.counted_score if counted else None,
                list(tries.defer("content", "result_json")[:50]),
                regrade.old_score if regrade else None,
                lms.get(enrolment.user_id, ""),
                enrolment.left_at,
            )
        )
    return rows


@login_required
@require_GET
def class_view(request: HttpRequest, slug: str) -> HttpResponse:
    assignment, role = assignment_for(request.user, slug)
    if role not in STAFF_ROLES:
        raise Http404
    rows = _rows(assignment)
    context = {
        "assignment": assignment,
        "rows": rows,
        "is_instructor": role == Role.INSTRUCTOR,
        "extensions": assignment.extensions.select_related("user").order_by("user__username"),
        "counted_choices": Counted.choices,
        "hidden_choices": HiddenDetails.choices,
        "similarity": headline(assignment, {row.user.pk: row.counted for row in rows}),
        "has_base_code": bool(assignment.base_code.strip()),
        "locked": locked_usernames(row.user.username for row in rows),
        "roster_status": _roster_status(assignment),
    }
    return render(request, "courses/class.html", context)


def _roster_status(assignment: Assignment) -> str:
    """The last roster sync from the LMS, in a sentence for the class view."""
    sync = RosterSync.objects.filter(course=assignment.course).first()
    if sync is None or sync.finished_at is None:
        said = "No sync from the LMS yet."
    else:
        said = f"Last sync {timezone.localtime(sync.finished_at):%Y-%m-%d %H:%M}: {sync.message}."
    if sync is not None and sync.requested_at and (sync.finished_at is None or sync.requested_at > sync.finished_at):
        said += " A sync is waiting for the worker."
    if not RosterSource.objects.filter(link__course=assignment.course).exists():
        said += " The LMS gives the roster's address at a launch from a linked course: launch the grader from it first."
    return said


def _counted_results(assignment: Assignment) -> list[tuple[User, SubmissionResult]]:
    """Each student's counted result, its score as it counts (late penalty, override)."""
    out = []
    for row in _rows(assignment):
        counted = row.counted
        if counted is None or not counted.result_json:
            continue
        result = result_from_json(counted.result_json)
        out.append((row.user, replace(result, student=row.user.username, score=counted.counted_score or 0.0)))
    return out


def _download(body: str | bytes, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_GET
def export(request: HttpRequest, slug: str, kind: str) -> HttpResponse:
    """The class's grades through the grader's own writers: grades.csv, canvas.csv, or one
    JSON file of Gradescope or PrairieLearn results per student."""
    assignment = _staff_assignment(request, slug)
    results = _counted_results(assignment)
    if kind == "grades.csv":
        tags = [section.tag for section in assignment.rubric().sections]
        body = _with_names(
            grades_csv([r for _, r in results], tags), {text_cell(u.username): full_name(u) for u, _ in results}
        )
        return _download(body, "text/csv; charset=utf-8", f"{assignment.slug}-grades.csv")
    if kind == "canvas.csv":
        # Canvas matches by its user id (recorded at an LTI launch), else by SIS login id: a
        # local account's username, as a roster from the LMS gives it; never our lti-... names.
        lms_ids = dict(Enrolment.objects.filter(course=assignment.course).values_list("user_id", "lms_user_id"))
        rows = [
            (
                user.get_full_name() or user.username,
                lms_ids.get(user.pk, ""),
                result,
                "" if user.username.startswith(LTI_PREFIX) else user.username,
            )
            for user, result in results
        ]
        return _download(canvas_csv(rows, assignment.title), "text/csv; charset=utf-8", f"{assignment.slug}-canvas.csv")
    if kind == "gradescope.json":
        body = json.dumps({user.username: to_gradescope(result) for user, result in results}, indent=1)
        return _download(body, "application/json", f"{assignment.slug}-gradescope.json")
    if kind == "prairielearn.json":
        body = json.dumps({user.username: to_prairielearn(result) for user, result in results}, indent=1)
        return _download(body, "application/json", f"{assignment.slug}-prairielearn.json")
    raise Http404


def _with_names(grades: str, names: dict[str, str]) -> str:
    """The grader's grades.csv with a ``name`` column after ``student`` (the username)."""
    rows = list(csv.reader(io.StringIO(grades, newline="")))
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n")
    for number, row in enumerate(rows):
        name = "name" if number == 0 else names.get(row[0], "")
        writer.writerow([row[0], text_cell(name), *row[1:]])
    return out.getvalue()


MAX_ROSTER_BYTES = 1024 * 1024


@login_required
@require_POST
def roster(request: HttpRequest, slug: str) -> HttpResponse:
    """Enrol students from an uploaded CSV (username,email,name), instructors only."""
    assignment, role = assignment_for(request.user, slug)
    if role != Role.INSTRUCTOR:
        raise Http404
    upload = request.FILES.get("roster")
    if upload is None or upload.size is None or upload.size > MAX_ROSTER_BYTES:
        return HttpResponse("Choose a CSV file of at most 1 MiB (username,email,name).", status=400)
    try:
        outcome = enrol_csv(assignment.slug, upload.read().decode("utf-8-sig"))
    except (RosterError, UnicodeDecodeError) as error:
        return HttpResponse(f"The roster was not imported: {error}", status=400, content_type="text/plain")
    AuditEntry.objects.create(
        actor=signed_in(request),
        action="roster",
        detail=f"{outcome.created} created, {outcome.enrolled} enrolled, {outcome.already} already enrolled",
    )
    return redirect("class-view", slug=assignment.slug)


@login_required
@require_POST
def unlock_sign_in(request: HttpRequest, slug: str) -> HttpResponse:
    """Forget a student's failed sign-ins, so a locked account can sign in again: staff of a
    course the student is enrolled in only (anyone else, any other name: 404)."""
    assignment = _staff_assignment(request, slug)
    username = posted_username(request.POST.get("username", ""))
    if username is None:
        raise Http404
    enrolled = Enrolment.objects.filter(course=assignment.course, role=Role.STUDENT, user__username=username)
    if not enrolled.exists():
        raise Http404
    removed = unlock(username)
    student = enrolled.select_related("user").get().user
    AuditEntry.objects.create(
        actor=signed_in(request),
        action="unlock",
        detail=f"{labelled(student)}: sign-in unlocked ({removed} records removed)",
    )
    return redirect("class-view", slug=assignment.slug)


@login_required
@require_GET
def class_report(request: HttpRequest, slug: str) -> HttpResponse:
    """The grader's class report (histogram, pass rates, misconceptions, who needs a human),
    built from the database's counted submissions."""
    assignment = _staff_assignment(request, slug)
    results = _counted_results(assignment)
    counted = {row.user.username: row.counted.pk for row in _rows(assignment) if row.counted is not None}

    def feedback_href(student: str) -> str:
        return f"/submissions/{counted.get(unquote(student), 0)}/feedback/"

    html = render_class_report(
        [r for _, r in results],
        title=assignment.title,
        feedback_href=feedback_href,
        similarity=headline(assignment),
        similarity_href=reverse("similarity", args=[assignment.slug]),
    )
    response = HttpResponse(html)
    response["Content-Security-Policy"] = feedback_policy(html)
    return response


@login_required
@require_POST
def override(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission, role = submission_for(request.user, submission_id)
    if role not in STAFF_ROLES:
        raise Http404
    limit = submission.max_score or submission.assignment.rubric().total
    form = OverrideForm(request.POST, limit=limit)
    if not form.is_valid():
        return form_errors(form, f"An override needs a score between 0 and {limit:g} and a reason.")
    record_override(submission, signed_in(request), form.cleaned_data["score"], form.cleaned_data["reason"])
    return redirect("class-view", slug=submission.assignment.slug)


def record_override(submission: Submission, actor: User, score: float, reason: str) -> ScoreOverride:
    """A score set by staff (checked by ``OverrideForm``): kept with its reason, audited, and
    sent on to the LMS's gradebook; the class view and an answered review request both come here."""
    with transaction.atomic():
        old = submission.counted_score
        made = ScoreOverride.objects.create(submission=submission, score=score, reason=reason, by=actor)
        AuditEntry.objects.create(
            actor=actor,
            action="override",
            submission=submission,
            detail=f"{labelled(submission.user)}: {old} -> {score}: {reason}",
        )
        score_changed(submission.assignment_id, submission.user_id)
    return made


@login_required
@require_POST
def regrade(request: HttpRequest, slug: str) -> HttpResponse:
    """Grade again (every counted submission, or each student's latest) in the regrade lane,
    which never delays students' jobs; old scores are kept beside the new ones."""
    assignment = _staff_assignment(request, slug)
    which = request.POST.get("which", "latest")
    if which not in ("latest", "all"):
        return HttpResponse("Regrade 'latest' or 'all'.", status=400, content_type="text/plain")
    # A submission already waiting for its regrade is neither queued twice nor skipped over.
    candidates = Submission.objects.filter(assignment=assignment, kind=Kind.SUBMIT).filter(
        Q(state__in=SCORED) | Q(state__in=PENDING, lane=Lane.REGRADE.value)
    )
    if which == "latest":
        latest = candidates.order_by("user_id", "-received_at", "-id").distinct("user_id")
        chosen = [s.pk for s in latest.only("pk", "state") if s.state in SCORED]
    else:
        chosen = list(candidates.filter(state__in=SCORED).values_list("pk", flat=True))
    now = timezone.now()
    with transaction.atomic():  # all or none, and the audit entry with them
        # Locked and checked again: a second click while this one runs queues nothing twice.
        targets = list(
            Submission.objects.select_for_update(of=("self",))
            .filter(pk__in=chosen, state__in=SCORED)
            .select_related("assignment")
            .defer("content")
            .order_by("pk")
        )
        for submission in targets:
            Regrade.objects.create(
                submission=submission,
                old_score=submission.score,
                old_state=submission.state,
                old_result_json=submission.result_json,
            )
            Submission.objects.filter(pk=submission.pk).update(state=State.QUEUED, started_at=None)
            enqueue(submission, Lane.REGRADE)  # with today's sandbox and rubric
        detail = f"{len(targets)} submission(s) of {assignment.slug} ({which}) at {now:%Y-%m-%d %H:%M}"
        AuditEntry.objects.create(actor=signed_in(request), action="regrade", detail=detail)
    return redirect("class-view", slug=assignment.slug)


@login_required
@require_POST
def sync_roster(request: HttpRequest, slug: str) -> HttpResponse:
    """Ask for the course's roster from its LMS (NRPS), read by a job on the queue ``lms``;
    staff only. The outcome shows on the class view and in the audit entries."""
    assignment = _staff_assignment(request, slug)
    user = signed_in(request)
    queued = request_sync(assignment.course_id, user.pk)
    AuditEntry.objects.create(
        actor=user,
        action="lms_roster",
        detail=f"{assignment.course.slug}: roster sync asked for" + ("" if queued else " (one was already waiting)"),
    )
    return redirect("class-view", slug=assignment.slug)
