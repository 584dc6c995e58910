"""How a run ended, from the raw run and its records: the submission's status, and its load.

Every condition the run met is collected and the ``Status`` enum's precedence resolves them
(the worst wins). A harness that stopped without its end marker and without any condition
the submission caused is the grader's failure (``INFRA_ERROR``), never the student's.
"""

from __future__ import annotations

from sandbox.harness import wire

from ..plan import Plan
from ..results import CheckResult, LoadReport, Outcome, Status
from ..rubric import Rubric
from ..runners.base import RawRun
from .excerpt import source_excerpt
from .records import LoadRecord, SandboxReport, ScriptRun

OOM_DETAIL = "the submission ran out of memory; results up to that point are kept"
FLOOD_DETAIL = "the submission printed more output than allowed and was stopped"
# How a file that does not load fails: its own doing. A file that loads but holds no engine class
# is graded (the API check says what is missing), and the grader's own trouble reading the file's
# structure is not the file's failure to load.
NOT_LOADABLE_FAILURES = (wire.LOAD_UNREADABLE, wire.LOAD_SYNTAX, wire.LOAD_IMPORT)
MACHINE_LATE_DETAIL = (
    "the grading machine was too busy to finish this grading within its real-time limit; "
    "nothing was scored, and it will be graded again"
)


def _clean_script(report: SandboxReport) -> ScriptRun | None:
    return next((p.script(wire.CLEAN) for p in report.probes.values() if wire.CLEAN in p.mutants), None)


def run_status(raw: RawRun, report: SandboxReport, checks: list[CheckResult]) -> tuple[Status, str]:
    """Every condition the run met, resolved by the Status enum's precedence (the worst wins)."""
    ends = [p.end for p in report.probes.values() if p.end]
    errors = [e.error.type if e.error else None for p in report.probes.values() for e in p.errors.values()]
    found: list[tuple[Status, str]] = []
    clean = _clean_script(report)
    clean_exception = clean.exception if clean else None
    load = report.load
    if raw.oom_killed or "MemoryError" in errors or (load and load.memory_error) or clean_exception == "MemoryError":
        found.append((Status.OOM, OOM_DETAIL))
    flooded = (load and load.output_limit) or clean_exception == wire.OUTPUT_LIMIT_STOP
    if raw.stdout_truncated or flooded or any(e.status == wire.OUTPUT_LIMIT for e in ends):
        found.append((Status.OUTPUT_LIMIT, FLOOD_DETAIL))
    if load and load.timed_out:
        found.append(
            (Status.TIMEOUT, "importing the file did not finish within its time limit; its definitions were graded")
        )
    if clean and clean.outcome == wire.TIMEOUT:
        found.append((Status.TIMEOUT, "python autograd_lab.py (your own checks) did not finish within its time limit"))
    if raw.timed_out or any(e.reason == wire.REASON_MACHINE_LATE for e in ends):
        # Every limit of the submission's own is charged time, which the harness enforces well
        # before this: the real-time limit is reached when the machine is too slow, never the file.
        found.append((Status.INFRA_ERROR, MACHINE_LATE_DETAIL))
    timed = (
        (e.status in (wire.TIMEOUT, wire.DEADLINE) and e.reason != wire.REASON_MACHINE_LATE) or e.signal == "SIGXCPU"
        for e in ends
    )
    if any(timed):
        timed_out = [c.title for c in checks if c.outcome is Outcome.TIMEOUT]
        where = f" (first in: {timed_out[0]})" if timed_out else ""
        found.append(
            (Status.TIMEOUT, f"part of the submission hit its time limit{where}; results that finished are kept")
        )
    if not report.complete and not found:
        tail = raw.stderr_tail.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit code {raw.exit_code}"]
        found.append((Status.INFRA_ERROR, f"the grading harness stopped before finishing ({tail[0][:200]})"))
    if load and not load.ok and load.failure in NOT_LOADABLE_FAILURES:
        # After the harness check: a failed load never explains a run that did not finish.
        words = " ".join(load_error_words(load).split())  # one line, whatever the message holds
        found.append((Status.NOT_LOADABLE, f"the file does not load: {words}; no check could run"))
    return max(found, key=lambda item: item[0].rank, default=(Status.GRADED, "graded"))


