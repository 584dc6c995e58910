"""Verdicts to results: the one place where instance verdicts become points, outcome and words.

``judge`` runs each planned check's comparer over its instances, applies ``requires`` and
vouching, and turns the verdicts into a ``CheckResult`` (points, outcome, wording, and what a
hidden check may reveal) in ``_result``.
"""

from __future__ import annotations

from dataclasses import replace

from ..features import FEATURES, PLAIN_WORDS
from ..plan import Plan, PlannedProbe
from ..program import describe
from ..results import CheckResult, Comparison, FdRow, Outcome, Visibility
from ..rubric import MUTATION_COMPARES, Check, Compare, Rubric
from . import bug_injection, comparers
from .comparers import Comparer, Context, Verdict, VerdictKind, nontrivial
from .expected import Expected
from .illustrations import FIGURE_COMPARES, fd_rows
from .records import SandboxReport

COMPARERS: dict[Compare, Comparer] = {
    "values": comparers.values,
    "graph": comparers.graph,
    "schedule": comparers.schedule,
    "api": comparers.api,
    "engine": comparers.engine,
    "checks_pass": bug_injection.checks_pass,
    "mutant_killed": bug_injection.mutant_killed,
}
# Compares whose failure says the engine computes something wrong.
# Compares that judge the submission once, not once per program instance.
SINGLE: tuple[Compare, ...] = ("api", "engine", "checks_pass", "mutant_killed", "mutation_score")


def judge(rubric: Rubric, plan: Plan, expected: Expected, report: SandboxReport) -> list[CheckResult]:
    results: dict[str, CheckResult] = {}
    for check in _judging_order(plan.checks):
        # A file that did not load built nothing, on any form: each check stays on its own probe.
        probe = plan.probe(probe_for(check, results) if report.loaded else check.probe)
        ctx = Context(
            check,
            probe,
            report.probe(probe.id),
            expected,
            rubric.tolerances[check.tolerance],
            report.load,
            rubric.class_name,
        )
        blocked = [r for r in check.requires if r in results and not results[r].passed]
        notes: list[str] = []
        if not report.loaded:
            verdicts = [Verdict(False, problem="not run: the file could not be loaded", kind="not_run")]
        elif blocked:
            verdicts = [
                Verdict(False, problem=f"no credit until '{rubric.check(blocked[0]).title}' passes", kind="not_run")
            ]
        elif check.compare == "mutation_score":
            verdicts, notes = bug_injection.score(ctx)
        else:
            count = 1 if check.compare in SINGLE else len(probe.programs)
            verdicts = [COMPARERS[check.compare](ctx, i) for i in range(count)]
        results[check.id] = _result(check, probe, verdicts, ctx, notes)
        if probe.id != check.probe and check.fallback and not check.fallback.derived:
            result = results[check.id]
            results[check.id] = replace(result, notes=(*result.notes, check.fallback.because))
        if check.vouched_by and report.loaded and not blocked:
            twin_check = next((c for c in plan.checks if c.id == check.vouched_by), None)
            twin = None
            if twin_check is not None:
                # The twin in the form it is judged in: the same rewrite as this check's.
                twin_probe = plan.probe(probe_for(twin_check, results))
                twin = replace(ctx, probe=twin_probe, report=report.probe(twin_probe.id))
            results[check.id] = _vouched(check, results[check.id], twin)
    if report.loaded:
        _say_once(rubric, plan, results)
    return [results[c.id] for c in plan.checks]


def _say_once(rubric: Rubric, plan: Plan, results: dict[str, CheckResult]) -> None:
    """One note for every check judged on a derived form: on the failing check that measures
    what was left out (a visible one when there is one), never on each check that used it."""
    measures: dict[str, set[str]] = {}
    for feature, measuring in rubric.features.items():
        for check_id in measuring:
            measures.setdefault(check_id, set()).add(feature)
    told: dict[str, tuple[set[str], set[str]]] = {}  # measuring check -> (features, section titles)
    for check in plan.checks:
        judged = probe_for(check, results)
        fallback = next((f for f in check.fallbacks if f.probe == judged), None)
        if fallback is None or not fallback.derived:
            continue
        failing = [r for f in check.fallbacks for r in f.when_failing if r in results and not results[r].passed]
        failing.sort(key=lambda r: results[r].visibility is not Visibility.VISIBLE)
        # Each feature left out is told on the first failing check that measures it.
        for feature in rubric.probes[fallback.probe].without:
            owner = next((r for r in failing if feature in measures.get(r, set())), None)
            if owner is not None:
                features, sections = told.setdefault(owner, (set(), set()))
                features.add(feature)
                sections.add(rubric.section(check.section).title)
    for owner, (features, sections) in told.items():
        words = "; ".join(PLAIN_WORDS[f] for f in FEATURES if f in features)
        note = (
            f"Because this check fails, the checks of {', '.join(sorted(sections))} built their graphs without "
            f"what it measures ({words}): the same functions, so this fault is charged here, once."
        )
        result = results[owner]
        results[owner] = replace(result, notes=(*result.notes, note))


