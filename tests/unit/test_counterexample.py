"""Shrunk counterexamples on the host: the record's shape, the reference's word on it, who may
see it, and that it survives storage."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from result_builders import make_check, make_submission

from grader.batch import _write_student
from grader.judge.counterexample import verified, with_counterexamples
from grader.judge.parse import shrunk_record
from grader.judge.records import ProbeRecords, SandboxReport, ShrunkRecord
from grader.judge.wording import fmt
from grader.plan import build_plan
from grader.program import compile_steps
from grader.report.gradescope import to_gradescope
from grader.report.html import render_feedback_html
from grader.report.markdown import render_markdown
from grader.report.prairielearn import to_prairielearn
from grader.report.terminal import render_summary
from grader.report.view import student_files
from grader.results import CheckResult, Comparison, Outcome, SubmissionResult, Visibility
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


def _judged(rubric: Rubric, policy: str, x_grad: float = 1.0) -> list[Any]:
    chosen = replace(rubric, counterexamples=policy)
    plan = build_plan(chosen, seed=chosen.seed, visible_only=False)
    lost = {**_right(), "x.grad": x_grad}
    report = SandboxReport(None, {"random_dags": ProbeRecords(shrunk=_record(lost))}, complete=True)
    failing = make_check("reuse.random_dags", "reuse", outcome=Outcome.FAILED, visibility=Visibility.HIDDEN)
    return with_counterexamples(plan, chosen, report, [failing])


def _visible(rubric: Rubric) -> CheckResult:
    """A visible check's counterexample (its probe shrunk before any hidden input entered the sandbox)."""
    check = rubric.check("reuse.random_dags")
    lost = {**_right(), "x.grad": 1.0}
    found = verified(_record(lost), check, rubric.tolerances[check.tolerance], class_name="Value", planned=PLANNED)
    return make_check("reuse.shown_dags", "reuse", outcome=Outcome.FAILED, counterexample=found)


def test_the_rubric_says_who_sees_a_hidden_checks_counterexample(rubric: Rubric) -> None:
    assert _judged(rubric, "never")[0].counterexample is None
    shown = _judged(rubric, "after_due_date")[0].counterexample
    assert shown is not None and shown.shown == "after_due_date"
    assert _judged(rubric, "always")[0].counterexample.shown == "always"
    assert rubric.counterexamples == "after_due_date"  # the shipped default


def test_a_counterexample_is_rendered_and_survives_storage(rubric: Rubric) -> None:
    check = _visible(rubric)
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
    assert test["visibility"] == "visible" and "Smallest failing program:\nx = Value(3.0)\na = x * x" in test["output"]
    assert "x.grad: expected 7, observed 1 [MISMATCH]" in test["output"]
    (pl_test,) = to_prairielearn(again)["tests"]  # type: ignore[index]
    assert "Smallest failing program (2 operations):\nx = Value(3.0)\na = x * x" in pl_test["output"]
    assert "x.grad" in pl_test["output"].split("L.backward()")[1]  # the wrong quantity, expected and observed
    # A hidden check's survives storage too, as it was withheld.
    (hidden,) = _judged(rubric, "after_due_date")
    stored = result_from_json(result_to_json(make_submission([hidden], {"reuse": "Reuse"})))
    assert stored.checks[0].counterexample == hidden.counterexample and hidden.counterexample.withheld


# --- a hidden probe is shrunk after hidden inputs entered the sandbox (security finding B) ----------


def _hidden_input(rubric: Rubric) -> float:
    """One of the hidden probe's own random inputs: what a relay through shared counters carries."""
    plan = build_plan(rubric, seed=rubric.seed, visible_only=False)
    assert plan.probe("random_dags").hidden
    return float(next(iter(plan.probe("random_dags").programs[0]["leaves"].values())))


def _every_report(result: SubmissionResult) -> dict[str, str]:
    return {
        "feedback.html": render_feedback_html(result),
        "feedback.md": render_markdown(result),
        "terminal": render_summary(result, color=False),
        "results.json": json.dumps(to_gradescope(result)),
        "prairielearn.json": json.dumps(to_prairielearn(result)),
    }


def test_verified_withholding_keeps_the_program_and_the_right_answers_only(rubric: Rubric) -> None:
    check = rubric.check("reuse.random_dags")
    tolerance = rubric.tolerances[check.tolerance]
    lost = {**_right(), "x.grad": 0.321667, "y.grad": 0.654321}  # two quantities wrong
    found = verified(_record(lost), check, tolerance, class_name="Value", planned=PLANNED, withhold=True)
    assert found is not None and found.withheld and found.figure is None
    assert found.program.splitlines() == ["x = Value(3.0)", "a = x * x", "L = a + x", "L.backward()"]
    assert all(row.observed == "" for row in found.comparisons)
    assert [(row.quantity, row.expected) for row in found.wrong] == [("x.grad", "7")]  # one quantity named
    assert {row.quantity for row in found.comparisons} >= {"x.grad", "L.grad"}  # every right answer
    assert found.without_engine_numbers() == found


