"""Staff set an assignment's late policy and per-student extensions from the class view
(not only from Django's admin, which is for the site's operators). A change re-prices the
late penalty of every counted submission it touches: scores follow the policy in force,
without a regrade."""

from __future__ import annotations

from datetime import UTC, datetime

from django import forms
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_POST

from ..accounts.identity import signed_in
from ..lti.passback import scores_changed
from ..numbers import StrictFloatField, StrictIntegerField
from ..submissions.models import AuditEntry, Kind, Submission
from .access import assignment_for
from .back import done, refused, refused_form
from .models import STAFF_ROLES, Assignment, Extension, Role
from .people import full_name, labelled

LOCAL_TIME = "%Y-%m-%dT%H:%M"  # what <input type="datetime-local"> sends
EARLIEST, LATEST = datetime(2000, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC)


class Moment(forms.DateTimeField):
    """A date in the local time zone, within this century: a due date in year 9999 would
    overflow once the grace minutes are added."""

    def __init__(self, *, required: bool = True) -> None:
        super().__init__(input_formats=[LOCAL_TIME], required=required)

    def validate(self, value: object) -> None:
        super().validate(value)
        if isinstance(value, datetime) and not EARLIEST <= value < LATEST:
            raise forms.ValidationError("Choose a date between 2000 and 2099.")


class PolicyForm(forms.ModelForm):  # type: ignore[type-arg]  # not subscriptable at run time
    due_at = Moment()
    hard_close_at = Moment(required=False)
    late_penalty_per_day = StrictFloatField(min_value=0.0, max_value=100.0)
    grace_minutes = StrictIntegerField(min_value=0, max_value=7 * 24 * 60)

    class Meta:
        model = Assignment
        fields = ["due_at", "grace_minutes", "late_penalty_per_day", "hard_close_at", "counted", "hidden_details"]

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        due, close = data.get("due_at"), data.get("hard_close_at")
        if due is not None and close is not None and close < due:
            raise forms.ValidationError("The hard close cannot come before the due date.")
        return data


class ExtensionForm(forms.Form):
    username = forms.CharField(max_length=150, label="Student")
    due_at = Moment(required=False)
    due_at.label = "New due date"


def reprice(assignment: Assignment, user_id: int | None = None) -> int:
    """Recompute the late penalty of counted submissions (one student's, or everyone's) under
    the assignment's current policy; returns how many changed."""
    changed = 0
    submissions = Submission.objects.filter(assignment=assignment, kind=Kind.SUBMIT)
    if user_id is not None:
        submissions = submissions.filter(user_id=user_id)
    for submission in submissions.only("pk", "user_id", "received_at", "late_penalty"):
        penalty = assignment.late_penalty(submission.user_id, submission.received_at)
        if penalty != submission.late_penalty:
            Submission.objects.filter(pk=submission.pk).update(late_penalty=penalty)
            changed += 1
    # The policy also moves the hidden results' release and may change which submission counts.
    scores_changed(assignment.pk, None if user_id is None else [user_id])
    return changed


@login_required
@require_POST
def policy(request: HttpRequest, slug: str) -> HttpResponse:
    """Due date, grace, late penalty, hard close, counted submission, hidden details:
    instructors only."""
    assignment, role = assignment_for(request.user, slug)
    if role != Role.INSTRUCTOR:
        raise Http404
    form = PolicyForm(request.POST, instance=assignment)
    if not form.is_valid():
        return refused_form(request, Assignment.objects.get(pk=assignment.pk), form, "Nothing was changed.")
    with transaction.atomic():
        saved = form.save()
        repriced = reprice(saved)
        changes = ", ".join(f"{name}={form.cleaned_data[name]}" for name in form.changed_data) or "nothing"
        AuditEntry.objects.create(
            actor=signed_in(request),
            action="policy",
            assignment=saved,
            detail=f"{saved.slug}: {changes}; {repriced} re-priced",
        )
    changed = ", ".join(str(form.fields[name].label or name) for name in form.changed_data) or "nothing changed"
    return done(request, saved, f"Policy saved ({changed}); {repriced} submission(s) re-priced.")


@login_required
@require_POST
def extension(request: HttpRequest, slug: str) -> HttpResponse:
    """Grant, move or (with an empty date) withdraw one student's extension: staff only."""
    assignment, role = assignment_for(request.user, slug)
    if role not in STAFF_ROLES:
        raise Http404
    form = ExtensionForm(request.POST)
    if not form.is_valid():
        return refused_form(request, assignment, form, "No extension was changed.")
    username, due = form.cleaned_data["username"], form.cleaned_data["due_at"]
    student = User.objects.filter(
        username=username,
        enrolments__course=assignment.course,
        enrolments__role=Role.STUDENT,
    ).first()
    if student is None:
        return refused(request, assignment, f"{username!r} is not a student of this course.")
    if due is not None and due < assignment.due_at:
        return refused(
            request,
            assignment,
            f"No extension was changed: an extension moves {full_name(student)}'s due date later than "
            "the class's, never earlier.",
        )
    with transaction.atomic():
        if due is None:
            withdrawn, _ = Extension.objects.filter(assignment=assignment, user=student).delete()
        else:
            Extension.objects.update_or_create(assignment=assignment, user=student, defaults={"due_at": due})
        repriced = reprice(assignment, student.pk)
        local = timezone.localtime(due) if due else None
        what = f"due {local:%Y-%m-%d %H:%M}" if local else "withdrawn"
        detail = f"{labelled(student)} on {slug}: {what}; {repriced} re-priced"
        AuditEntry.objects.create(
            actor=signed_in(request), action="extension", assignment=assignment, student=student, detail=detail
        )
    if local is not None:
        said = f"Extension for {full_name(student)}: due {local:%Y-%m-%d %H:%M}"
    else:
        said = f"Extension of {full_name(student)} withdrawn" if withdrawn else f"{full_name(student)} had no extension"
    return done(request, assignment, f"{said}; {repriced} submission(s) re-priced.")
