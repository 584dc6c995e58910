"""The host decides every point: observed values against expected ones, per check.

Each ``compare`` kind is a small function with one signature, returning an ``_Verdict`` per
program instance; turning verdicts into a ``CheckResult`` (points, outcome, wording, what a
hidden check may reveal) happens in one place, ``_result``.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sandbox.harness.supervisor import STALLED_PROBES

from .expected import Expected, math_expected
from .figures import build_figure, op_matches, show
from .mutate import BY_ID, CATALOGUE, FAMILIES, FORCED_FAIL, INFO
from .plan import Plan, PlannedProbe
from .program import consumers, describe, expression, program_root
from .protocol import HarnessReport, ProbeReport
from .results import CheckResult, Comparison, FdRow, GraphFigure, Outcome, Visibility
from .rubric import MUTATION_COMPARES, Check, Rubric, Tolerance


@dataclass
class _Verdict:
    ok: bool
    comparisons: list[Comparison] = field(default_factory=list)
    problem: str = ""  # why it failed, in words, when there is more to say than the numbers
    kind: str = "failed"  # failed | error | timeout | not_run


@dataclass(frozen=True)
class _Context:
    check: Check
    probe: PlannedProbe
    report: ProbeReport
    expected: Expected
    tolerance: Tolerance
    load: dict[str, Any]
    class_name: str


def fmt(value: Any) -> str:
    if isinstance(value, list):
        return "{" + ", ".join(value) + "}" if value else "{} (none)"
    return repr(value) if isinstance(value, str) else show(value)


def _number_ok(observed: Any, expected: float, tolerance: Tolerance) -> bool:
    return (
        isinstance(observed, float)
        and math.isfinite(observed)
        and math.isfinite(expected)
        and tolerance.accepts(observed, expected)
    )


def _missing_reason(ctx: _Context, index: int) -> _Verdict:
    """Why a program produced no final observations: an error, a timeout, or nothing at all."""
    error = ctx.report.errors.get(index)
    if error:
        info = error.get("error", {})
        where = f" (line {info['line']})" if info.get("line") else ""
        return _Verdict(
            False,
            problem=f"{info.get('type', 'An error')} while running `{error.get('stage', '?')}`{where}: "
            f"{info.get('message', '')}",
            kind="error",
        )
    end = ctx.report.end or {}
    status = end.get("status")
    if status in ("timeout", "deadline"):
        phase = "backward()" if index in ctx.report.forward else "building the graph"
        return _Verdict(False, problem=f"did not finish: stopped after the time limit during {phase}", kind="timeout")
    if status == "not_run":
        reasons = {
            "deadline": "the grading time budget ran out",
            "repeated_timeouts": f"{STALLED_PROBES} probes in a row hit the time limit, so the rest were skipped",
            "no_process": "your code's processes used up the sandbox's process limit (a fork bomb?)",
        }
        return _Verdict(
            False,
            problem="not run: " + reasons.get(str(end.get("reason")), "the file could not be loaded"),
            kind="not_run",
        )
    if status in ("killed", "exited"):
        how = end.get("signal") or f"exit status {end.get('exit_code')}"
        return _Verdict(False, problem=f"the process running your code died ({how})", kind="error")
    if status == "output_limit":
        return _Verdict(False, problem="stopped: your code printed far too much output", kind="error")
    if status == "ok":
        return _Verdict(
            False,
            problem="your code ended the process (exit status 0: sys.exit or os._exit) before this result was reported",
            kind="error",
        )
    return _Verdict(False, problem="no result was reported for this instance", kind="error")


# --- compare kinds ---------------------------------------------------------------------------


def _values(ctx: _Context, index: int) -> _Verdict:
    program = ctx.probe.programs[index]
    if ctx.check.expect_from == "math":
        expected = math_expected(program)
    else:
        expected = ctx.expected.program(ctx.probe.id, index)
    keys = [k for k in expected if _selected(k, ctx.check.observe) and isinstance(expected[k], float)]
    observed = ctx.report.observations(index)
    verdict = _Verdict(True)
    for key in keys:
        got = observed.get(key)
        ok = _number_ok(got, expected[key], ctx.tolerance)
        verdict.comparisons.append(Comparison(key, fmt(expected[key]), fmt(got), ok))
        verdict.ok &= ok
    if any(c.observed == "(not observed)" for c in verdict.comparisons):
        reason = _missing_reason(ctx, index)
        verdict.problem, verdict.kind = reason.problem, reason.kind
    return verdict


def _graph(ctx: _Context, index: int) -> _Verdict:
    expected = ctx.expected.program(ctx.probe.id, index)
    observed = ctx.report.observations(index)
    verdict = _Verdict(True)
    for key in [k for k in expected if _selected(k, ctx.check.observe)]:
        want, got = expected[key], observed.get(key)
        if key.endswith(".op"):
            ok = op_matches(want, got)
        else:
            ok = got == want
        verdict.comparisons.append(Comparison(key, fmt(want), fmt(got), ok))
        verdict.ok &= ok
    if not observed:
        reason = _missing_reason(ctx, index)
        verdict.problem, verdict.kind = reason.problem, reason.kind
    return verdict


def _schedule(ctx: _Context, index: int) -> _Verdict:
    program = ctx.probe.programs[index]
    observed = ctx.report.observations(index).get("schedule")
    if not isinstance(observed, list):
        reason = (
            _missing_reason(ctx, index)
            if not ctx.report.final.get(index)
            else _Verdict(False, problem="the order of _backward calls could not be observed")
        )
        return reason
    verdict = _Verdict(True)
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


def _api(ctx: _Context, index: int) -> _Verdict:
    expected = ctx.expected.program(ctx.probe.id, 0)
    observed = ctx.report.observations(0)
    if not observed:
        return _missing_reason(ctx, 0)
    verdict = _Verdict(True)
    for key in [k for k in expected if _selected(k, ctx.check.observe)]:
        want, got = expected[key], observed.get(key)
        ok = _number_ok(got, want, ctx.tolerance) if isinstance(want, float) else got == want
        verdict.comparisons.append(Comparison(key, fmt(want), fmt(got), ok))
        verdict.ok &= ok
    return verdict


def _engine(ctx: _Context, index: int) -> _Verdict:
    name, extra = ctx.load.get("class_name", ""), ctx.load.get("extra_args", [])
    want = ctx.class_name
    rows = [
        Comparison("class name", repr(want), repr(name), name == want),
        Comparison("Value(x) with one argument", "works", "needs " + ", ".join(extra) if extra else "works", not extra),
    ]
    return _Verdict(all(r.ok for r in rows), rows)


def _failure_words(script: dict[str, Any]) -> str:
    where = f" at line {script['line']}" if script.get("line") else ""
    return f"{script.get('exception') or 'failed'}{where}" + (f": {script['message']}" if script.get("message") else "")


def _mutation_record(ctx: _Context, name: str) -> dict[str, Any] | None:
    return ctx.report.mutants.get(name, {}).get("script")


def _unreported(ctx: _Context) -> _Verdict:
    clean = _mutation_record(ctx, "clean")
    if clean is not None and clean["outcome"] != "passed":
        return _Verdict(False, problem="not run: your own checks must pass on your engine first", kind="not_run")
    reason = _missing_reason(ctx, 0)
    if reason.kind == "error" and ctx.report.end and ctx.report.end.get("status") == "ok":
        reason = _Verdict(False, problem="not run: the grading time budget ran out", kind="not_run")
    return reason


def _checks_pass(ctx: _Context, index: int) -> _Verdict:
    script = _mutation_record(ctx, "clean")
    if script is None:
        return _missing_reason(ctx, 0)
    outcome = script["outcome"]
    same = _mutation_record(ctx, "equivalent")
    if outcome == "passed" and same is not None and same["outcome"] not in ("passed", "not_applicable"):
        got = _failure_words(same) if same["outcome"] == "failed" else same.get("message") or same["outcome"]
        return _Verdict(
            False,
            [Comparison("python autograd_lab.py on a behaviour-identical copy", "runs clean", f"failed: {got}", False)],
            problem="Your checks pass on your file but fail on a copy that computes exactly the same things (one "
            "harmless assignment added at the start of each method): they check the code's text, not what it "
            "computes, so they cannot earn bug-injection credit.",
        )
    if outcome == "passed":
        return _Verdict(True, [Comparison("python autograd_lab.py", "runs clean", "runs clean", True)])
    if outcome == "timeout":
        return _Verdict(False, problem="your checks did not finish within the time limit", kind="timeout")
    if outcome == "not_run":
        return _Verdict(
            False, problem="not run: the grading time budget ran out before your own checks could run", kind="not_run"
        )
    got = _failure_words(script) if outcome == "failed" else script.get("message") or outcome
    return _Verdict(
        False,
        [Comparison("python autograd_lab.py", "runs clean", f"failed: {got}", False)],
        problem="Your checks fail on your own engine, so no bug they report can be trusted: "
        "the bug-injection credit needs them to pass first.",
    )


def _mutant_killed(ctx: _Context, index: int) -> _Verdict:
    name = ctx.check.mutant or ""
    script = _mutation_record(ctx, name)
    if script is None:
        return _unreported(ctx)
    summary = BY_ID[name].summary
    lines = ", ".join(str(n) for n in script.get("lines", []))
    # The forced-fail mutant edits every method; listing them all says nothing.
    edited = f" (line(s) {lines})" if lines and name != FORCED_FAIL else ""
    quantity = "python autograd_lab.py with the bug in place"
    outcome = script["outcome"]
    if outcome == "not_applicable":
        return _Verdict(
            False, problem=f"The edit ({summary}) could not be applied: {script['reason']}.", kind="not_run"
        )
    if outcome in ("failed", "crashed"):
        got = _failure_words(script) if outcome == "failed" else script.get("message", "crashed")
        return _Verdict(True, [Comparison(quantity, "fails", f"failed ({got})", True)], problem=f"{summary}{edited}")
    if outcome == "timeout":
        return _Verdict(
            False,
            [Comparison(quantity, "fails", "did not finish", False)],
            problem=f"With {summary}{edited}, your checks ran past {script.get('limit', 0):g} s: "
            "a timeout is not counted as catching the bug.",
            kind="timeout",
        )
    if outcome == "not_run":
        return _Verdict(False, problem="not run: the grading time budget ran out", kind="not_run")
    if name == FORCED_FAIL:
        problem = (
            "Even with every method of your class raising an error, `python autograd_lab.py` passes: "
            "your checks never exercise this engine, so they cannot catch any bug in it."
        )
    else:
        problem = f"With {summary}{edited}, `python autograd_lab.py` still passes."
    return _Verdict(False, [Comparison(quantity, "fails", "passed", False)], problem=problem)


# The grader's programs hanging or crashing on a mutant is a difference its checks would see.
_ORACLE_FAILURES = ("timeout", "killed", "exited", "output_limit", "record_limit")


def _detectable(oracle: dict[str, Any]) -> bool:
    return bool(oracle.get("differs")) or oracle.get("status") in _ORACLE_FAILURES


def _score_verdicts(ctx: _Context) -> tuple[list[_Verdict], list[str]]:
    """Verdicts (one per counted mutant) and the lines explaining the score."""
    mutants = ctx.report.mutants
    if not mutants or _mutation_record(ctx, "clean") is None or mutants["clean"]["script"]["outcome"] != "passed":
        return [_unreported(ctx)], []
    killed: list[str] = []
    survived: list[str] = []
    timeouts: list[str] = []
    equivalent: list[str] = []
    absent: list[str] = []
    skipped: list[str] = []  # the grading time budget ran out before these ran
    for op in CATALOGUE:
        record = mutants.get(op.id)
        if record is None or "script" not in record:
            continue
        outcome = record["script"]["outcome"]
        if outcome == "not_applicable":
            absent.append(op.id)
        elif outcome == "not_run":
            skipped.append(op.id)
        elif not _detectable(record.get("oracle", {})):
            equivalent.append(op.id)  # the grader cannot tell it apart either: not counted
        elif outcome == "timeout":
            timeouts.append(op.id)
        elif outcome in ("failed", "crashed"):
            killed.append(op.id)
        else:
            survived.append(op.id)
    counted = killed + survived
    if not counted:
        why = "none of the catalogue's bugs changed what the grader observes of your engine"
        if skipped:
            why = "the grading time budget ran out before the injected bugs could be tried"
        elif timeouts:
            why = "every injected bug the grader detects made your checks run past the time limit"
        return [_Verdict(False, problem=f"No mutation score: {why}.", kind="not_run")], []
    verdicts = [_Verdict(True) for _ in killed] + [_Verdict(False) for _ in survived]
    notes = [f"Your checks caught {len(killed)} of the {len(counted)} injected bugs that the grader's checks detect."]
    families: dict[str, list[str]] = {}
    for op_id in survived:
        families.setdefault(BY_ID[op_id].family, []).append(op_id)
    for family, ids in families.items():
        names = "; ".join(BY_ID[i].summary for i in ids)
        notes.append(
            f"Not caught ({family}, {FAMILIES[family]}): {names}. A check that would: {INFO[ids[0]].example_check}"
        )
    if timeouts:
        notes.append(
            f"{len(timeouts)} bug(s) made your checks run past the time limit; a timeout is not a catch and they "
            "were not counted: " + "; ".join(BY_ID[i].summary for i in timeouts) + "."
        )
    if equivalent:
        notes.append(
            f"{len(equivalent)} edit(s) did not change your engine's behaviour on the grader's checks "
            "and were not counted."
        )
    if skipped:
        notes.append(f"{len(skipped)} bug(s) were not tried: the grading time budget ran out (slow checks?).")
    if absent:
        notes.append(f"{len(absent)} edit(s) had no target in your code (written differently) and were not counted.")
    return verdicts, notes


COMPARERS: dict[str, Callable[[_Context, int], _Verdict]] = {
    "values": _values,
    "graph": _graph,
    "schedule": _schedule,
    "api": _api,
    "engine": _engine,
    "checks_pass": _checks_pass,
    "mutant_killed": _mutant_killed,
}


def _selected(key: str, patterns: Sequence[str]) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(key, p) for p in patterns)


# --- verdicts -> result ------------------------------------------------------------------------


def judge(rubric: Rubric, plan: Plan, expected: Expected, report: HarnessReport) -> list[CheckResult]:
    load = report.load or {}
    results: dict[str, CheckResult] = {}
    for check in plan.checks:
        probe = plan.probe(check.probe)
        ctx = _Context(
            check, probe, report.probe(probe.id), expected, rubric.tolerances[check.tolerance], load, rubric.class_name
        )
        blocked = [r for r in check.requires if r in results and not results[r].passed]
        notes: list[str] = []
        if not load.get("ok"):
            verdicts = [_Verdict(False, problem="not run: the file could not be loaded", kind="not_run")]
        elif blocked:
            verdicts = [
                _Verdict(False, problem=f"no credit until '{rubric.check(blocked[0]).title}' passes", kind="not_run")
            ]
        else:
            if check.compare == "mutation_score":
                verdicts, notes = _score_verdicts(ctx)
            else:
                single = check.compare in ("api", "engine", *MUTATION_COMPARES)
                count = 1 if single else len(probe.programs)
                verdicts = [COMPARERS[check.compare](ctx, i) for i in range(count)]
        results[check.id] = _result(check, probe, verdicts, ctx, notes)
        if check.vouched_by and load.get("ok") and not blocked:
            twin_check = next((c for c in plan.checks if c.id == check.vouched_by), None)
            twin = None
            if twin_check is not None:
                twin_probe = plan.probe(twin_check.probe)
                twin = replace(ctx, probe=twin_probe, report=report.probe(twin_probe.id))
            results[check.id] = _vouched(check, results[check.id], twin)
    return [results[c.id] for c in plan.checks]


def _vouched(check: Check, result: CheckResult, twin: _Context | None) -> CheckResult:
    """A check on the handout's printed numbers keeps its points only if the same comparison,
    on its hidden twin's random inputs, comes out right at least once: knowing (or forging)
    the printed answers is not computing them. Without the twin in the plan (self-check mode)
    the check stands."""
    if twin is None or not result.points:
        return result
    if twin.report.end is None or twin.report.end.get("status") == "not_run":
        return result  # the twin was never attempted (time budget): nothing to vouch with either way
    if any(COMPARERS[check.compare](twin, i).ok for i in range(len(twin.probe.programs))):
        return result
    return replace(
        result,
        points=0.0,
        outcome=Outcome.FAILED,
        message=f"{result.message} No credit: the same quantities on hidden random inputs never came out right, "
        "so these printed values were not computed by the engine.",
        hint="Make the engine compute every value: checks on the handout's numbers count only when the same "
        "graph on other inputs works too.",
    )


# Checks on a graph program get its picture (when one failed, or when the graph itself is graded).
FIGURE_COMPARES = ("values", "graph", "schedule")
MAX_FD_ROWS = 8


def _fd_rows(ctx: _Context) -> tuple[FdRow, ...]:
    """The engine's leaf gradients beside centered differences, one row per leaf and instance."""
    rows: list[FdRow] = []
    for index, program in enumerate(ctx.probe.programs):
        numeric = math_expected(program)
        observed = ctx.report.observations(index)
        operation = expression(program)
        for leaf in program["leaves"]:
            key = f"{leaf}.grad"
            if key not in numeric or not _selected(key, ctx.check.observe):
                continue
            got, want = observed.get(key), numeric[key]
            rel = abs(got - want) / max(1e-8, abs(got) + abs(want)) if isinstance(got, float) else math.nan
            rows.append(
                FdRow(
                    operation=operation,
                    point=", ".join(f"{k} = {v:g}" for k, v in program["leaves"].items()),
                    quantity=key,
                    analytic=show(got),
                    numeric=show(want),
                    rel_error=f"{rel:.2e}" if math.isfinite(rel) else "n/a",
                    ok=_number_ok(got, want, ctx.tolerance),
                )
            )
    return tuple(rows[:MAX_FD_ROWS])


