"""Submissions as received, their grading state, and every change staff make to a score."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from ..courses.keys import KeyField
from ..courses.models import Assignment


class Kind(models.TextChoices):
    SELF_CHECK = "self_check"  # visible checks only, not counted
    SUBMIT = "submit"  # counted


class State(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    GRADED = "graded"
    NOT_LOADABLE = "not_loadable"
    TIMEOUT = "timeout"
    OOM = "oom"
    OUTPUT_LIMIT = "output_limit"
    UNGRADABLE = "ungradable"
    INFRA_ERROR = "infra_error"
    SUPERSEDED = "superseded"


PENDING = (State.QUEUED, State.RUNNING)
# A finished grading that produced a score (infra errors never count as attempts).
SCORED = (State.GRADED, State.NOT_LOADABLE, State.TIMEOUT, State.OOM, State.OUTPUT_LIMIT, State.UNGRADABLE)
RESOURCE_STATES = (State.TIMEOUT, State.OOM, State.OUTPUT_LIMIT)
# How a failed regrade's detail begins (its reason follows, for staff; students read less).
REGRADE_FAILED = "the regrade failed"


class Submission(models.Model):
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="submissions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    received_at = models.DateTimeField(default=timezone.now, db_index=True)
    filename = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveIntegerField()
    content = models.BinaryField()
    problem = models.TextField(blank=True, help_text="why the upload cannot be graded, when it cannot")
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED, db_index=True)
    seed = KeyField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    max_score = models.FloatField(null=True, blank=True)
    late_penalty = models.FloatField(default=0.0, help_text="percent taken off")
    result_json = models.TextField(blank=True)
    # What a student may see before the due date: the visible checks' points only.
    visible_score = models.FloatField(null=True, blank=True)
    visible_max_score = models.FloatField(null=True, blank=True)
    detail = models.TextField(blank=True)
    # The sections settled while it runs (grader.judge.progress), for its page to show before the
    # end: a JSON list of {tag, title, points, max_points, visible_points, visible_max_points}.
    progress_json = models.TextField(blank=True, default="")
    # What it must be graded with: the sandbox recipe and the rubric file (service.fleet.identity).
    recipe = models.CharField(max_length=12, blank=True)
    rubric_sha256 = models.CharField(max_length=64, blank=True)
    job_id = models.BigIntegerField(null=True, blank=True)
    lane = models.CharField(max_length=16, default="")
    # When its current job was queued (a regrade or a requeue queues it again): a job's age on
    # the health page counts from here, never from the upload.
    queued_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0, help_text="sandbox runs, infrastructure failures included")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-received_at", "-id"]
        indexes = [models.Index(fields=["assignment", "user", "kind"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.user} {self.assignment.slug} {self.kind} {self.state}"

    @property
    def counted_score(self) -> float | None:
        """The score after the late penalty and any override."""
        # From the prefetched overrides when there are (a class view asks for hundreds).
        override = max(self.overrides.all(), key=lambda o: (o.at, o.pk), default=None)
        if override is not None:
            return override.score
        if self.score is None:
            return None
        return round(self.score * (1 - self.late_penalty / 100), 2)

    def hides_hidden(self, viewer_is_staff: bool) -> bool:
        """Until the student's release time (``Assignment.hidden_released_at``), a counted
        submission's hidden results are withheld from the student (Gradescope's
        ``after_due_date``), unless the assignment shows them."""
        from ..courses.models import HiddenDetails

        assignment = self.assignment
        return (
            not viewer_is_staff
            and self.kind == Kind.SUBMIT
            and assignment.hidden_details == HiddenDetails.AFTER_DUE_DATE
            and timezone.now() < assignment.hidden_released_at(self.user_id)
        )

    def shown_state(self, viewer_is_staff: bool) -> str:
        """While hidden results are withheld, running out of time, memory or output is not told
        either: it may have happened in a hidden check, and each upload would then leak one bit
        about the hidden inputs. The visible checks' own outcomes still show on the feedback page."""
        if self.state in RESOURCE_STATES and self.hides_hidden(viewer_is_staff):
            return State.GRADED.value
        return str(self.state)

    def shown_score(self, viewer_is_staff: bool) -> tuple[float | None, float | None]:
        if self.hides_hidden(viewer_is_staff):
            return self.visible_score, self.visible_max_score
        return self.counted_score, self.max_score

    def progress(self, viewer_is_staff: bool = False) -> list[dict[str, Any]]:
        """The sections settled so far while it runs, as this viewer may see them: before the
        release of hidden results a student sees the visible checks' points only, of the sections
        that waited for no hidden probe."""
        if self.state != State.RUNNING or not self.progress_json:
            return []
        try:
            sections = json.loads(self.progress_json)
        except ValueError:
            return []
        withheld = self.hides_hidden(viewer_is_staff)
        points, most = ("visible_points", "visible_max_points") if withheld else ("points", "max_points")
        shown = []
        for section in sections if isinstance(sections, list) else []:
            if not isinstance(section, dict) or not section.get(most):
                continue  # nothing in it this viewer may see (no visible check), or not ours
            if withheld and section.get("reads_hidden", True):
                continue  # when it settled would time hidden probes: the result will show it
            try:
                row = {"title": str(section.get("title", "")), "points": float(section[points]), "max_points": float(section[most])}
            except (KeyError, TypeError, ValueError):
                continue  # not a row the worker wrote
            shown.append(row)
        return shown

    def to_dict(self, viewer_is_staff: bool = False) -> dict[str, Any]:
        score, max_score = self.shown_score(viewer_is_staff)
        return {
            "id": self.pk,
            "assignment": self.assignment.slug,
            "kind": self.kind,
            "received_at": self.received_at.isoformat(),
            "sha256": self.sha256,
            "status": self.shown_state(viewer_is_staff),
            "score": score,
            "max_score": max_score,
            "hidden_results_withheld": self.hides_hidden(viewer_is_staff),
            "late_penalty": self.late_penalty,
            "problem": self.problem,
            "feedback_url": f"/submissions/{self.pk}/feedback/",
            "sections": self.progress(viewer_is_staff),
        }


