"""Bug-injection comparers: the student's own checks against their engine and its mutants.

``checks_pass`` is the validity gate, ``mutant_killed`` one named mutant (Step 5, the
forced-fail guard), and ``score`` the catalogue's mutation score with the words that explain it.

Every catalogue bug counts, caught or not, applicable or not: ``grader rubric validate``
proves the grader's own checks detect each one on the reference, so none is a change checks
of behaviour could not see. Nothing the submission does at run time takes a bug out of the
count (a file that repairs itself when mutated only turns its catches into misses).
"""

from __future__ import annotations

from sandbox.harness import wire

from ..features import MUTANT_FEATURES
from ..mutate import BY_ID, CATALOGUE, FAMILIES, FORCED_FAIL, INFO
from ..results import Comparison
from .comparers import Context, Verdict, missing_reason
from .records import ScriptRun


def _failure_words(script: ScriptRun) -> str:
    where = f" at line {script.line}" if script.line else ""
    return f"{script.exception or 'failed'}{where}" + (f": {script.message}" if script.message else "")


# BlockingIOError: fork() (or a thread) refused at the sandbox's process limit. A fork bomb's
# processes then print their tracebacks in any order, so where its runs "stop" is noise.
_EXHAUSTED = (*wire.SANDBOX_STOPS, "MemoryError", "RecursionError", "BlockingIOError")


def _fail_on_a_wrong_engine(ctx: Context) -> bool:
    """The checks fail on the file as submitted, and a check worth points finds the engine wrong.
    A run that ran out of something (output, processes, memory, stack) judged nothing."""
    clean = ctx.report.script(wire.CLEAN)
    return (
        clean is not None
        and clean.outcome == wire.FAILED
        and clean.exception not in _EXHAUSTED
        and bool(ctx.engine_faults)
    )


def catching(ctx: Context) -> bool:
    """The checks caught a real bug: they fail on the student's wrong engine and pass with the
    grader's correct class in place of it. Injected bugs then count where the checks stop
    somewhere else. Checks that fail on a correct engine too (that always raise, say at a line
    drawn from the values) would stop somewhere else on every mutant: they earn nothing."""
    gate = ctx.report.script(wire.REFERENCE)
    return _fail_on_a_wrong_engine(ctx) and gate is not None and gate.outcome == wire.PASSED


def _faults(ctx: Context, *, wrong_values: bool = False) -> str:
    titles = [f.title for f in ctx.engine_faults if f.wrong_values or not wrong_values]
    shown = "; ".join(titles[:3])
    return shown + (f" and {len(titles) - 3} more" if len(titles) > 3 else "")


def _stops_elsewhere(ctx: Context, script: ScriptRun) -> bool:
    """In catching mode: did this run stop somewhere the unmodified file's run did not?"""
    clean = ctx.report.script(wire.CLEAN)
    if script.outcome == wire.CRASHED:
        return True
    return bool(clean and script.stop and script.stop != clean.stop)


def _unreported(ctx: Context) -> Verdict:
    clean = ctx.report.script(wire.CLEAN)
    if clean is not None and clean.outcome != wire.PASSED and not catching(ctx):
        return Verdict(False, problem="not run: your own checks must pass on your engine first", kind="not_run")
    reason = missing_reason(ctx, 0)
    if reason.kind == "error" and ctx.report.end and ctx.report.end.status == wire.OK:
        reason = Verdict(False, problem="not run: the grading time budget ran out", kind="not_run")
    return reason


