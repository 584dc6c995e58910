"""The sample class graded in Docker, as `make grade` does: each student gets what they earn."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import docker
import pytest
from rubric_variants import with_limits

from grader import part_runs
from grader.batch import grade_class
from grader.results import Outcome, Status, SubmissionResult
from grader.rubric import load_rubric
from grader.runners.docker import OWNER_LABEL, DockerRunner, owner_id

pytestmark = pytest.mark.docker

SUBMISSIONS = Path(__file__).resolve().parents[2] / "submissions"


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("out")


@pytest.fixture(scope="module")
def graded(out: Path) -> dict[str, SubmissionResult]:
    outcome = grade_class(SUBMISSIONS, out=out, rubric=load_rubric(), runner=DockerRunner(), jobs=2)
    return {r.student: r for r in outcome.results}


def _totals(out: Path) -> dict[str, str]:
    with (out / "grades.csv").open() as handle:
        return {row["student"]: row["total"] for row in csv.DictReader(handle)}


@pytest.mark.slow  # the sample class graded a second time
def test_a_second_grading_into_a_fresh_folder_with_two_cpus_gives_the_same_grades(
    graded: dict[str, SubmissionResult], out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The seed belongs to the assignment: a regrade in a new folder (no store to reuse) meets
    # the same hidden inputs, and every engine, buggy ones included, gets the same score. Each
    # container has two CPUs this time instead of one: time is charged per run, never read off
    # the clock, so what a grading gives cannot depend on how many CPUs it had.
    # And in two parts (grader/parts.py), one after another in one sandbox (no core free).
    two = with_limits(tmp_path / "rubric", cpus=2, parts=2)
    monkeypatch.setattr(part_runs, "HOST_CORES", part_runs.Cores(0))
    again = grade_class(SUBMISSIONS, out=tmp_path / "again", rubric=two, runner=DockerRunner(), jobs=2)
    assert (again.ran, again.skipped) == (len(graded), 0)
    assert _totals(tmp_path / "again") == _totals(out)
    for result in again.results:
        first = graded[result.student]
        assert result.seed == first.seed == load_rubric().seed == two.seed
        assert [(c.check_id, c.points) for c in result.checks] == [(c.check_id, c.points) for c in first.checks]


def test_no_container_or_volume_left(graded: dict[str, SubmissionResult]) -> None:
    # Ours only (this process's owner label): other graders may share the engine.
    client = docker.from_env()
    mine = f"{OWNER_LABEL}={owner_id()}"
    assert client.containers.list(all=True, filters={"label": mine}) == []
    assert client.volumes.list(filters={"label": mine}) == []


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
    # Step 5 is judged on the grader's engines: his checks print x*x + x but assert nothing of
    # it, so the chaff with his own bug goes uncaught there too, while the rest of his engine's
    # fault is charged in reuse alone (finite differences keep their points).
    step5 = next(c for c in bob.checks if c.check_id == "bug.step5")
    assert "still passes" in step5.message
    assert bob.section("finite_difference").points == bob.section("finite_difference").max_points
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
    assert frank.score == 0 and frank.status is Status.NOT_LOADABLE
    assert "line 59" in frank.load.error and "SyntaxError" in frank.load.error
    assert "line 59" in frank.status_detail and frank.review


def test_top_level_crash_still_grades_the_engine(graded: dict[str, SubmissionResult]) -> None:
    grace = graded["grace_park"]
    assert grace.load.mode == "definitions"
    assert any("graphviz" in n for n in grace.load.notices)
    assert grace.section("part1_trace").points == 25
    assert grace.section("bug_injection").points == 0  # the crash at the top stops her checks on every engine


def test_endless_loop_times_out_with_partial_results(graded: dict[str, SubmissionResult]) -> None:
    henry = graded["henry_adams"]
    assert henry.status is Status.TIMEOUT
    assert henry.section("api").points == 10  # results that finished before the loop are kept
    # The loop is stopped by charged time in the sandbox; how long that took in wall time depends
    # on the machine's load and is never asserted.
    assert "time limit" in henry.status_detail


def test_misnamed_class_loses_only_api_points(graded: dict[str, SubmissionResult]) -> None:
    ivy = graded["ivy_martins"]
    assert any("Scalar" in n for n in ivy.load.notices)
    # Her checks call Scalar(2.0, 'a'): a correct engine of the handout's shape reads 'a' as its
    # children, so they fail there and Step 5 earns nothing; the feedback says why.
    assert [c.check_id for c in ivy.checks if not c.passed and c.section != "bug_injection"] == ["api.engine_class"]
    own = next(c for c in ivy.checks if c.check_id == "bug.own_checks")
    assert not own.passed and "(label)" in own.message


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


def test_the_sample_class_has_at_least_fifteen_students(graded: dict[str, SubmissionResult]) -> None:
    assert len(graded) >= 15


def test_memory_hog_is_oom_and_keeps_what_finished(graded: dict[str, SubmissionResult]) -> None:
    jack = graded["jack_oconnor"]
    assert jack.status is Status.OOM, jack.status_detail
    assert "out of memory" in jack.status_detail


def test_output_flood_is_output_limit_and_the_engine_still_graded(graded: dict[str, SubmissionResult]) -> None:
    kate = graded["kate_lee"]
    assert kate.status is Status.OUTPUT_LIMIT, kate.status_detail
    assert kate.load.mode == "definitions" and any("too much output" in n for n in kate.load.notices)
    assert kate.section("part1_trace").points == kate.section("part1_trace").max_points
    own = next(c for c in kate.checks if c.check_id == "bug.own_checks")
    assert "printed more than" in own.message or "OutputLimit" in own.comparisons[0].observed


def test_misnamed_nested_file_is_found_and_said(graded: dict[str, SubmissionResult]) -> None:
    leo = graded["leo_martin"]
    assert leo.score == 100
    assert any("Autograd_Lab.py" in n for n in leo.load.notices)


def test_an_old_draft_next_to_the_file_is_not_graded(graded: dict[str, SubmissionResult]) -> None:
    maya = graded["maya_patel"]
    assert maya.score == graded["olivia_brown"].score  # the same engine and checks; the draft is ignored
    assert any("autograd_lab_old.py" in n for n in maya.load.notices)


def test_a_notebook_alone_is_ungradable_with_the_reason(graded: dict[str, SubmissionResult]) -> None:
    noah = graded["noah_kim"]
    assert noah.status is Status.UNGRADABLE and noah.score == 0
    assert "notebook" in noah.status_detail.lower()


def test_an_engine_written_differently_loses_only_one_uncaught_bug(graded: dict[str, SubmissionResult]) -> None:
    # Tuple _prev, stack-based topological sort, x.grad = x.grad + v, tanh from exp: every
    # engine check passes. Her own checks are strong on the grader's engines, but her log
    # check builds log(x + 2), whose input is used once, so `=` instead of `+=` in log's
    # backward goes unnoticed, and the feedback says so.
    olivia = graded["olivia_brown"]
    assert [c.check_id for c in olivia.checks if not c.passed] == ["bug.catalogue"]
    catalogue = next(c for c in olivia.checks if c.check_id == "bug.catalogue")
    assert catalogue.instances_passed == catalogue.instances_total - 1
    assert "`+=` becomes `=` in log's backward" in " ".join(catalogue.notes)
    assert olivia.diagnoses == () and olivia.review == ()


def test_checks_that_assert_nothing_earn_only_the_gate(graded: dict[str, SubmissionResult]) -> None:
    pat = graded["pat_garcia"]
    assert pat.section("bug_injection").points == 2
    forced = next(c for c in pat.checks if c.check_id == "bug.forced_fail")
    assert "never exercise the Value class" in forced.message
    assert pat.review and pat.review[0].startswith("No Step-5 note found")


def test_class_report_lists_who_needs_a_human(graded: dict[str, SubmissionResult], out: Path) -> None:
    index = (out / "index.html").read_text(encoding="utf-8")
    section = index[index.index("Needs a human") :]
    for student in ("henry_adams", "jack_oconnor", "kate_lee", "noah_kim", "dan_kowalski", "pat_garcia"):
        assert f'href="students/{student}/feedback.html"' in section, student
    assert "alice_nguyen" not in section.split("All submissions")[0]
