"""A shrunk counterexample, believed only once the host has checked it.

The sandbox reports a small program and what the student's engine did on it. Nothing of that
is trusted: the program's shape was checked by the parser; here the reference engine runs it
in-process (the same executors, as for every expected value) and the check's own tolerance
compares. A program on which the reported observations agree with the reference (a sandbox
that lies, or a difference in a quantity the check does not compare) is dropped, as is one
the reference cannot run. Nothing here changes a verdict or a score.

A hidden probe is shrunk after every hidden probe has run: what the engine returned on the
shrunk program may carry a hidden input (a counter every run shares, moved by an earlier hidden
run, read back and returned as a gradient). Its counterexample keeps the program and the
reference's answers, and names the quantity the engine gets wrong, never the engine's numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sandbox.harness.probes import programs as executors
from sandbox.harness.shrinking.shrink import SIMPLE

from ..plan import Plan
from ..program import Program, describe
from ..results import CheckResult, Comparison, Counterexample, Outcome, Visibility
from ..rubric import Check, Rubric, Tolerance
from .comparers import number_ok, selected
from .expected import load_reference
from .figures import build_figure
from .parse import observations
from .records import SandboxReport, ShrunkRecord
from .verdicts import probe_for
from .wording import fmt

MAX_ROWS = 24


LEAF_NAMES = ("x", "y", "z", "w", "p", "q", "r", "s")


def _node_name(index: int, last: bool) -> str:
    return "L" if last else (chr(ord("a") + index) if index < 11 else f"n{index + 1}")  # a..k: never a leaf's


def canonical(record: ShrunkRecord) -> ShrunkRecord:
    """The same program under plain names (leaves x, y, z...; nodes a, b, c...; the root L),
    observations renamed with it: one bug found by several checks reads as one program."""
    names = {old: LEAF_NAMES[i] for i, old in enumerate(record.leaves)}
    built = [s for s in record.steps if s[1] != "backward"]
    for i, step in enumerate(built):
        names[str(step[0])] = _node_name(i, i == len(built) - 1)
    steps = tuple(
        (names.get(s[0], s[0]) if s[0] else "", s[1], *(names.get(a, a) if isinstance(a, str) else a for a in s[2:]))
        for s in record.steps
    )
    obs = {}
    for key, value in record.observations.items():
        node, _, field = key.rpartition(".")
        if node in names:
            obs[f"{names[node]}.{field}"] = value
    leaves = {names[k]: v for k, v in record.leaves.items()}
    return ShrunkRecord(record.program, leaves, steps, obs)


def _program(record: ShrunkRecord) -> dict[str, Any]:
    return {"leaves": dict(record.leaves), "steps": [list(s) for s in record.steps], "record": []}


def _numbers(steps: Any) -> set[float]:
    return {float(a) for step in steps for a in step[2:] if isinstance(a, (int, float)) and not isinstance(a, bool)}


def discloses_nothing(record: ShrunkRecord, planned: Program) -> bool:
    """Every input is one of shrink.SIMPLE and every constant one the planned program has (the
    grader's own, public) or a simple one: no hidden input ever reaches a page, whatever the
    sandbox reports (student code saw the inputs and may try to write them out this way).
    The observed values are the engine's to choose: a hidden probe's are never shown (``verified``'s
    ``withhold``); a visible probe's were observed before any hidden input entered the sandbox."""
    allowed = _numbers(planned["steps"]) | set(SIMPLE)
    return all(v in SIMPLE for v in record.leaves.values()) and _numbers(record.steps) <= allowed


def verified(
    record: ShrunkRecord,
    check: Check,
    tolerance: Tolerance,
    *,
    class_name: str,
    planned: Program,
    figure_id: str = "shrunk",
    withhold: bool = False,
) -> Counterexample | None:
    """The counterexample as the feedback shows it, or None when it would show a hidden input
    or the reference does not confirm it. ``withhold``: observed after a hidden input entered the
    sandbox, so only the program, the right answers and the wrong quantity's name are kept."""
    if not discloses_nothing(record, planned):
        return None
    record = canonical(record)
    program = _program(record)
    engine = getattr(load_reference(), class_name)
    try:
        raw = executors.run_program(engine, program, lambda _phase, _obs: None)
    except executors.ProgramError:
        return None  # outside what the reference computes: not a counterexample anyone can use
    expected: Mapping[str, Any] = observations(raw) or {}
    rows: list[Comparison] = []
    for key, want in expected.items():
        if not selected(key, check.observe) or not isinstance(want, float) or isinstance(want, bool):
            continue
        got = record.observations.get(key)
        rows.append(Comparison(key, fmt(want), fmt(got), number_ok(got, want, tolerance)))
    if all(row.ok for row in rows):
        return None
    kept = rows[:MAX_ROWS]
    if all(row.ok for row in kept):
        kept[-1] = next(row for row in rows if not row.ok)  # a cut table still shows what is wrong
    operations = sum(1 for _, op, *_ in program["steps"] if op != "backward")
    found = Counterexample(describe(program), operations, tuple(kept))
    if withhold:
        return found.without_engine_numbers()  # no figure either: it draws the engine's values and labels
    figure = build_figure(figure_id, "Smallest failing program", program, record.observations, expected, tolerance)
    return replace(found, figure=figure)


def with_counterexamples(
    plan: Plan, rubric: Rubric, report: SandboxReport, checks: list[CheckResult]
) -> list[CheckResult]:
    """Each failing values check whose probe reported a shrunk program the reference confirms
    carries it (which part of the feedback may show it is the renderers' and visibility's call)."""
    planned = {c.id: c for c in plan.checks}
    results = {c.check_id: c for c in checks}
    out = []
    for result in checks:
        check = planned.get(result.check_id)
        found = _found(plan, rubric, report, check, results) if check is not None else None
        out.append(replace(result, counterexample=found) if found else result)
    return out


def _found(
    plan: Plan, rubric: Rubric, report: SandboxReport, check: Check, results: dict[str, CheckResult]
) -> Counterexample | None:
    secret = check.visibility is not Visibility.VISIBLE
    if secret and rubric.counterexamples == "never":
        return None  # a hidden check's inputs are never shown, not even one
    if check.compare != "values" or results[check.id].outcome not in (Outcome.FAILED, Outcome.PARTIAL):
        return None
    probe_id = probe_for(check, results)
    record = report.probe(probe_id).shrunk
    if record is None:
        return None
    probe = plan.probe(probe_id)
    found = verified(
        record,
        check,
        rubric.tolerances[check.tolerance],
        class_name=rubric.class_name,
        planned=probe.programs[record.program],
        figure_id=f"{probe_id}#shrunk",
        # Shrunk after the hidden probes ran: the engine's numbers there could carry a hidden input.
        withhold=secret or probe.hidden,
    )
    return replace(found, shown=rubric.counterexamples) if found and secret else found
