"""The click CLI end to end with the local sandbox: check, rubric validate, grade."""

from __future__ import annotations

import csv
import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from grader.cli import cli
from grader.plan import seed_label
from grader.results import Visibility
from grader.rubric import DEFAULT_RUBRIC, load_rubric

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "reference" / "autograd_lab.py"
SUBMISSIONS = REPO / "submissions"
# Three quick students (henry_adams loops and takes ~50 s): full marks, a file that does not
# load, and a renamed class with an extra constructor argument.
STUDENTS = ("alice_nguyen", "frank_zhou", "ivy_martins")
TAGS = ["api", "part1_trace", "a6_parity", "reuse", "bug_injection", "finite_difference"]


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_check_writes_html_and_json_and_mentions_hidden_checks(runner: CliRunner, tmp_path: Path) -> None:
    html, results = tmp_path / "feedback.html", tmp_path / "results.json"
    outcome = runner.invoke(
        cli, ["check", str(REFERENCE), "--sandbox", "local", "--html", str(html), "--json", str(results)]
    )
    assert outcome.exit_code == 0, outcome.output
    hidden = sum(1 for c in load_rubric().checks if c.visibility is not Visibility.VISIBLE)
    assert hidden == 26  # 24 graded hidden checks and two 0-point twins (api.random, a6.sgd_random)
    assert f"{hidden} hidden checks were not run" in outcome.stdout
    assert "local runner" in outcome.stderr  # the less-isolated sandbox is announced
    assert f"HTML feedback: {html}" in outcome.stdout and f"results.json: {results}" in outcome.stdout

    assert html.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    data = json.loads(results.read_text(encoding="utf-8"))
    visible_points = sum(c.points for c in load_rubric().checks if c.visibility is Visibility.VISIBLE)
    assert data["score"] == visible_points == 68
    assert data["extra_data"]["visible_only"] is True
    assert data["extra_data"]["hidden_not_run"] == hidden
    assert data["extra_data"]["runner"] == "local"
    assert all(t["status"] == "passed" for t in data["tests"])
    assert all(t["visibility"] == "visible" for t in data["tests"])
    assert len(data["tests"]) == len(load_rubric().checks) - hidden


def test_check_of_a_missing_file_is_reported(runner: CliRunner, tmp_path: Path) -> None:
    outcome = runner.invoke(cli, ["check", str(tmp_path / "autograd_lab.py"), "--sandbox", "local"])
    assert outcome.exit_code == 0  # the student's problem, scored 0, not a grader failure
    assert "no file named autograd_lab.py" in outcome.stdout


def test_rubric_validate_passes_for_the_shipped_rubric(runner: CliRunner) -> None:
    outcome = runner.invoke(cli, ["rubric", "validate", "--sandbox", "local"])
    assert outcome.exit_code == 0, outcome.output
    assert "Rubric is valid." in outcome.stdout
    assert "disagreeing: 0" in outcome.stdout
    assert "Reference solution: 100/100 (graded" in outcome.stdout
    assert "FAILED" not in outcome.stdout
    # The kill matrix: every catalogue bug injected into the reference, caught somewhere.
    assert "Kill matrix" in outcome.stdout
    families = ("acc_", "chain_", "loc_", "topo_", "seed_", "fwd_")
    rows = [line for line in outcome.stdout.splitlines() if line.startswith(families)]
    assert len(rows) == 29 and all("K" in row for row in rows)
    assert "29 mutants, 0 survive every section, 0 not applicable to the reference." in outcome.stdout


