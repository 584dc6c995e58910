"""Every lookup of a course object is scoped to the user here: unknown and not-yours look
the same (404), so ids cannot be probed."""

from __future__ import annotations

import re

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import Http404

from ..submissions.models import Submission
from .models import SLUG_PATTERN, STAFF_ROLES, Assignment, Enrolment, Role

BIGINT_MAX = 2**63 - 1  # PostgreSQL's bigint: every primary key of the service
_SLUG = re.compile(SLUG_PATTERN)


def role_in(user: AbstractBaseUser | AnonymousUser, course_id: int) -> Role | None:
    """The user's role in the course. Someone who left it (``Enrolment.left_at``) keeps a
    student's reach, their own submissions, and no more: a TA who left is no longer staff."""
    if not user.is_authenticated:
        return None
    found = Enrolment.objects.filter(user_id=user.pk, course_id=course_id).values_list("role", "left_at").first()
    if found is None:
        return None
    role, left_at = found
    return Role(role) if left_at is None else Role.STUDENT


def has_left(user_id: int, course_id: int) -> bool:
    return Enrolment.objects.filter(user_id=user_id, course_id=course_id, left_at__isnull=False).exists()


def assignment_for(user: AbstractBaseUser | AnonymousUser, slug: str) -> tuple[Assignment, Role]:
    # Slugs also come from LMS claims, not only from URLs: a shape no slug has is no query.
    if not _SLUG.fullmatch(slug):
        raise Http404
    assignment = Assignment.objects.select_related("course").filter(slug=slug).first()
    role = role_in(user, assignment.course_id) if assignment else None
    if assignment is None or role is None:
        raise Http404
    return assignment, role


def submission_for(user: AbstractBaseUser | AnonymousUser, submission_id: int) -> tuple[Submission, Role]:
    """A student reaches only their own submissions; staff reach their course's."""
    if not 0 < submission_id <= BIGINT_MAX:
        raise Http404
    submission = Submission.objects.select_related("assignment__course", "user").filter(pk=submission_id).first()
    if submission is None:
        raise Http404
    role = role_in(user, submission.assignment.course_id)
    if role is None or (role not in STAFF_ROLES and submission.user_id != user.pk):
        raise Http404
    return submission, role


USERNAME_MAX = 150  # Django's username column


def posted_username(value: str) -> str | None:
    """A username sent in a staff form, or None when no account can have it (empty, a NUL,
    longer than the column): such a name is an unknown student, never a database error."""
    if not value or len(value) > USERNAME_MAX or "\x00" in value:
        return None
    return value
