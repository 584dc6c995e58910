"""The sample class graded in Docker, as `make grade` does: each student gets what they earn."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import docker
import pytest

from grader.batch import grade_class
from grader.results import Outcome, Status, SubmissionResult
from grader.rubric import load_rubric
from grader.runners.docker import DockerRunner

pytestmark = pytest.mark.docker

SUBMISSIONS = Path(__file__).resolve().parents[2] / "submissions"


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("out")


@pytest.fixture(scope="module")
def graded(out: Path) -> dict[str, SubmissionResult]:
    outcome = grade_class(SUBMISSIONS, out=out, rubric=load_rubric(), runner=DockerRunner(), seed=7)
    return {r.student: r for r in outcome.results}


def test_no_container_or_volume_left(graded: dict[str, SubmissionResult]) -> None:
    client = docker.from_env()
    assert client.containers.list(all=True, filters={"label": "autograd-grader"}) == []
    assert client.volumes.list(filters={"label": "autograd-grader"}) == []


def test_full_marks_student(graded: dict[str, SubmissionResult]) -> None:
    alice = graded["alice_nguyen"]
    assert (alice.score, alice.status) == (100.0, Status.GRADED)
    assert alice.diagnoses == () and alice.review == ()
    assert alice.step5_note.startswith("Step-5 note found")


def test_assignment_bug_is_named(graded: dict[str, SubmissionResult]) -> None:
    bob = graded["bob_okafor"]
    square = next(c for c in bob.checks if c.check_id == "reuse.square_plus")
    assert square.outcome is Outcome.FAILED
    assert "observed 3" in square.message and "+=" in square.hint
    step5 = next(c for c in bob.checks if c.check_id == "bug.step5")
    assert "could not be applied" in step5.message  # his __mul__ already assigns
    assert bob.section("reuse").points < 5
    assert [d.operator for d in bob.diagnoses] == ["acc_mul"]
    assert "only the last path's contribution survives" in square.misconception
    assert bob.review == ()  # his informal Step-5 note names a failing and a passing check


def test_wrong_tanh_loses_only_tanh(graded: dict[str, SubmissionResult]) -> None:
    carol = graded["carol_smith"]
    assert [c.check_id for c in carol.checks if not c.passed] == ["bug.catalogue", "fd.tanh"]
    assert "1 - t*t" in next(c for c in carol.checks if c.check_id == "fd.tanh").hint
    assert [d.operator for d in carol.diagnoses] == ["loc_tanh_linear"]


def test_missing_reflected_ops(graded: dict[str, SubmissionResult]) -> None:
    dan = graded["dan_kowalski"]
    failing = {c.check_id for c in dan.checks if not c.passed}
    assert {"api.reflected", "fd.radd", "fd.rmul", "fd.rsub", "fd.rdiv"} <= failing
    assert "TypeError" in next(c for c in dan.checks if c.check_id == "api.reflected").message
    # No catalogue bug explains a missing method: the feedback lists what differs instead.
    assert [d.operator for d in dan.diagnoses] == [""]
    assert "No single known bug explains these differences" in dan.diagnoses[0].misconception
    # His Step-5 note names the failing assertion but not the passing one: flagged for review.
    assert dan.review == (
        "Step-5 note found (lines 1-10): it describes a failing assertion; it does not describe a passing assertion.",
    )


def test_breadth_first_backward_fails_shared_nodes_only(graded: dict[str, SubmissionResult]) -> None:
    erin = graded["erin_li"]
    assert erin.section("part1_trace").points == 25
    assert "reuse.diamond" in {c.check_id for c in erin.checks if not c.passed}
    assert [d.family for d in erin.diagnoses] == ["TOPO"]


def test_syntax_error_gets_zero_and_the_line(graded: dict[str, SubmissionResult]) -> None:
    frank = graded["frank_zhou"]
    assert frank.score == 0 and frank.status is Status.GRADED
    assert "line 59" in frank.load.error and "SyntaxError" in frank.load.error


def test_top_level_crash_still_grades_the_engine(graded: dict[str, SubmissionResult]) -> None:
    grace = graded["grace_park"]
    assert grace.load.mode == "definitions"
    assert any("graphviz" in n for n in grace.load.notices)
    assert grace.section("part1_trace").points == 25
    assert grace.section("bug_injection").points == 0


def test_endless_loop_times_out_with_partial_results(graded: dict[str, SubmissionResult]) -> None:
    henry = graded["henry_adams"]
    assert henry.status is Status.TIMEOUT
    assert henry.section("api").points == 10  # results that finished before the loop are kept
    assert henry.execution_time < 75


def test_misnamed_class_loses_only_api_points(graded: dict[str, SubmissionResult]) -> None:
    ivy = graded["ivy_martins"]
    assert [c.check_id for c in ivy.checks if not c.passed] == ["api.engine_class", "bug.catalogue"]
    assert any("Scalar" in n for n in ivy.load.notices)


def test_reports_written_and_agree(graded: dict[str, SubmissionResult], out: Path) -> None:
    with (out / "grades.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    students = {p.name for p in SUBMISSIONS.iterdir() if p.is_dir()}
    assert {r["student"] for r in rows} == students
    for row in rows:
        data = json.loads((out / "students" / row["student"] / "results.json").read_text())
        assert float(row["total"]) == pytest.approx(data["score"])
        assert all(len(t["tags"]) == 1 for t in data["tests"])
        assert (out / "students" / row["student"] / "feedback.html").stat().st_size > 1000
