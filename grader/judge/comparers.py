"""The comparers: one small function per ``compare`` kind, each with one signature.

A comparer takes the context of one check and a program index and returns a ``Verdict``
for that instance; turning verdicts into points and words happens in ``verdicts``.
The bug-injection comparers live in ``bug_injection``.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from sandbox.harness import wire

from ..plan import PlannedProbe
from ..program import consumers
from ..results import Comparison
from ..reuse import original_key
from ..rubric import Check, Tolerance
from .expected import Expected, math_expected
from .figures import op_matches
from .records import LoadRecord, Observations, Observed, ProbeRecords, Unreadable
from .wording import NOT_OBSERVED, fmt

# Why an instance did not pass; "failed" is a wrong value, the rest say it never produced one.
VerdictKind = Literal["failed", "error", "timeout", "not_run"]


@dataclass
class Verdict:
    ok: bool
    comparisons: list[Comparison] = field(default_factory=list)
    problem: str = ""  # why it failed, in words, when there is more to say than the numbers
    kind: VerdictKind = "failed"
    note: str = ""  # what a passing verdict says instead of "Passed."


@dataclass(frozen=True)
class Context:
    """One check, its probe as planned, what the probe reported, and what is expected."""

    check: Check
    probe: PlannedProbe
    report: ProbeRecords
    expected: Expected
    tolerance: Tolerance
    load: LoadRecord | None
    class_name: str


Comparer = Callable[[Context, int], Verdict]

_NOT_RUN_REASONS = {
    wire.REASON_DEADLINE: "the grading time budget ran out",
    wire.REASON_REPEATED_TIMEOUTS: f"{wire.STALLED_PROBES} probes in a row hit the time limit, "
    "so the rest were skipped",
    wire.REASON_NO_PROCESS: "your code's processes used up the sandbox's process limit (a fork bomb?)",
    wire.REASON_TOO_DEEP: "the grader could not take your file apart for this check (an expression nested "
    "deeper than it can follow, or too large for its memory); write long sums as loops or sum(...)",
}


def number_ok(observed: Observed | None, expected: float, tolerance: Tolerance) -> bool:
    return (
        isinstance(observed, float)
        and not isinstance(observed, bool)
        and math.isfinite(observed)
        and math.isfinite(expected)
        and tolerance.accepts(observed, expected)
    )


def selected(key: str, patterns: Sequence[str]) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(key, p) for p in patterns)


def observes(ctx: Context, index: int, key: str) -> bool:
    """Does the check compare this quantity? A copy's (grader/reuse.py) counts as its original's:
    the check that compares x.grad compares each copy's share of it."""
    program = ctx.probe.programs[index] if index < len(ctx.probe.programs) else {}
    return selected(original_key(program, key), ctx.check.observe)


def missing_reason(ctx: Context, index: int) -> Verdict:
    """Why a program produced no final observations: an error, a timeout, or nothing at all."""
    error = ctx.report.errors.get(index)
    if error:
        info = error.error
        kind = info.type if info else "An error"
        where = f" (line {info.line})" if info and info.line else ""
        message = info.message if info else ""
        return Verdict(False, problem=f"{kind} while running `{error.stage}`{where}: {message}", kind="error")
    end = ctx.report.end
    status = end.status if end else None
    if status in (wire.TIMEOUT, wire.DEADLINE):
        phase = "backward()" if index in ctx.report.forward else "building the graph"
        return Verdict(False, problem=f"did not finish: stopped after the time limit during {phase}", kind="timeout")
    if status == wire.NOT_RUN:
        reason = _NOT_RUN_REASONS.get(end.reason if end else "", "the file could not be loaded")
        return Verdict(False, problem="not run: " + reason, kind="not_run")
    if end and status in (wire.KILLED, wire.EXITED):
        how = end.signal or f"exit status {end.exit_code}"
        return Verdict(False, problem=f"the process running your code died ({how})", kind="error")
    if status == wire.OUTPUT_LIMIT:
        return Verdict(False, problem="stopped: your code printed far too much output", kind="error")
    if end and status == wire.BAD_RECORD:
        return Verdict(
            False,
            problem=f"stopped: the process running your code sent the grader {end.reason or 'a malformed record'}",
            kind="error",
        )
    if status == wire.FORGED:
        return Verdict(
            False,
            problem="not graded: the process running your code wrote results the grader did not write, "
            "or ended itself before the grader's last step, so nothing it reported counts",
            kind="error",
        )
    if status == wire.OK:
        return Verdict(
            False,
            problem="your code ended the process (exit status 0: sys.exit or os._exit) before this result was reported",
            kind="error",
        )
    return Verdict(False, problem="no result was reported for this instance", kind="error")