def build_figures(
    rubric: Rubric, plan: Plan, expected: Expected, report: HarnessReport, checks: Sequence[CheckResult]
) -> tuple[GraphFigure, ...]:
    """The graphs the checks refer to, each built once, from the first check that names it."""
    figures: dict[str, GraphFigure] = {}
    by_id = {c.id: c for c in plan.checks}
    for result in checks:
        if not result.figure or result.figure in figures:
            continue
        check = by_id[result.check_id]
        probe_id, index_text = result.figure.rsplit("#", 1)
        index = int(index_text)
        probe = plan.probe(probe_id)
        program = probe.programs[index]
        want = dict(expected.program(probe_id, index))
        if check.expect_from == "math":
            want.update(math_expected(program))
        ctx = _Context(
            check, probe, report.probe(probe_id), expected, rubric.tolerances[check.tolerance], {}, rubric.class_name
        )
        observed = ctx.report.observations(index)
        problem = (
            "" if observed.get(f"{program_root(program)}.grad") is not None else _missing_reason(ctx, index).problem
        )
        title = rubric.section(check.section).title if "graph" in program.get("record", ()) else check.title
        figures[result.figure] = build_figure(
            result.figure, title, program, observed, want, ctx.tolerance, problem=problem
        )
    return tuple(figures.values())


