"""What every report format agrees on: numbering, labels, number formatting, and which
details of a check a student may see.

The writers (HTML, terminal, results.json, CSV) all read `SubmissionResult` through these
helpers, so a hidden check is gated in one place and "2.3" means the same check everywhere.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from grader.results import (
    CheckResult,
    Comparison,
    Counterexample,
    Outcome,
    SectionResult,
    Status,
    SubmissionResult,
    Visibility,
)

OUTCOME_LABELS: dict[Outcome, str] = {
    Outcome.PASSED: "Passed",
    Outcome.PARTIAL: "Partly passed",
    Outcome.FAILED: "Failed",
    Outcome.ERROR: "Error",
    Outcome.TIMEOUT: "Timed out",
    Outcome.NOT_RUN: "Not run",
}

# A symbol next to the label so the badge never relies on colour alone.
OUTCOME_SYMBOLS: dict[Outcome, str] = {
    Outcome.PASSED: "\u2713",  # check mark
    Outcome.PARTIAL: "\u25d0",  # half circle
    Outcome.FAILED: "\u2717",  # ballot x
    Outcome.ERROR: "!",
    Outcome.TIMEOUT: "\u25f7",  # clock face (in common fonts, unlike the hourglass)
    Outcome.NOT_RUN: "\u2013",  # en dash
}

STATUS_LABELS: dict[Status, str] = {
    Status.GRADED: "Graded",
    Status.NOT_LOADABLE: "Not loadable",
    Status.TIMEOUT: "Timed out",
    Status.OOM: "Ran out of memory",
    Status.OUTPUT_LIMIT: "Output limit reached",
    Status.UNGRADABLE: "Ungradable",
    Status.INFRA_ERROR: "Grader failure",
}

# What a check's visibility lets a report say in place of its details.
VISIBILITY_NOTES: dict[Visibility, str] = {
    Visibility.VISIBLE: "",
    Visibility.HIDDEN: "Hidden check: details are not shown",
    Visibility.AFTER_DUE_DATE: "Hidden until the due date: details are not shown",
}

# Under a hidden check's smallest failing program (its rows hold the right answers only).
WITHHELD_NOTE = (
    "A hidden check shows the right answers on this program and where your engine is wrong, "
    "not your engine's own values: run the program yourself to see them."
)

INFRA_BANNER = "The grader failed, not your submission; this result is not a grade."

SHA_SHORT = 12


def format_number(value: float) -> str:
    """Points as a person writes them: 12.5, 100, 0.3 (never 0.30000000000000004)."""
    if not math.isfinite(value):
        raise ValueError(f"points must be a finite number, got {value!r}")
    rounded = round(float(value), 6)  # ints arrive too, despite the annotation
    if rounded == 0:
        return "0"  # also turns -0.0 into "0"
    if rounded.is_integer():
        return str(int(rounded))
    return f"{rounded:.6f}".rstrip("0").rstrip(".")


def clean_number(value: float) -> float:
    """The same rounding as `format_number`, kept numeric (for JSON)."""
    if not math.isfinite(value):
        raise ValueError(f"points must be a finite number, got {value!r}")
    rounded = round(float(value), 6)
    return 0.0 if rounded == 0 else rounded


def short_sha(sha: str) -> str:
    return sha[:SHA_SHORT]


def shows_details(check: CheckResult) -> bool:
    """Only a visible check may show what was built, comparisons, output, hint or diagnosis.

    The judge already blanks those fields for hidden checks; every writer asks this anyway,
    so a judge bug cannot leak hidden inputs into a report.
    """
    return check.visibility is Visibility.VISIBLE


def counterexample_of(check: CheckResult) -> Counterexample | None:
    """A check's smallest failing program as any report shows it. A hidden check's never carries
    the engine's own numbers (observed after hidden inputs entered the sandbox, they could carry
    one), whatever the judge, or a result stored before it withheld them, put there."""
    found = check.counterexample
    if found is None or check.visibility is Visibility.VISIBLE:
        return found
    return found.without_engine_numbers()


def first_with(result: SubmissionResult, found: Counterexample) -> CheckResult:
    """The first check showing this very counterexample (the later ones point back at it)."""
    return next(
        c
        for c in result.checks
        if (shown := counterexample_of(c)) is not None
        and (shown.program, shown.withheld) == (found.program, found.withheld)
    )


def counterexample_lines(found: Counterexample) -> list[str]:
    """What a plain-text report says under the program: the wrong quantities, expected against
    observed; of a withheld one, the right answer where the engine is wrong, and no engine number."""
    if found.withheld:
        return [
            f"{row.quantity}: expected {row.expected}; your engine gets it wrong "
            "(a hidden check does not show your engine's value)"
            for row in found.wrong
        ]
    return [comparison_line(row) for row in found.wrong]


def student_files(result: SubmissionResult) -> SubmissionResult:
    """The result as the CLI's per-student files show it (feedback.html, feedback.md,
    results.json, prairielearn.json). A hidden check's counterexample is there only when the
    rubric's ``counterexamples`` says "always": "after_due_date" means once hidden results are
    released, which the service decides for each student, and a file written now cannot wait for."""
    return replace(
        result,
        checks=tuple(
            c
            if c.counterexample is None or c.visibility is Visibility.VISIBLE or c.counterexample.shown == "always"
            else replace(c, counterexample=None)
            for c in result.checks
        ),
    )


@dataclass(frozen=True)
class NumberedCheck:
    number: str  # "section index.check index", both 1-based
    check: CheckResult


@dataclass(frozen=True)
class SectionGroup:
    index: int  # 1-based
    tag: str
    title: str
    section: SectionResult | None  # None when a check names a section the result lacks
    checks: tuple[NumberedCheck, ...]


def group_by_section(result: SubmissionResult) -> tuple[SectionGroup, ...]:
    """Checks grouped by section in the result's section order, numbered in rubric order."""
    tags = [section.tag for section in result.sections]
    for check in result.checks:
        if check.section not in tags:
            tags.append(check.section)
    groups = []
    for index, tag in enumerate(tags, start=1):
        own = [check for check in result.checks if check.section == tag]
        section = next((s for s in result.sections if s.tag == tag), None)
        groups.append(
            SectionGroup(
                index=index,
                tag=tag,
                title=section.title if section is not None else tag,
                section=section,
                checks=tuple(NumberedCheck(f"{index}.{n}", check) for n, check in enumerate(own, start=1)),
            )
        )
    return tuple(groups)


