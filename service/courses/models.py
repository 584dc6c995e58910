"""Courses, who is in them and with what role, and assignments with their late policy."""

from __future__ import annotations

import functools
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from grader.plan import new_seed
from grader.rubric import Rubric, load_rubric

from .keys import KeyField

RUBRICS = settings.REPO / "rubrics"
SLUG_PATTERN = "[a-z0-9][a-z0-9_-]{0,39}"  # also the URLs' shape (service.converters)
slug_shape = RegexValidator(f"^{SLUG_PATTERN}$", "lowercase letters, digits, - and _ (at most 40)")


class Role(models.TextChoices):
    STUDENT = "student"
    TA = "ta"
    INSTRUCTOR = "instructor"


STAFF_ROLES = (Role.TA, Role.INSTRUCTOR)


class Course(models.Model):
    slug = models.CharField(max_length=40, unique=True, validators=[slug_shape])
    title = models.CharField(max_length=200)

    def __str__(self) -> str:
        return self.title


class Enrolment(models.Model):
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="enrolments")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrolments")
    role = models.CharField(max_length=12, choices=Role.choices, default=Role.STUDENT)
    # The LMS's number for this person (Canvas's user id, from an LTI launch): grade exports match by it.
    lms_user_id = models.CharField(max_length=20, blank=True)
    # When the LMS's roster stopped listing this person (None: in the course). Their submissions
    # stay; they may read them but submit nothing more. A later launch or roster brings them back.
    left_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["course", "user"], name="one_enrolment_per_course")]

    @property
    def active(self) -> bool:
        return self.left_at is None

    def __str__(self) -> str:
        return f"{self.user} in {self.course} ({self.role})"


class Counted(models.TextChoices):
    LATEST = "latest"
    BEST = "best"


class HiddenDetails(models.TextChoices):
    """When a counted submission's hidden checks show their results (Gradescope's names)."""

    AFTER_DUE_DATE = "after_due_date", "After the deadline (the hard close, else the end of grace)"
    VISIBLE = "visible", "With each submission"


def _rubric_in_folder(value: str) -> None:
    path = (RUBRICS / value).resolve()
    if path.parent != RUBRICS.resolve() or path.suffix not in (".yaml", ".yml") or not path.is_file():
        raise ValidationError(f"{value!r} is not a rubric file in rubrics/")


@functools.lru_cache(maxsize=32)
def _rubric(path: str, mtime_ns: int, size: int) -> Rubric:
    """Parsed once per file version (a rubric takes a noticeable fraction of a second to load
    and check); an edited file is read again."""
    return load_rubric(path)


def draw_seed() -> int:
    """An assignment's own seed, a 128-bit key: the shipped rubric's is public, so a course's
    hidden inputs must not be derivable from it, nor the key searchable from some of them."""
    return new_seed()


class Assignment(models.Model):
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="assignments")
    slug = models.CharField(max_length=40, unique=True, validators=[slug_shape])
    title = models.CharField(max_length=200)
    rubric_file = models.CharField(max_length=100, validators=[_rubric_in_folder])
    due_at = models.DateTimeField()
    grace_minutes = models.PositiveIntegerField(default=0)
    late_penalty_per_day = models.FloatField(default=0.0, help_text="percent of the score per started day late")
    hard_close_at = models.DateTimeField(null=True, blank=True, help_text="no counted submission after this")
    counted = models.CharField(max_length=8, choices=Counted.choices, default=Counted.LATEST)
    hidden_details = models.CharField(
        max_length=16, choices=HiddenDetails.choices, default=HiddenDetails.AFTER_DUE_DATE
    )
    # Every grading of this assignment draws its hidden inputs from this seed, so the same file
    # always gets the same score; it is shown to staff only. Changing it calls for a regrade.
    seed = KeyField(
        default=draw_seed,
        help_text="hidden inputs are drawn from this seed (drawn at random when the assignment is made; "
        "never shown to students); after a change, regrade everyone",
    )
    # The similarity report leaves out what every student was given; the reference solution
    # always is, and this adds the course's own starter code.
    base_code = models.TextField(
        blank=True, help_text="starter code every student was given: not counted by the similarity report"
    )
    similarity_json = models.TextField(blank=True, help_text="the last similarity report's headline")

    def __str__(self) -> str:
        return self.title

    def rubric_path(self) -> Path:
        return RUBRICS / Path(self.rubric_file).name

    def rubric(self) -> Rubric:
        path = self.rubric_path()
        stat = path.stat()
        return _rubric(str(path), stat.st_mtime_ns, stat.st_size)

    def due_for(self, user_id: int) -> datetime:
        extension = self.extensions.filter(user_id=user_id).first()
        return extension.due_at if extension else self.due_at

    def late_penalty(self, user_id: int, received: datetime) -> float:
        """Percent taken off a counted submission received at ``received`` (0 when on time)."""
        late = received - (self.due_for(user_id) + timedelta(minutes=self.grace_minutes))
        if late <= timedelta(0):
            return 0.0
        days = -(-late // timedelta(days=1))  # every started day counts
        return min(100.0, days * self.late_penalty_per_day)

    def close_for(self, user_id: int) -> datetime | None:
        """After this no counted submission of the student's is taken (None: never closes)."""
        if self.hard_close_at is None:
            return None
        extension = self.extensions.filter(user_id=user_id).first()
        return max(self.hard_close_at, extension.due_at) if extension else self.hard_close_at

    def closed_for(self, user_id: int, now: datetime) -> bool:
        close = self.close_for(user_id)
        return close is not None and now > close

    def hidden_released_at(self, user_id: int) -> datetime:
        """When a student's hidden results show: at the hard close when there is one (nothing can
        be submitted after), else when the grace period ends (a later fix pays the late penalty).
        Never at the due date itself: the grace period still takes submissions as on time."""
        close = self.close_for(user_id)
        if close is not None:
            return close
        return self.due_for(user_id) + timedelta(minutes=self.grace_minutes)


class Extension(models.Model):
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="extensions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    due_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["assignment", "user"], name="one_extension_per_student")]