def checks_pass(ctx: Context, index: int) -> Verdict:
    script = ctx.report.script(wire.CLEAN)
    if script is None:
        return missing_reason(ctx, 0)
    outcome = script.outcome
    same = ctx.report.script(wire.EQUIVALENT)
    if same is not None and same.outcome == wire.NOT_RUN and outcome in (wire.PASSED, wire.FAILED):
        # Fail closed: without the copies nothing shows the checks test behaviour, not text.
        return Verdict(
            False,
            problem="not run: the grading's time budget could not hold the behaviour-identical copies of your "
            "file that your checks must also pass on (are your checks slow?)",
            kind="not_run",
        )
    if catching(ctx) and same is not None and same.outcome != wire.NOT_APPLICABLE:
        if same.outcome != wire.FAILED or same.stop != script.stop:
            got = _failure_words(same) if same.outcome == wire.FAILED else same.message or same.outcome
            return Verdict(
                False,
                [Comparison("python autograd_lab.py on a behaviour-identical copy", "stops as the file", got, False)],
                problem="Your checks stop at one place on your file and elsewhere on a copy that computes exactly the "
                "same things (one harmless assignment added at the start of each method): they check the code's "
                "text, not what it computes, so they cannot earn bug-injection credit.",
            )
    if outcome == wire.PASSED and same is not None and same.outcome not in (wire.PASSED, wire.NOT_APPLICABLE):
        got = _failure_words(same) if same.outcome == wire.FAILED else same.message or same.outcome
        return Verdict(
            False,
            [Comparison("python autograd_lab.py on a behaviour-identical copy", "runs clean", f"failed: {got}", False)],
            problem="Your checks pass on your file but fail on a copy that computes exactly the same things (one "
            "harmless assignment added at the start of each method): they check the code's text, not what it "
            "computes, so they cannot earn bug-injection credit.",
        )
    if outcome == wire.PASSED:
        # Wrong numbers only: an operation that is missing is the API's fault, not a blind spot.
        blind = (
            f"Your checks pass on your engine, but the grader finds wrong values ({_faults(ctx, wrong_values=True)}): "
            "they are blind to that bug. Add a check that fails on it (see those checks' hints)."
            if any(f.wrong_values for f in ctx.engine_faults)
            else ""
        )
        return Verdict(True, [Comparison("python autograd_lab.py", "runs clean", "runs clean", True)], note=blind)
    if outcome == wire.TIMEOUT:
        return Verdict(False, problem="your checks did not finish within the time limit", kind="timeout")
    if outcome == wire.NOT_RUN:
        return Verdict(
            False, problem="not run: the grading time budget ran out before your own checks could run", kind="not_run"
        )
    got = _failure_words(script) if outcome == wire.FAILED else script.message or outcome
    if catching(ctx):
        return Verdict(
            True,
            [
                Comparison(
                    "python autograd_lab.py on an engine the grader finds wrong", "fails", f"failed: {got}", True
                ),
                Comparison(
                    "python autograd_lab.py with the grader's correct class in place of yours",
                    "runs clean",
                    "runs clean",
                    True,
                ),
            ],
            note=f"Your checks fail on your engine ({got}), and the grader finds it wrong too ({_faults(ctx)}), "
            "while they pass with a correct engine: they caught a real bug. Injected bugs count where they make "
            "your checks stop somewhere else.",
        )
    if _fail_on_a_wrong_engine(ctx):
        gate = ctx.report.script(wire.REFERENCE)
        # Never its message or line: that run held the grader's class, whose text is not for students.
        seen = {wire.FAILED: "failed", wire.CRASHED: "crashed", wire.TIMEOUT: "did not finish"}.get(
            gate.outcome if gate else "", "could not be run"
        )
        return Verdict(
            False,
            [
                Comparison("python autograd_lab.py", "runs clean", f"failed: {got}", False),
                Comparison(
                    "python autograd_lab.py with the grader's correct class in place of yours",
                    "runs clean",
                    seen,
                    False,
                ),
            ],
            problem=f"Your checks fail on your engine, which the grader finds wrong too ({_faults(ctx)}), but they do "
            "not pass with the grader's own correct class in place of yours either, so nothing shows they tell a "
            "right engine from a wrong one: no bug-injection credit. Checks that use only what the handout's Value "
            "has, and assert the right values, pass there.",
        )
    return Verdict(
        False,
        [Comparison("python autograd_lab.py", "runs clean", f"failed: {got}", False)],
        problem="Your checks fail on your own engine, but every check of the grader finds it right, so no bug "
        "they report can be trusted: the bug-injection credit needs them to pass on a right engine.",
    )