def numbered_checks(result: SubmissionResult) -> tuple[NumberedCheck, ...]:
    return tuple(numbered for group in group_by_section(result) for numbered in group.checks)


def failing_checks(result: SubmissionResult) -> tuple[NumberedCheck, ...]:
    """Checks that ran and did not pass, in rubric order (the first failing idea first)."""
    return tuple(
        numbered
        for numbered in numbered_checks(result)
        if not numbered.check.passed and numbered.check.outcome is not Outcome.NOT_RUN
    )


def checks_to_fix(result: SubmissionResult) -> tuple[NumberedCheck, ...]:
    """Failing checks that carry points: a 0-point hidden twin only vouches for another check."""
    return tuple(numbered for numbered in failing_checks(result) if numbered.check.max_points > 0)


def comparison_line(comparison: Comparison) -> str:
    verdict = "ok" if comparison.ok else "MISMATCH"
    return f"{comparison.quantity}: expected {comparison.expected}, observed {comparison.observed} [{verdict}]"


def score_text(result: SubmissionResult) -> str:
    return f"{format_number(result.score)} / {format_number(result.max_score)}"


def status_detail(result: SubmissionResult) -> str:
    """The status detail, unless it only repeats the label ("Graded: graded")."""
    detail = result.status_detail
    return "" if detail.strip().lower() == STATUS_LABELS[result.status].lower() else detail


def status_text(result: SubmissionResult) -> str:
    label = STATUS_LABELS[result.status]
    return f"{label}: {status_detail(result)}" if status_detail(result) else label


def self_check_text(result: SubmissionResult) -> str:
    count = result.hidden_not_run
    noun = "check was" if count == 1 else "checks were"
    return f"Self-check: {count} hidden {noun} not run"


def diagnosis_lines(result: SubmissionResult) -> list[tuple[str, str]]:
    """(heading, body) per diagnosis: the misconception, where to read, and one piece of evidence."""
    out = []
    for found in result.diagnoses:
        heading = f"{found.family}: recognised pattern" if found.operator else "No known pattern"
        body = found.misconception
        if found.evidence:
            body += f" Evidence: {found.evidence}."
        if found.handout:
            body += f" Read: {found.handout}."
        out.append((heading, body))
    return out


def step5_line(result: SubmissionResult) -> str:
    """The Step-5 note line, unless a review flag already says the same thing."""
    return result.step5_note if result.step5_note not in result.review else ""


def instances_text(check: CheckResult) -> str:
    if check.instances_total <= 1:
        return ""
    return f"{check.instances_passed} of {check.instances_total} instances passed"


# C0 controls except tab and newline, DEL, and C1 controls: a terminal would obey them (ESC starts
# sequences that erase the screen, set the window title or open an OSC 8 hyperlink; BEL rings).
_C0_C1 = "\x00-\x08\x0b-\x1f\x7f-\x9f"
# Bidirectional marks, embeddings, overrides and isolates reorder what a reader sees, so a name or a
# message would read differently from what it says.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[{_C0_C1}{_BIDI}]")
_CONTROL_ONE_LINE = re.compile(f"[\t\n{_C0_C1}{_BIDI}]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    """Untrusted text made safe for a terminal (and any other reader): control characters shown, not obeyed.

    C0 controls, DEL and C1 controls become ``\\x1b``-style escapes, bidi controls ``\\u202e``-style
    ones; tab and newline are kept unless ``one_line`` (a name, a progress line), and "\\r\\n" is a
    newline. Every string the CLI prints goes through here, as does every string in the HTML feedback.
    """
    text = text.replace("\r\n", "\n")
    return (_CONTROL_ONE_LINE if one_line else _CONTROL).sub(_shown, text)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write the whole file or nothing: a half-written results.json fails the platform."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600; reports are read by other users
        # Any text that still cannot be UTF-8 (a lone surrogate) is written escaped, never fatal.
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as handle:
            handle.write(text)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
