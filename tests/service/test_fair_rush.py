"""Fair queueing on the real stack: PostgreSQL, a worker with 2 slots, the Docker sandbox.

A student who floods the queue with a file that sleeps until its time limit holds one slot at
most, and only their latest job waits: the others' jobs go first.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import close_old_connections
from django.utils import timezone
from service_cast import GOOD, REPO, Cast
from test_faults import _stop, _wait_until_done, _worker

from service.courses.models import Assignment, Enrolment, Role
from service.fleet.models import GradingWorker
from service.submissions.models import GradingRun, State, Submission

pytestmark = [pytest.mark.db, pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def sleepy() -> bytes:
    """The reference engine, sleeping at import for longer than any time limit."""
    lines = (REPO / "reference" / "autograd_lab.py").read_text().splitlines(keepends=True)
    after = max(i for i, line in enumerate(lines) if line.startswith("from __future__")) + 1
    return "".join([*lines[:after], "import time\ntime.sleep(3600)\n", *lines[after:]]).encode()


def upload(cast: Cast, kind: str, body: bytes, user: User | None = None, slug: str = "a8") -> int:
    response = cast.client(user or cast.student).post(
        f"/a/{slug}/", {"kind": kind, "file": SimpleUploadedFile("autograd_lab.py", body)}
    )
    assert response.status_code == 302, response.content[:300]
    return int(response["Location"].strip("/").split("/")[-1])


def wait_for(condition: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what} did not happen within {seconds} s"
        time.sleep(0.2)


def running(submission_id: int) -> bool:
    return Submission.objects.get(pk=submission_id).state == State.RUNNING


def runs_of(ids: list[int]) -> list[tuple[datetime, datetime]]:
    runs = GradingRun.objects.filter(submission_id__in=ids).order_by("started_at")
    return [(run.started_at, run.finished_at or timezone.now()) for run in runs]


def never_overlap(spans: list[tuple[datetime, datetime]]) -> bool:
    return all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:], strict=False))


def student(cast: Cast, name: str) -> User:
    user = User.objects.create_user(name, f"{name}@example.edu", cast.password)
    Enrolment.objects.create(course=cast.course, user=user, role=Role.STUDENT)
    return user


def worker_ready() -> bool:
    return GradingWorker.alive_now().exists()


def test_ten_self_checks_that_sleep_do_not_stall_another_students_self_check(cast: Cast) -> None:
    worker = _worker(concurrency=2)
    try:
        wait_for(worker_ready, 120, "the worker's registration")
        first = upload(cast, "self_check", sleepy())
        wait_for(lambda: running(first), 60, "the first sleeping self-check's start")
        rest = [upload(cast, "self_check", sleepy()) for _ in range(9)]
        other = upload(cast, "self_check", GOOD, user=cast.student2)
        _wait_until_done([first, *rest, other], seconds=600)
    finally:
        _stop(worker)
    flood = [Submission.objects.get(pk=pk) for pk in (first, *rest)]
    done = Submission.objects.get(pk=other)
    # The running one finished, the latest was graded after it, the eight between were replaced.
    assert [s.state for s in flood] == [State.TIMEOUT] + [State.SUPERSEDED] * 8 + [State.TIMEOUT]
    assert never_overlap(runs_of([first, *rest]))  # one slot at most, ever
    # The other student's self-check took the free slot at once: it never waited behind the flood.
    assert done.state == State.GRADED and done.started_at and flood[0].finished_at
    assert done.started_at < flood[0].finished_at
    assert done.finished_at and done.finished_at < flood[-1].started_at  # type: ignore[operator]


def test_twenty_students_submit_while_one_floods_and_each_of_theirs_goes_before_the_floods_second(
    cast: Cast,
) -> None:
    Assignment.objects.create(
        course=cast.course, slug="a9", title="A9", rubric_file="a8_autograd_lab.yaml", due_at=cast.assignment.due_at
    )
    others = [student(cast, f"r{number:02d}") for number in range(20)]
    worker = _worker(concurrency=2)
    try:
        wait_for(worker_ready, 120, "the worker's registration")
        first = upload(cast, "submit", sleepy())
        wait_for(lambda: running(first), 60, "the flood's first job's start")
        flood = [upload(cast, "submit", sleepy()) for _ in range(5)]
        flood += [upload(cast, "submit", sleepy(), slug="a9") for _ in range(5)]

        def send(user: User) -> int:
            try:
                return upload(cast, "submit", GOOD, user=user)
            finally:
                close_old_connections()

        with ThreadPoolExecutor(max_workers=4) as pool:
            theirs = list(pool.map(send, others))
        _wait_until_done([first, *flood, *theirs], seconds=900)
    finally:
        _stop(worker)
    rows = {s.pk: s for s in Submission.objects.filter(pk__in=[first, *flood, *theirs])}
    ran = [rows[pk] for pk in (first, *flood) if rows[pk].state != State.SUPERSEDED]
    # One counted job per assignment waits at a time: the first, and the latest of each assignment.
    assert len(ran) == 3, [(s.pk, s.state) for s in ran]
    assert never_overlap(runs_of([first, *flood]))
    later = min(s.started_at for s in ran[1:] if s.started_at)
    for pk in theirs:
        mine = rows[pk]
        assert mine.state == State.GRADED and mine.score == 100.0
        assert mine.started_at and mine.started_at < later, "a student's job waited behind the flood's second"
