"""Graph figures: the graph a check built, as the student's engine holds it, beside the truth.

Built on the host from one program's observations (data, grad, and where recorded _prev, _op
and backward()'s order) and the expected ones. A wrong gradient is explained through the
node's paths when it can be: each edge should bring ``consumer.grad * local derivative``, so
an observed gradient equal to a sub-sum of those shares says which paths were lost (the
``=`` instead of ``+=`` bug) and one with a share counted twice says which path ran twice.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

from sandbox.harness.probes.programs import SYMBOLS

from ..program import Program, formula, operand_text
from ..results import FigureEdge, FigureNode, GraphFigure
from ..rubric import Tolerance
from .records import Observations, Observed
from .wording import show

OP_SYNONYMS = {
    "+": {"+", "add", "plus"},
    "*": {"*", "mul", "times", "x", "×"},
    "relu": {"relu"},
    "tanh": {"tanh"},
    "exp": {"exp"},
    "log": {"log", "ln"},
}
MAX_PATHS = 6  # 3**6 multiplicity patterns at most: cheap, and real nodes have few consumers
_SHARE_MATCH = 1e-6  # relative agreement of an observed gradient with a sum of shares


def op_matches(want: Observed | None, got: Observed | None) -> bool:
    """An engine's _op label names the expected operation (common spellings accepted)."""
    if not isinstance(got, str):
        return False
    synonyms = OP_SYNONYMS.get(str(want), {str(want)})
    return got.strip().lower() in synonyms or (want == "" and got.strip() == "")


def local_derivative(op: str, args: list[Any], slot: int, data: Mapping[str, float], out: float) -> float:
    """d(out)/d(args[slot]) at the expected values."""
    x = [data[a] if isinstance(a, str) else float(a) for a in args]
    if op == "add":
        return 1.0
    if op == "sub":
        return 1.0 if slot == 0 else -1.0
    if op == "mul":
        return x[1 - slot]
    if op == "div":
        return 1.0 / x[1] if slot == 0 else -x[0] / x[1] ** 2
    if op == "pow":
        return float(x[1] * x[0] ** (x[1] - 1))
    if op == "neg":
        return -1.0
    if op == "tanh":
        return 1.0 - out * out
    if op == "relu":
        return 1.0 if x[0] > 0 else 0.0
    if op == "exp":
        return out
    if op == "log":
        return 1.0 / x[0]
    raise ValueError(op)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 + _SHARE_MATCH * max(abs(a), abs(b))


def _floats(obs: Observations, suffix: str) -> dict[str, float]:
    return {k[: -len(suffix)]: v for k, v in obs.items() if k.endswith(suffix) and isinstance(v, float)}


