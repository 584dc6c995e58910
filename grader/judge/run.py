"""Judge one sandbox run: parse its records, compare with the expected values, explain.

This is the judge stage's one entry point. It reads only typed records (``parse``) and
trusted expectations (``expected``); every point, the run's status, the diagnoses, the
figures and the Step-5 note are decided here, on the host.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, replace

from ..plan import Plan
from ..results import CheckResult, Diagnosis, GraphFigure, LoadReport, Outcome, Status
from ..rubric import Rubric
from ..runners.base import RawRun
from .counterexample import with_counterexamples
from .diagnose import diagnose
from .expected import compute_expected
from .illustrations import build_figures
from .parse import parse_output
from .status import load_report, run_status
from .step5_note import Step5Note, find_note
from .verdicts import judge


@dataclass(frozen=True)
class Judgement:
    """Everything the judge decided about one submission, before it becomes a result."""

    checks: tuple[CheckResult, ...]
    status: Status
    detail: str  # one sentence: why the status is what it is
    load: LoadReport
    diagnoses: tuple[Diagnosis, ...] = ()
    note: Step5Note | None = None  # None when the file was never read (nothing ran)
    figures: tuple[GraphFigure, ...] = ()


def judge_run(rubric: Rubric, plan: Plan, raw: RawRun, *, nonce: str, source: bytes) -> Judgement:
    expected = compute_expected(plan, class_name=rubric.class_name)
    report = parse_output(raw.stdout, nonce=nonce, plan=plan)
    checks = judge(rubric, plan, expected, report)
    status, detail = run_status(raw, report, checks)
    if status is Status.INFRA_ERROR:
        return without_run(plan, status, detail)
    diagnoses = diagnose(rubric, plan, expected, report, checks) if report.loaded else ()
    checks = _with_misconceptions(checks, diagnoses)
    checks = with_counterexamples(plan, rubric, report, checks) if report.loaded else checks
    text = importlib.util.decode_source(source)
    return Judgement(
        checks=tuple(checks),
        status=status,
        detail=detail,
        load=load_report(report, rubric, text, plan),
        diagnoses=diagnoses,
        note=find_note(text),
        figures=build_figures(rubric, plan, expected, report, checks),
    )


def without_run(plan: Plan, status: Status, detail: str) -> Judgement:
    """A submission that never ran (ungradable input, or an infrastructure failure): every
    planned check is not run, for that reason."""
    checks = tuple(
        CheckResult(
            check_id=c.id,
            title=c.title,
            section=c.section,
            visibility=c.visibility,
            points=0.0,
            max_points=c.points,
            outcome=Outcome.NOT_RUN,
            built="",
            message=f"Not run: {detail}.",
            hint="",
        )
        for c in plan.checks
    )
    return Judgement(checks, status, detail, LoadReport(ok=False, mode="failed", class_name="", error=detail))


def _with_misconceptions(checks: list[CheckResult], diagnoses: tuple[Diagnosis, ...]) -> list[CheckResult]:
    """Each failing check a diagnosis explains carries its misconception, with where to read more."""
    named: dict[str, str] = {}
    for found in diagnoses:
        for check_id in found.checks:
            named.setdefault(check_id, f"{found.misconception} See {found.handout}.")
    return [replace(c, misconception=named[c.check_id]) if c.check_id in named else c for c in checks]
