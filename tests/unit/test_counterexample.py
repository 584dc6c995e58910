"""Shrunk counterexamples on the host: the record's shape, the reference's word on it, who may
see it, and that it survives storage."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from result_builders import make_check, make_submission

from grader.judge.counterexample import verified, with_counterexamples
from grader.judge.parse import shrunk_record
from grader.judge.records import ProbeRecords, SandboxReport, ShrunkRecord
from grader.plan import build_plan
from grader.program import compile_steps
from grader.report.gradescope import to_gradescope
from grader.report.html import render_feedback_html
from grader.report.markdown import render_markdown
from grader.report.prairielearn import to_prairielearn
from grader.report.terminal import render_summary
from grader.results import Outcome, Visibility
from grader.results_io import result_from_json, result_to_json
from grader.rubric import Rubric, load_rubric
from sandbox.harness import wire

STEPS = compile_steps(["x"], ["s = x * x", "y = s + x", "backward(y)"])
PLANNED_STEPS = ["s = x * x", "y = s + x", "w = y * 0.75", "backward(w)"]
PLANNED = {"leaves": {"x": 1.2345}, "steps": compile_steps(["x"], PLANNED_STEPS)}  # as the plan drew it


@pytest.fixture(scope="module")
def rubric() -> Rubric:
    return load_rubric()


def _record(obs: dict[str, Any], steps: list[list[Any]] | None = None) -> ShrunkRecord:
    chosen = steps if steps is not None else STEPS
    return ShrunkRecord(0, {"x": 3.0}, tuple(tuple(s) for s in chosen), obs)


def _right() -> dict[str, Any]:
    return {"x.data": 3.0, "s.data": 9.0, "y.data": 12.0, "x.grad": 7.0, "s.grad": 1.0, "y.grad": 1.0}


def test_a_counterexample_the_reference_confirms_is_shown_with_every_quantity(rubric: Rubric) -> None:
    check = rubric.check("reuse.random_dags")
    lost = {**_right(), "x.grad": 1.0}  # one path of x kept: the `=` bug
    found = verified(_record(lost), check, rubric.tolerances[check.tolerance], class_name="Value", planned=PLANNED)
    assert found is not None and found.operations == 2
    # Under plain names: leaves x, y...; nodes a, b...; the root L (one bug reads as one program).
    assert found.program.splitlines() == ["x = Value(3.0)", "a = x * x", "L = a + x", "L.backward()"]
    wrong = [c for c in found.comparisons if not c.ok]
    assert [(c.quantity, c.expected, c.observed) for c in wrong] == [("x.grad", "7", "1")]
    assert found.figure is not None and any(node.name == "x" for node in found.figure.nodes)


def test_a_sandbox_that_reports_a_counterexample_on_which_the_engine_is_right_is_not_believed(
    rubric: Rubric,
) -> None:
    check = rubric.check("reuse.random_dags")
    tolerance = rubric.tolerances[check.tolerance]
    assert verified(_record(_right()), check, tolerance, class_name="Value", planned=PLANNED) is None
    # Wrong only in a quantity the check does not compare: not this check's counterexample.
    off = {**_right(), "s.data": 10.0}
    assert "*.data" not in check.observe
    assert verified(_record(off), check, tolerance, class_name="Value", planned=PLANNED) is None


def test_a_counterexample_that_would_show_a_hidden_input_is_never_shown(rubric: Rubric) -> None:
    # Student code saw the hidden inputs: a sandbox could try to write them out as a "counterexample".
    check = rubric.check("reuse.random_dags")
    tolerance = rubric.tolerances[check.tolerance]
    lost = {**_right(), "x.grad": 1.0}
    hidden = ShrunkRecord(0, {"x": 1.2345}, tuple(tuple(s) for s in STEPS), lost)
    assert verified(hidden, check, tolerance, class_name="Value", planned=PLANNED) is None
    smuggled = compile_steps(["x"], ["s = x * 1.2345", "y = s + x", "backward(y)"])
    record = ShrunkRecord(0, {"x": 3.0}, tuple(tuple(s) for s in smuggled), lost)
    assert verified(record, check, tolerance, class_name="Value", planned=PLANNED) is None
    # The grader's own constants (in the planned program, public) may stay.
    kept = compile_steps(["x"], ["s = x * x", "y = s + x", "w = y * 0.75", "backward(w)"])
    record = ShrunkRecord(0, {"x": 3.0}, tuple(tuple(s) for s in kept), {**lost, "w.data": 9.0, "w.grad": 1.0})
    assert verified(record, check, tolerance, class_name="Value", planned=PLANNED) is not None


def test_a_program_the_reference_cannot_run_is_dropped(rubric: Rubric) -> None:
    check = rubric.check("reuse.random_dags")
    steps = compile_steps(["x"], ["y = log(x)", "backward(y)"])
    record = ShrunkRecord(0, {"x": -1.0}, tuple(tuple(s) for s in steps), {"x.grad": 5.0})
    assert verified(record, check, rubric.tolerances[check.tolerance], class_name="Value", planned=PLANNED) is None


def _raw(**changes: Any) -> dict[str, Any]:
    raw = {
        "t": wire.SHRUNK,
        "probe": "random_dags",
        "program": 0,
        "shrunk": {"leaves": {"x": 3.0}, "steps": [list(s) for s in STEPS]},
        "obs": _right(),
    }
    return {**raw, **changes}


@pytest.mark.parametrize(
    "shrunk",
    [
        {"leaves": {"x": 3.0}, "steps": [["y", "add", "x", "z"], ["", "backward", "y"]]},  # z never built
        {"leaves": {"x": 3.0}, "steps": [["y", "open", "x"], ["", "backward", "y"]]},  # unknown operation
        {"leaves": {"x": 3.0}, "steps": [["y", "neg", "x"]]},  # no backward
        {"leaves": {"x": 3.0}, "steps": [["y", "neg", "x"], ["", "backward", "q"]]},  # backward of nothing
        {"leaves": {"x": True}, "steps": [["y", "neg", "x"], ["", "backward", "y"]]},  # a bool is no number
        {"leaves": {"x": 10**400}, "steps": [["y", "neg", "x"], ["", "backward", "y"]]},  # past any float
        {"leaves": {"x": 1.0}, "steps": [["y", "mul", "x", -(10**400)], ["", "backward", "y"]]},
        {"leaves": {"x": 2.0}, "steps": [["y", "pow", "x", "x"], ["", "backward", "y"]]},  # exponent not constant
        {"leaves": {"x": 2.0}, "steps": [["x", "neg", "x"], ["", "backward", "x"]]},  # a name built twice
        {"leaves": {f"a{i}": 1.0 for i in range(20)}, "steps": [["y", "neg", "a0"], ["", "backward", "y"]]},
        {"leaves": {"__import__('os')": 1.0}, "steps": [["y", "neg", "x"], ["", "backward", "y"]]},
        "not a program",
    ],
)
def test_a_shrunk_record_of_the_wrong_shape_is_refused(shrunk: Any) -> None:
    assert shrunk_record(_raw(shrunk=shrunk), 6) is None


def test_a_well_formed_shrunk_record_is_read() -> None:
    record = shrunk_record(_raw(), 6)
    assert record is not None and record.leaves == {"x": 3.0} and record.steps[-1] == ("", "backward", "y")
    assert shrunk_record(_raw(program=6), 6) is None  # an instance the probe does not have


def _judged(rubric: Rubric, policy: str) -> list[Any]:
    chosen = replace(rubric, counterexamples=policy)
    plan = build_plan(chosen, seed=chosen.seed, visible_only=False)
    lost = {**_right(), "x.grad": 1.0}
    report = SandboxReport(None, {"random_dags": ProbeRecords(shrunk=_record(lost))}, complete=True)
    failing = make_check("reuse.random_dags", "reuse", outcome=Outcome.FAILED, visibility=Visibility.HIDDEN)
    return with_counterexamples(plan, chosen, report, [failing])


def test_the_rubric_says_who_sees_a_hidden_checks_counterexample(rubric: Rubric) -> None:
    assert _judged(rubric, "never")[0].counterexample is None
    shown = _judged(rubric, "after_due_date")[0].counterexample
    assert shown is not None and shown.shown == "after_due_date"
    assert _judged(rubric, "always")[0].counterexample.shown == "always"
    assert rubric.counterexamples == "after_due_date"  # the shipped default


def test_a_counterexample_is_rendered_and_survives_storage(rubric: Rubric) -> None:
    (check,) = _judged(rubric, "after_due_date")
    result = make_submission([check], {"reuse": "Reuse"})
    again = result_from_json(result_to_json(result))
    assert again.checks[0].counterexample == check.counterexample
    html = render_feedback_html(again)
    assert "Smallest failing program" in html and "a = x * x" in html and "<figure" in html
    markdown = render_markdown(again)
    assert "**Smallest failing program** (2 operations):" in markdown and "L.backward()" in markdown
    terminal = render_summary(again, color=False)
    assert "Smallest failing program (2 operations):" in terminal and "a = x * x" in terminal
    (test,) = to_gradescope(again)["tests"]
    assert test["visibility"] == "hidden" and "Smallest failing program:\nx = Value(3.0)\na = x * x" in test["output"]
    (pl_test,) = to_prairielearn(again)["tests"]  # type: ignore[index]
    assert "Smallest failing program (2 operations):\nx = Value(3.0)\na = x * x" in pl_test["output"]
    assert "x.grad" in pl_test["output"].split("L.backward()")[1]  # the wrong quantity, expected and observed


def test_the_same_program_found_by_two_checks_is_shown_once(rubric: Rubric) -> None:
    (first,) = _judged(rubric, "after_due_date")
    second = replace(first, check_id="reuse.random_dags_again", title="Another check")
    html = render_feedback_html(make_submission([first, second], {"reuse": "Reuse"}))
    assert html.count('class="counterexample"') == 1 and "the same as" in html
    tests = to_prairielearn(make_submission([first, second], {"reuse": "Reuse"}))["tests"]  # type: ignore[index]
    assert "a = x * x" in tests[0]["output"] and "a = x * x" not in tests[1]["output"]
    assert f"the same as for {first.title}" in tests[1]["output"]
    markdown = render_markdown(make_submission([first, second], {"reuse": "Reuse"}))
    assert markdown.count("a = x * x") == 1 and "the same as for" in markdown
