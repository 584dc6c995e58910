"""Grade one submission: intake -> plan -> sandbox -> judge -> result. Orchestration only.

This is the keyword-only Python API the CLI, the batch and the validator are thin layers
over. Each stage lives in its own module; here a frozen ``Job`` carries what a grading
needs from one stage to the next.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InfraError
from .intake.source import intake, source_problem
from .judge.progress import OnSection, SectionWatch
from .judge.run import Judgement, judge_run, without_run
from .part_runs import run_parts
from .plan import Plan, build_plan
from .results import CheckResult, SectionResult, Status, SubmissionResult
from .rubric import Rubric
from .runners.base import ContainerLimits, Evidence, RawRun, Runner

# A sandbox failure is retried this many times within one grading, each with a fresh nonce.
SANDBOX_RETRIES = 1
# Why a person should look at a file that does not load: one slip may have cost every point.
NOT_LOADABLE_REVIEW = "The file does not load, so every check scored 0."


@dataclass(frozen=True)
class Job:
    """One grading: whose file, against which rubric and seed, visible checks only or all."""

    student: str
    rubric: Rubric
    seed: int
    visible_only: bool = False
    plan: Plan = field(init=False)
    started: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "plan", build_plan(self.rubric, seed=self.seed, visible_only=self.visible_only))
        object.__setattr__(self, "started", time.monotonic())

    @property
    def hidden_not_run(self) -> int:
        return len(self.rubric.checks) - len(self.plan.checks)

    @property
    def max_bytes(self) -> int:
        return self.rubric.limits.max_file_kb * 1024


@dataclass(frozen=True)
class Graded:
    result: SubmissionResult
    evidence: Evidence | None  # None when nothing ran to completion (ungradable, infra error)


def container_limits(rubric: Rubric) -> ContainerLimits:
    lim = rubric.limits
    return ContainerLimits(
        wall_seconds=lim.wall_seconds,
        memory_mb=lim.memory_mb,
        cpus=lim.cpus,
        pids=lim.pids,
        stdout_bytes=lim.stdout_kb * 1024,
        tmpfs_mb=lim.tmpfs_mb,
    )


def plan_digest(rubric: Rubric, plan: Plan) -> str:
    """What the sandbox is asked to do, without the per-run nonce: equal digests, equal runs."""
    return hashlib.sha256(plan.to_bytes(rubric, nonce="", isolate=True)).hexdigest()


def grade_submission(
    path: Path,
    *,
    student: str,
    rubric: Rubric,
    runner: Runner,
    seed: int | None = None,
    visible_only: bool = False,
) -> SubmissionResult:
    """Grade one file; ``seed`` defaults to the assignment's (the rubric's)."""
    source, why = intake(path, rubric.limits.max_file_kb * 1024)
    return grade_source(
        source,
        why,
        student=student,
        rubric=rubric,
        runner=runner,
        seed=rubric.seed if seed is None else seed,
        visible_only=visible_only,
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
    on_section: OnSection | None = None,
) -> Graded:
    """Grade one submission's bytes (None with ``why`` when there is nothing to grade).
    ``on_section`` hears of each section as soon as it is settled, while the sandbox still runs
    (``judge.progress``); a section may be heard of again after a retried sandbox run."""
    job = Job(student, rubric, seed, visible_only)
    if source is not None:
        why = source_problem(source, rubric.filename, job.max_bytes)
    if source is None or why:
        return Graded(_result(job, without_run(job.plan, Status.UNGRADABLE, why), runner.name, ""), None)
    try:
        raw, nonce = _run_with_retry(runner, job, source, on_section)
    except InfraError as error:
        judged = without_run(job.plan, Status.INFRA_ERROR, f"the sandbox failed: {error}")
        return Graded(_result(job, judged, runner.name, ""), None)
    judged = judge_run(rubric, job.plan, raw, nonce=nonce, source=source)
    result = _result(job, judged, raw.runner, raw.image)
    evidence = None if result.status is Status.INFRA_ERROR else Evidence(raw, nonce, plan_digest(rubric, job.plan))
    return Graded(result, evidence)


def rejudge(
    evidence: Evidence, source: bytes, *, student: str, rubric: Rubric, seed: int, visible_only: bool = False
) -> SubmissionResult | None:
    """Judge a stored sandbox run against (a new version of) the rubric; None when the rubric's
    plan differs from the one that ran, so the submission has to run again."""
    job = Job(student, rubric, seed, visible_only)
    if plan_digest(rubric, job.plan) != evidence.plan_digest:
        return None
    judged = judge_run(rubric, job.plan, evidence.raw, nonce=evidence.nonce, source=source)
    return _result(job, judged, evidence.raw.runner, evidence.raw.image)


def _run_with_retry(runner: Runner, job: Job, source: bytes, on_section: OnSection | None = None) -> tuple[RawRun, str]:
    """Run the sandbox; an infrastructure failure is retried, each time with a fresh nonce."""
    rubric = job.rubric
    for attempt in range(SANDBOX_RETRIES + 1):
        nonce = secrets.token_hex(16)
        watch = (
            SectionWatch(rubric, job.plan, nonce=nonce, on_section=on_section, attempt=attempt) if on_section else None
        )
        try:
            raw = run_parts(
                runner,
                source=source,
                filename=rubric.filename,
                body=_bodies(job, nonce, runner.isolates),
                limits=container_limits(rubric),
                nonce=nonce,
                parts=job.plan.dealt(),
                on_line=watch.feed if watch else None,
            )
            return raw, nonce
        except InfraError:
            if attempt == SANDBOX_RETRIES:
                raise
    raise InfraError("no sandbox attempt was made")  # only reachable with a negative retry count


def _bodies(job: Job, nonce: str, isolate: bool) -> Callable[[tuple[int, ...]], bytes]:
    def body(parts: tuple[int, ...]) -> bytes:
        return job.plan.to_bytes(job.rubric, nonce=nonce, isolate=isolate, parts=parts)

    return body


def _sections(job: Job, checks: tuple[CheckResult, ...]) -> tuple[SectionResult, ...]:
    planned = {c.id for c in job.plan.checks}
    out = []
    for section in job.rubric.sections:
        mine = [c for c in checks if c.section == section.tag]
        maximum = sum(c.points for c in section.checks if c.id in planned)
        out.append(SectionResult(section.tag, section.title, round(sum(c.points for c in mine), 2), maximum))
    return tuple(out)


def _result(job: Job, judged: Judgement, runner: str, image: str) -> SubmissionResult:
    """The one result model every report is written from."""
    sections = _sections(job, judged.checks)
    note = judged.note
    loaded = judged.load.ok and note is not None
    return SubmissionResult(
        student=job.student,
        filename=job.rubric.filename,
        status=judged.status,
        # The sections' sum, not the checks' rounded apart: every export adds the sections up to it.
        score=round(sum(s.points for s in sections), 2),
        max_score=sum(s.max_points for s in sections),
        sections=sections,
        checks=judged.checks,
        load=judged.load,
        status_detail=judged.detail,
        rubric_name=job.rubric.name,
        rubric_sha=job.rubric.sha256,
        seed=job.seed,
        runner=runner,
        image=image,
        execution_time=round(time.monotonic() - job.started, 3),
        visible_only=job.visible_only,
        hidden_not_run=job.hidden_not_run,
        diagnoses=judged.diagnoses,
        step5_note=note.summary() if loaded and note else "",
        review=_review(judged),
        figures=judged.figures,
    )


def _review(judged: Judgement) -> tuple[str, ...]:
    """Why a person should look: a file that does not load (every point lost, perhaps to one
    slip), or a Step-5 note that is missing or one-sided."""
    if judged.status is Status.NOT_LOADABLE:
        return (NOT_LOADABLE_REVIEW,)
    note = judged.note
    if not judged.load.ok or note is None or note.complete:
        return ()
    return (note.summary(),)
