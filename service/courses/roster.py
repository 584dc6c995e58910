"""Enrolment from a CSV roster, API tokens, and the demo course `make serve` loads."""

from __future__ import annotations

import csv
import io
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from ..accounts.models import ApiToken
from ..lti.claims import LTI_PREFIX
from .models import Assignment, Course, Enrolment, Role

MAX_ROSTER_ROWS = 5000


class RosterError(ValueError):
    pass


@dataclass(frozen=True)
class RosterOutcome:
    created: int
    enrolled: int
    already: int


def enrol_csv(slug: str, text: str) -> RosterOutcome:
    """Enrol every ``username,email,name`` row as a student of the assignment's course,
    creating accounts (without a usable password: they sign in through the LMS, or staff set one)."""
    assignment = Assignment.objects.select_related("course").filter(slug=slug).first()
    if assignment is None:
        raise RosterError(f"no assignment {slug!r}")
    if "\x00" in text:
        raise RosterError("it contains a NUL character: is it a CSV text file?")
    reader = csv.reader(io.StringIO(text))
    try:
        rows = [r for r in reader if r and any(cell.strip() for cell in r)]
    except csv.Error as error:
        raise RosterError(f"line {reader.line_num}: not a CSV row ({error})") from None
    if rows and [c.strip().lower() for c in rows[0][:3]] == ["username", "email", "name"]:
        rows = rows[1:]
    if len(rows) > MAX_ROSTER_ROWS:
        raise RosterError(f"at most {MAX_ROSTER_ROWS} rows")
    users = get_user_model()
    created = enrolled = already = 0
    check_name = UnicodeUsernameValidator()
    with transaction.atomic():
        for number, row in enumerate(rows, start=1):
            if len(row) < 2:
                raise RosterError(f"row {number}: expected username,email,name")
            username, email = row[0].strip(), row[1].strip()
            name = row[2].strip() if len(row) > 2 else ""
            try:
                check_name(username)
                validate_email(email)
            except ValidationError as error:
                raise RosterError(f"row {number}: {'; '.join(error.messages)}") from None
            if len(username) > 150 or len(name) > 150:
                raise RosterError(f"row {number}: too long")
            if username.startswith(LTI_PREFIX):
                raise RosterError(f"row {number}: {LTI_PREFIX}... names belong to accounts made by LMS launches")
            user, made = users.objects.get_or_create(username=username, defaults={"email": email})
            if user.is_staff or user.is_superuser:
                raise RosterError(f"row {number}: {username} is a site operator's account, not a student's")
            if made:
                first, _, last = name.partition(" ")
                user.first_name, user.last_name = first[:150], last[:150]
                user.set_unusable_password()
                user.save()
                created += 1
            _, new = Enrolment.objects.get_or_create(
                course=assignment.course, user=user, defaults={"role": Role.STUDENT}
            )
            enrolled += int(new)
            already += int(not new)
    return RosterOutcome(created, enrolled, already)


def tokens_for(usernames: list[str]) -> list[tuple[str, str]]:
    users = get_user_model()
    out = []
    for username in usernames:
        user = users.objects.filter(username=username).first()
        if user is None:
            raise RosterError(f"no user {username!r}")
        out.append((username, ApiToken.issue(user)))
    return out


DEMO_DOMAIN = "demo.invalid"  # a reserved name no real address has: marks the demo's own accounts


def load_demo(rubric_file: str = "a8_autograd_lab.yaml") -> list[tuple[str, str]]:
    """The demo course (assignment ``a8``), and users instructor, student1, student2 with new
    passwords, returned so they can be printed. Idempotent: the demo's passwords are reset each
    time; an account of the same name that the demo did not make is refused, never reset."""
    users = get_user_model()
    with transaction.atomic():
        course, _ = Course.objects.get_or_create(slug="demo", defaults={"title": "Demo course"})
        Assignment.objects.get_or_create(
            slug="a8",
            defaults={
                "course": course,
                "title": "A8: Computational Graphs & Scalar Autograd",
                "rubric_file": rubric_file,
                "due_at": timezone.now() + timedelta(days=7),
                "grace_minutes": 15,
                "late_penalty_per_day": 10.0,
            },
        )
        logins = []
        for username, role in (("instructor", Role.INSTRUCTOR), ("student1", Role.STUDENT), ("student2", Role.STUDENT)):
            email = f"{username}@{DEMO_DOMAIN}"
            user, _ = users.objects.get_or_create(username=username, defaults={"email": email})
            if user.email != email or user.is_staff or user.is_superuser:
                # Pointed at a real course's database, the demo never takes over a real account.
                raise RosterError(f"an account named {username!r} exists and is not a demo account: not touched")
            password = secrets.token_urlsafe(9)
            user.set_password(password)
            user.save()
            Enrolment.objects.update_or_create(course=course, user=user, defaults={"role": role})
            logins.append((username, password))
    return logins