def expected_values(ctx: Context, index: int) -> Observations:
    program = ctx.probe.programs[index]
    return math_expected(program) if ctx.check.expect_from == "math" else ctx.expected.program(ctx.probe.id, index)


def nontrivial(ctx: Context, index: int) -> bool:
    """No gradient this check compares is 0 on this instance only by accident of the inputs:
    an engine whose gradients never flow must not match an instance where every one is 0."""
    if not ctx.probe.programs:
        return True  # the api probe: statuses and values, never all zero
    grads = [
        want
        for key, want in expected_values(ctx, index).items()
        if key.endswith(".grad") and observes(ctx, index, key) and isinstance(want, float)
    ]
    return not grads or any(abs(want) > 1e-12 for want in grads)


def values(ctx: Context, index: int) -> Verdict:
    expected = expected_values(ctx, index)
    observed = ctx.report.observations(index)
    verdict = Verdict(True)
    for key, want in expected.items():
        if not observes(ctx, index, key) or not isinstance(want, float) or isinstance(want, bool):
            continue
        got = observed.get(key)
        ok = number_ok(got, want, ctx.tolerance)
        verdict.comparisons.append(Comparison(key, fmt(want), fmt(got), ok))
        verdict.ok &= ok
    if any(c.observed == NOT_OBSERVED for c in verdict.comparisons):
        reason = missing_reason(ctx, index)
        verdict.problem, verdict.kind = reason.problem, reason.kind
    return verdict


def graph(ctx: Context, index: int) -> Verdict:
    expected = ctx.expected.program(ctx.probe.id, index)
    observed = ctx.report.observations(index)
    verdict = Verdict(True)
    for key in [k for k in expected if observes(ctx, index, k)]:
        want, got = expected[key], observed.get(key)
        ok = op_matches(want, got) if key.endswith(".op") else got == want
        verdict.comparisons.append(Comparison(key, fmt(want), fmt(got), ok))
        verdict.ok &= ok
    if not observed:
        reason = missing_reason(ctx, index)
        verdict.problem, verdict.kind = reason.problem, reason.kind
        return verdict
    unread = sorted({v.text for v in observed.values() if isinstance(v, Unreadable) and v.kind == "unread"})
    if unread:
        verdict.problem = (
            f"The grader could not read the graph ({'; '.join(unread)}): Part 3's field table names each node's "
            "inputs _prev and its label _op. Values and gradients are graded on their own, whatever the names."
        )
    return verdict


def schedule(ctx: Context, index: int) -> Verdict:
    program = ctx.probe.programs[index]
    observed = ctx.report.observations(index).get("schedule")
    if not isinstance(observed, tuple):
        if not ctx.report.final.get(index):
            return missing_reason(ctx, index)
        return Verdict(False, problem="the order of _backward calls could not be observed")
    verdict = Verdict(True)
    feeds = consumers(program)
    leaves = set(program["leaves"])
    for node, users in feeds.items():
        calls = [i for i, name in enumerate(observed) if name == node]
        if node in leaves:
            ok, want = len(calls) <= 1, "at most once"
        else:
            ok = len(calls) == 1 and all(u in observed and observed.index(u) < calls[0] for u in users)
            want = "once" + (f", after {', '.join(sorted(users))}" if users else "")
        got = f"{len(calls)} call(s)" + (f", position {calls[0] + 1} of {len(observed)}" if calls else "")
        verdict.comparisons.append(Comparison(f"{node}._backward", want, got, ok))
        verdict.ok &= ok
    if verdict.ok is False:
        verdict.problem = "backward() order: " + " → ".join(observed)
    return verdict


def api(ctx: Context, index: int) -> Verdict:
    expected = ctx.expected.program(ctx.probe.id, 0)
    observed = ctx.report.observations(0)
    if not observed:
        return missing_reason(ctx, 0)
    verdict = Verdict(True)
    for key in [k for k in expected if selected(k, ctx.check.observe)]:
        want, got = expected[key], observed.get(key)
        if isinstance(want, float) and not isinstance(want, bool):
            ok = number_ok(got, want, ctx.tolerance)
        else:
            ok = got == want
        verdict.comparisons.append(Comparison(key, fmt(want), fmt(got), ok))
        verdict.ok &= ok
    return verdict


def engine(ctx: Context, index: int) -> Verdict:
    name = ctx.load.class_name if ctx.load else ""
    extra = ctx.load.extra_args if ctx.load else ()
    want = ctx.class_name
    rows = [
        Comparison("class name", repr(want), repr(name), name == want),
        Comparison("Value(x) with one argument", "works", "needs " + ", ".join(extra) if extra else "works", not extra),
    ]
    return Verdict(all(r.ok for r in rows), rows)
