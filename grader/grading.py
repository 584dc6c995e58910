"""Grade one submission end to end: intake -> plan -> sandbox -> judge -> result.

This is the keyword-only Python API the CLI is a thin layer over.
"""

from __future__ import annotations

import hashlib
import importlib.util
import secrets
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .diagnose import diagnose
from .errors import InfraError
from .expected import compute_expected
from .judge import build_figures, judge
from .plan import Plan, build_plan
from .protocol import HarnessReport, parse_output
from .results import CheckResult, Diagnosis, GraphFigure, LoadReport, Outcome, SectionResult, Status, SubmissionResult
from .rubric import Rubric
from .runners.base import Limits, RawRun, Runner
from .step5_note import Step5Note, find_note

INFRA_RETRIES = 1


def runner_limits(rubric: Rubric) -> Limits:
    lim = rubric.limits
    return Limits(
        wall_seconds=lim.wall_seconds,
        memory_mb=lim.memory_mb,
        cpus=lim.cpus,
        pids=lim.pids,
        stdout_bytes=lim.stdout_kb * 1024,
        tmpfs_mb=lim.tmpfs_mb,
    )


def intake(path: Path, max_bytes: int) -> tuple[bytes | None, str]:
    """The file's bytes, or None and why it cannot be graded at all."""
    if not path.is_file():
        return None, f"no file named {path.name} was submitted"
    with path.open("rb") as handle:
        raw = handle.read(max_bytes + 1)
    why = source_problem(raw, path.name, max_bytes)
    return (None, why) if why else (raw, "")


def source_problem(raw: bytes, name: str, max_bytes: int) -> str:
    """Why these bytes cannot be graded as a Python file ("" when they can)."""
    if len(raw) > max_bytes:
        return f"{name} is over the {max_bytes // 1024} KiB limit"
    if b"\x00" in raw:
        return f"{name} is not a text file (it contains NUL bytes)"
    try:
        importlib.util.decode_source(raw)
    except (SyntaxError, UnicodeDecodeError, LookupError) as error:
        return f"{name} is not readable Python text (save it as UTF-8): {error}"
    return ""


@dataclass(frozen=True)
class Evidence:
    """What the sandbox returned for one submission, kept so that a rubric change that does not
    change the plan (points, titles, hints, tolerances) is re-judged without running again."""

    raw: RawRun
    nonce: str
    plan_digest: str


@dataclass(frozen=True)
class Graded:
    result: SubmissionResult
    evidence: Evidence | None  # None when nothing ran to completion (ungradable, infra error)


def plan_digest(rubric: Rubric, plan: Plan) -> str:
    """What the sandbox is asked to do, without the per-run nonce: equal digests, equal runs."""
    return hashlib.sha256(plan.to_bytes(rubric, nonce="", isolate=True)).hexdigest()


def grade_submission(
    path: Path,
    *,
    student: str,
    rubric: Rubric,
    runner: Runner,
    seed: int,
    visible_only: bool = False,
) -> SubmissionResult:
    source, why = intake(path, rubric.limits.max_file_kb * 1024)
    return grade_source(
        source, why, student=student, rubric=rubric, runner=runner, seed=seed, visible_only=visible_only
    ).result


def grade_source(
    source: bytes | None,
    why: str,
    *,
    student: str,
    rubric: Rubric,
    runner: Runner,
    seed: int,
    visible_only: bool = False,
) -> Graded:
    """Grade one submission's bytes (None with ``why`` when there is nothing to grade)."""
    started = time.monotonic()
    plan = build_plan(rubric, seed=seed, visible_only=visible_only)
    hidden_not_run = len(rubric.checks) - len(plan.checks)
    if source is not None:
        why = source_problem(source, rubric.filename, rubric.limits.max_file_kb * 1024)
    if source is None or why:
        result = _without_run(
            rubric, plan, student, Status.UNGRADABLE, why, seed, runner.name, started, hidden_not_run, visible_only
        )
        return Graded(result, None)
    try:
        raw, nonce = _run_with_retry(runner, rubric, plan, source)
    except InfraError as error:
        result = _without_run(
            rubric,
            plan,
            student,
            Status.INFRA_ERROR,
            f"the sandbox failed: {error}",
            seed,
            runner.name,
            started,
            hidden_not_run,
            visible_only,
        )
        return Graded(result, None)
    result = _judge_run(rubric, plan, raw, nonce, source, student, seed, started, hidden_not_run, visible_only)
    evidence = None if result.status is Status.INFRA_ERROR else Evidence(raw, nonce, plan_digest(rubric, plan))
    return Graded(result, evidence)


