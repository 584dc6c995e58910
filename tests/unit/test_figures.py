"""Graph figures: which node is marked wrong, which paths were lost or counted twice, the layout,
and the SVG in the HTML feedback (escaped, gated by visibility, kept through the store)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from test_report import check, submission

from grader.judge import figures
from grader.judge.figures import local_derivative, op_matches
from grader.judge.parse import observations
from grader.pipeline import grade_submission
from grader.program import central_differences, compile_steps, evaluate, expression
from grader.report.graph_svg import NODE_W, layout
from grader.report.html import render_feedback_html
from grader.report.markdown import render_markdown
from grader.report.terminal import render_summary
from grader.results import GraphFigure, Outcome, Visibility
from grader.results_io import result_from_json, result_to_json
from grader.rubric import DEFAULT_RUBRIC, Tolerance, load_rubric
from grader.runners.local import LocalRunner


def build_figure(figure_id: str, title: str, program: Any, observed: Any, expected: Any, tolerance: Any) -> GraphFigure:
    """The figure builder over typed observations, as the sandbox's parser would type these."""
    typed, want = observations(observed), observations(expected)
    assert typed is not None and want is not None
    return figures.build_figure(figure_id, title, program, typed, want, tolerance)


ROOT = Path(__file__).resolve().parents[2]
TIGHT = Tolerance(abs=1e-9, rel=0.0)


def program(leaves: dict[str, float], steps: list[str]) -> dict[str, Any]:
    return {"leaves": leaves, "steps": compile_steps(list(leaves), steps), "record": []}


SQUARE = program({"x": 3.0}, ["m = x * x", "y = m + x", "backward(y)"])
SQUARE_EXPECTED = {"x.data": 3.0, "m.data": 9.0, "y.data": 12.0, "x.grad": 7.0, "m.grad": 1.0, "y.grad": 1.0}
PART1 = program(
    {"a": 2.0, "b": 3.0, "c": 1.0, "d": 1.5},
    ["n1 = a * b", "n2 = n1 + c", "n3 = relu(d)", "L = n2 * n3", "backward(L)"],
)
PART1_EXPECTED = {
    "a.data": 2.0, "b.data": 3.0, "c.data": 1.0, "d.data": 1.5, "n1.data": 6.0, "n2.data": 7.0, "n3.data": 1.5,
    "L.data": 10.5, "a.grad": 4.5, "b.grad": 3.0, "c.grad": 1.5, "d.grad": 7.0, "n1.grad": 1.5, "n2.grad": 1.5,
    "n3.grad": 7.0, "L.grad": 1.0,
    "a.prev": [], "b.prev": [], "c.prev": [], "d.prev": [], "n1.prev": ["a", "b"], "n2.prev": ["c", "n1"],
    "n3.prev": ["d"], "L.prev": ["n2", "n3"], "a.op": "", "n1.op": "*", "n2.op": "+", "n3.op": "relu", "L.op": "*",
}  # fmt: skip


def square(observed_grad: float, **extra: Any) -> GraphFigure:
    observed = {**SQUARE_EXPECTED, "x.grad": observed_grad, **extra}
    return build_figure("reuse#0", "y = x*x + x", SQUARE, observed, SQUARE_EXPECTED, TIGHT)


def states(figure: GraphFigure, source: str) -> list[str]:
    return sorted(e.state for e in figure.edges if e.source == source)


def test_overwritten_gradient_marks_the_node_and_its_lost_paths() -> None:
    figure = square(3.0)  # `=` in __mul__'s backward: only one path of three survives
    x = figure.node("x")
    assert x.grad_ok is False and x.grad == "3" and x.grad_expected == "7"
    assert states(figure, "x") == ["lost", "lost", "ok"]
    assert "Lost:" in x.lost and "3 + 3 + 1 = 7" in x.lost
    assert figure.summary.startswith("x.grad is 3")
    assert all(figure.node(n).grad_ok for n in ("m", "y"))  # the consumers are right: the fault is at x


def test_path_counted_twice_is_named() -> None:
    figure = square(8.0)  # 3 + 3 + 1 + 1: y's _backward ran twice
    assert states(figure, "x") == ["ok", "ok", "twice"]
    assert "Counted twice: 1 from y" in figure.node("x").lost


def test_no_story_when_no_combination_of_paths_explains_the_value() -> None:
    figure = square(5.5)
    assert figure.node("x").grad_ok is False and figure.node("x").lost == ""
    assert states(figure, "x") == ["ok", "ok", "ok"]
    assert "Wrong: x.grad 5.5 (expected 7)" in figure.summary


def test_fault_further_up_is_not_blamed_on_the_inputs() -> None:
    observed = {**SQUARE_EXPECTED, "m.grad": 2.0, "x.grad": 13.0}
    figure = build_figure("f", "t", SQUARE, observed, SQUARE_EXPECTED, TIGHT)
    assert figure.node("x").lost == ""  # m is already wrong; x's paths cannot be judged
    assert figure.node("m").grad_ok is False