# When no instance passed, the most telling cause names the outcome.
_CAUSES = (("timeout", Outcome.TIMEOUT), ("error", Outcome.ERROR), ("not_run", Outcome.NOT_RUN))


def _result(
    check: Check, probe: PlannedProbe, verdicts: list[_Verdict], ctx: _Context, notes: list[str]
) -> CheckResult:
    passed = sum(v.ok for v in verdicts)
    total = len(verdicts)
    if passed == total:
        outcome, points = Outcome.PASSED, check.points
    elif passed:
        outcome, points = Outcome.PARTIAL, round(check.points * passed / total, 2)
    else:
        kinds = {v.kind for v in verdicts}
        outcome = next((o for k, o in _CAUSES if k in kinds), Outcome.FAILED)
        points = 0.0
    visible = check.visibility is Visibility.VISIBLE
    first_bad = next((v for v in verdicts if not v.ok), None)
    built = ""
    figure = ""
    fd_rows: tuple[FdRow, ...] = ()
    if visible and probe.programs:
        bad_index = min(verdicts.index(first_bad) if first_bad in verdicts else 0, len(probe.programs) - 1)
        built = describe(probe.programs[bad_index])
        drawn = check.compare in FIGURE_COMPARES and verdicts and verdicts[0].kind != "not_run"
        if drawn and (first_bad is not None or "graph" in probe.programs[bad_index].get("record", ())):
            figure = f"{probe.id}#{bad_index}"
        if check.expect_from == "math":
            fd_rows = _fd_rows(ctx)
    message = notes[0] if notes else _message(check, verdicts, first_bad, visible)
    comparisons: tuple[Comparison, ...] = ()
    if visible and first_bad is not None:
        comparisons = tuple(first_bad.comparisons)
    elif visible and verdicts:
        comparisons = tuple(verdicts[0].comparisons)
    output = ""
    if visible and check.compare == "checks_pass":
        output = (_mutation_record(ctx, "clean") or {}).get("output", "")
    elif visible and ctx.report.end:
        output = ctx.report.end.get("output", "")
    return CheckResult(
        check_id=check.id,
        title=check.title,
        section=check.section,
        visibility=check.visibility,
        points=points,
        max_points=check.points,
        outcome=outcome,
        built=built,
        message=message,
        hint="" if outcome is Outcome.PASSED else check.hint,
        comparisons=comparisons,
        output=output,
        instances_passed=passed,
        instances_total=total,
        notes=tuple(notes[1:]),
        figure=figure,
        fd_rows=fd_rows,
        finite_difference=check.expect_from == "math",
    )