def mutant_killed(ctx: Context, index: int) -> Verdict:
    name = ctx.check.mutant or ""
    script = ctx.report.script(name)
    if script is None:
        return _unreported(ctx)
    summary = BY_ID[name].summary
    lines = ", ".join(str(n) for n in script.lines)
    # The forced-fail mutant edits every method; listing them all says nothing.
    edited = f" (line(s) {lines})" if lines and name != FORCED_FAIL else ""
    quantity = "python autograd_lab.py with the bug in place"
    outcome = script.outcome
    if outcome == wire.NOT_APPLICABLE:
        return Verdict(False, problem=f"The edit ({summary}) could not be applied: {script.reason}.", kind="not_run")
    if outcome in (wire.FAILED, wire.CRASHED):
        got = _failure_words(script) if outcome == wire.FAILED else script.message
        if catching(ctx) and not _stops_elsewhere(ctx, script):
            return Verdict(
                False,
                [Comparison(quantity, "stops elsewhere than on your engine", f"failed ({got}), as before", False)],
                problem=f"With {summary}{edited}, your checks stop where they already stop on your engine, so "
                "whether they catch it cannot be told until the bug they found is fixed.",
                kind="not_run",
            )
        return Verdict(True, [Comparison(quantity, "fails", f"failed ({got})", True)], problem=f"{summary}{edited}")
    if outcome == wire.TIMEOUT:
        return Verdict(
            False,
            [Comparison(quantity, "fails", "did not finish", False)],
            problem=f"With {summary}{edited}, your checks ran past {script.limit:g} s: "
            "a timeout is not counted as catching the bug.",
            kind="timeout",
        )
    if outcome == wire.NOT_RUN:
        return Verdict(False, problem="not run: the grading time budget ran out", kind="not_run")
    if name == FORCED_FAIL:
        problem = (
            "Even with every method of your class raising an error, `python autograd_lab.py` passes: "
            "your checks never exercise this engine, so they cannot catch any bug in it."
        )
    else:
        problem = f"With {summary}{edited}, `python autograd_lab.py` still passes."
    return Verdict(False, [Comparison(quantity, "fails", "passed", False)], problem=problem)


def score(ctx: Context) -> tuple[list[Verdict], list[str]]:
    """Verdicts (one per counted mutant) and the lines explaining the score."""
    mutants = ctx.report.mutants
    clean = ctx.report.script(wire.CLEAN)
    if not mutants or clean is None or (clean.outcome != wire.PASSED and not catching(ctx)):
        return [_unreported(ctx)], []
    killed: list[str] = []
    survived: list[str] = []
    timeouts: list[str] = []
    absent: list[str] = []
    excused: list[str] = []
    skipped: list[str] = []  # the grading time budget ran out before these ran
    unclear: list[str] = []  # catching mode: the checks stopped where they stop on the file itself
    for op in CATALOGUE:
        record = mutants.get(op.id)
        if record is None or record.script is None:
            continue
        outcome = record.script.outcome
        if outcome == wire.NOT_APPLICABLE and MUTANT_FEATURES.get(op.id) in ctx.charged_features:
            excused.append(op.id)  # the method it edits is missing, and charged where that is measured
        elif outcome == wire.NOT_APPLICABLE:
            absent.append(op.id)
        elif outcome == wire.NOT_RUN:
            skipped.append(op.id)
        elif outcome == wire.TIMEOUT:
            timeouts.append(op.id)
        elif outcome in (wire.FAILED, wire.CRASHED):
            if catching(ctx) and not _stops_elsewhere(ctx, record.script):
                unclear.append(op.id)
            else:
                killed.append(op.id)
        else:
            survived.append(op.id)
    # No evidence of a catch is no catch: counting these out would score better than the same
    # checks on a right engine, where most of them would simply pass. A bug with no target in
    # the file counts as not caught too: otherwise writing the engine so that fewer bugs apply
    # would raise the share caught.
    if not killed + survived + unclear:
        why = "none of the catalogue's bugs applies to your code"
        if skipped:
            why = "the grading time budget ran out before the injected bugs could be tried"
        elif timeouts:
            why = "every injected bug the grader detects made your checks run past the time limit"
        return [Verdict(False, problem=f"No mutation score: {why}.", kind="not_run")], []
    verdicts = [Verdict(True) for _ in killed] + [Verdict(False) for _ in survived + unclear + absent]
    notes = _score_notes(killed, survived + unclear, timeouts, skipped, absent)
    if excused:
        notes.append(
            f"{len(excused)} edit(s) had no target in an operation that is missing or already wrong, which the "
            "checks that measure it already charge: not counted here."
        )
    if unclear:
        notes.append(
            f"{len(unclear)} of the bugs not caught made your checks stop where they already stop on your engine: "
            "nothing shows they would catch them. Fix the bug your checks found, and they can be told apart."
        )
    return verdicts, notes


def _score_notes(
    killed: list[str],
    survived: list[str],
    timeouts: list[str],
    skipped: list[str],
    absent: list[str],
) -> list[str]:
    counted = len(killed) + len(survived) + len(absent)
    notes = [f"Your checks caught {len(killed)} of the {counted} catalogue bugs that the grader's checks detect."]
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
    if skipped:
        notes.append(f"{len(skipped)} bug(s) were not tried: the grading time budget ran out (slow checks?).")
    if absent:
        notes.append(
            f"{len(absent)} edit(s) had no target in your code (written differently, or the operation is missing) "
            "and count as not caught: the score is out of the whole catalogue, so no way of writing the engine "
            "can raise it by leaving bugs nowhere to go."
        )
    return notes
