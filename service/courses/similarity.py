"""Staff pages: the similarity report over each student's counted file, and the base code it
leaves out. It finds similarity, never misconduct; students never see it."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from grader.similarity.batch import MAX_BASE_BYTES, read_base
from grader.similarity.report import SimilarityReport, Source, build, render_html, to_json
from grader.similarity.summary import SimilaritySection, content_digest, section, to_meta

from ..accounts.identity import signed_in
from ..submissions.models import AuditEntry, Kind, Submission
from ..submissions.standing import counted_submission
from ..submissions.views import feedback_policy
from .access import assignment_for
from .back import done, refused
from .frames import class_page_frame
from .models import STAFF_ROLES, Assignment, Enrolment, Role
from .people import labelled


def _files(
    assignment: Assignment, counted: Mapping[int, Submission | None] | None = None
) -> list[tuple[str, Submission]]:
    """Each enrolled student's counted submission, else their latest one with a file (a copy
    that fails to grade is still a copy). ``counted``, by user id: the file the caller has
    already chosen that way for a student (None: the student has none), so the class view asks
    nothing per student."""
    out = []
    students = Enrolment.objects.filter(course=assignment.course, role=Role.STUDENT).select_related("user")
    for enrolment in students.order_by("user__username"):
        looked_up = counted is not None and enrolment.user_id in counted
        if looked_up:
            chosen = counted[enrolment.user_id]  # type: ignore[index]  # looked_up: not None
        else:
            chosen = counted_submission(assignment, enrolment.user_id)
        if chosen is None and not looked_up:
            chosen = (
                Submission.objects.filter(assignment=assignment, user_id=enrolment.user_id, kind=Kind.SUBMIT)
                .exclude(size=0)
                .order_by("-received_at")
                .first()
            )
        if chosen is not None:
            out.append((labelled(enrolment.user), chosen))  # staff read names; the username tells two apart
    return out


def _digest(assignment: Assignment, files: list[tuple[str, Submission]]) -> str:
    """Changes with any counted file and with the starter code (a report made with other base
    code is not current either)."""
    base = hashlib.sha256(assignment.base_code.encode("utf-8", "surrogatepass")).hexdigest()
    return content_digest([*((name, submission.sha256) for name, submission in files), ("", base)])


def _report(assignment: Assignment, files: list[tuple[str, Submission]]) -> SimilarityReport:
    base = read_base([])
    if assignment.base_code.strip():
        base.append(Source("the assignment's starter code", assignment.base_code))
    sources = [Source(name, bytes(s.content).decode("utf-8", "replace")) for name, s in files]
    return build(sources, base)


def headline(
    assignment: Assignment, counted: Mapping[int, Submission | None] | None = None
) -> SimilaritySection | None:
    """The last report's headline for the class pages, marked stale once a counted file changed."""
    return section(
        assignment.similarity_json,
        digest=_digest(assignment, _files(assignment, counted)),
        href=reverse("similarity", args=[assignment.slug]),
    )


def _fresh_report(request: HttpRequest, slug: str) -> tuple[Assignment, SimilarityReport]:
    assignment, role = assignment_for(request.user, slug)
    if role not in STAFF_ROLES:
        raise Http404  # students cannot tell a staff page from a missing one
    files = _files(assignment)
    report = _report(assignment, files)
    Assignment.objects.filter(pk=assignment.pk).update(similarity_json=to_meta(report, _digest(assignment, files)))
    return assignment, report


@login_required
@require_GET
def similarity_json(request: HttpRequest, slug: str) -> HttpResponse:
    """Every pair, highest first, as ``grader similarity`` writes similarity.json."""
    assignment, report = _fresh_report(request, slug)
    response = HttpResponse(to_json(report), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{assignment.slug}-similarity.json"'
    return response


@login_required
@require_GET
def similarity(request: HttpRequest, slug: str) -> HttpResponse:
    assignment, report = _fresh_report(request, slug)
    html = render_html(
        report,
        title=f"{assignment.title}: similarity between submissions",
        frame=class_page_frame(request, assignment, "Similarity report"),
    )
    response = HttpResponse(html)
    response["Content-Security-Policy"] = feedback_policy(html, site=True)
    return response


@login_required
@require_POST
def base_code(request: HttpRequest, slug: str) -> HttpResponse:
    """Instructors set (or clear, with no file) the starter code the report leaves out."""
    assignment, role = assignment_for(request.user, slug)
    if role != Role.INSTRUCTOR:
        raise Http404
    upload = request.FILES.get("base_code")
    if upload is None:
        text = ""
    elif upload.size is None or upload.size > MAX_BASE_BYTES:
        return refused(request, assignment, "The starter code was not set: choose a file of at most 1 MB.")
    else:
        try:
            text = upload.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            return refused(request, assignment, "The starter code was not set: it must be UTF-8 text.")
        if "\x00" in text:
            return refused(request, assignment, "The starter code was not set: it must be text, not binary.")
    Assignment.objects.filter(pk=assignment.pk).update(base_code=text, similarity_json="")
    AuditEntry.objects.create(
        actor=signed_in(request),
        action="base_code",
        assignment=assignment,
        detail=f"{assignment.slug}: {len(text)} characters of starter code" if text else f"{assignment.slug}: cleared",
    )
    said = f"Starter code set ({len(text)} characters)." if text else "Starter code cleared."
    return done(request, assignment, said + " The similarity report leaves it out from its next run.")
