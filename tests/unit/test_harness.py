"""The real in-sandbox harness, run with the LOCAL runner (no Docker) through grade_submission.

Each test writes a small variant of the reference solution to tmp_path and grades it end to
end: plan -> harness subprocess -> strict parsing -> judge. The mutation operators themselves
are tested in test_mutate.py; here they run through the real harness.
"""

from __future__ import annotations

import importlib.util
import re
import tempfile
from pathlib import Path

import pytest

from grader.pipeline import NOT_LOADABLE_REVIEW, grade_submission
from grader.results import Outcome, Status, SubmissionResult
from grader.rubric import DEFAULT_RUBRIC, Rubric, load_rubric
from grader.runners.local import LocalRunner

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "reference" / "autograd_lab.py"
REFERENCE_SOURCE = REFERENCE.read_text(encoding="utf-8")
CHECKS_BANNER = (
    "# ----------------------------------------------------------------------------------------\n# The lab's checks"
)
BACKWARD_DOC = '        """Seed dL/dL = 1 and run every node\'s local rule in reverse topological order."""\n'


@pytest.fixture(scope="module")
def rubric() -> Rubric:
    return load_rubric()


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    return LocalRunner()


def submit(tmp_path: Path, source: str, student: str = "student") -> Path:
    folder = tmp_path / student
    folder.mkdir()
    path = folder / "autograd_lab.py"
    path.write_text(source, encoding="utf-8")
    return path


def edited(old: str, new: str, source: str = REFERENCE_SOURCE) -> str:
    assert source.count(old) == 1, f"{old!r} must occur exactly once in the reference"
    return source.replace(old, new)


def grade(path: Path, rubric: Rubric, runner: LocalRunner, seed: int = 1) -> SubmissionResult:
    return grade_submission(path, student=path.parent.name, rubric=rubric, runner=runner, seed=seed)


def failed_ids(result: SubmissionResult) -> list[str]:
    return [c.check_id for c in result.checks if not c.passed]


# --- whole submissions --------------------------------------------------------------------


def test_reference_scores_full_marks(rubric: Rubric, runner: LocalRunner) -> None:
    result = grade(REFERENCE, rubric, runner, seed=7)
    assert result.status is Status.GRADED, result.status_detail
    assert result.score == 100 and result.max_score == 100
    assert failed_ids(result) == []
    assert (result.load.ok, result.load.mode, result.load.class_name, result.load.notices) == (
        True,
        "full",
        "Value",
        (),
    )
    assert (result.runner, result.seed, result.rubric_sha) == ("local", 7, rubric.sha256)
    assert all(c.instances_passed == c.instances_total for c in result.checks)
    assert {s.tag: s.points for s in result.sections} == {
        "api": 10,
        "part1_trace": 25,
        "a6_parity": 15,
        "reuse": 15,
        "bug_injection": 15,
        "finite_difference": 20,
    }
    # Step 5 in the sandbox: on the grader's engine with += turned into = in __mul__'s backward,
    # the reference's own reuse check fails, which is what bug.step5 rewards; only the outcome
    # and the lines of the checks are read, never the exception.
    step5 = next(c for c in result.checks if c.check_id == "bug.step5")
    assert step5.comparisons[0].observed.startswith("failed (its traceback points to your line")


def test_syntax_error_scores_zero_with_the_line(tmp_path: Path, rubric: Rubric, runner: LocalRunner) -> None:
    path = submit(tmp_path, "import math\n\nclass Value:\n    def __init__(self, data)\n        self.data = data\n")
    result = grade(path, rubric, runner)
    assert result.score == 0
    # The student's outcome, not an infrastructure failure, and not a grade like any other.
    assert result.status is Status.NOT_LOADABLE and result.scored
    assert "does not load" in result.status_detail and "SyntaxError" in result.status_detail
    assert "(line 4)" in result.status_detail
    assert result.review == (NOT_LOADABLE_REVIEW,)
    assert not result.load.ok and result.load.mode == "failed"
    assert "SyntaxError" in result.load.error
    assert "line 4" in result.load.error
    # Nothing was built, on any form: no check says its graphs were built without a feature.
    assert all(c.notes == () for c in result.checks), [c.notes for c in result.checks if c.notes]
    assert all(c.outcome is Outcome.NOT_RUN for c in result.checks)
    # The line itself, the two around it, and a caret where the colon is missing.
    assert result.load.excerpt.splitlines() == [
        "3 | class Value:",
        "4 |     def __init__(self, data)",
        "  |                             ^",
        "5 |         self.data = data",
    ]