class _Builder:
    def __init__(self, program: Program, observed: Observations, expected: Observations, tolerance: Tolerance):
        self.program = program
        self.observed = observed
        self.expected = expected
        self.tolerance = tolerance
        self.steps = [s for s in program["steps"] if s[1] != "backward"]
        self.names = list(program["leaves"]) + [s[0] for s in self.steps]
        roots = [s[2] for s in program["steps"] if s[1] == "backward"]
        self.root = str(roots[0]) if roots else self.names[-1]
        schedule = observed.get("schedule")
        self.order = [str(n) for n in schedule] if isinstance(schedule, tuple) else []
        self.data = _floats(expected, ".data")
        self.grads = _floats(expected, ".grad")

    def ok(self, key: str) -> bool | None:
        want = self.expected.get(key)
        if not isinstance(want, float):
            return None
        got = self.observed.get(key)
        if got is None:
            return None
        return isinstance(got, float) and math.isfinite(got) and self.tolerance.accepts(got, want)

    def edges(self) -> list[FigureEdge]:
        out = []
        for target, op, *args in self.steps:
            if op == "sgd":
                continue  # an SGD step makes a fresh leaf: no gradient flows back through it
            for slot, arg in enumerate(args):
                if isinstance(arg, str):
                    out.append(FigureEdge(arg, target, slot, self._share_text(target, op, args, slot), "ok"))
        return out

    def share(self, target: str, op: str, args: list[Any], slot: int) -> float | None:
        if target not in self.grads or target not in self.data:
            return None
        try:
            return self.grads[target] * local_derivative(op, args, slot, self.data, self.data[target])
        except (KeyError, ZeroDivisionError, OverflowError, ValueError):
            return None

    def _share_text(self, target: str, op: str, args: list[Any], slot: int) -> str:
        value = self.share(target, op, args, slot)
        return "" if value is None else show(value)

    def explain(self, name: str) -> tuple[str, dict[tuple[str, int], str]]:
        """Why name.grad is wrong, through its paths; and the state of each path edge."""
        got = self.observed.get(f"{name}.grad")
        want = self.grads.get(name)
        if not isinstance(got, float) or want is None:
            return "", {}
        if name == self.root:
            return f"backward() must seed {name}.grad = 1.0 before anything else runs; it holds {show(got)}.", {}
        paths = [
            (t, op, args, slot)
            for t, op, *args in self.steps
            if op != "sgd"
            for slot, a in enumerate(args)
            if a == name
        ]
        if not paths or len(paths) > MAX_PATHS:
            return "", {}
        if any(self.ok(f"{t}.grad") is False for t, *_ in paths):
            return "", {}  # a consumer's gradient is already wrong: the fault is further up
        shares = [self.share(t, op, args, slot) for t, op, args, slot in paths]
        if any(s is None for s in shares):
            return "", {}
        values = [float(s) for s in shares if s is not None]
        patterns = sorted(
            itertools.product((0, 1, 2), repeat=len(values)), key=lambda p: (sum(m != 1 for m in p), p.count(2))
        )
        for pattern in patterns:
            if all(m == 1 for m in pattern):
                continue
            if _close(sum(m * v for m, v in zip(pattern, values, strict=True)), got):
                return self._words(name, got, paths, values, pattern)
        return "", {}

    def _words(
        self,
        name: str,
        got: float,
        paths: list[tuple[str, str, list[Any], int]],
        values: list[float],
        pattern: tuple[int, ...],
    ) -> tuple[str, dict[tuple[str, int], str]]:
        states = {
            (t, slot): ("ok", "lost", "twice")[[1, 0, 2].index(m)]
            for (t, _, _, slot), m in zip(paths, pattern, strict=True)
        }
        pairs = list(zip(paths, values, pattern, strict=True))
        lost = [(t, v) for (t, *_), v, m in pairs if m == 0]
        twice = [(t, v) for (t, *_), v, m in pairs if m == 2]
        arrived = [(t, v) for (t, *_), v, m in pairs if m == 1]
        if len(values) == 1:
            words = f"{name}.grad is {show(got)}; its one path, from {paths[0][0]}, brings {show(values[0])}."
        else:
            listed = " + ".join(show(v) for v in values)
            words = f"{name}.grad is {show(got)}; its {len(values)} paths bring {listed} = {show(sum(values))}."
        if lost:
            shown = ", ".join(f"{show(v)} from {t}" for t, v in lost)
            words += f" Lost: {shown}"
            words += f" (only {', '.join(f'{show(v)} from {t}' for t, v in arrived)} arrived)." if arrived else "."
            words += " " + self._cause(sorted({t for t, _ in lost}), overwritten=bool(arrived))
        if twice:
            words += f" Counted twice: {', '.join(f'{show(v)} from {t}' for t, v in twice)}"
            words += " (a _backward ran more than once: is there a visited set in the topological sort?)."
        return words, states

    def _cause(self, consumers: list[str], *, overwritten: bool) -> str:
        """Why paths were lost: backward()'s order when it was recorded and shows it, else the candidates."""
        early = [t for t in consumers if self._ran_early(t)]
        if early:
            return f"{', '.join(early)} ran its _backward before its own gradient was complete (backward order)."
        if self.order and overwritten:
            return (
                "Each _backward ran in a valid order, so a later path overwrote an earlier one: `=` where `+=` belongs."
            )
        if overwritten:
            return "Either a later path overwrote it (`=` where `+=` belongs) or a _backward ran too early."
        return "Nothing arrived: a _backward ran before its own gradient was set, or never updated this node."

    def _ran_early(self, name: str) -> bool:
        """name's _backward ran before that of a node built from it (so before its gradient was final)."""
        if name not in self.order:
            return False
        first = self.order.index(name)
        users = [t for t, op, *args in self.steps if op != "sgd" and name in args]
        return any(u in self.order and self.order.index(u) > first for u in users)

    def node(self, name: str, op: str, args: list[Any], visits: tuple[int, ...], lost: str) -> FigureNode:
        observed_op = self.observed.get(f"{name}.op")
        want_op = self.expected.get(f"{name}.op")
        recorded = isinstance(observed_op, str) or f"{name}.op" in self.observed
        return FigureNode(
            name=name,
            op=SYMBOLS.get(op, op),
            formula=formula(op, [operand_text(a) for a in args]) if op else "",
            observed_op=show(observed_op) if recorded else "",
            op_ok=op_matches(want_op, observed_op) if recorded and want_op is not None else None,
            data=show(self.observed.get(f"{name}.data")),
            data_expected=show(self.expected.get(f"{name}.data")),
            data_ok=self.ok(f"{name}.data"),
            grad=show(self.observed.get(f"{name}.grad")),
            grad_expected=show(self.expected.get(f"{name}.grad")),
            grad_ok=self.ok(f"{name}.grad"),
            visits=visits,
            parents_note=self.parents_note(name, args),
            lost=lost,
        )

    def parents_note(self, name: str, args: list[Any]) -> str:
        got = self.observed.get(f"{name}.prev")
        if not isinstance(got, tuple):
            return ""
        want = sorted({a for a in args if isinstance(a, str)})
        # Either the inputs themselves or what the reference holds (a - b built as a + (-b)) is right.
        if sorted(got) == want or got == self.expected.get(f"{name}.prev"):
            return ""
        shown = ", ".join(got) if got else "nothing"
        return f"_prev holds {{{shown}}}; the inputs are {{{', '.join(want) or 'none: a leaf'}}}"


