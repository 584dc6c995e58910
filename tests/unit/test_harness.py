"""The real in-sandbox harness, run with the LOCAL runner (no Docker) through grade_submission.

Each test writes a small variant of the reference solution to tmp_path and grades it end to
end: plan -> harness subprocess -> strict parsing -> judge. The Step-5 AST edit is tested
directly at the bottom.
"""

from __future__ import annotations

import ast
import glob
import importlib.util
import re
from pathlib import Path

import pytest

from grader.grading import grade_submission
from grader.results import Outcome, Status, SubmissionResult
from grader.rubric import DEFAULT_RUBRIC, Rubric, load_rubric
from grader.runners.local import LocalRunner
from sandbox.harness import mutation

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
    # Step 5 in the sandbox: with += turned into = in __mul__'s backward, the reference's own
    # reuse check fails, which is what bug.step5 rewards.
    step5 = next(c for c in result.checks if c.check_id == "bug.step5")
    assert step5.comparisons[0].observed.startswith("failed (AssertionError")


def test_syntax_error_scores_zero_with_the_line(tmp_path: Path, rubric: Rubric, runner: LocalRunner) -> None:
    path = submit(tmp_path, "import math\n\nclass Value:\n    def __init__(self, data)\n        self.data = data\n")
    result = grade(path, rubric, runner)
    assert result.score == 0
    assert result.status is Status.GRADED  # the student's outcome, not an infrastructure failure
    assert not result.load.ok and result.load.mode == "failed"
    assert "SyntaxError" in result.load.error
    assert "line 4" in result.load.error
    assert all(c.outcome is Outcome.NOT_RUN for c in result.checks)


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
    # The engine itself earns everything; only running the file as a script fails.
    assert failed_ids(result) == ["bug.own_checks", "bug.step5"]
    assert result.score == 85
    own = next(c for c in result.checks if c.check_id == "bug.own_checks")
    assert "RuntimeError" in own.message and f"line {line}" in own.message


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
        "    dot.node(str(id(root)), label=repr(root))\n    return dot\n\n\n"
        + CHECKS_BANNER,
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
        ("wall_seconds: 60 ", "wall_seconds: 12 "),
        ("probe_seconds: 2 ", "probe_seconds: 1 "),
        ("script_seconds: 10 ", "script_seconds: 3 "),
    ):
        text = edited(old, new, text)
    (tmp_path / "fast.yaml").write_text(text, encoding="utf-8")
    fast = load_rubric(tmp_path / "fast.yaml")
    assert (fast.limits.wall_seconds, fast.limits.probe_seconds, fast.limits.script_seconds) == (12, 1, 3)
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


def test_local_runs_leave_nothing_in_tmp(rubric: Rubric, runner: LocalRunner) -> None:
    before = set(glob.glob("/tmp/ag-run-*"))
    result = grade(REFERENCE, rubric, runner)
    assert result.score == 100
    left = sorted(set(glob.glob("/tmp/ag-run-*")) - before)
    assert left == [], f"{len(left)} directories left behind, e.g. {left[:3]}"


# --- the Step-5 mutation ------------------------------------------------------------------


def _mul_backward_lines(source: str) -> list[int]:
    lines = source.splitlines()
    start = next(i for i, text in enumerate(lines) if "def backward_mul" in text)
    return [i + 1 for i in range(start, start + 6) if ".grad +=" in lines[i]]


def test_mutation_turns_plus_equals_into_assignment_in_mul_backward() -> None:
    tree = ast.parse(REFERENCE_SOURCE)
    want_lines = _mul_backward_lines(REFERENCE_SOURCE)
    assert len(want_lines) == 2
    mutated, lines = mutation.apply(tree, mutation.STEP5, "Value")
    assert lines == want_lines
    text = ast.unparse(mutated)
    assert "self.grad = other.data * out.grad" in text
    assert "other.grad = self.data * out.grad" in text
    # Only __mul__ is touched: every other accumulation survives.
    assert text.count(".grad +=") == REFERENCE_SOURCE.count(".grad +=") - 2
    assert "self.grad += out.grad" in text  # __add__


def test_mutated_engine_shows_the_step5_bug(tmp_path: Path) -> None:
    mutated, _ = mutation.apply(ast.parse(REFERENCE_SOURCE), mutation.STEP5, "Value")
    path = tmp_path / "mutated_lab.py"
    path.write_text(ast.unparse(mutated), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("mutated_lab", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = module.Value(3.0)
    y = x * x + x
    y.backward()
    assert x.grad == 3.0  # 7.0 with +=, as the reference's docstring explains
    a = module.Value(2.0)
    c = (a + a) * a
    c.backward()
    assert a.grad == 8.0


def test_mutation_not_applicable_when_mul_already_assigns() -> None:
    mutated, _ = mutation.apply(ast.parse(REFERENCE_SOURCE), mutation.STEP5, "Value")
    with pytest.raises(mutation.NotApplicable, match="no backward function containing"):
        mutation.apply(ast.parse(ast.unparse(mutated)), mutation.STEP5, "Value")
    assigns = edited(
        "            self.grad += other.data * out.grad\n            other.grad += self.data * out.grad\n",
        "            self.grad = self.grad + other.data * out.grad\n"
        "            other.grad = other.grad + self.data * out.grad\n",
    )
    with pytest.raises(mutation.NotApplicable):
        mutation.apply(ast.parse(assigns), mutation.STEP5, "Value")


@pytest.mark.parametrize(
    ("source", "class_name", "edit", "message"),
    [
        (REFERENCE_SOURCE, "Scalar", mutation.STEP5, "class Scalar has no __mul__ method"),
        (
            "class Value:\n    def __add__(self, other):\n        return self\n",
            "Value",
            mutation.STEP5,
            "has no __mul__",
        ),
        (REFERENCE_SOURCE, "Value", "add_backward_assign", "unknown edit"),
        # += directly in __mul__ (not in its backward closure) is not the Step-5 edit.
        (
            "class Value:\n    def __mul__(self, other):\n        self.grad += 1\n        return self\n",
            "Value",
            mutation.STEP5,
            "no backward function",
        ),
    ],
)
def test_mutation_not_applicable(source: str, class_name: str, edit: str, message: str) -> None:
    with pytest.raises(mutation.NotApplicable, match=message):
        mutation.apply(ast.parse(source), edit, class_name)
