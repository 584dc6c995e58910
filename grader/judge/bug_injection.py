"""Bug-injection comparers: the student's checks judged on the grader's engines (Step 5).

``checks_pass``: the checks pass on every wheat (a correct engine of the grader's); a check that
fails on one has a wrong expected value or leans on something the handout's ``Value`` does not
have. ``mutant_killed``: one named chaff (the Step-5 bug, the forced-fail guard) is caught: the
checks fail on it while passing on every wheat. ``score``: the share of the catalogue's chaffs
caught. The student's own engine plays no part: its faults are charged where they are measured.
Only outcomes are read (``sandbox.harness.mutation.probe``): nothing the checks print decides.
"""

from __future__ import annotations

from sandbox.harness import wire

from ..engines import wheats as wheat_engines
from ..mutate import BY_ID, CATALOGUE, FAMILIES, FORCED_FAIL, INFO
from ..results import Comparison
from .comparers import Context, Verdict, VerdictKind, missing_reason
from .records import ScriptRun

RUN = "python autograd_lab.py"
ON_WHEATS = f"{RUN} with the grader's correct engines in place of your class"
NOT_COUNTED = "not counted: your checks must first pass on every one of the grader's correct engines"


def _title(wheat_id: str) -> str:
    """A wheat's one-line description, to stand inside a sentence."""
    title = next((w.title for w in wheat_engines() if w.id == wheat_id), "one of the grader's correct engines")
    return (title[:1].lower() + title[1:]).rstrip(".")


def _where(script: ScriptRun) -> str:
    if not script.stop:
        return ""
    _, _, lines = script.stop.partition(":")
    # Read from the run's own traceback, which the checks can print too: words for the student,
    # never a verdict.
    return f" (its traceback points to your line {lines.replace(',', ', ')})" if lines else ""


def _how(script: ScriptRun | None) -> str:
    """A run's outcome in words: never its output, which could carry an engine's code."""
    if script is None:
        return "not reported"
    if script.outcome == wire.FAILED and script.exception in wire.SANDBOX_STOPS:
        return f"stopped by the sandbox: {script.message}"
    return {
        wire.PASSED: "runs clean",
        wire.FAILED: "failed" + _where(script),
        wire.CRASHED: f"crashed ({script.message})",
        wire.TIMEOUT: f"did not finish within {script.limit:g} s",
        wire.NOT_RUN: f"not run: {script.message}",
        wire.NOT_APPLICABLE: f"not run: {script.reason}",
    }.get(script.outcome, script.outcome)


def wheats_pass(ctx: Context) -> bool:
    """Every wheat ran, and the checks passed on it: only then can a failure mean a catch."""
    runs = [ctx.report.script(w) for w in ctx.probe.wheats]
    return bool(runs) and all(r is not None and r.outcome == wire.PASSED for r in runs)


def _caught(script: ScriptRun) -> bool:
    """A chaff run that failed because of what the checks found; a sandbox stop (output, processes)
    found nothing."""
    if script.outcome == wire.CRASHED:
        return True
    return script.outcome == wire.FAILED and script.exception not in wire.SANDBOX_STOPS


def _unreported(ctx: Context) -> Verdict:
    reason = missing_reason(ctx, 0)
    if reason.kind == "error" and ctx.report.end and ctx.report.end.status == wire.OK:
        reason = Verdict(False, problem="not run: the grading time budget ran out", kind="not_run")
    return reason


def _own_engine_note(ctx: Context) -> str:
    clean = ctx.report.script(wire.CLEAN)
    if clean is None or clean.outcome == wire.PASSED:
        return ""
    return (
        f" On your own engine they {_own_how(clean)}: whatever they found there is charged by the grader's checks "
        "that measure it, not here."
    )


def _own_how(clean: ScriptRun) -> str:
    """The run on the student's own engine, in words: its output is theirs and shown, so what it
    raised may be named too."""
    if clean.outcome != wire.FAILED or not clean.exception or clean.exception in wire.SANDBOX_STOPS:
        return _how(clean)
    where = f" at line {clean.line}" if clean.line else ""
    message = f": {clean.message[:300]}" if clean.message else ""
    return f"failed{where} with {clean.exception}{message}"