def build_figure(
    figure_id: str,
    title: str,
    program: Program,
    observed: Observations,
    expected: Observations,
    tolerance: Tolerance,
    problem: str = "",
) -> GraphFigure:
    """The figure of one program instance; `problem` says why observations are missing, if any."""
    build = _Builder(program, observed, expected, tolerance)
    schedule = observed.get("schedule")
    order = tuple(str(n) for n in schedule) if isinstance(schedule, tuple) else ()
    visits = {name: tuple(i + 1 for i, n in enumerate(order) if n == name) for name in build.names}
    made = {s[0]: (s[1], s[2:]) for s in build.steps}
    edges = build.edges()
    nodes = []
    for name in build.names:
        op, args = made.get(name, ("", []))
        lost, states = ("", {}) if build.ok(f"{name}.grad") is not False else build.explain(name)
        if states:
            edges = [
                FigureEdge(e.source, e.target, e.slot, e.contribution, states.get((e.target, e.slot), e.state))
                if e.source == name
                else e
                for e in edges
            ]
        nodes.append(build.node(name, op, list(args), visits[name], lost))
    edges = _structure_edges(edges, observed, [n.name for n in nodes if n.parents_note], build.names)
    summary = _summary(nodes, order, problem)
    return GraphFigure(figure_id, title, build.root, tuple(nodes), tuple(edges), order, summary)


def _structure_edges(
    edges: list[FigureEdge], observed: Observations, wrong: list[str], names: list[str]
) -> list[FigureEdge]:
    """On nodes whose _prev is wrong: mark inputs missing from it, and add entries that are not inputs."""
    out = []
    for edge in edges:
        prev = observed.get(f"{edge.target}.prev")
        if edge.target in wrong and isinstance(prev, tuple) and edge.source not in prev and edge.state == "ok":
            edge = FigureEdge(edge.source, edge.target, edge.slot, edge.contribution, "missing")
        out.append(edge)
    known = set(names)
    for target in wrong:
        prev = observed.get(f"{target}.prev")
        if not isinstance(prev, tuple):
            continue
        inputs = {e.source for e in edges if e.target == target}
        for source in sorted(set(prev) - inputs):
            if source in known:
                out.append(FigureEdge(source, target, -1, "", "extra"))
    return out


def _summary(nodes: list[FigureNode], order: tuple[str, ...], problem: str) -> str:
    wrong = [n for n in nodes if n.data_ok is False or n.grad_ok is False]
    lost = [n for n in nodes if n.lost]
    parts: list[str] = []
    if problem:
        parts.append(problem)
    if lost:
        # The node nearest the root is where the gradient first went wrong.
        first = min(lost, key=lambda n: order.index(n.name) if n.name in order else len(order))
        parts.append(first.lost)
    wrong = [n for n in wrong if not n.lost]  # already explained above
    if wrong:
        shown = []
        for n in wrong[:4]:
            if n.data_ok is False:
                shown.append(f"{n.name}.data {n.data} (expected {n.data_expected})")
            if n.grad_ok is False:
                shown.append(f"{n.name}.grad {n.grad} (expected {n.grad_expected})")
        more = f" and {len(wrong) - 4} more node(s)" if len(wrong) > 4 else ""
        parts.append("Wrong: " + "; ".join(shown) + more + ".")
    structure = [f"{n.name}: {n.parents_note}" for n in nodes if n.parents_note]
    structure += [f"{n.name}._op is {n.observed_op}" for n in nodes if n.op_ok is False]
    if structure:
        parts.append("Graph structure: " + "; ".join(structure[:4]) + ".")
    repeated = [n.name for n in nodes if len(n.visits) > 1]
    if repeated:
        parts.append(f"backward() ran the _backward of {', '.join(repeated)} more than once.")
    if not parts:
        return "Every forward value and gradient in this graph matches."
    return " ".join(parts)
