"""The class store and the batch's skip / re-judge / run decisions, with the local runner.

Three students (full marks, one bug, a syntax error) are enough to see every decision; the
Docker versions of these (scale, kill -9, archives) are in tests/integration/test_batch.py.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from grader.batch import ClassResult, content_sha, grade_class
from grader.errors import StoreError
from grader.intake.collect import Found
from grader.report.prairielearn import to_prairielearn
from grader.results import Status, SubmissionResult
from grader.results_io import evidence_from_json, evidence_to_json, result_from_json, result_to_json
from grader.rubric import DEFAULT_RUBRIC, Rubric, load_rubric
from grader.runners.local import LocalRunner
from grader.store import Store

REPO = Path(__file__).resolve().parents[2]
STUDENTS = ("alice_nguyen", "bob_okafor", "frank_zhou")


@pytest.fixture
def source(tmp_path: Path) -> Path:
    folder = tmp_path / "class"
    for student in STUDENTS:
        shutil.copytree(REPO / "submissions" / student, folder / student)
    return folder


def run(source: Path, out: Path, rubric: Rubric | None = None, **kwargs: object) -> ClassResult:
    events: list[tuple[str, str]] = []
    outcome = grade_class(
        source,
        out=out,
        rubric=rubric or load_rubric(),
        runner=LocalRunner(),
        jobs=2,
        on_event=lambda kind, result: events.append((kind, result.student)),
        **kwargs,  # type: ignore[arg-type]
    )
    assert sorted(s for _, s in events) == sorted(STUDENTS)  # every student reported exactly once
    return outcome


def test_second_run_skips_everything_and_force_regrades(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = run(source, out)
    assert (first.ran, first.rejudged, first.skipped) == (3, 0, 0)
    again = run(source, out)  # the assignment's seed again, so nothing changes
    assert (again.ran, again.rejudged, again.skipped) == (0, 0, 3)
    seed = load_rubric().seed
    assert [r.seed for r in again.results] == [seed] * 3
    assert [r.score for r in again.results] == [r.score for r in first.results]
    forced = run(source, out, force=True)
    assert (forced.ran, forced.skipped) == (3, 0)
    with Store(out / "grades.sqlite") as store:
        assert [s.runs for s in store.results()] == [2, 2, 2]


def test_another_seed_is_deliberate_and_regrades_everyone(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(source, out)
    other = run(source, out, seed=4)  # the instructor's choice: every result had the other seed
    assert (other.ran, other.skipped) == (3, 0)
    assert [r.seed for r in other.results] == [4, 4, 4]
    back = run(source, out)  # without --seed, the assignment's seed rules again
    assert (back.ran, back.skipped) == (3, 0)
    assert {r.seed for r in back.results} == {load_rubric().seed}


def test_a_changed_submission_is_the_only_one_regraded(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(source, out)
    bob = source / "bob_okafor" / "autograd_lab.py"
    bob.write_text(bob.read_text(encoding="utf-8") + "\n# one more comment\n", encoding="utf-8")
    again = run(source, out)
    assert (again.ran, again.skipped) == (1, 2)


def test_rubric_change_rejudges_without_running_when_the_plan_is_the_same(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(source, out)
    text = DEFAULT_RUBRIC.read_text(encoding="utf-8")
    hints_only = tmp_path / "hints.yaml"
    hints_only.write_text(
        text.replace("Assert the handout's values", "Assert the values of the handout"), encoding="utf-8"
    )
    rejudged = run(source, out, rubric=load_rubric(hints_only))
    assert (rejudged.ran, rejudged.rejudged, rejudged.skipped) == (0, 3, 0)
    # A change to what the sandbox runs (another random-DAG instance) has to run again.
    more = tmp_path / "more.yaml"
    assert text.count("  random_dags:\n") == 1
    more.write_text(
        text.replace(
            "kind: random_dag\n    shrink: 12\n    instances: 6", "kind: random_dag\n    shrink: 12\n    instances: 7"
        ),
        encoding="utf-8",
    )
    assert more.read_text(encoding="utf-8") != text
    rerun = run(source, out, rubric=load_rubric(more))
    assert rerun.ran == 3


def test_results_and_evidence_round_trip_through_json(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    outcome = run(source, out, seed=4)
    for result in outcome.results:
        assert result_from_json(result_to_json(result)) == result
    with Store(out / "grades.sqlite") as store:
        stored = store.results()
    assert [s.result for s in stored] == list(outcome.results)
    evidence = [s.evidence for s in stored if s.evidence is not None]
    assert len(evidence) == 3  # the syntax error ran too: loading failed inside the sandbox
    assert evidence_from_json(evidence_to_json(evidence[0])) == evidence[0]


def test_outputs_agree_and_export_rebuilds_them_from_the_store(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    outcome = run(source, out, seed=4)
    csv_before = (out / "grades.csv").read_text(encoding="utf-8")
    for result in outcome.results:
        folder = out / "students" / result.student
        assert json.loads((folder / "results.json").read_text())["score"] == pytest.approx(result.score)
        assert result.student in (out / "index.html").read_text(encoding="utf-8")
    (out / "grades.csv").unlink()
    shutil.rmtree(out / "students")
    from grader.batch import export_class

    with Store(out / "grades.sqlite") as store:
        count = export_class(
            store, out, rubric_name="A8", section_tags=[s.tag for s in load_rubric().sections], canvas=False
        )
    assert count == 3
    assert (out / "grades.csv").read_text(encoding="utf-8") == csv_before
    assert sorted(p.name for p in (out / "students").iterdir()) == sorted(STUDENTS)


def test_prairielearn_results_follow_its_contract(source: Path, tmp_path: Path) -> None:
    outcome = run(source, tmp_path / "out", seed=4)
    by = {r.student: r for r in outcome.results}
    alice = to_prairielearn(by["alice_nguyen"])
    assert alice is not None and alice["gradable"] is True and alice["score"] == 1.0
    assert len(alice["tests"]) == len(by["alice_nguyen"].checks)
    bob = to_prairielearn(by["bob_okafor"])
    assert bob is not None and 0 < bob["score"] < 1
    assert bob["score"] == pytest.approx(by["bob_okafor"].score / 100)
    frank = to_prairielearn(by["frank_zhou"])  # a syntax error: not gradable, costs no attempt there
    assert frank is not None and frank["gradable"] is False and "SyntaxError" in frank["format_errors"][0]
    infra = SubmissionResult(**{**by["bob_okafor"].__dict__, "status": Status.INFRA_ERROR})
    assert to_prairielearn(infra) is None


def test_content_hash_covers_bytes_and_problem() -> None:
    base = Found("s", "s", b"x = 1\n", "o", (), "")
    assert content_sha(base) != content_sha(Found("s", "s", b"x = 2\n", "o", (), ""))
    assert content_sha(Found("s", "s", None, "o", (), "only a notebook")) != content_sha(
        Found("s", "s", None, "o", (), "nothing")
    )


def test_a_damaged_store_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "grades.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="not a usable grade store"):
        Store(path)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('schema_version', '99')")
    with pytest.raises(StoreError, match="another version"):
        Store(other)
