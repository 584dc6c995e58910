"""Misconception diagnosis: what each catalogue bug looks like to the grader, and who has it.

Every catalogue operator is applied to the *reference* and the probe plan is run against the
result on the host (trusted code only; cached per rubric and plan). What a mutant observes
differently from the reference is its fingerprint. A student's differing observations are
matched against the fingerprints: a match names the misconception in plain words with the
handout part that explains it. When nothing matches, the diagnosis lists, node by node, what
differs. The same mutant runs give ``grader rubric validate`` its kill matrix.
"""

from __future__ import annotations

import ast
import contextlib
import io
import threading
import types
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sandbox.harness import syntax, wire
from sandbox.harness.probes import programs as executors

from ..engines import ENGINE, wheats
from ..mutate import CATALOGUE, FAMILIES, INFO, mutate
from ..plan import Plan, PlannedProbe
from ..program import describe
from ..results import CheckResult, Diagnosis, Visibility
from ..rubric import CORE_SUFFIX, Rubric
from .expected import REFERENCE, Expected, compute_expected, observe
from .records import Observed, SandboxReport
from .verdicts import judge
from .wording import NOT_OBSERVED, fmt

Key = tuple[str, int, str]  # (probe id, program index, observed quantity)
Differences = dict[Key, Observed]  # what a student (or a mutant) observes differently, by where
MISSING = NOT_OBSERVED
MATCH_SHARE = 0.9  # share of a fingerprint's observations that must also be wrong for the student
MUTATION_SECTION = "bug_injection"


@dataclass(frozen=True)
class MutantRun:
    """One catalogue mutant of the reference, observed on the host."""

    operator: str
    family: str
    applicable: str  # "" when applied, else why not
    report: SandboxReport | None
    fingerprint: Differences  # observations that differ from the reference
    failing: tuple[str, ...]  # check ids the mutant fails (mutation section excluded)
    own_checks_fail: bool  # the reference's own checks (python autograd_lab.py) catch it


# --- observing an engine on the host ----------------------------------------------------------------


def differing(expected: Expected, plan: Plan, report: SandboxReport) -> Differences:
    """Every observed number that differs from the reference's, with the observed value."""
    out: Differences = {}
    for probe in plan.probes:
        # A derived probe (the same graphs without a feature) repeats its original's evidence.
        if probe.kind != wire.PROGRAM or probe.id.endswith(CORE_SUFFIX):
            continue
        got_probe = report.probe(probe.id)
        for index in range(len(probe.programs)):
            want = expected.program(probe.id, index)
            got = got_probe.observations(index)
            for key, value in want.items():
                if not isinstance(value, float):
                    continue  # orders and labels legitimately differ between correct engines
                seen = got.get(key, MISSING)
                if not executors.same_value(value, seen):
                    out[(probe.id, index, key)] = seen
    return out


# --- the reference's mutants -------------------------------------------------------------------------


def _compile_mutant(tree: ast.Module, name: str, path: Path) -> types.ModuleType:
    module = types.ModuleType(f"grader_reference_mutant_{name}")
    module.__file__ = str(path)
    exec(compile(tree, str(path), "exec"), module.__dict__)
    return module


def _own_checks_fail(tree: ast.Module, path: Path) -> bool:
    """Run the reference's own checks (its ``__main__`` block) on a mutant; True if they fail."""
    module = types.ModuleType("__main__")
    module.__file__ = str(path)
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            exec(compile(tree, str(path), "exec"), module.__dict__)
    except BaseException:  # an AssertionError or any crash: the checks caught the bug
        return True
    return False


_CACHE: dict[tuple[str, int, tuple[str, ...], str], tuple[MutantRun, ...]] = {}
# Batch workers judge in threads: the first computes the fingerprints, the others wait for them.
_CACHE_LOCK = threading.Lock()


def reference_mutants(rubric: Rubric, plan: Plan, *, reference: Path = REFERENCE) -> tuple[MutantRun, ...]:
    """Every catalogue mutant of the reference, observed and judged; cached per rubric and plan."""
    key = (rubric.sha256, plan.seed, tuple(c.id for c in plan.checks), str(reference))
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = _observe_mutants(rubric, plan, reference)
        return _CACHE[key]