def load_report(report: SandboxReport, rubric: Rubric, file_text: str = "", plan: Plan | None = None) -> LoadReport:
    """What the feedback says about loading the file: how, as which class, and any notices."""
    load = report.load
    notices = list(load.notices) if load else []
    for name in load.stand_ins_used if load else ():
        notices.append(f"'{name}' is not installed in the grader; an inert stand-in was used (drawing does nothing).")
    if load and load.extra_args:
        notices.append(
            f"{load.class_name}(...) requires extra argument(s) {', '.join(load.extra_args)}; "
            "placeholders were passed so the engine could still be graded."
        )
    if any(p.end and p.end.lingering for p in report.probes.values()):
        notices.append(
            "A process your code started (a background or daemon process) kept running after your code finished; "
            "it was stopped each time. Do not leave processes running in autograd_lab.py."
        )
    if plan is not None and plan.visible_only and load is not None and load.mode == "definitions" and load.timed_out:
        allowed = plan.import_seconds(rubric.limits)
        notices.append(
            f"A self-check allows your file's import {allowed:g} s, so it was graded with its top-level code "
            f"skipped; a submission allows {rubric.limits.script_seconds:g} s."
        )
    if plan is not None and _budget_ran_out(report):
        notices.append(budget_notice(plan, rubric, load))
    message = excerpt = ""
    if load is None:
        message = "the sandbox reported nothing about loading the file"
    elif not load.ok:
        message = load_error_words(load)
        error = load.error
        excerpt = source_excerpt(file_text, error.line, error.column) if error else ""
    return LoadReport(
        ok=bool(load and load.ok),
        mode=(load.mode if load else "") or "failed",
        class_name=load.class_name if load else "",
        notices=tuple(notices),
        error=message,
        excerpt=excerpt,
    )


def _budget_ran_out(report: SandboxReport) -> bool:
    """Some run was left out because the grading's charged allowance was spent."""
    for probe in report.probes.values():
        if probe.end and probe.end.reason == wire.REASON_DEADLINE:
            return True
        left_out = (wire.BUDGET_NOT_TRIED, wire.BUDGET_RAN_OUT)
        scripts = (m.script for m in probe.mutants.values() if m.script is not None)
        if any(s.outcome == wire.NOT_RUN and s.message in left_out for s in scripts):
            return True
    return False


def budget_notice(plan: Plan, rubric: Rubric, load: LoadRecord | None) -> str:
    """Why checks were not run, and what the file can do about it."""
    seconds = plan.budget_seconds(rubric.limits)
    which = "This self-check" if plan.visible_only else "This grading"
    words = f"{which} stopped at its allowance of {seconds:g} s of your code's time, so some checks were not run."
    if load is not None and load.mode == "full" and load.import_seconds >= 1.0:
        words += (
            f" Importing your file takes {load.import_seconds:.1f} s, and every check imports it again: move slow "
            'top-level code (a demo, a training loop) under `if __name__ == "__main__":`.'
        )
    elif plan.visible_only:
        words += (
            " Some runs were slow (your own checks, or graphs your engine takes long or forever on); a submission "
            f"has an allowance of {rubric.limits.budget_seconds:g} s."
        )
    return words


def load_error_words(load: LoadRecord) -> str:
    """Why the file did not load, with its line when known: "SyntaxError: expected ':' (line 66)"."""
    error = load.error
    text = error.message if error else "the file could not be loaded"
    line = f" (line {error.line})" if error and error.line and f"line {error.line}" not in text else ""
    kind = "" if error and error.type == "LoadError" else f"{error.type if error else 'Error'}: "
    return f"{kind}{text}{line}"