class GradingRun(models.Model):
    """One attempt at grading a submission, by one worker. A run whose worker died stays
    unfinished; exactly one run per graded submission ends with a score."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="runs")
    worker = models.CharField(max_length=200)
    image_id = models.CharField(max_length=100, blank=True, help_text="the sandbox image it ran in, on its host")
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=16, blank=True, help_text="the state it ended in; empty if it never ended")


class ScoreOverride(models.Model):
    """A score set by staff, with the reason; the latest one counts, all are kept."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="overrides")
    score = models.FloatField()
    reason = models.TextField()
    by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    at = models.DateTimeField(default=timezone.now)


class Regrade(models.Model):
    """An earlier score of a submission, kept when it is graded again."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="regrades")
    old_score = models.FloatField(null=True)
    old_state = models.CharField(max_length=16)
    old_result_json = models.TextField(blank=True)
    at = models.DateTimeField(default=timezone.now)


class AuditEntry(models.Model):
    """Who did what to whose grade, and why. The assignment it was done on (its class view's
    audit page lists these) and the student it concerns, when there is one, are kept apart from
    the text: an extension or an unlock has no submission."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    action = models.CharField(max_length=40)
    assignment = models.ForeignKey(Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit")
    student = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    submission = models.ForeignKey(Submission, null=True, on_delete=models.SET_NULL, related_name="audit")
    detail = models.TextField()

    class Meta:
        ordering = ["-at"]
        indexes = [models.Index(fields=["assignment", "-at"], name="audit_by_assignment")]


class ReviewState(models.TextChoices):
    OPEN = "open"
    ANSWERED = "answered"
    WITHDRAWN = "withdrawn"


class ReviewRequest(models.Model):
    """A student's request that staff look again at one check of a graded submission; the
    check's title is kept as the student saw it then (a regrade may rename or drop it)."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="review_requests")
    # Copied from the submission: the one-open-request rule and the limits are per student and
    # assignment, which a constraint can only hold on columns of this table.
    student = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_requests")
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="review_requests")
    check_id = models.CharField(max_length=100)
    check_title = models.CharField(max_length=300)
    message = models.TextField()
    created = models.DateTimeField(default=timezone.now)
    state = models.CharField(max_length=10, choices=ReviewState.choices, default=ReviewState.OPEN)
    answer = models.TextField(blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    answered_at = models.DateTimeField(null=True, blank=True)  # or withdrawn: when it closed
    override = models.ForeignKey(
        ScoreOverride, null=True, blank=True, on_delete=models.SET_NULL, related_name="review_requests"
    )

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["student", "assignment", "check_id"],
                condition=models.Q(state="open"),
                name="one_open_review_per_check",
            )
        ]
        indexes = [models.Index(fields=["assignment", "state"])]

    def __str__(self) -> str:
        return f"review #{self.pk} {self.student} {self.check_id} {self.state}"
