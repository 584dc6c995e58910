"""Gradescope `results.json`: the result model in the platform's schema.

An infrastructure failure carries no top-level score and no tests: the platform then has
nothing it could turn into a grade, and the reason is in `output` and `extra_data.status`.
"""

from __future__ import annotations

import json
import os
from typing import Any

from grader.plan import seed_label
from grader.report.adjustments import NONE, Adjustment, as_json, breakdown
from grader.report.view import (
    INFRA_BANNER,
    clean_number,
    comparison_line,
    counterexample_lines,
    counterexample_of,
    diagnosis_lines,
    instances_text,
    numbered_checks,
    self_check_text,
    shows_details,
    status_text,
    step5_line,
    write_text_atomic,
)
from grader.results import CheckResult, Outcome, SubmissionResult, Visibility

_VISIBILITY: dict[Visibility, str] = {
    Visibility.VISIBLE: "visible",
    Visibility.HIDDEN: "hidden",
    Visibility.AFTER_DUE_DATE: "after_due_date",
}


def _top_output(result: SubmissionResult) -> str:
    lines = []
    if not result.scored:
        lines.append(INFRA_BANNER)
    lines.append(f"Status: {status_text(result)}")
    if result.visible_only:
        lines.append(self_check_text(result) + ".")
    if not result.load.ok:
        lines.append(f"Your file could not be loaded: {result.load.error}")
        if result.load.excerpt:
            lines.append(result.load.excerpt)
    if result.load.notices:
        lines.append("How your file was loaded:")
        lines.extend(f"- {notice}" for notice in result.load.notices)
    if result.scored:
        for heading, text in diagnosis_lines(result):
            lines.append(f"{heading}: {text}")
    if step5_line(result):
        lines.append(step5_line(result))
    lines.extend(f"Flagged for review: {reason}" for reason in result.review)
    if result.scored:
        lines.extend(_early_counterexamples(result))
    return "\n".join(lines)


def _test_output(check: CheckResult) -> str:
    lines = [check.message] if check.message else []
    if shows_details(check):
        if check.comparisons:
            lines.append("")
            lines.extend(comparison_line(comparison) for comparison in check.comparisons)
        lines.extend(check.notes)
        instances = instances_text(check)
        if instances:
            lines.append(instances)
        if check.misconception:
            lines.append(f"Likely misconception: {check.misconception}")
        if check.hint:
            lines.append(f"Hint: {check.hint}")
    found = counterexample_of(check)
    if found is not None:
        # Shown as the test is: Gradescope shows a hidden test's output to students after the due
        # date ("after_due_date" tests) or never ("hidden"); a hidden check's has no engine number.
        lines += ["", "Smallest failing program:", found.program, *counterexample_lines(found)]
    return "\n".join(lines)


def _early_counterexamples(result: SubmissionResult) -> list[str]:
    """A hidden check's counterexample the rubric shows at once ("always"): Gradescope holds back
    a hidden test's output, so it goes in the output students see, under no check title."""
    lines = []
    for check in result.checks:
        found = counterexample_of(check)
        if found is None or shows_details(check) or found.shown != "always":
            continue
        lines += ["", "Smallest failing program of a hidden check:", found.program, *counterexample_lines(found)]
    return lines


def to_gradescope(result: SubmissionResult, adjustment: Adjustment = NONE) -> dict[str, Any]:
    """``adjustment``: a late penalty or override made after grading (the service's); the score
    is then the total, and ``extra_data.grade`` says how the sections add up to it."""
    data: dict[str, Any] = {}
    numbers = breakdown(result, [section.tag for section in result.sections], adjustment)
    if result.scored:
        data["score"] = clean_number(float(numbers.total))
    data["execution_time"] = max(0, round(result.execution_time))
    data["output"] = _top_output(result)
    data["output_format"] = "text"  # student-derived strings must not be read as markup
    data["test_output_format"] = "text"
    data["visibility"] = "visible"
    data["stdout_visibility"] = "hidden"
    tests = []
    if result.scored:
        for numbered in numbered_checks(result):
            check = numbered.check
            tests.append(
                {
                    "name": check.title,
                    "number": numbered.number,
                    "score": clean_number(check.points),
                    "max_score": clean_number(check.max_points),
                    "status": "passed" if check.outcome is Outcome.PASSED else "failed",
                    "output": _test_output(check),
                    "tags": [check.section],
                    "visibility": _VISIBILITY[check.visibility],
                    "extra_data": {"check_id": check.check_id, "outcome": check.outcome.value},
                }
            )
    data["tests"] = tests
    data["extra_data"] = {
        "status": result.status.value,
        "status_detail": result.status_detail,
        # The seed is the key to every hidden input: a fingerprint tells gradings apart.
        "seed_id": seed_label(result.seed),
        "rubric_name": result.rubric_name,
        "rubric_sha": result.rubric_sha,
        "runner": result.runner,
        "image": result.image,
        "load_mode": result.load.mode,
        "visible_only": result.visible_only,
        "hidden_not_run": result.hidden_not_run,
        "misconceptions": [d.operator for d in result.diagnoses if d.operator],
        "review": list(result.review),
    }
    if result.scored:
        data["extra_data"]["grade"] = as_json(numbers)
    return data


def dumps_gradescope(result: SubmissionResult) -> str:
    """The JSON text, built whole before anything is written. Raises on NaN or infinity."""
    return json.dumps(to_gradescope(result), allow_nan=False, ensure_ascii=False, indent=2) + "\n"


def write_gradescope(result: SubmissionResult, path: str | os.PathLike[str]) -> None:
    write_text_atomic(path, dumps_gradescope(result))
