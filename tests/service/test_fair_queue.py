"""Students take turns: the order jobs are queued in, without a worker (PostgreSQL only)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from procrastinate.contrib.django.models import ProcrastinateJob
from service_cast import GOOD, Cast

from service.courses.models import Assignment, Enrolment, Role
from service.submissions.intake import position
from service.submissions.models import State, Submission

pytestmark = [pytest.mark.db, pytest.mark.django_db(transaction=True)]


def upload(cast: Cast, user: User, kind: str = "self_check", slug: str = "a8") -> Submission:
    body = {"kind": kind, "file": SimpleUploadedFile("autograd_lab.py", GOOD)}
    response = cast.client(user).post(f"/a/{slug}/", body)
    assert response.status_code == 302, response.content[:300]
    return Submission.objects.get(pk=int(response["Location"].strip("/").split("/")[-1]))


def job(submission: Submission) -> ProcrastinateJob:
    return ProcrastinateJob.objects.get(id=submission.job_id)


def fetch_order() -> list[int]:
    """The submissions in the order procrastinate's fetch takes them when each job runs to its
    end before the next fetch: priority first, then the order they were queued in."""
    jobs = ProcrastinateJob.objects.filter(task_name="grade_submission", status="todo").order_by("-priority", "id")
    return [found.args["submission_id"] for found in jobs]


@pytest.fixture(autouse=True)
def empty_queue(db: Any) -> None:
    """The queue's tables outlive each test's flush (they are not Django's): start from none waiting."""
    ProcrastinateJob.objects.filter(status="todo").update(status="cancelled")


def test_a_new_self_check_replaces_the_students_queued_one_and_cancels_its_job(cast: Cast) -> None:
    sent = [upload(cast, cast.student) for _ in range(10)]
    states = [Submission.objects.get(pk=s.pk).state for s in sent]
    assert states == [State.SUPERSEDED] * 9 + [State.QUEUED]
    assert [job(s).status for s in sent] == ["cancelled"] * 9 + ["todo"]
    assert Submission.objects.get(pk=sent[0].pk).detail == f"replaced by submission #{sent[1].pk}"
    # Another assignment's self-check, and the same student's counted upload, are not replaced.
    counted = upload(cast, cast.student, kind="submit")
    assert Submission.objects.get(pk=sent[-1].pk).state == State.QUEUED and counted.state == State.QUEUED


def test_a_students_second_pending_job_waits_behind_every_other_students_first(cast: Cast) -> None:
    second = Assignment.objects.create(
        course=cast.course, slug="a9", title="A9", rubric_file="a8_autograd_lab.yaml", due_at=cast.assignment.due_at
    )
    flood = [upload(cast, cast.student, slug=slug) for slug in ("a8", "a9")]
    others = []
    for number in range(3):
        user = User.objects.create_user(f"late{number}", f"late{number}@example.edu", cast.password)
        Enrolment.objects.create(course=cast.course, user=user, role=Role.STUDENT)
        others.append(upload(cast, user))
    assert second.pk
    # The flooding student's first job keeps its place; their second comes after everyone's first,
    # though those were queued later.
    assert fetch_order() == [flood[0].pk] + [o.pk for o in others] + [flood[1].pk]
    assert [position(Submission.objects.get(pk=s.pk)) for s in (flood[0], *others, flood[1])] == [1, 2, 3, 4, 5]
    # Self-checks before counted jobs, whatever the ranks: the lanes' bands never overlap.
    counted = upload(cast, cast.student2, kind="submit")
    assert job(counted).priority < min(job(s).priority for s in [*flood, *others])
    # One lock per student: procrastinate runs a student's jobs one at a time.
    assert job(flood[0]).lock == job(flood[1]).lock == f"student-{cast.student.pk}"
    assert len({job(o).lock for o in others}) == 3


def test_the_health_page_counts_students_and_ages_jobs_from_when_they_were_queued(cast: Cast, settings: Any) -> None:
    upload(cast, cast.student)
    upload(cast, cast.student, slug="a8", kind="submit")
    upload(cast, cast.student2, kind="submit")
    old = upload(cast, cast.student2)
    # A regrade of an upload from three weeks ago is a new job: its age is its wait, not the upload's.
    Submission.objects.filter(pk=old.pk).update(received_at=timezone.now() - timedelta(days=21))
    data = cast.client(cast.ta).get("/health/?json").json()
    assert data["lanes"]["self_check"]["waiting"] == 2 and data["lanes"]["self_check"]["students_waiting"] == 2
    assert data["lanes"]["submit"]["students_waiting"] == 2
    assert 0 <= data["lanes"]["self_check"]["oldest_age_seconds"] < 3600
    assert "workers" not in data and data["courses"] == ["c1"]
    # Staff of another course see none of this course's queue; a site operator sees all.
    outsider_staff = User.objects.create_user("otherta", "otherta@example.edu", cast.password)
    Enrolment.objects.create(course=cast.other_course, user=outsider_staff, role=Role.TA)
    theirs = cast.client(outsider_staff).get("/health/?json").json()
    assert theirs["courses"] == ["c2"] and theirs["lanes"]["self_check"]["waiting"] == 0
    operator = User.objects.create_superuser("root", "root@example.edu", cast.password)
    everything = cast.client(operator).get("/health/?json").json()
    assert everything["lanes"]["self_check"]["waiting"] == 2 and everything["workers"] == []