def test_an_error_the_compiler_finds_is_shown_at_its_line(tmp_path: Path, rubric: Rubric, runner: LocalRunner) -> None:
    # The parser accepts this file; compiling it fails ('return' outside a function).
    path = submit(tmp_path, "class Value:\n    def __init__(self, data):\n        self.data = data\n\nreturn 3\n")
    result = grade(path, rubric, runner)
    assert result.status is Status.NOT_LOADABLE and not result.load.ok
    assert "'return' outside function" in result.load.error and "line 5" in result.load.error
    assert "line 5" in result.status_detail
    assert result.load.excerpt.splitlines() == ["4 |", "5 | return 3", "  | ^"]


def test_a_coding_that_makes_nul_characters_does_not_load(tmp_path: Path, rubric: Rubric, runner: LocalRunner) -> None:
    # Intake reads these bytes as text (no NUL byte among them); the declared coding turns
    # "+AAA-" into a NUL character, which no Python file may hold.
    path = tmp_path / "student" / "autograd_lab.py"
    path.parent.mkdir()
    path.write_bytes(b'# coding: utf-7\nclass Value:\n    name = "+AAA-"\n')
    result = grade(path, rubric, runner)
    assert result.status is Status.NOT_LOADABLE and result.score == 0, result.status_detail
    assert "NUL" in result.status_detail and result.review == (NOT_LOADABLE_REVIEW,)


def test_an_engine_whose_import_always_raises_does_not_load(
    tmp_path: Path, rubric: Rubric, runner: LocalRunner
) -> None:
    # The class is there to read, but its body raises: neither the whole file nor its
    # definitions alone ever give the engine class.
    source = edited("class Value:\n", "class Value:\n    raise RuntimeError('not today')\n")
    result = grade(submit(tmp_path, source), rubric, runner)
    assert result.status is Status.NOT_LOADABLE and result.score == 0, result.status_detail
    assert "RuntimeError" in " ".join(result.load.notices)
    assert result.review == (NOT_LOADABLE_REVIEW,)


def test_a_file_without_an_engine_class_loads_and_is_graded(
    tmp_path: Path, rubric: Rubric, runner: LocalRunner
) -> None:
    # Python loads it; there is simply no engine in it, which the API checks say.
    result = grade(submit(tmp_path, "def helper():\n    return 1\n"), rubric, runner)
    assert result.status is Status.GRADED and result.score == 0
    assert "no class named Value" in result.load.error
    assert result.review == ()


def test_top_level_code_that_raises_is_skipped_and_the_engine_graded(
    tmp_path: Path, rubric: Rubric, runner: LocalRunner
) -> None:
    source = edited(CHECKS_BANNER, "demo = Value(2.0) * 3\nraise RuntimeError('demo crashed')\n\n" + CHECKS_BANNER)
    line = source.splitlines().index("raise RuntimeError('demo crashed')") + 1
    result = grade(submit(tmp_path, source), rubric, runner)
    assert result.status is Status.GRADED
    assert result.load.ok and result.load.mode == "definitions" and result.load.class_name == "Value"
    notices = " | ".join(result.load.notices)
    assert f"RuntimeError at line {line}" in notices
    assert re.search(rf"Top-level code outside definitions was skipped \(lines [0-9, ]*\b{line}\b", notices), notices
    # The engine itself earns everything; only running the file as a script fails, on the
    # grader's correct engines too, at the student's own line (its exception is never read).
    assert failed_ids(result) == ["bug.own_checks", "bug.step5", "bug.forced_fail", "bug.catalogue"]
    assert result.score == 85
    own = next(c for c in result.checks if c.check_id == "bug.own_checks")
    assert "a correct engine of the grader's" in own.message and f"line {line}" in own.message