def _message(check: Check, verdicts: list[_Verdict], first_bad: _Verdict | None, visible: bool) -> str:
    total = len(verdicts)
    if first_bad is None:
        return "Passed." if total == 1 else f"Passed all {total} instances."
    failed = total - sum(v.ok for v in verdicts)
    if not visible:
        # Hidden checks say what kind of failure happened, never the inputs or values.
        kinds = sorted({v.kind for v in verdicts if not v.ok})
        words = {
            "failed": "wrong values",
            "error": "your code raised an error",
            "timeout": "time limit reached",
            "not_run": "not run",
        }
        return f"Failed {failed} of {total} hidden instance(s): " + "; ".join(words[k] for k in kinds) + "."
    prefix = "" if total == 1 else f"Failed {failed} of {total} instances. "
    if first_bad.problem and not any(not c.ok and c.observed != "(not observed)" for c in first_bad.comparisons):
        return prefix + first_bad.problem
    wrong = [c for c in first_bad.comparisons if not c.ok]
    shown = "; ".join(f"{c.quantity}: expected {c.expected}, observed {c.observed}" for c in wrong[:3])
    more = f" (and {len(wrong) - 3} more)" if len(wrong) > 3 else ""
    extra = f" {first_bad.problem}" if first_bad.problem else ""
    return prefix + shown + more + "." + extra
