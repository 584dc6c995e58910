"""Staff's side of the grade passback: send a student's score to the LMS again."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from ..accounts.identity import signed_in
from ..courses.access import assignment_for, posted_username
from ..courses.back import done
from ..courses.models import STAFF_ROLES, Enrolment, Role
from ..submissions.models import AuditEntry
from . import passback


@login_required
@require_POST
def resend(request: HttpRequest, slug: str) -> HttpResponse:
    """Send a student's counted score to the LMS again, as it stands now (after the LMS refused
    it, or to repair a gradebook edited by hand): staff of the course only (else 404)."""
    assignment, role = assignment_for(request.user, slug)
    if role not in STAFF_ROLES:
        raise Http404
    username = posted_username(request.POST.get("username", "")) or ""
    student = (
        Enrolment.objects.filter(course=assignment.course, role=Role.STUDENT, user__username=username)
        .values_list("user_id", flat=True)
        .first()
    )
    if not username or student is None:
        raise Http404
    queued = passback.resend(assignment, student)
    AuditEntry.objects.create(
        actor=signed_in(request),
        action="lms-resend",
        assignment=assignment,
        student_id=student,
        detail=f"{username} on {assignment.slug}: score sent to the LMS again ({queued} gradebook(s))",
    )
    return done(request, assignment, f"The score of {username} is being sent to {queued} LMS gradebook(s) again.")