def test_rubric_validate_fails_on_a_blind_spot(runner: CliRunner, tmp_path: Path) -> None:
    # Without the reuse section nothing in the rubric sees a topological sort that forgets
    # visited nodes: only shared nodes expose it.
    data = yaml.safe_load(DEFAULT_RUBRIC.read_text(encoding="utf-8"))
    reuse = next(s for s in data["sections"] if s["tag"] == "reuse")
    data["sections"].remove(reuse)
    data["assignment"]["total"] -= sum(c["points"] for c in reuse["checks"])
    del data["features"]["reuse"]  # measured by the section taken out
    blind = tmp_path / "blind.yaml"
    blind.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    outcome = runner.invoke(cli, ["rubric", "validate", str(blind), "--sandbox", "local"])
    assert outcome.exit_code != 0
    assert "BLIND SPOT topo_no_visited: no section catches this bug" in outcome.stdout
    assert "Reference solution: 85/85" in outcome.stdout  # everything else about it is fine
    assert "the rubric is not valid" in outcome.stderr


def test_rubric_validate_names_a_wrong_literal(runner: CliRunner, tmp_path: Path) -> None:
    text = DEFAULT_RUBRIC.read_text(encoding="utf-8")
    assert text.count("L.data: 10.5") == 1
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(text.replace("L.data: 10.5", "L.data: 10.6"), encoding="utf-8")
    outcome = runner.invoke(cli, ["rubric", "validate", str(wrong), "--sandbox", "local"])
    assert outcome.exit_code != 0
    assert "Rubric is valid." not in outcome.output
    assert "part1.forward: L.data is 10.6 in the rubric but 10.5 from the reference" in outcome.stdout
    assert "disagreeing: 1" in outcome.stdout
    assert "the rubric is not valid" in outcome.stderr


def test_rubric_validate_reports_a_malformed_rubric(runner: CliRunner, tmp_path: Path) -> None:
    text = DEFAULT_RUBRIC.read_text(encoding="utf-8").replace(
        "        points: 4\n        vouched_by: part1.random\n",
        "        points: four\n        vouched_by: part1.random\n",
        1,
    )
    assert "points: four" in text
    bad = tmp_path / "bad.yaml"
    bad.write_text(text, encoding="utf-8")
    outcome = runner.invoke(cli, ["rubric", "validate", str(bad), "--sandbox", "local"])
    assert outcome.exit_code != 0
    assert "expected a number, got 'four'" in str(outcome.exception)
    assert "sections[1].checks[0].points" in str(outcome.exception)


def test_grade_writes_a_report_per_student_and_grades_csv(runner: CliRunner, tmp_path: Path) -> None:
    submissions = tmp_path / "submissions"
    for student in STUDENTS:
        shutil.copytree(SUBMISSIONS / student, submissions / student)
    out = tmp_path / "out"
    outcome = runner.invoke(cli, ["grade", str(submissions), "--out", str(out), "--sandbox", "local", "--seed", "3"])
    assert outcome.exit_code == 0, outcome.output
    # A fingerprint of the seed, never the key itself: logs are read by more people than rubrics.
    assert f"fingerprint {seed_label(3)}" in outcome.stdout and "local sandbox" in outcome.stdout
    assert f"Graded with the seed given (fingerprint {seed_label(3)})" in outcome.stdout

    with (out / "grades.csv").open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
    assert reader.fieldnames == [
        "student", *TAGS, "late_penalty", "override", "total",
        "max_total", "late_penalty_percent", "override_reason", "status", "detail", "review",
    ]  # fmt: skip
    assert [r["student"] for r in rows] == list(STUDENTS)
    by_student = {r["student"]: r for r in rows}
    assert by_student["alice_nguyen"]["total"] == "100"
    assert by_student["frank_zhou"]["total"] == "0"
    # A misnamed class, and checks that call it with an argument the handout's Value lacks, so
    # they fail on the grader's correct engines: no Step-5 credit.
    assert by_student["ivy_martins"]["total"] == "83"
    assert all(r["max_total"] == "100" for r in rows)
    # Frank's file does not parse: a status of its own, the error and its line in the detail,
    # and flagged for a person. The other two wrote their Step-5 note.
    frank = by_student["frank_zhou"]
    assert frank["status"] == "not_loadable"
    assert "does not load" in frank["detail"] and "SyntaxError" in frank["detail"] and "(line 59)" in frank["detail"]
    assert frank["review"] == "The file does not load, so every check scored 0."
    assert all(r["status"] == "graded" and r["review"] == "" for r in rows if r is not frank)
    index = (out / "index.html").read_text(encoding="utf-8")
    needs_a_human = index[index.index('id="humans-title"') : index.index('id="all-title"')]
    assert "frank_zhou" in needs_a_human and "status-not_loadable" in needs_a_human
    for row in rows:  # exactly, as written: the grader's score is its sections' sum
        assert row["late_penalty"] == row["override"] == "0"
        assert sum(Decimal(row[tag]) for tag in TAGS) == Decimal(row["total"])

    assert sorted(p.name for p in out.iterdir()) == ["grades.csv", "grades.sqlite", "index.html", "students"]
    assert sorted(p.name for p in (out / "students").iterdir()) == sorted(STUDENTS)
    for student in STUDENTS:
        data = json.loads((out / "students" / student / "results.json").read_text(encoding="utf-8"))
        assert data["extra_data"]["seed_id"] == seed_label(3) and "seed" not in data["extra_data"]
        assert data["extra_data"]["visible_only"] is False
        assert data["score"] == pytest.approx(float(by_student[student]["total"]))
        assert len(data["tests"]) == len(load_rubric().checks)
        html = (out / "students" / student / "feedback.html").read_text(encoding="utf-8")
        assert student in html or student.replace("_", " ") in html


