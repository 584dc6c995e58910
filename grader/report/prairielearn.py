"""PrairieLearn external-grader results (`results.json` for `/grade/results/`), per student.

PrairieLearn's contract: `score` in [0, 1]; `gradable: false` (with `format_errors`) marks an
input that could not be graded at all, which costs the student no attempt. A result of the
grader's own failure (infra_error) has no PrairieLearn form: it is not a grade, so nothing is
written and the batch reports it instead.
"""

from __future__ import annotations

import json
import os
from typing import Any

from grader.report.adjustments import NONE, Adjustment, as_json, breakdown
from grader.report.view import (
    clean_number,
    comparison_line,
    counterexample_lines,
    counterexample_of,
    diagnosis_lines,
    first_with,
    numbered_checks,
    shows_details,
    status_text,
    write_text_atomic,
)
from grader.results import CheckResult, Status, SubmissionResult

MAX_TEXT = 8 * 1024  # per field: PrairieLearn caps the whole file at 1 MB


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 20] + "\n... (truncated)"


def _smallest(check: CheckResult, result: SubmissionResult) -> list[str]:
    """A check's smallest failing program, as the Markdown feedback gives it: once, the later
    checks it also fails pointing back at the first."""
    found = counterexample_of(check)
    if found is None:
        return []
    first = first_with(result, found)
    if first is not check:
        return ["", f"Smallest failing program: the same as for {first.title}."]
    plural = "" if found.operations == 1 else "s"
    head = f"Smallest failing program ({found.operations} operation{plural}):"
    return ["", head, found.program, *counterexample_lines(found)]


def _test(number: str, check: CheckResult, result: SubmissionResult) -> dict[str, Any]:
    lines: list[str] = []
    if shows_details(check):
        lines.extend(comparison_line(c) for c in check.comparisons)
        lines.extend(check.notes)
        if check.misconception:
            lines.append(f"Likely misconception: {check.misconception}")
    lines.extend(_smallest(check, result))
    return {
        "name": f"{number} {check.title}",
        "description": check.built if shows_details(check) else "",
        "points": clean_number(check.points),
        "max_points": clean_number(check.max_points),
        "message": _cut(check.message + (f"\nHint: {check.hint}" if shows_details(check) and check.hint else "")),
        "output": _cut("\n".join(lines)),
    }


def to_prairielearn(result: SubmissionResult, adjustment: Adjustment = NONE) -> dict[str, Any] | None:
    """The results object, or None for an infrastructure failure (not a grade). With an
    ``adjustment`` (a late penalty or override made after grading), ``score`` is the total's
    fraction and ``grade`` says how the sections add up to the total, in points."""
    if result.status is Status.INFRA_ERROR:
        return None
    if result.status is Status.UNGRADABLE or not result.load.ok:
        why = result.load.error or result.status_detail
        why = f"{why}\n{result.load.excerpt}" if result.load.excerpt else why
        return {"gradable": False, "format_errors": [_cut(why)], "message": _cut(status_text(result))}
    numbers = breakdown(result, [section.tag for section in result.sections], adjustment)
    total = float(numbers.total)
    score = total / result.max_score if result.max_score else 0.0
    summary = [status_text(result), *(f"{head}: {body}" for head, body in diagnosis_lines(result))]
    return {
        "gradable": True,
        "score": min(1.0, max(0.0, round(score, 6))),
        "message": _cut("\n".join(summary)),
        "output": _cut("\n".join(result.load.notices)),
        "tests": [_test(n.number, n.check, result) for n in numbered_checks(result)],
        "grade": {**as_json(numbers), "max_points": clean_number(result.max_score)},
    }


def write_prairielearn(result: SubmissionResult, path: str | os.PathLike[str]) -> bool:
    """Write the file; False (and nothing written) for an infrastructure failure."""
    data = to_prairielearn(result)
    if data is None:
        return False
    write_text_atomic(path, json.dumps(data, allow_nan=False, ensure_ascii=False, indent=2) + "\n")
    return True