def test_wrong_seed_is_named_on_the_root() -> None:
    observed = {**SQUARE_EXPECTED, "y.grad": 0.0, "m.grad": 0.0, "x.grad": 0.0}
    figure = build_figure("f", "t", SQUARE, observed, SQUARE_EXPECTED, TIGHT)
    assert "seed y.grad = 1.0" in figure.summary


def test_correct_graph_says_so_and_records_backward_order() -> None:
    order = ["L", "n3", "n2", "c", "n1", "b", "a", "d"]
    figure = build_figure("p#0", "Part 1", PART1, {**PART1_EXPECTED, "schedule": order}, PART1_EXPECTED, TIGHT)
    assert figure.summary == "Every forward value and gradient in this graph matches."
    assert figure.order == tuple(order)
    assert figure.node("L").visits == (1,) and figure.node("a").visits == (7,)
    assert figure.root == "L"


def test_backward_order_decides_why_a_path_was_lost() -> None:
    # n2's _backward ran before L's: n2.grad was still 0, so nothing reached n1 (then a, b).
    order = ["n2", "L", "n3", "n1", "c", "b", "a", "d"]
    observed = {**PART1_EXPECTED, "schedule": order, "n1.grad": 0.0, "c.grad": 0.0, "a.grad": 0.0, "b.grad": 0.0}
    figure = build_figure("p#0", "Part 1", PART1, observed, PART1_EXPECTED, TIGHT)
    assert "n2 ran its _backward before its own gradient was complete" in figure.node("n1").lost


def test_wrong_prev_and_op_are_drawn_as_structure_errors() -> None:
    observed = {**PART1_EXPECTED, "n2.prev": ["n1"], "L.op": "<b>mul</b>"}
    figure = build_figure("p#0", "Part 1", PART1, observed, PART1_EXPECTED, TIGHT)
    assert "_prev holds {n1}" in figure.node("n2").parents_note
    assert [e.state for e in figure.edges if e.target == "n2" and e.source == "c"] == ["missing"]
    assert figure.node("L").op_ok is False and figure.node("L").observed_op == "<b>mul</b>"
    assert "Graph structure:" in figure.summary


def test_extra_prev_entry_becomes_an_edge() -> None:
    observed = {**PART1_EXPECTED, "n3.prev": ["a", "d"]}
    figure = build_figure("p#0", "Part 1", PART1, observed, PART1_EXPECTED, TIGHT)
    assert [(e.source, e.state) for e in figure.edges if e.target == "n3"] == [("d", "ok"), ("a", "extra")]


def test_reference_prev_is_accepted_when_it_differs_from_the_inputs() -> None:
    # a - b built as a + (-b): the reference's _prev names an unnamed node; so may the student's.
    prog = program({"a": 1.0, "b": 2.0}, ["s = a - b", "backward(s)"])
    want = {"a.data": 1.0, "b.data": 2.0, "s.data": -1.0, "a.grad": 1.0, "b.grad": -1.0, "s.grad": 1.0,
            "s.prev": ["?", "a"]}  # fmt: skip
    figure = build_figure("f", "t", prog, dict(want), want, TIGHT)
    assert figure.node("s").parents_note == ""


def test_local_derivatives_match_centered_differences() -> None:
    data = {"x": 0.7, "y": 1.9}
    for op, args in [("mul", ["x", "y"]), ("div", ["x", "y"]), ("pow", ["x", 3.0]), ("tanh", ["x"]),
                     ("exp", ["x"]), ("log", ["x"]), ("sub", ["x", "y"])]:  # fmt: skip
        prog = program({"x": 0.7, "y": 1.9}, [expression_of(op, args)])
        out = evaluate(prog)["o"]
        numeric = central_differences({**prog, "steps": prog["steps"] + [["", "backward", "o"]]})
        assert local_derivative(op, args, 0, data, out) == pytest.approx(numeric["x"], rel=1e-6)


def expression_of(op: str, args: list[Any]) -> str:
    names = [a if isinstance(a, str) else repr(a) for a in args]
    symbol = {"mul": "*", "div": "/", "pow": "**", "sub": "-"}.get(op)
    return f"o = {names[0]} {symbol} {names[1]}" if symbol else f"o = {op}({names[0]})"


def test_op_labels_accept_common_spellings_only() -> None:
    assert op_matches("*", "mul") and op_matches("+", " ADD ") and op_matches("", "")
    assert not op_matches("*", "+") and not op_matches("relu", None)


def test_expression_inlines_the_program() -> None:
    assert expression(program({"x": 1.5}, ["e = exp(x)", "f = log(e)", "backward(f)"])) == "log(exp(x))"
    assert expression(program({"x": 1.0, "y": 2.0}, ["o = x * y", "L = o * 2.5", "backward(L)"])) == "(x * y) * 2.5"


# --- layout ------------------------------------------------------------------------------------


def boxes_overlap(a: Any, b: Any) -> bool:
    return a.x < b.x + NODE_W and b.x < a.x + NODE_W and a.y < b.y + b.height and b.y < a.y + a.height