def _judging_order(checks: tuple[Check, ...]) -> list[Check]:
    """Plan order, except that a check comes after every check it depends on (the rubric
    loader has refused circles), and the student's own checks come last: they are judged
    against what every other check found."""
    by_id = {c.id: c for c in checks}
    ordered: list[Check] = []
    placed: set[str] = set()

    def place(check: Check) -> None:
        if check.id in placed:
            return
        placed.add(check.id)
        for needed in check.depends_on:
            if needed in by_id:
                place(by_id[needed])
        ordered.append(check)

    for check in sorted(checks, key=lambda c: c.compare in MUTATION_COMPARES):
        place(check)
    return ordered


def probe_for(check: Check, results: dict[str, CheckResult]) -> str:
    """The check's own probe, or the first of its fallbacks that names a check that has failed."""
    for fallback in check.fallbacks:
        if any(r in results and not results[r].passed for r in fallback.when_failing):
            return fallback.probe
    return check.probe


def _vouched(check: Check, result: CheckResult, twin: Context | None) -> CheckResult:
    """A check on the handout's printed numbers keeps its points only if the same comparison,
    on its hidden twin's random inputs, comes out right at least once on an instance where it
    means something (a gradient that is not 0): knowing (or forging) the printed answers is not
    computing them. It fails closed: a twin that did not run, or ran without one such match,
    vouches for nothing. Without the twin in the plan (self-check mode) the check stands."""
    if twin is None or not result.points:
        return result
    count = max(1, len(twin.probe.programs))
    ran = twin.report.end is not None and twin.report.end.status != "not_run"
    if ran and any(nontrivial(twin, i) and COMPARERS[check.compare](twin, i).ok for i in range(count)):
        return result
    why = (
        "the same quantities on hidden random inputs never came out right, so these printed values were not "
        "computed by the engine."
        if ran
        else "the same computation on hidden random inputs could not run, so nothing shows these printed values "
        "were computed by the engine."
    )
    return replace(
        result,
        points=0.0,
        outcome=Outcome.FAILED,
        message=f"{result.message} No credit: {why}",
        hint="Make the engine compute every value: checks on the handout's numbers count only when the same "
        "graph on other inputs works too.",
    )


# When no instance passed, the most telling cause names the outcome.
_CAUSES: tuple[tuple[VerdictKind, Outcome], ...] = (
    ("timeout", Outcome.TIMEOUT),
    ("error", Outcome.ERROR),
    ("not_run", Outcome.NOT_RUN),
)


def _result(check: Check, probe: PlannedProbe, verdicts: list[Verdict], ctx: Context, notes: list[str]) -> CheckResult:
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
    rows: tuple[FdRow, ...] = ()
    if visible and probe.programs:
        bad_index = min(verdicts.index(first_bad) if first_bad in verdicts else 0, len(probe.programs) - 1)
        built = describe(probe.programs[bad_index])
        drawn = check.compare in FIGURE_COMPARES and verdicts and verdicts[0].kind != "not_run"
        if drawn and (first_bad is not None or "graph" in probe.programs[bad_index].get("record", ())):
            figure = f"{probe.id}#{bad_index}"
        if check.expect_from == "math":
            rows = fd_rows(ctx)
    message = notes[0] if notes else _message(verdicts, first_bad, visible)
    comparisons: tuple[Comparison, ...] = ()
    if visible and first_bad is not None:
        comparisons = tuple(first_bad.comparisons)
    elif visible and verdicts:
        comparisons = tuple(verdicts[0].comparisons)
    output = ""
    if visible and check.compare == "checks_pass":
        clean = ctx.report.script("clean")
        output = clean.output if clean else ""
    elif visible and ctx.report.end:
        output = ctx.report.end.output
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
        fd_rows=rows,
        finite_difference=check.expect_from == "math",
    )


_HIDDEN_WORDS: dict[VerdictKind, str] = {
    "failed": "wrong values",
    "error": "your code raised an error",
    "timeout": "time limit reached",
    "not_run": "not run",
}


def _message(verdicts: list[Verdict], first_bad: Verdict | None, visible: bool) -> str:
    total = len(verdicts)
    if first_bad is None:
        if total == 1 and verdicts[0].note:
            return verdicts[0].note
        return "Passed." if total == 1 else f"Passed all {total} instances."
    failed = total - sum(v.ok for v in verdicts)
    if not visible:
        # Hidden checks say what kind of failure happened, never the inputs or values.
        kinds = sorted({v.kind for v in verdicts if not v.ok})
        return f"Failed {failed} of {total} hidden instance(s): " + "; ".join(_HIDDEN_WORDS[k] for k in kinds) + "."
    prefix = "" if total == 1 else f"Failed {failed} of {total} instances. "
    if first_bad.problem and not any(not c.ok and c.observed != "(not observed)" for c in first_bad.comparisons):
        return prefix + first_bad.problem
    wrong = [c for c in first_bad.comparisons if not c.ok]
    shown = "; ".join(f"{c.quantity}: expected {c.expected}, observed {c.observed}" for c in wrong[:3])
    more = f" (and {len(wrong) - 3} more)" if len(wrong) > 3 else ""
    extra = f" {first_bad.problem}" if first_bad.problem else ""
    return prefix + shown + more + "." + extra
