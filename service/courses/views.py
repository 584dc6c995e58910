"""Staff pages: the class view, score overrides, regrades, exports."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, replace
from urllib.parse import unquote

from django import forms
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.core.validators import MaxValueValidator
from django.db import transaction
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from grader.report.adjustments import Adjustment
from grader.report.canvas import canvas_csv
from grader.report.class_report import render_class_report
from grader.report.csv_export import grades_csv, text_cell
from grader.report.gradescope import to_gradescope
from grader.report.prairielearn import to_prairielearn
from grader.report.view import format_number
from grader.results import SubmissionResult
from grader.results_io import result_from_json
from grader.rubric import Section

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
from ..submissions.views import feedback_policy
from .access import assignment_for, posted_username, submission_for
from .back import done, refused, refused_form
from .class_list import FILTERS, STATUS_CHOICES, Row, View, class_rows, read_view, shown
from .frames import class_page_frame
from .models import STAFF_ROLES, Assignment, Counted, Enrolment, HiddenDetails, Role
from .people import full_name, labelled
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


MAX_AUDIT_PAGE = 50  # entries per audit page


@login_required
@require_GET
def class_view(request: HttpRequest, slug: str) -> HttpResponse:
    assignment, role = assignment_for(request.user, slug)
    if role not in STAFF_ROLES:
        raise Http404
    sections = list(assignment.rubric().sections)
    view = read_view(request.GET, [section.tag for section in sections])
    extensions = list(assignment.extensions.select_related("user").order_by("user__username"))
    rows = class_rows(assignment, {e.user_id: e.due_at for e in extensions}, class_status(assignment))
    columns = _columns(view, sections)
    context = {
        "assignment": assignment,
        "rows": shown(rows, view, [section.tag for section in sections]),
        "enrolled": len(rows),
        "view": view,
        "back": view.query(),
        "columns": columns,
        "section_columns": [columns[f"section:{section.tag}"] for section in sections],
        "filters": FILTERS,
        "status_choices": STATUS_CHOICES,
        "is_instructor": role == Role.INSTRUCTOR,
        "extensions": extensions,
        "counted_choices": Counted.choices,
        "hidden_choices": HiddenDetails.choices,
        "similarity": headline(assignment, {row.user.pk: _file_of(row) for row in rows}),
        "has_base_code": bool(assignment.base_code.strip()),
        "locked": locked_usernames(row.user.username for row in rows),
        "roster_status": _roster_status(assignment),
        "max_reason": MAX_REASON,
    }
    return render(request, "courses/class.html", context)


def _file_of(row: Row) -> Submission | None:
    """The file the similarity report reads for a student: the counted one, else the latest
    with a file (the rows hold the latest submissions, newest first)."""
    return row.counted or next((s for s in row.tries if s.size), None)


@dataclass(frozen=True)
class Column:
    """A sortable column heading: its link sorts by it (the other way when it is the sort)."""

    key: str
    label: str
    href: str
    aria_sort: str  # "" unless the table is sorted by it
    numeric: bool
    title: str = ""  # the whole name, on hover, when the label is a short form of it

    @property
    def tag(self) -> str:
        return self.key.removeprefix("section:")


def short_title(title: str) -> str:
    """A section's heading for a table column: the part before its colon ("Part 1 trace"), so
    six sections fit beside the names on a desk screen; the whole title shows on hover."""
    head = title.split(":", 1)[0].strip()
    return head if head else title


def _columns(view: View, sections: list[Section]) -> dict[str, Column]:
    keys = [("name", "Student", False), ("username", "Username", False)]
    keys += [(f"section:{s.tag}", short_title(s.title), True) for s in sections]
    titles = {f"section:{s.tag}": s.title for s in sections}
    keys += [("late", "Late penalty", True), ("total", "Total", True), ("status", "Status", False)]
    out = {}
    for key, label, numeric in keys:
        active = view.sort == key
        descending = not view.descending if active else numeric  # numbers start high, names at A
        query = view.query(sort=key, dir="desc" if descending else "asc")
        out[key] = Column(
            key,
            label,
            "?" + query if query else "?",
            ("descending" if view.descending else "ascending") if active else "",
            numeric,
            titles.get(key, ""),
        )
    return out


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


def _counted_results(assignment: Assignment) -> list[tuple[Row, SubmissionResult, Adjustment]]:
    """Each student's counted result (named by username), with its late penalty and override."""
    rows = [row for row in class_rows(assignment, {}, {}) if row.counted is not None]
    texts = dict(
        Submission.objects.filter(pk__in=[row.counted.pk for row in rows if row.counted]).values_list(
            "pk", "result_json"
        )
    )
    out = []
    for row in rows:
        assert row.counted is not None
        text = texts.get(row.counted.pk, "")
        if not text:
            continue
        result = replace(result_from_json(text), student=row.user.username)
        override = row.override
        adjustment = Adjustment(
            late_percent=row.late_percent,
            after_late=row.override_from,
            override=override.score if override is not None else None,
            reason=override.reason if override is not None else "",
        )
        out.append((row, result, adjustment))
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
    counted = _counted_results(assignment)
    results = [result for _, result, _ in counted]
    adjustments = [adjustment for _, _, adjustment in counted]
    users = [row.user for row, _, _ in counted]
    if kind == "grades.csv":
        tags = [section.tag for section in assignment.rubric().sections]
        body = _with_names(grades_csv(results, tags, adjustments), {text_cell(u.username): full_name(u) for u in users})
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
            for user, result in zip(users, results, strict=True)
        ]
        body = canvas_csv(rows, assignment.title, adjustments)
        return _download(body, "text/csv; charset=utf-8", f"{assignment.slug}-canvas.csv")
    if kind == "gradescope.json":
        body = json.dumps({row.user.username: to_gradescope(r, a) for row, r, a in counted}, indent=1)
        return _download(body, "application/json", f"{assignment.slug}-gradescope.json")
    if kind == "prairielearn.json":
        body = json.dumps({row.user.username: to_prairielearn(r, a) for row, r, a in counted}, indent=1)
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
        return refused(request, assignment, "Choose a CSV file of at most 1 MiB (username,email,name).")
    try:
        outcome = enrol_csv(assignment.slug, upload.read().decode("utf-8-sig"))
    except (RosterError, UnicodeDecodeError) as error:
        return refused(request, assignment, f"The roster was not imported: {error}")
    detail = f"{outcome.created} created, {outcome.enrolled} enrolled, {outcome.already} already enrolled"
    AuditEntry.objects.create(actor=signed_in(request), action="roster", assignment=assignment, detail=detail)
    return done(request, assignment, f"Roster imported: {detail}.")


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
        assignment=assignment,
        student=student,
        detail=f"{labelled(student)}: sign-in unlocked ({removed} records removed)",
    )
    return done(request, assignment, f"{full_name(student)} can sign in again.")