def test_grade_is_reproducible_for_a_seed(runner: CliRunner, tmp_path: Path) -> None:
    submissions = tmp_path / "submissions"
    shutil.copytree(SUBMISSIONS / "bob_okafor", submissions / "bob_okafor")
    totals = []
    for run in ("a", "b"):
        out = tmp_path / run
        outcome = runner.invoke(
            cli, ["grade", str(submissions), "--out", str(out), "--sandbox", "local", "--seed", "3"]
        )
        assert outcome.exit_code == 0, outcome.output
        tests = json.loads((out / "students" / "bob_okafor" / "results.json").read_text(encoding="utf-8"))["tests"]
        totals.append([(t["extra_data"]["check_id"], t["score"]) for t in tests])
    assert totals[0] == totals[1]
    assert sum(score for _, score in totals[0]) < 100  # bob loses points, so the comparison means something


def test_grade_rejects_a_folder_without_students(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    outcome = runner.invoke(
        cli, ["grade", str(tmp_path / "empty"), "--out", str(tmp_path / "out"), "--sandbox", "local"]
    )
    assert outcome.exit_code != 0
    assert "holds no submissions" in str(outcome.exception)


@pytest.mark.parametrize("given", [None, 20261130])
def test_grade_says_whose_seed_it_graded_with(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: int | None
) -> None:
    # Finding C: a seed given on the command line is not "the assignment's seed".
    from result_builders import make_check, make_submission

    import grader.batch

    seen: list[int | None] = []

    def graded(source: Path, *, out: Path, seed: int | None, **_: object) -> grader.batch.ClassResult:
        seen.append(seed)
        used = load_rubric().seed if seed is None else seed
        result = make_submission([make_check("api.basic", "api")], {"api": "API"}, seed=used)
        return grader.batch.ClassResult((result,), out, "folders", 1, 0, 0, ())

    monkeypatch.setattr(grader.batch, "grade_class", graded)
    (tmp_path / "class").mkdir()
    args = ["grade", str(tmp_path / "class"), "--out", str(tmp_path / "out"), "--sandbox", "local"]
    outcome = runner.invoke(cli, args + (["--seed", str(given)] if given is not None else []))
    assert outcome.exit_code == 0, outcome.output
    assert seen == [given]
    if given is None:
        line = f"Graded with the assignment's seed (fingerprint {seed_label(load_rubric().seed)})."
    else:
        line = f"Graded with the seed given (fingerprint {seed_label(given)})."
    assert line in outcome.stdout and str(given) not in outcome.stdout.replace(line, "")