@pytest.mark.parametrize("policy", ["after_due_date", "always"])
def test_a_hidden_checks_counterexample_shows_no_number_the_engine_returned(rubric: Rubric, policy: str) -> None:
    # The engine read a hidden input from a counter an earlier hidden run moved, and returned it
    # as x.grad on the shrunk program: whoever sees the counterexample (staff, the service's
    # student after release, the CLI's files) sees the program and the right answers, not it.
    secret = _hidden_input(rubric)
    (check,) = _judged(rubric, policy, x_grad=secret)
    found = check.counterexample
    assert found is not None and found.withheld and found.figure is None and found.shown == policy
    assert [(row.quantity, row.expected, row.observed) for row in found.wrong] == [("x.grad", "7", "")]
    result = result_from_json(result_to_json(make_submission([check], {"reuse": "Reuse"})))
    views = {**_every_report(result), **{f"cli {k}": v for k, v in _every_report(student_files(result)).items()}}
    for name, text in views.items():
        assert fmt(secret) not in text and repr(secret) not in text and f"{abs(secret):.6f}" not in text, name
    for name, text in _every_report(result).items():
        plain = text.replace("\\", "")  # Markdown escapes "x.grad" as "x\\.grad"
        assert "a = x * x" in plain and "x.grad" in plain, name  # the program and what is wrong stay
    html = views["feedback.html"]
    assert "The right answers on this program" in html and "<figure" not in html and "Observed" not in html
    assert "Right answer" in views["feedback.md"] and "your engine gets it wrong" in views["terminal"]


def test_a_stored_hidden_counterexample_with_the_engines_numbers_is_shown_without_them(rubric: Rubric) -> None:
    # A result stored before hidden counterexamples were withheld (or a judge bug): the writers
    # withhold the engine's numbers of a hidden check themselves.
    (check,) = _judged(rubric, "always")
    old = replace(
        check.counterexample,
        comparisons=(Comparison("x.grad", "7", "0.321667", False), Comparison("L.grad", "1", "0.654321", True)),
        withheld=False,
        figure=_visible(rubric).counterexample.figure,
    )
    result = make_submission([replace(check, counterexample=old)], {"reuse": "Reuse"})
    for name, text in _every_report(result).items():
        assert "0.321667" not in text and "0.654321" not in text and "a = x * x" in text, name
    assert "<figure" not in _every_report(result)["feedback.html"]


def test_the_clis_files_show_a_hidden_counterexample_only_when_the_rubric_says_always(
    rubric: Rubric, tmp_path: Path
) -> None:
    secret = _hidden_input(rubric)
    files = ("feedback.html", "feedback.md", "results.json", "prairielearn.json")
    for policy in ("after_due_date", "always"):
        (check,) = _judged(rubric, policy, x_grad=secret)
        result = make_submission([check, _visible(rubric)], {"reuse": "Reuse"}, student=policy)
        _write_student(tmp_path, result)
        for name in files:
            text = (tmp_path / "students" / policy / name).read_text(encoding="utf-8")
            assert fmt(secret) not in text, (policy, name)
            # The visible check's program is always there; the hidden one's only under "always".
            assert "L = a + x" in text, (policy, name)
            withheld = ("The right answers on this program", "gets it wrong", "Right answer")
            assert any(words in text for words in withheld) is (policy == "always"), (policy, name)
    # Gradescope holds a hidden test's output back: "always" puts it in the output students see.
    data = json.loads((tmp_path / "students" / "always" / "results.json").read_text(encoding="utf-8"))
    assert "Smallest failing program of a hidden check:\nx = Value(3.0)" in data["output"]
    assert "x.grad: expected 7; your engine gets it wrong" in data["output"]
    data = json.loads((tmp_path / "students" / "after_due_date" / "results.json").read_text(encoding="utf-8"))
    assert "hidden check" not in data["output"]


def test_the_same_program_found_by_two_checks_is_shown_once(rubric: Rubric) -> None:
    first = _visible(rubric)
    second = replace(first, check_id="reuse.random_dags_again", title="Another check")
    html = render_feedback_html(make_submission([first, second], {"reuse": "Reuse"}))
    assert html.count('class="counterexample"') == 1 and "the same as" in html
    tests = to_prairielearn(make_submission([first, second], {"reuse": "Reuse"}))["tests"]  # type: ignore[index]
    assert "a = x * x" in tests[0]["output"] and "a = x * x" not in tests[1]["output"]
    assert f"the same as for {first.title}" in tests[1]["output"]
    markdown = render_markdown(make_submission([first, second], {"reuse": "Reuse"}))
    assert markdown.count("a = x * x") == 1 and "the same as for" in markdown