@login_required
@require_GET
def class_report(request: HttpRequest, slug: str) -> HttpResponse:
    """The grader's class report (histogram, pass rates, misconceptions, who needs a human),
    built from the database's counted submissions."""
    assignment = _staff_assignment(request, slug)
    results = _counted_results(assignment)
    counted = {row.user.username: row.counted.pk for row, _, _ in results if row.counted is not None}

    def feedback_href(student: str) -> str:
        return f"/submissions/{counted.get(unquote(student), 0)}/feedback/"

    html = render_class_report(
        # The score as it counts (late penalty, override), as the class view shows it.
        [replace(r, score=row.total or 0.0) for row, r, _ in results],
        title=assignment.title,
        feedback_href=feedback_href,
        similarity=headline(assignment),
        similarity_href=reverse("similarity", args=[assignment.slug]),
        frame=class_page_frame(request, assignment, "Class report"),
    )
    response = HttpResponse(html)
    response["Content-Security-Policy"] = feedback_policy(html, site=True)
    return response


@login_required
@require_POST
def override(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission, role = submission_for(request.user, submission_id)
    if role not in STAFF_ROLES:
        raise Http404
    assignment = submission.assignment
    limit = submission.max_score or assignment.rubric().total
    form = OverrideForm(request.POST, limit=limit)
    if not form.is_valid():
        who = full_name(submission.user)
        return refused_form(
            request, assignment, form, f"Nothing was changed: an override of {who}'s score needs a score "
            f"between 0 and {format_number(limit)} and a reason."
        )  # fmt: skip
    score, reason = form.cleaned_data["score"], form.cleaned_data["reason"]
    record_override(submission, signed_in(request), score, reason)
    said = f"Score of {full_name(submission.user)} set to {format_number(score)}: {reason}"
    return done(request, assignment, said)


def record_override(submission: Submission, actor: User, score: float, reason: str) -> ScoreOverride:
    """A score set by staff (checked by ``OverrideForm``): kept with its reason, audited, and
    sent on to the LMS's gradebook; the class view and an answered review request both come here."""
    assignment = submission.assignment
    with transaction.atomic():
        old = submission.counted_score
        made = ScoreOverride.objects.create(submission=submission, score=score, reason=reason, by=actor)
        AuditEntry.objects.create(
            actor=actor,
            action="override",
            assignment=assignment,
            student=submission.user,
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
        return refused(request, assignment, "Regrade 'latest' or 'all'.")
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
        AuditEntry.objects.create(actor=signed_in(request), action="regrade", assignment=assignment, detail=detail)
    what = "each student's latest submission" if which == "latest" else "every counted submission"
    return done(request, assignment, f"{len(targets)} submission(s) queued for a regrade ({what}).")


@login_required
@require_POST
def sync_roster(request: HttpRequest, slug: str) -> HttpResponse:
    """Ask for the course's roster from its LMS (NRPS), read by a job on the queue ``lms``;
    staff only. The outcome shows on the class view and in the audit entries."""
    assignment = _staff_assignment(request, slug)
    user = signed_in(request)
    queued = request_sync(assignment.course_id, user.pk)
    waiting = "" if queued else " (one was already waiting)"
    AuditEntry.objects.create(
        actor=user,
        action="lms_roster",
        assignment=assignment,
        detail=f"{assignment.course.slug}: roster sync asked for{waiting}",
    )
    return done(request, assignment, f"Roster sync from the LMS asked for{waiting}; the worker reads it.")


@login_required
@require_GET
def audit(request: HttpRequest, slug: str) -> HttpResponse:
    """Every recorded change to this assignment's grades and policy, newest first: staff of
    the course only (anyone else: 404)."""
    assignment = _staff_assignment(request, slug)
    entries = (
        AuditEntry.objects.filter(assignment=assignment)
        .select_related("actor", "student", "submission")
        .order_by("-at", "-pk")
    )
    paginator = Paginator(entries, MAX_AUDIT_PAGE)
    page = paginator.page(_page_number(request.GET.get("page", "1"), paginator.num_pages))
    return render(request, "courses/audit.html", {"assignment": assignment, "page": page})


def _page_number(text: str, last: int) -> int:
    """A page number as digits only; anything else is the first page, past the end the last."""
    if not text.isascii() or not text.isdigit() or len(text) > 9:
        return 1
    return min(max(1, int(text)), last)
