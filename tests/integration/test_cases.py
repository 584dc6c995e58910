"""Data-driven end-to-end cases, graded in the real Docker sandbox: all of them once per test
session, as one class, two at a time (a course's batch does the same).

Each ``tests/cases/<name>/`` holds an ``autograd_lab.py`` and ``expected.yaml``: the points per
section, the status, and the checks that must not pass. The reference is one of them. A folder
whose ``expected.yaml`` says ``derived: <feature>`` holds no engine: it is the reference without
that feature, made at test time by ``tests/cases/feature_missing.py``. The two slow honest
files are graded a third as long (``tests/short_cases.py``): the benchmarks time them in full.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml
from markupsafe import escape
from rubric_variants import no_shrinking, with_limits
from short_cases import short_text

from grader import part_runs
from grader.batch import grade_class
from grader.judge.diagnose import KillMatrix, kill_matrix
from grader.mutate import CATALOGUE, INFO
from grader.pipeline import grade_submission
from grader.plan import build_plan
from grader.report.html import render_feedback_html
from grader.results import Outcome, SubmissionResult, Visibility
from grader.rubric import load_rubric
from grader.runners.docker import DockerRunner

pytestmark = pytest.mark.docker

CASES = Path(__file__).resolve().parents[1] / "cases"
_SPEC = importlib.util.spec_from_file_location("feature_missing", CASES / "feature_missing.py")
assert _SPEC is not None and _SPEC.loader is not None
_FEATURE_MISSING = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_FEATURE_MISSING)
derive = _FEATURE_MISSING.derive
SEED = load_rubric().seed  # the assignment's, as every grading uses it
NAMES = sorted(p.name for p in CASES.iterdir() if (p / "expected.yaml").is_file())
# A catalogue bug's smallest failing program, as shrinking finds it, has at most this many operations.
MAX_OPERATIONS = 4
# One bug of each family of the catalogue (accumulation, local derivative, forward value, chain
# rule, seed, order), graded with and without shrinking.
SHRINK_SAMPLE = (
    "mut_acc_add",
    "mut_loc_tanh_linear",
    "mut_fwd_sub",
    "mut_chain_mul_no_upstream",
    "mut_seed_leaf_one",
    "mut_topo_not_reversed",
)


@pytest.fixture(scope="module")
def runner() -> DockerRunner:
    return DockerRunner()


def _expected(name: str) -> dict[str, Any]:
    data = yaml.safe_load((CASES / name / "expected.yaml").read_text())
    assert isinstance(data, dict), name
    return data


@pytest.fixture(scope="module")
def graded(runner: DockerRunner, tmp_path_factory: pytest.TempPathFactory) -> dict[str, SubmissionResult]:
    """Every case graded once, as a class: its engine, or the reference without a feature."""
    source = tmp_path_factory.mktemp("cases")
    for name in NAMES:
        (source / name).mkdir()
        expected = _expected(name)
        if "derived" in expected:  # made from the reference at test time (feature_missing.py)
            (source / name / "autograd_lab.py").write_text(derive(expected["derived"]), encoding="utf-8")
        else:  # the two slow honest files a third as long (tests/short_cases.py)
            (source / name / "autograd_lab.py").write_text(short_text(name), encoding="utf-8")
    image = runner.image
    outcome = grade_class(
        source,
        out=tmp_path_factory.mktemp("cases-out"),
        rubric=load_rubric(),
        runner=runner,
        runner_factory=lambda: DockerRunner(image=image),
        jobs=2,
        seed=SEED,
    )
    return {r.student: r for r in outcome.results}


@pytest.fixture(scope="module")
def without_shrinking(runner: DockerRunner, tmp_path_factory: pytest.TempPathFactory) -> dict[str, SubmissionResult]:
    """A bug of each family of the catalogue graded again with shrinking switched off."""
    rubric = no_shrinking(tmp_path_factory.mktemp("rubric"))
    source = tmp_path_factory.mktemp("no-shrink")
    for name in SHRINK_SAMPLE:
        (source / name).mkdir()
        (source / name / "autograd_lab.py").write_text(short_text(name), encoding="utf-8")
    image = runner.image
    outcome = grade_class(
        source,
        out=tmp_path_factory.mktemp("no-shrink-out"),
        rubric=rubric,
        runner=runner,
        runner_factory=lambda: DockerRunner(image=image),
        jobs=2,
        seed=SEED,
    )
    return {r.student: r for r in outcome.results}


@pytest.fixture(scope="module")
def matrix() -> KillMatrix:
    rubric = load_rubric()
    return kill_matrix(rubric, build_plan(rubric, seed=SEED, visible_only=False))


def test_every_catalogue_operator_has_a_case() -> None:
    operators = {yaml.safe_load((CASES / n / "expected.yaml").read_text()).get("operator") for n in NAMES}
    assert {op.id for op in CATALOGUE} <= operators


def test_there_are_enough_cases() -> None:
    assert len(NAMES) >= 12
    assert "reference" in NAMES


@pytest.mark.parametrize("name", ["mut_acc_add", "mut_topo_no_visited", "partial_hidden"])
def test_the_same_file_gets_the_same_points_in_every_run(
    name: str,
    runner: DockerRunner,
    graded: dict[str, SubmissionResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two containers, two memory layouts: engines whose wrong answers depend on the order a set
    # of _prev yields its nodes, and one that fails only some hidden instances. The first is
    # the class's grading, two at a time, one CPU each; the second, this one alone, with two
    # CPUs (tests/integration/test_sample_class.py grades the whole sample class both ways).
    # In two parts (grader/parts.py), each in a sandbox of its own, at once (cores of its own:
    # grader/part_runs.py): a file within its budget scores the same dealt in one part or two.
    first = graded[name]
    two = with_limits(tmp_path, cpus=2, parts=2)
    monkeypatch.setattr(part_runs, "HOST_CORES", part_runs.Cores(2, str(tmp_path / "cores")))
    second = grade_submission(CASES / name / "autograd_lab.py", student=name, rubric=two, runner=runner)
    assert first.seed == second.seed == SEED
    assert [(c.check_id, c.points) for c in second.checks] == [(c.check_id, c.points) for c in first.checks]
    assert first.score < 100  # each of them has a bug to be charged the same way twice


@pytest.mark.parametrize("name", ["mut_acc_mul", "mut_acc_add"])
def test_the_lab_bug_is_charged_once_in_reuse(name: str, graded: dict[str, SubmissionResult]) -> None:
    # The reference with `=` for `+=` in one backward, carrying the reference's own checks (the
    # handout's Steps 2-6, which catch the bug on a correct engine): it loses points in reuse and
    # nowhere else, and its checks earn exactly the bug-injection points the reference's earn.
    right = {s.tag: s.points for s in graded["reference"].sections}
    wrong = {s.tag: s.points for s in graded[name].sections}
    assert wrong["reuse"] < right["reuse"]
    assert {t: p for t, p in wrong.items() if t != "reuse"} == {t: p for t, p in right.items() if t != "reuse"}


def test_each_caught_catalogue_bug_is_shown_a_counterexample_of_at_most_four_operations(
    graded: dict[str, SubmissionResult],
) -> None:
    # The cases named mut_<operator> are the reference with one catalogue bug, graded with the
    # shipped rubric (hidden checks shrink their first failing instance to a smallest program).
    rubric = load_rubric()
    shown = 0
    for name in (n for n in NAMES if _expected(n).get("operator")):
        caught = [
            c
            for c in graded[name].checks
            if c.visibility is Visibility.HIDDEN and c.outcome in (Outcome.FAILED, Outcome.PARTIAL)
        ]
        found = [c.counterexample for c in caught if c.counterexample is not None]
        for counterexample in found:
            assert counterexample.operations <= MAX_OPERATIONS, (name, counterexample.program)
        if any(rubric.check(c.check_id).compare == "values" for c in caught):
            assert found, f"{name}: a hidden values check caught it, and no counterexample was shown"
            shown += 1
    assert shown >= 20  # most of the catalogue is caught by a hidden values check


@pytest.mark.parametrize("name", SHRINK_SAMPLE)
def test_shrinking_never_changes_a_verdict_or_a_point(
    name: str, graded: dict[str, SubmissionResult], without_shrinking: dict[str, SubmissionResult]
) -> None:
    # Shrinking runs after every probe, within its own charged allowance, and only adds the
    # smallest program to a check that already failed: the same file scores the same without it.
    shrunk, plain = graded[name], without_shrinking[name]
    assert any(c.counterexample is not None for c in shrunk.checks), name
    assert all(c.counterexample is None for c in plain.checks)
    assert shrunk.score == plain.score
    assert [(c.check_id, c.outcome, c.points) for c in shrunk.checks] == [
        (c.check_id, c.outcome, c.points) for c in plain.checks
    ]


@pytest.mark.parametrize("name", NAMES)
def test_case(name: str, graded: dict[str, SubmissionResult], matrix: KillMatrix) -> None:
    expected = _expected(name)
    result = graded[name]
    assert result.runner == "docker"
    assert result.status.value == expected["status"], result.status_detail
    got = {s.tag: s.points for s in result.sections}
    # Exact, for every engine: the seed is the assignment's, and set iteration follows the
    # program rather than memory addresses, so even order-dependent bugs score the same.
    assert got == pytest.approx(expected["sections"], abs=0.011), got
    failing = sorted(c.check_id for c in result.checks if not c.passed)
    assert failing == sorted(expected["failing"])
    if "load_error_contains" in expected:
        assert expected["load_error_contains"] in result.load.error
    by_id = {c.check_id: c for c in result.checks}
    for check_id, text in expected.get("messages", {}).items():
        assert text in by_id[check_id].message, by_id[check_id].message
    for check_id, text in expected.get("notes", {}).items():
        assert any(text in note for note in by_id[check_id].notes), by_id[check_id].notes
    if "review" in expected:
        assert [r for r in result.review if expected["review"] in r], result.review
    else:
        assert result.review == (), result.review
    for check in result.checks:
        if not check.passed and check.visibility.value == "visible":
            assert check.message and check.message != "Passed."
    # A case that is the reference with one catalogue bug loses points exactly in the sections
    # the kill matrix predicts, and its feedback names that misconception.
    operator = expected.get("operator")
    if operator:
        lost = tuple(s.tag for s in result.sections if s.points < s.max_points - 1e-9)
        assert lost == matrix.predicted(operator)
        # The host observes the catalogue's mutants with the sandbox's hashing, so the one bug
        # shows the same wrong numbers on both sides, order-dependent bugs included.
        assert result.diagnoses and result.diagnoses[0].share == 1.0, result.diagnoses
    named = expected.get("diagnosis") or operator
    if named:
        assert [d.operator for d in result.diagnoses][:1] == [named]
        html = render_feedback_html(result)
        assert str(escape(INFO[named].misconception)) in html
