"""The fixed cast of the service's tests, and the files they upload."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from service.courses.models import Assignment, Course, Enrolment, Role

REPO = Path(__file__).resolve().parents[2]


class Cast:
    def __init__(self) -> None:
        self.course = Course.objects.create(slug="c1", title="Course one")
        self.other_course = Course.objects.create(slug="c2", title="Course two")
        self.assignment = Assignment.objects.create(
            course=self.course,
            slug="a8",
            title="A8",
            rubric_file="a8_autograd_lab.yaml",
            due_at=timezone.now() + timedelta(days=3),
        )
        self.other_assignment = Assignment.objects.create(
            course=self.other_course,
            slug="b1",
            title="B1",
            rubric_file="a8_autograd_lab.yaml",
            due_at=timezone.now() + timedelta(days=3),
        )
        self.password = "a-long-enough-password"
        self.student = self._user("alice", self.course, Role.STUDENT)
        self.student2 = self._user("bob", self.course, Role.STUDENT)
        self.ta = self._user("tara", self.course, Role.TA)
        self.instructor = self._user("ines", self.course, Role.INSTRUCTOR)
        self.outsider = self._user("otto", self.other_course, Role.STUDENT)

    def _user(self, name: str, course: Course, role: Role) -> User:
        user = User.objects.create_user(name, f"{name}@example.edu", self.password)
        Enrolment.objects.create(course=course, user=user, role=role)
        return user

    def client(self, user: User) -> Client:
        client = Client()
        client.force_login(user)
        return client


GOOD = (REPO / "reference" / "autograd_lab.py").read_bytes()
BUGGY = (REPO / "submissions" / "bob_okafor" / "autograd_lab.py").read_bytes()
