"""The real path: upload, the queue, a worker, the Docker sandbox, the stored result."""

from __future__ import annotations

import html
import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from service_cast import BUGGY, GOOD, REPO, Cast
from service_worker import work

from grader.judge.progress import SettledSection, probes_read_by
from grader.pipeline import grade_submission
from grader.plan import build_plan
from grader.results_io import result_from_json
from grader.rubric import load_rubric
from grader.runners.docker import DockerRunner
from service.submissions.models import Kind, State, Submission
from service.submissions.visibility import student_view

pytestmark = [pytest.mark.db, pytest.mark.docker, pytest.mark.django_db(transaction=True)]


def upload(cast: Cast, kind: str, body: bytes, user: Any = None) -> int:
    client = cast.client(user or cast.student)
    response = client.post("/a/a8/", {"kind": kind, "file": SimpleUploadedFile("autograd_lab.py", body)})
    assert response.status_code == 302, response.content[:500]
    return int(response["Location"].strip("/").split("/")[-1])


def test_a_submission_is_graded_once_with_the_cli_score_and_its_feedback_is_served(cast: Cast) -> None:
    counted = upload(cast, "submit", BUGGY)
    check = upload(cast, "self_check", GOOD)
    work()
    graded = Submission.objects.get(pk=counted)
    assert graded.state == State.GRADED and graded.runs.count() == 1
    seed = cast.assignment.seed  # the assignment's own, drawn when it was made
    assert seed != load_rubric().seed
    cli = grade_submission(REPO / "submissions" / "bob_okafor" / "autograd_lab.py", student="alice",
                           rubric=load_rubric(), runner=DockerRunner(), seed=seed)  # fmt: skip
    assert graded.score == cli.score and graded.seed == cli.seed == seed
    own = cast.client(cast.student)
    page = own.get(f"/submissions/{counted}/feedback/")
    assert page.status_code == 200 and b"Score" in page.content
    assert str(seed).encode() not in page.content  # with it, the public rubric gives the hidden inputs
    policy = page["Content-Security-Policy"]
    assert "script-src 'none'" in policy and "sha256-" in policy
    # Before the due date the hidden checks' results stay hidden from the student, not from staff.
    assert b"results are shown after the deadline" in page.content
    status = own.get(f"/submissions/{counted}/status.json").json()
    assert status["hidden_results_withheld"] and status["score"] == graded.visible_score < graded.score
    assert status["max_score"] == graded.visible_max_score < 100
    staff = cast.client(cast.instructor).get(f"/submissions/{counted}/feedback/")
    assert b"shown after the deadline" not in staff.content
    self_check = Submission.objects.get(pk=check)
    assert self_check.state == State.GRADED and self_check.kind == Kind.SELF_CHECK
    assert self_check.score == self_check.max_score  # the reference passes every visible check
    # Nobody else reaches either page.
    for other in (cast.student2, cast.outsider):
        assert cast.client(other).get(f"/submissions/{counted}/feedback/").status_code == 404
        assert cast.client(other).get(f"/submissions/{counted}/").status_code == 404
    # Run again: nothing to do, nothing graded twice.
    work()
    assert Submission.objects.get(pk=counted).runs.count() == 1


def test_an_infrastructure_failure_is_retried_and_never_counts(cast: Cast, monkeypatch: pytest.MonkeyPatch) -> None:
    from service.submissions import grading

    class Down:
        name = "docker"
        isolates = True

        def run(self, *args: Any, **kwargs: Any) -> Any:
            from grader.errors import InfraError

            raise InfraError("the Docker engine did not answer")

    monkeypatch.setattr(grading, "runner", lambda: Down())
    counted = upload(cast, "submit", GOOD)
    work()
    waiting = Submission.objects.get(pk=counted)
    assert waiting.state == State.QUEUED and waiting.score is None and "retry" in waiting.detail
    monkeypatch.undo()
    from procrastinate.contrib.django.models import ProcrastinateJob

    ProcrastinateJob.objects.filter(id=waiting.job_id).update(scheduled_at=None)  # no need to wait for the backoff
    work()
    done = Submission.objects.get(pk=counted)
    assert done.state == State.GRADED and done.score == 100.0