def test_layout_places_every_node_without_overlap_inside_the_canvas() -> None:
    figure = build_figure("p#0", "Part 1", PART1, PART1_EXPECTED, PART1_EXPECTED, TIGHT)
    placed = layout(figure)
    assert len(placed.nodes) == 8 and len(placed.edges) == 7
    for i, a in enumerate(placed.nodes):
        assert 0 <= a.x and a.x + NODE_W <= placed.width and 0 <= a.y and a.y + a.height <= placed.height
        assert not any(boxes_overlap(a, b) for b in placed.nodes[i + 1 :])
    column = {n.node.name: n.x for n in placed.nodes}
    # Inputs to the left of what is built from them; the root last.
    assert column["a"] < column["n1"] < column["n2"] < column["L"] and column["L"] == max(column.values())


def test_layout_draws_both_edges_of_x_times_x_and_labels_lost_ones() -> None:
    placed = layout(square(3.0))
    into_m = [e for e in placed.edges if e.edge.source == "x" and e.edge.target == "m"]
    assert len(into_m) == 2 and into_m[0].path != into_m[1].path
    assert sorted(e.label for e in placed.edges if e.label) == ["lost 1", "lost 3"]
    x = next(n for n in placed.nodes if n.node.name == "x")
    assert x.bad and any(line.text == "\u2717 grad 3" for line in x.lines)


# --- HTML, Markdown, terminal, store -------------------------------------------------------------


def with_figure(visibility: Visibility = Visibility.VISIBLE, **figure_fields: Any) -> Any:
    figure = dataclasses.replace(square(3.0), **figure_fields)
    failing = check(
        "reuse.square_plus", "reuse", points=0.0, max_points=4.0, outcome=Outcome.FAILED, visibility=visibility,
        message="x.grad: expected 7, observed 3.", figure=figure.figure_id,
    )  # fmt: skip
    return submission((failing,), figures=(figure,))


def test_html_draws_the_figure_in_the_failing_card() -> None:
    html = render_feedback_html(with_figure())
    card = html[html.index("<article") :]
    svg = card[card.index("<svg") : card.index("</svg>")]
    assert 'role="img"' in svg and "aria-labelledby=" in svg
    assert re.search(r'<g class="node bad"[^>]*>\s*<title>x: a leaf', svg)
    assert svg.count('class="edge edge-lost"') == 2
    assert "This graph as a table" in card


def test_html_escapes_student_text_inside_the_svg() -> None:
    figure = square(3.0)
    nodes = tuple(
        dataclasses.replace(n, observed_op="<script>alert(1)</script>", op_ok=False) if n.name == "m" else n
        for n in figure.nodes
    )
    html = render_feedback_html(with_figure(nodes=nodes, summary='<img src=x onerror="alert(2)">'))
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)" in html and "&lt;img src=x onerror=" in html


def test_hidden_check_never_draws_its_figure() -> None:
    html = render_feedback_html(with_figure(visibility=Visibility.HIDDEN))
    assert "<svg" not in html and "x.grad is 3" not in html


def test_markdown_and_terminal_tell_the_figure_story() -> None:
    result = with_figure()
    assert "Lost: 3 from m, 1 from y" in render_summary(result, color=False).replace("\n    ", " ")
    assert "**Your graph:** x\\.grad is 3" in render_markdown(result)


def test_figures_survive_the_store() -> None:
    result = with_figure()
    assert result_from_json(result_to_json(result)) == result


# --- the real pipeline ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["submissions/bob_okafor/autograd_lab.py", "tests/cases/mut_acc_mul/autograd_lab.py"])
def test_student_with_the_assign_bug_sees_the_node_that_lost_a_path(path: str) -> None:
    result = grade_submission(
        ROOT / path, student="s", rubric=load_rubric(DEFAULT_RUBRIC), runner=LocalRunner(), seed=20261130
    )
    card = next(c for c in result.checks if c.check_id == "reuse.square_plus")
    figure = result.figure(card.figure)
    assert card.outcome is Outcome.FAILED and figure is not None
    assert figure.node("x").grad_ok is False and "Lost:" in figure.node("x").lost
    assert states(figure, "x").count("lost") == 2
    part1 = result.figure("part1#0")
    assert part1 is not None and len(part1.order) == 8  # the Part 1 graph, with backward()'s order
    fd = next(c for c in result.checks if c.check_id == "fd.log_exp")
    assert [(r.operation, r.point, r.quantity, r.ok) for r in fd.fd_rows] == [
        ("log(exp(x))", "x = 1.5", "x.grad", True)
    ]
    assert float(fd.fd_rows[0].rel_error) < 1e-5
    html = render_feedback_html(result)
    # Two graphs of the checks, and one per distinct smallest failing program (the bug shrunk) of
    # a visible check; a hidden check's (shrunk after hidden inputs entered the sandbox) has the
    # program and the right answers, never a graph of what the engine did.
    found = [c.counterexample for c in result.checks if c.counterexample]
    hidden = [c.counterexample for c in result.checks if c.counterexample and c.visibility is not Visibility.VISIBLE]
    assert hidden and all(f.withheld and f.figure is None for f in hidden)
    programs = {f.program for f in found if f.figure}
    assert html.count("<svg") == 2 + len(programs) and "edge-lost" in html
    assert "The right answers on this program" in html