def test_misnamed_class_with_extra_constructor_argument(tmp_path: Path, rubric: Rubric, runner: LocalRunner) -> None:
    source = REFERENCE_SOURCE.replace("Value", "Scalar")
    source = edited('_children: Iterable["Scalar"] = ()', '_children: Iterable["Scalar"]', source)
    source = re.sub(r"Scalar\(([^(),]*)\)", r"Scalar(\1, ())", source)  # every one-argument call passes ()
    assert "class Value" not in source and "def __init__(self, data: Number, _children: Iterable" in source
    result = grade(submit(tmp_path, source), rubric, runner)
    assert result.status is Status.GRADED
    assert result.load.class_name == "Scalar"
    assert any("No class named Value; graded your class Scalar" in n for n in result.load.notices)
    assert any("requires extra argument(s) _children" in n for n in result.load.notices)
    assert failed_ids(result) == ["api.engine_class"]
    assert result.score == 100 - rubric.check("api.engine_class").points == 98


def test_graphviz_import_gets_a_stand_in(tmp_path: Path, rubric: Rubric, runner: LocalRunner) -> None:
    if importlib.util.find_spec("graphviz") is not None:
        pytest.skip("graphviz is installed here, so no stand-in is needed")
    source = edited("import math\n", "import math\n\nimport graphviz\n")
    source = edited(
        CHECKS_BANNER,
        "def draw(root):\n    dot = graphviz.Digraph(format='svg')\n"
        "    dot.node(str(id(root)), label=repr(root))\n    return dot\n\n\n" + CHECKS_BANNER,
        source,
    )
    source = edited(
        "    check_part1_graph()\n", "    check_part1_graph()\n    draw(Value(1.0) * 2).render('graph')\n", source
    )
    result = grade(submit(tmp_path, source), rubric, runner)
    assert result.status is Status.GRADED and result.score == 100
    assert any(
        "'graphviz' is not installed in the grader; an inert stand-in was used" in n for n in result.load.notices
    )


def test_endless_backward_times_out_and_keeps_api_points(tmp_path: Path) -> None:
    text = DEFAULT_RUBRIC.read_text(encoding="utf-8")
    for old, new in (
        ("budget_seconds: 900 ", "budget_seconds: 12 "),
        ("wall_seconds: 1800 ", "wall_seconds: 60 "),
        ("probe_seconds: 2 ", "probe_seconds: 1 "),
        ("script_seconds: 20 ", "script_seconds: 3 "),
    ):
        text = edited(old, new, text)
    (tmp_path / "fast.yaml").write_text(text, encoding="utf-8")
    fast = load_rubric(tmp_path / "fast.yaml")
    limits = fast.limits
    assert (limits.budget_seconds, limits.wall_seconds, limits.probe_seconds, limits.script_seconds) == (12, 60, 1, 3)
    assert fast.checks == load_rubric().checks  # everything else is the shipped rubric

    source = edited(BACKWARD_DOC, BACKWARD_DOC + "        while True:\n            pass\n")
    result = grade(submit(tmp_path, source), fast, LocalRunner())
    assert result.status is Status.TIMEOUT, result.status_detail
    assert "time limit" in result.status_detail
    assert result.load.ok
    assert result.section("api").points == result.section("api").max_points == 10
    by_id = {c.check_id: c for c in result.checks}
    assert by_id["part1.forward"].passed  # forward values are reported before backward() hangs
    assert by_id["part1.leaf_grads"].outcome is Outcome.TIMEOUT
    assert "time limit during backward()" in by_id["part1.leaf_grads"].message
    assert 10 <= result.score < 50
    assert not by_id["reuse.square_plus"].passed and not by_id["bug.step5"].passed


def test_a_missing_file_is_ungradable(tmp_path: Path, rubric: Rubric, runner: LocalRunner) -> None:
    result = grade(tmp_path / "nobody" / "autograd_lab.py", rubric, runner)
    assert result.status is Status.UNGRADABLE and result.score == 0
    assert "no file named autograd_lab.py" in result.status_detail