def test_staff_override_and_regrade_keep_the_history(cast: Cast) -> None:
    counted = upload(cast, "submit", BUGGY)
    work()
    staff = cast.client(cast.instructor)
    assert staff.post(f"/submissions/{counted}/override/", {"score": "90", "reason": ""}).status_code == 400
    assert (
        staff.post(f"/submissions/{counted}/override/", {"score": "90", "reason": "regraded by hand"}).status_code
        == 302
    )
    graded = Submission.objects.get(pk=counted)
    assert graded.counted_score == 90 and graded.audit.filter(action="override").exists()
    # A student cannot override, even their own.
    assert (
        cast.client(cast.student).post(f"/submissions/{counted}/override/", {"score": "100", "reason": "x"}).status_code
        == 404
    )
    old = graded.score
    assert staff.post("/a/a8/class/regrade/", {"which": "latest"}).status_code == 302
    assert Submission.objects.get(pk=counted).lane == "regrade"
    work()
    again = Submission.objects.get(pk=counted)
    assert again.state == State.GRADED and again.score == old and again.regrades.get().old_score == old
    assert b"alice" in staff.get("/a/a8/class/").content
    report = staff.get("/a/a8/class/report/")
    assert report.status_code == 200 and b"alice" in report.content
    assert f"/submissions/{counted}/feedback/".encode() in report.content
    assert "script-src 'none'" in report["Content-Security-Policy"]
    assert cast.client(cast.student).get("/a/a8/class/report/").status_code == 404
    assert cast.client(cast.student).get("/a/a8/class/").status_code == 404
    grades = staff.get("/a/a8/class/export/grades.csv").content.decode()
    assert "alice" in grades and ",90," in grades
    canvas = staff.get("/a/a8/class/export/canvas.csv").content.decode()
    # A roster account is matched by its SIS login id; an LMS launch's by Canvas's own user id.
    assert canvas.splitlines()[1].split(",")[1:] == ["", "", "alice", "", "90"]
    from service.courses.models import Enrolment

    Enrolment.objects.filter(user=cast.student, course=cast.course).update(lms_user_id="40123")
    canvas = staff.get("/a/a8/class/export/canvas.csv").content.decode()
    assert canvas.splitlines()[1].split(",")[1:] == ["40123", "", "alice", "", "90"]
    gradescope = staff.get("/a/a8/class/export/gradescope.json").json()
    assert gradescope["alice"]["score"] == 90
    assert staff.get("/a/a8/class/export/nonsense").status_code == 404
    assert cast.client(cast.student).get("/a/a8/class/export/grades.csv").status_code == 404