def rejudge(
    evidence: Evidence, source: bytes, *, student: str, rubric: Rubric, seed: int, visible_only: bool = False
) -> SubmissionResult | None:
    """Judge a stored sandbox run against (a new version of) the rubric; None when the rubric's
    plan differs from the one that ran, so the submission has to run again."""
    started = time.monotonic()
    plan = build_plan(rubric, seed=seed, visible_only=visible_only)
    if plan_digest(rubric, plan) != evidence.plan_digest:
        return None
    hidden_not_run = len(rubric.checks) - len(plan.checks)
    return _judge_run(
        rubric, plan, evidence.raw, evidence.nonce, source, student, seed, started, hidden_not_run, visible_only
    )


def _judge_run(
    rubric: Rubric,
    plan: Plan,
    raw: RawRun,
    nonce: str,
    source: bytes,
    student: str,
    seed: int,
    started: float,
    hidden_not_run: int,
    visible_only: bool,
) -> SubmissionResult:
    expected = compute_expected(plan, class_name=rubric.class_name)
    report = parse_output(raw.stdout, nonce=nonce, plan=plan)
    checks = judge(rubric, plan, expected, report)
    status, detail = _status(raw, report, checks)
    if status is Status.INFRA_ERROR:
        return _without_run(
            rubric,
            plan,
            student,
            status,
            detail,
            seed,
            raw.runner,
            started,
            hidden_not_run,
            visible_only,
            image=raw.image,
        )
    diagnoses = diagnose(rubric, plan, expected, report, checks) if report.load and report.load.get("ok") else ()
    checks = _with_misconceptions(checks, diagnoses)
    figures = build_figures(rubric, plan, expected, report, checks)
    note = find_note(importlib.util.decode_source(source))
    return _assemble(
        rubric,
        plan,
        student,
        checks,
        status,
        detail,
        _load_report(report, rubric),
        seed,
        raw,
        started,
        hidden_not_run,
        visible_only,
        diagnoses=diagnoses,
        note=note,
        figures=figures,
    )


def _with_misconceptions(checks: list[CheckResult], diagnoses: tuple[Diagnosis, ...]) -> list[CheckResult]:
    """Each failing check a diagnosis explains carries its misconception, with where to read more."""
    named: dict[str, str] = {}
    for found in diagnoses:
        for check_id in found.checks:
            named.setdefault(check_id, f"{found.misconception} See {found.handout}.")
    return [replace(c, misconception=named[c.check_id]) if c.check_id in named else c for c in checks]


def _run_with_retry(runner: Runner, rubric: Rubric, plan: Plan, source: bytes) -> tuple[RawRun, str]:
    """Run the sandbox; an infrastructure failure is retried, each time with a fresh nonce."""
    for attempt in range(INFRA_RETRIES + 1):
        nonce = secrets.token_hex(16)
        body = plan.to_bytes(rubric, nonce=nonce, isolate=runner.name == "docker")
        try:
            return runner.run(source=source, filename=rubric.filename, plan=body, limits=runner_limits(rubric)), nonce
        except InfraError:
            if attempt == INFRA_RETRIES:
                raise
    raise InfraError("no sandbox attempt was made")  # only reachable with a negative retry count


def _status(raw: RawRun, report: HarnessReport, checks: list[CheckResult]) -> tuple[Status, str]:
    """Every condition the run met, resolved by the Status enum's precedence (the worst wins)."""
    ends = [p.end for p in report.probes.values() if p.end]
    errors = [e.get("error", {}).get("type") for p in report.probes.values() for e in p.errors.values()]
    found: list[tuple[Status, str]] = []
    clean: dict[str, Any] = next(
        (p.mutants["clean"].get("script", {}) for p in report.probes.values() if "clean" in p.mutants), {}
    )
    memory_at_import = (report.load or {}).get("memory_error")
    if raw.oom_killed or "MemoryError" in errors or memory_at_import or clean.get("exception") == "MemoryError":
        found.append((Status.OOM, "the submission ran out of memory; results up to that point are kept"))
    flooded = (report.load or {}).get("output_limit") or clean.get("exception") == "OutputLimit"
    if raw.stdout_truncated or flooded or any(e["status"] == "output_limit" for e in ends):
        found.append((Status.OUTPUT_LIMIT, "the submission printed more output than allowed and was stopped"))
    if (report.load or {}).get("timed_out"):
        found.append(
            (Status.TIMEOUT, "importing the file did not finish within its time limit; its definitions were graded")
        )
    if clean.get("outcome") == "timeout":
        found.append((Status.TIMEOUT, "python autograd_lab.py (your own checks) did not finish within its time limit"))
    if raw.timed_out or any(e["status"] in ("timeout", "deadline") or e.get("signal") == "SIGXCPU" for e in ends):
        timed_out = [c.title for c in checks if c.outcome is Outcome.TIMEOUT]
        where = f" (first in: {timed_out[0]})" if timed_out else ""
        found.append(
            (Status.TIMEOUT, f"part of the submission hit its time limit{where}; results that finished are kept")
        )
    if not report.complete and not found:
        tail = raw.stderr_tail.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit code {raw.exit_code}"]
        found.append((Status.INFRA_ERROR, f"the grading harness stopped before finishing ({tail[0][:200]})"))
    return max(found, key=lambda item: item[0].rank, default=(Status.GRADED, "graded"))