def test_local_runs_leave_nothing_in_tmp(
    rubric: Rubric, runner: LocalRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The runner's folder in a temporary folder of this test's own (other tests' runs may share
    # /tmp); the harness's scratch folders, one per run, go inside it.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = grade(REFERENCE, rubric, runner)
    assert result.score == 100
    left = sorted(str(p) for p in tmp_path.rglob("*"))
    assert left == [], f"{len(left)} files or folders left behind, e.g. {left[:3]}"


# --- bug injection as mutation analysis ------------------------------------------------------

ENGINE_ONLY = REFERENCE_SOURCE[: REFERENCE_SOURCE.index(CHECKS_BANNER)]


def bug_checks(result: SubmissionResult) -> dict[str, object]:
    return {c.check_id: c for c in result.checks if c.section == "bug_injection"}


def test_reference_kills_every_catalogue_mutant(rubric: Rubric, runner: LocalRunner) -> None:
    result = grade(REFERENCE, rubric, runner, seed=3)
    score = next(c for c in result.checks if c.check_id == "bug.catalogue")
    assert score.passed and score.instances_passed == score.instances_total >= 20
    assert score.message.startswith(f"Your checks caught {score.instances_total} of the {score.instances_total}")
    forced = next(c for c in result.checks if c.check_id == "bug.forced_fail")
    assert forced.passed and forced.comparisons[0].observed.startswith("failed")


def test_assert_true_checks_kill_nothing_and_are_told_so(tmp_path: Path, rubric: Rubric, runner: LocalRunner) -> None:
    source = ENGINE_ONLY + "\n\nif __name__ == '__main__':\n    assert True\n    print('all good')\n"
    result = grade(submit(tmp_path, source), rubric, runner)
    by_id = {c.check_id: c for c in result.checks}
    assert by_id["bug.own_checks"].passed
    assert by_id["bug.step5"].outcome is Outcome.FAILED
    assert "still passes" in by_id["bug.step5"].message
    assert by_id["bug.forced_fail"].outcome is Outcome.FAILED
    assert "never exercise the Value class" in by_id["bug.forced_fail"].message
    catalogue = by_id["bug.catalogue"]
    assert catalogue.points == 0 and catalogue.outcome is Outcome.NOT_RUN
    assert "no credit until" in catalogue.message
    assert result.section("bug_injection").points == 2  # they pass on every correct engine, and no more
    # The engine is the reference's: everything else is full marks.
    assert result.score == 100 - 13


def test_checks_that_fail_on_their_own_engine_get_no_mutation_credit(
    tmp_path: Path, rubric: Rubric, runner: LocalRunner
) -> None:
    source = edited("assert close(x.grad, 7.0), x.grad", "assert close(x.grad, 7.5), x.grad")
    result = grade(submit(tmp_path, source), rubric, runner)
    by_id = {c.check_id: c for c in result.checks}
    own = by_id["bug.own_checks"]
    # A wrong expected value fails on every correct engine: named, with the student's line.
    assert own.outcome is Outcome.FAILED
    assert own.comparisons[0].observed.startswith("failed (its traceback points to your line")
    assert "asserts a wrong value" in own.message
    for check_id in ("bug.step5", "bug.forced_fail", "bug.catalogue"):
        assert by_id[check_id].points == 0 and by_id[check_id].outcome is Outcome.NOT_RUN
        assert "no credit until 'Your checks pass on the grader's correct engines" in by_id[check_id].message
    assert result.section("bug_injection").points == 0 and result.score == 85


def test_weak_checks_name_the_surviving_bug_classes(tmp_path: Path, rubric: Rubric, runner: LocalRunner) -> None:
    # Only the handout's reuse checks: they catch accumulation bugs in + and *, not much else.
    checks = (
        "\n\nif __name__ == '__main__':\n"
        "    x = Value(3.0)\n    y = x * x + x\n    y.backward()\n    assert abs(x.grad - 7.0) < 1e-9\n"
        "    a = Value(2.0)\n    c = (a + a) * a\n    c.backward()\n    assert abs(a.grad - 8.0) < 1e-9\n"
    )
    result = grade(submit(tmp_path, ENGINE_ONLY + checks), rubric, runner)
    by_id = {c.check_id: c for c in result.checks}
    assert by_id["bug.step5"].passed and by_id["bug.forced_fail"].passed
    catalogue = by_id["bug.catalogue"]
    assert catalogue.outcome is Outcome.PARTIAL
    assert 0 < catalogue.instances_passed < catalogue.instances_total
    assert 0 < catalogue.points < catalogue.max_points
    notes = "\n".join(catalogue.notes)
    for family in ("LOC", "FWD"):
        assert f"Not caught ({family}," in notes
    assert "A check that would:" in notes


def test_a_mutant_that_hangs_the_checks_is_a_timeout_not_a_kill(
    tmp_path: Path, rubric: Rubric, runner: LocalRunner
) -> None:
    # Checks that loop forever once relu's gradient gate changes: the timeout is reported as
    # its own outcome, and is no catch.
    checks = (
        "\n\nif __name__ == '__main__':\n"
        "    x = Value(3.0)\n    y = x * x + x\n    y.backward()\n    assert abs(x.grad - 7.0) < 1e-9\n"
        "    z = Value(0.0)\n    z.relu().backward()\n"
        "    while z.grad != 0.0:\n        pass\n"
    )
    result = grade(submit(tmp_path, ENGINE_ONLY + checks), rubric, runner)
    catalogue = next(c for c in result.checks if c.check_id == "bug.catalogue")
    text = "\n".join(catalogue.notes)
    assert "run past the time limit" in text and "relu's gradient gate" in text
    assert result.status is Status.GRADED  # a mutant's timeout is not the submission's


def test_a_self_check_of_a_file_slow_at_import_stops_at_its_allowance_and_says_why(tmp_path: Path) -> None:
    # Every run imports the file again: 1.5 s of sleep at import (within the self-check's import
    # allowance), paid by each, against a self-check allowance of 8 s (a submission's grading
    # keeps budget_seconds).
    text = edited("self_check_seconds: 90 ", "self_check_seconds: 8 ", DEFAULT_RUBRIC.read_text(encoding="utf-8"))
    (tmp_path / "short.yaml").write_text(text, encoding="utf-8")
    short = load_rubric(tmp_path / "short.yaml")
    assert (short.limits.self_check_seconds, short.limits.budget_seconds) == (8, 900)
    future = "from __future__ import annotations\n"
    source = edited(future, future + "import time\n\ntime.sleep(1.5)  # a demo at import\n")
    path = submit(tmp_path, source)
    result = grade_submission(path, student="student", rubric=short, runner=LocalRunner(), seed=1, visible_only=True)
    not_run = [c for c in result.checks if c.outcome is Outcome.NOT_RUN]
    assert not_run and any(c.passed for c in result.checks), [(c.check_id, c.outcome) for c in result.checks]
    notice = next(n for n in result.load.notices if "allowance" in n)
    assert notice.startswith("This self-check stopped at its allowance of 8 s of your code's time")
    assert re.search(r"Importing your file takes 1\.\d s, and every check imports it again", notice), notice
    assert any("time budget ran out" in c.message for c in not_run), [c.message for c in not_run]


def test_a_self_check_grades_a_file_slower_to_import_than_it_allows_with_its_top_level_code_skipped(
    tmp_path: Path, rubric: Rubric
) -> None:
    # 3.5 s of sleep at import, past the self-check's 3 s: loaded once more without top-level code,
    # so no probe pays the sleep; the engine is graded. (Only the runs of the file's own checks,
    # which run the whole file, still sleep: the allowance holds the first of them.)
    assert rubric.limits.self_check_import_seconds == 3
    future = "from __future__ import annotations\n"
    path = submit(tmp_path, edited(future, future + "import time\n\ntime.sleep(3.5)  # a demo at import\n"))
    result = grade_submission(path, student="student", rubric=rubric, runner=LocalRunner(), seed=1, visible_only=True)
    assert (result.load.ok, result.load.mode) == (True, "definitions"), result.load
    assert result.section("api").points == result.section("api").max_points
    assert result.section("part1_trace").points == result.section("part1_trace").max_points
    notices = " ".join(result.load.notices)
    assert "did not finish within 3 s" in notices and "keep demos" in notices, notices
    assert "A self-check allows your file's import 3 s" in notices and "a submission allows 20 s" in notices