def _observe_mutants(rubric: Rubric, plan: Plan, reference: Path) -> tuple[MutantRun, ...]:
    source = reference.read_text(encoding="utf-8")
    tree = syntax.parse(source, filename=str(reference))
    expected = compute_expected(plan, class_name=rubric.class_name, reference=reference)
    graded = Plan(plan.seed, plan.probes, tuple(c for c in plan.checks if c.section != MUTATION_SECTION))
    runs = []
    for op in CATALOGUE:
        try:
            mutated, _ = mutate(tree, op.id, rubric.class_name)
        except Exception as error:  # NotApplicable on the reference is a rubric-validation error
            runs.append(MutantRun(op.id, op.family, str(error) or type(error).__name__, None, {}, (), False))
            continue
        module = _compile_mutant(mutated, op.id, reference)
        engine = getattr(module, rubric.class_name)
        # Sets of nodes iterate as in the sandbox only if the class hashes as it does there.
        report = observe(engine, graded, numbered=engine.__hash__ is object.__hash__)
        checks = judge(rubric, graded, expected, report)
        runs.append(
            MutantRun(
                op.id,
                op.family,
                "",
                report,
                differing(expected, graded, report),
                tuple(c.check_id for c in checks if not c.passed),
                _own_checks_fail(mutated, reference),
            )
        )
    return tuple(runs)


def wheat_failures(
    rubric: Rubric, plan: Plan, *, reference: Path = REFERENCE
) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """Each wheat (a correct engine the student's checks run on) graded by the grader's own
    checks on the host: (id, title, the checks it fails). A wheat that fails one is no wheat."""
    expected = compute_expected(plan, class_name=rubric.class_name, reference=reference)
    graded = Plan(plan.seed, plan.probes, tuple(c for c in plan.checks if c.section != MUTATION_SECTION))
    rows = []
    for wheat in wheats(reference):
        module = types.ModuleType(f"grader_wheat_{wheat.id.replace('.', '_')}")
        exec(compile(wheat.text, f"<{wheat.id}>", "exec"), module.__dict__)
        engine = getattr(module, ENGINE)
        report = observe(engine, graded, numbered=engine.__hash__ is object.__hash__)
        failing = tuple(c.check_id for c in judge(rubric, graded, expected, report) if not c.passed)
        rows.append((wheat.id, wheat.title, failing))
    return tuple(rows)


# --- the kill matrix ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KillMatrix:
    sections: tuple[str, ...]
    rows: tuple[tuple[str, str, tuple[bool, ...]], ...]  # (operator, family, killed per section)
    not_applicable: tuple[tuple[str, str], ...]  # (operator, why) on the reference

    @property
    def blind_spots(self) -> tuple[str, ...]:
        """Mutants no grading section catches: the rubric cannot see that bug in a student's engine.

        The bug-injection column (the reference's own checks) does not count: it says nothing
        about whether the grader would notice the bug in a submitted engine."""
        grading = [i for i, s in enumerate(self.sections) if s != MUTATION_SECTION]
        return tuple(op for op, _, kills in self.rows if not any(kills[i] for i in grading))

    def predicted(self, operator: str) -> tuple[str, ...]:
        """The sections an engine with this bug loses points in. Never bug injection: that section
        judges the student's checks on the grader's engines, whatever the student's engine does."""
        for op, _, kills in self.rows:
            if op == operator:
                return tuple(s for s, k in zip(self.sections, kills, strict=True) if k and s != MUTATION_SECTION)
        raise KeyError(operator)

    def render(self) -> str:
        width = max(len(op) for op, _, _ in self.rows) if self.rows else 10
        head = " " * (width + 8) + "  ".join(self.sections)
        lines = [head]
        for op, family, kills in self.rows:
            cells = "  ".join(("K" if k else ".").center(len(s)) for s, k in zip(self.sections, kills, strict=True))
            lines.append(f"{op.ljust(width)}  {family.ljust(6)}{cells}")
        for op, why in self.not_applicable:
            lines.append(f"{op.ljust(width)}  not applicable to the reference: {why}")
        return "\n".join(lines)


def kill_matrix(rubric: Rubric, plan: Plan, *, reference: Path = REFERENCE) -> KillMatrix:
    sections = tuple(s.tag for s in rubric.sections)
    by_check = {c.id: c.section for c in rubric.checks}
    rows = []
    missing = []
    for run in reference_mutants(rubric, plan, reference=reference):
        if run.applicable:
            missing.append((run.operator, run.applicable))
            continue
        hit = {by_check[c] for c in run.failing}
        if run.own_checks_fail:
            hit.add(MUTATION_SECTION)
        rows.append((run.operator, run.family, tuple(s in hit for s in sections)))
    return KillMatrix(sections, tuple(rows), tuple(missing))


# --- matching a student ---------------------------------------------------------------------------------