def test_a_worker_with_warm_sandboxes_grades_a_self_check_in_one_and_a_submit_leaves_one(
    cast: Cast, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from grader.pipeline import container_limits
    from service.submissions import grading

    monkeypatch.setattr(grading, "_runners", threading.local())  # this thread's runner shares the pool
    pool = grading.start_warm_pool(2, idle_seconds=600, expect=container_limits(load_rubric()))
    try:
        assert pool.wait_ready(2, timeout=90)
        waiting = {w.container_id for w in pool._ready}
        check = upload(cast, "self_check", GOOD)
        work()
        done = Submission.objects.get(pk=check)
        assert done.state == State.GRADED and done.score == done.max_score
        taken = waiting - {w.container_id for w in pool._ready}
        assert len(taken) == 1  # the self-check ran in a container started before it arrived
        # A counted job leaves one warm sandbox for the next self-check; a self-check takes any.
        runner = grading.runner()
        assert getattr(runner, "pool", None) is pool
        counted = Submission.objects.get(pk=upload(cast, "submit", GOOD))
        grading._prefer_self_checks(runner, counted)
        assert runner.warm_reserve == 1  # type: ignore[attr-defined]
        grading._prefer_self_checks(runner, done)
        assert runner.warm_reserve == 0  # type: ignore[attr-defined]
    finally:
        grading.stop_warm_pool()


def test_each_section_reaches_the_page_before_the_grading_ends(cast: Cast, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker writes each settled section as the sandbox reports it: when the sandbox run
    returns, before the result is written, status.json already lists them with the final points
    (staff: every section; a student before the due date: less, below)."""
    from service.submissions import grading

    real = grading.runner
    seen: dict[str, Any] = {}

    class Watched:
        name = "docker"
        isolates = True

        def __init__(self) -> None:
            self.inner = real()

        def run(self, **kwargs: Any) -> Any:
            raw = self.inner.run(**kwargs)
            row = Submission.objects.get(pk=counted)
            seen["state"] = row.state
            seen["student"] = cast.client(cast.student).get(f"/submissions/{counted}/status.json").json()["sections"]
            seen["staff"] = cast.client(cast.instructor).get(f"/submissions/{counted}/status.json").json()["sections"]
            seen["page"] = cast.client(cast.student).get(f"/submissions/{counted}/").content.decode()
            return raw

    monkeypatch.setattr(grading, "runner", Watched)
    counted = upload(cast, "submit", BUGGY)
    work()
    done = Submission.objects.get(pk=counted)
    assert seen["state"] == State.RUNNING and done.state == State.GRADED
    final = {s.title: (s.points, s.max_points) for s in result_from_json(done.result_json).sections}
    staff = {s["title"]: (s["points"], s["max_points"]) for s in seen["staff"]}
    assert staff == final  # every section, settled before the end, with its final points
    # A student sees, before the due date, the visible points of the sections that waited for no
    # hidden probe (when the others settled would time hidden probes): here Step 5's.
    plan = build_plan(load_rubric(), seed=cast.assignment.seed, visible_only=False)
    hidden = {p.id for p in plan.probes if p.hidden}
    quiet = {tag for tag, probes in probes_read_by(load_rubric(), plan).items() if not probes & hidden}
    assert "bug_injection" in quiet and "api" not in quiet
    visible = student_view(result_from_json(done.result_json), done).sections
    assert {s["title"]: (s["points"], s["max_points"]) for s in seen["student"]} == {
        s.title: (s.points, s.max_points) for s in visible if s.max_points and s.tag in quiet
    }
    assert seen["student"] and len(seen["student"]) < len(seen["staff"])
    assert "Sections judged so far" in seen["page"] and html.escape(seen["student"][0]["title"]) in seen["page"]
    assert Submission.objects.get(pk=counted).to_dict()["sections"] == []  # once graded, the result speaks


def test_a_retried_sandbox_runs_sections_replace_the_first_runs(cast: Cast) -> None:
    """Sections are kept per sandbox run: a retried run's replace those of the run before it, and
    a late word from the earlier run changes nothing."""
    from service.submissions.grading import claim, progress_writer

    pk = upload(cast, "self_check", GOOD)
    claimed = claim(pk)
    assert claimed is not None
    heard = progress_writer(claimed[0], load_rubric())
    titles = {s.tag: s.title for s in load_rubric().sections}
    heard(SettledSection("api", (), attempt=0))
    heard(SettledSection("reuse", (), attempt=0))
    heard(SettledSection("part1_trace", (), attempt=1))
    heard(SettledSection("reuse", (), attempt=0))  # the first run's reader, late
    shown = Submission.objects.get(pk=pk).to_dict()["sections"]
    assert [s["title"] for s in shown] == []  # no visible point in an empty section: nothing to show
    stored = [s["title"] for s in json.loads(Submission.objects.get(pk=pk).progress_json)]
    assert stored == [titles["part1_trace"]]