def _load_report(report: HarnessReport, rubric: Rubric) -> LoadReport:
    load = report.load or {}
    notices = list(load.get("notices", []))
    for name in load.get("stand_ins_used", []):
        notices.append(f"'{name}' is not installed in the grader; an inert stand-in was used (drawing does nothing).")
    if load.get("extra_args"):
        notices.append(
            f"{load.get('class_name')}(...) requires extra argument(s) {', '.join(load['extra_args'])}; "
            "placeholders were passed so the engine could still be graded."
        )
    if any((p.end or {}).get("lingering") for p in report.probes.values()):
        notices.append(
            "A process your code started (a background or daemon process) kept running after your code finished; "
            "it was stopped each time. Do not leave processes running in autograd_lab.py."
        )
    error = load.get("error") or {}
    message = ""
    if not load.get("ok"):
        text = error.get("message", "the file could not be loaded")
        line = f" (line {error['line']})" if error.get("line") and f"line {error['line']}" not in text else ""
        kind = "" if error.get("type") == "LoadError" else f"{error.get('type', 'Error')}: "
        message = f"{kind}{text}{line}"
        if not load:
            message = "the sandbox reported nothing about loading the file"
    return LoadReport(
        ok=bool(load.get("ok")),
        mode=str(load.get("mode") or "failed"),
        class_name=str(load.get("class_name") or ""),
        notices=tuple(notices),
        error=message,
    )


def _sections(rubric: Rubric, checks: list[CheckResult], plan: Plan) -> tuple[SectionResult, ...]:
    planned = {c.id for c in plan.checks}
    out = []
    for section in rubric.sections:
        mine = [c for c in checks if c.section == section.tag]
        maximum = sum(c.points for c in section.checks if c.id in planned)
        out.append(SectionResult(section.tag, section.title, round(sum(c.points for c in mine), 2), maximum))
    return tuple(out)


def _assemble(
    rubric: Rubric,
    plan: Plan,
    student: str,
    checks: list[CheckResult],
    status: Status,
    detail: str,
    load: LoadReport,
    seed: int,
    raw: RawRun,
    started: float,
    hidden_not_run: int,
    visible_only: bool,
    *,
    diagnoses: tuple[Diagnosis, ...],
    note: Step5Note,
    figures: tuple[GraphFigure, ...],
) -> SubmissionResult:
    sections = _sections(rubric, checks, plan)
    review = [] if note.complete or not load.ok else [note.summary()]
    return SubmissionResult(
        student=student,
        filename=rubric.filename,
        status=status,
        score=round(sum(c.points for c in checks), 2),
        max_score=sum(s.max_points for s in sections),
        sections=sections,
        checks=tuple(checks),
        load=load,
        status_detail=detail,
        rubric_name=rubric.name,
        rubric_sha=rubric.sha256,
        seed=seed,
        runner=raw.runner,
        image=raw.image,
        execution_time=round(time.monotonic() - started, 3),
        visible_only=visible_only,
        hidden_not_run=hidden_not_run,
        diagnoses=diagnoses,
        step5_note=note.summary() if load.ok else "",
        review=tuple(review),
        figures=figures,
    )


def _without_run(
    rubric: Rubric,
    plan: Plan,
    student: str,
    status: Status,
    detail: str,
    seed: int,
    runner: str,
    started: float,
    hidden_not_run: int,
    visible_only: bool,
    image: str = "",
) -> SubmissionResult:
    """A result for a submission that never ran: ungradable input, or an infrastructure failure."""
    checks = [
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
    ]
    sections = _sections(rubric, checks, plan)
    return SubmissionResult(
        student=student,
        filename=rubric.filename,
        status=status,
        score=0.0,
        max_score=sum(s.max_points for s in sections),
        sections=sections,
        checks=tuple(checks),
        load=LoadReport(ok=False, mode="failed", class_name="", error=detail),
        status_detail=detail,
        rubric_name=rubric.name,
        rubric_sha=rubric.sha256,
        seed=seed,
        runner=runner,
        image=image,
        execution_time=round(time.monotonic() - started, 3),
        visible_only=visible_only,
        hidden_not_run=hidden_not_run,
    )