def _match(fingerprint: Differences, remaining: Differences) -> tuple[bool, tuple[float, float], set[Key]]:
    """Does a mutant's fingerprint explain the student's remaining differences?

    The same observations must be wrong (nearly all of the fingerprint, and a good share of
    what is left to explain). Equal wrong *values* are strong extra evidence but not required:
    with = instead of +=, or a broken visit order, the wrong values depend on the order a
    particular engine happens to visit nodes, while *which* values are wrong does not.
    Returns (matches, ranking key, explained keys).
    """
    if not fingerprint or not remaining:
        return False, (0.0, 0.0), set()
    shared = set(fingerprint) & set(remaining)
    cover = len(shared) / len(fingerprint)
    jaccard = len(shared) / len(set(fingerprint) | set(remaining))
    agree = sum(executors.same_value(fingerprint[k], remaining[k]) for k in shared) / max(1, len(shared))
    explains = len(shared) / len(remaining)
    # Either nearly all of the fingerprint shows, or everything left lies inside most of it (a
    # related bug, e.g. a breadth-first order instead of a missing visited check, differs on
    # fewer random graphs than the catalogue's version but on no graph outside its footprint).
    ok = (cover >= MATCH_SHARE and (jaccard >= 0.6 or (agree >= 0.8 and explains >= 0.2))) or (
        explains >= 0.9 and cover >= 0.6
    )
    return ok, (jaccard, agree), shared


def diagnose(
    rubric: Rubric, plan: Plan, expected: Expected, report: SandboxReport, checks: Iterable[CheckResult]
) -> tuple[Diagnosis, ...]:
    """Name the misconception(s) behind a student's wrong observations, or list what differs."""
    student = differing(expected, plan, report)
    if not student:
        return ()
    results = {c.check_id: c for c in checks}
    probe_checks: dict[str, list[str]] = {}
    for check in plan.checks:
        probe_checks.setdefault(check.probe, []).append(check.id)
    remaining = dict(student)
    found: list[Diagnosis] = []
    runs = [r for r in reference_mutants(rubric, plan) if r.fingerprint]
    while remaining and len(found) < 3:
        best: tuple[tuple[float, float], MutantRun, set[Key]] | None = None
        for run in runs:
            ok, rank, explained = _match(run.fingerprint, remaining)
            if ok and (best is None or rank > best[0]):
                best = (rank, run, explained)
        if best is None:
            break
        (_, _), run, explained = best
        runs.remove(run)
        info = INFO[run.operator]
        explained_checks = sorted(
            {c for probe, _, _ in explained for c in probe_checks.get(probe, []) if not results[c].passed}
        )
        found.append(
            Diagnosis(
                run.operator,
                run.family,
                info.misconception,
                info.handout,
                _evidence(plan, explained, expected, student),
                round(len(explained) / len(run.fingerprint), 3),
                tuple(explained_checks),
            )
        )
        for key in explained:
            remaining.pop(key, None)
    if not found:
        found.append(_unmatched(plan, expected, student, "No single known bug explains these differences."))
    elif len(remaining) >= 0.1 * len(student):
        found.append(_unmatched(plan, expected, remaining, "Other differences no known bug explains."))
    return tuple(found)


def _visible_probes(plan: Plan) -> set[str]:
    return {c.probe for c in plan.checks if c.visibility is Visibility.VISIBLE}


def _evidence(plan: Plan, keys: Iterable[Key], expected: Expected, student: Differences) -> str:
    visible = _visible_probes(plan)
    shown = sorted((k for k in keys if k[0] in visible), key=lambda k: (len(plan.probe(k[0]).programs), k))
    if not shown:
        return "seen in hidden checks (their inputs are not shown)"
    probe_id, index, quantity = shown[0]
    probe: PlannedProbe = plan.probe(probe_id)
    want = expected.program(probe_id, index).get(quantity)
    built = "; ".join(line.strip() for line in describe(probe.programs[index]).splitlines() if line.strip())
    return f"{quantity} is {fmt(student[shown[0]])} (expected {fmt(want)}) for {built}"


def _unmatched(plan: Plan, expected: Expected, student: Differences, lead: str) -> Diagnosis:
    visible = _visible_probes(plan)
    shown = sorted(k for k in student if k[0] in visible)
    lines = []
    for probe_id, index, quantity in shown[:6]:
        want = expected.program(probe_id, index).get(quantity)
        got = student[(probe_id, index, quantity)]
        lines.append(f"{probe_id}: {quantity} expected {fmt(want)}, observed {fmt(got)}")
    hidden = len(student) - len(shown)
    if lines:
        text = "Per node: " + "; ".join(lines) + (f" (and {len(shown) - len(lines)} more)" if len(shown) > 6 else "")
        if hidden:
            text += f"; {hidden} more in hidden checks"
    else:
        text = f"{hidden} observed values differ, all in hidden checks (their inputs are not shown)"
    families = ", ".join(f"{k} ({v})" for k, v in FAMILIES.items())
    return Diagnosis(
        "",
        "",
        f"{lead} {text}.",
        f"each op's local rule in Part 3, then the usual suspects: {families}",
        "",
        0.0,
        (),
    )