def checks_pass(ctx: Context, index: int) -> Verdict:
    if not ctx.probe.wheats:
        return Verdict(False, problem="the rubric names no correct engine to run your checks on", kind="error")
    runs = {w: ctx.report.script(w) for w in ctx.probe.wheats}
    if all(r is None for r in runs.values()):
        return _unreported(ctx)
    count = len(runs)
    if all(r is not None and r.outcome == wire.PASSED for r in runs.values()):
        shown = Comparison(ON_WHEATS, f"runs clean on all {count}", f"runs clean on all {count}", True)
        note = f"Your checks pass on all {count} of the grader's correct engines." + _own_engine_note(ctx)
        return Verdict(True, [shown], note=note)
    # The wheats that ran and did not pass; those left untried once one failed say nothing.
    bad = [(w, r) for w, r in runs.items() if r is not None and r.outcome not in (wire.PASSED, wire.NOT_RUN)]
    if not bad:
        untried = next(r for r in runs.values() if r is None or r.outcome == wire.NOT_RUN)
        return Verdict(
            False,
            [Comparison(ON_WHEATS, f"runs clean on all {count}", _how(untried), False)],
            problem=f"Your checks could not be run on every correct engine: {_how(untried)}.",
            kind="not_run",
        )
    wheat, script = bad[0]
    comparisons = [Comparison(f"{RUN} on {_title(w)}", "runs clean", _how(r), False) for w, r in bad]
    if script.outcome == wire.NOT_APPLICABLE:
        problem = f"The grader's engines could not be put in place of your class: {script.reason}."
        return Verdict(False, comparisons, problem=problem, kind="not_run")
    problem = (
        f"Your checks do not pass on {_title(wheat)}, a correct engine of the grader's: {_how(script)}. "
        "A check that fails on a correct engine asserts a wrong value, or uses something the handout's Value "
        "does not have (a helper, an attribute or a method of your own class, a field of another type): check "
        "what that line expects. Until your checks pass on every correct engine, no bug they report can be counted."
    )
    kind: VerdictKind = "timeout" if script.outcome == wire.TIMEOUT else "failed"
    return Verdict(False, comparisons, problem=problem + _signature_note(ctx) + _own_engine_note(ctx), kind=kind)


def _signature_note(ctx: Context) -> str:
    """The likeliest cause, when the grader already knows it: a constructor the handout's lacks."""
    extra = ctx.load.extra_args if ctx.load else ()
    if not extra:
        return ""
    names = ", ".join(extra)
    return (
        f" Your class needs argument(s) the handout's Value(data, _children=(), _op='') does not have ({names}): "
        "where your checks pass them, a correct engine reads them as something else."
    )


def mutant_killed(ctx: Context, index: int) -> Verdict:
    name = ctx.check.mutant or ""
    script = ctx.report.script(name)
    if script is None:
        return _unreported(ctx)
    if not wheats_pass(ctx):
        return Verdict(False, problem=NOT_COUNTED, kind="not_run")
    summary = BY_ID[name].summary
    quantity = f"{RUN} on the grader's engine with the bug"
    outcome = script.outcome
    if outcome == wire.NOT_APPLICABLE:
        return Verdict(
            False,
            problem=f"The grader's engine could not be put in place of your class: {script.reason}.",
            kind="not_run",
        )
    if _caught(script):
        return Verdict(True, [Comparison(quantity, "fails", _how(script), True)], problem=summary)
    if outcome == wire.TIMEOUT:
        return Verdict(
            False,
            [Comparison(quantity, "fails", "did not finish", False)],
            problem=f"With {summary}, your checks ran past {script.limit:g} s: a timeout is not counted as a catch.",
            kind="timeout",
        )
    if outcome == wire.NOT_RUN:
        return Verdict(False, problem=f"not run: {script.message or 'the grading time budget ran out'}", kind="not_run")
    if name == FORCED_FAIL:
        problem = (
            f"Even on an engine whose every method raises an error, `{RUN}` passes: your checks never exercise "
            "the Value class, so they cannot catch any bug in it."
        )
    else:
        problem = f"With {summary}, `{RUN}` still passes: {_how(script)}."
    return Verdict(False, [Comparison(quantity, "fails", _how(script), False)], problem=problem)


def score(ctx: Context) -> tuple[list[Verdict], list[str]]:
    """Verdicts (one per counted chaff) and the lines explaining the score."""
    mutants = ctx.report.mutants
    planned = [op.id for op in CATALOGUE if op.id in ctx.probe.mutants]
    if not planned or not any(name in mutants for name in planned):
        return [_unreported(ctx)], []
    if not wheats_pass(ctx):
        return [Verdict(False, problem=NOT_COUNTED, kind="not_run")], []
    killed: list[str] = []
    survived: list[str] = []
    timeouts: list[str] = []
    skipped: list[str] = []  # the grading time budget ran out before these ran
    for op_id in planned:
        record = mutants.get(op_id)
        script = record.script if record else None
        if script is None or script.outcome in (wire.NOT_RUN, wire.NOT_APPLICABLE):
            skipped.append(op_id)
        elif _caught(script):
            killed.append(op_id)
        elif script.outcome == wire.TIMEOUT:
            timeouts.append(op_id)
        else:
            survived.append(op_id)
    # A bug not tried (the budget ran out) or that made the checks hang is not caught: no
    # evidence of a catch is no catch.
    verdicts = [Verdict(True) for _ in killed] + [Verdict(False) for _ in survived + timeouts + skipped]
    if not verdicts:
        return [Verdict(False, problem="No mutation score: no catalogue bug applies.", kind="not_run")], []
    notes = _score_notes(killed, survived, timeouts, skipped)
    return verdicts, notes


def _score_notes(killed: list[str], survived: list[str], timeouts: list[str], skipped: list[str]) -> list[str]:
    counted = len(killed) + len(survived) + len(timeouts) + len(skipped)
    notes = [f"Your checks caught {len(killed)} of the {counted} catalogue bugs, each on the grader's own engine."]
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
            f"{len(timeouts)} bug(s) made your checks run past the time limit; a timeout is not a catch: "
            + "; ".join(BY_ID[i].summary for i in timeouts)
            + "."
        )
    if skipped:
        notes.append(f"{len(skipped)} bug(s) were not tried: the grading time budget ran out (slow checks?).")
    return notes
