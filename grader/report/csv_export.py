"""The class `grades.csv`: one row per submission, one points column per section tag, then the
late penalty and any override in points, so the columns add up to the total as written."""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Sequence

from grader.report.adjustments import Adjustment, adjusted, breakdown
from grader.report.view import format_number, write_text_atomic
from grader.results import SubmissionResult

# After the section columns: section points + late_penalty + override = total.
ADDED_COLUMNS = ("late_penalty", "override", "total")
AFTER_COLUMNS = ("max_total", "late_penalty_percent", "override_reason", "status", "detail", "review")
FIXED_COLUMNS = ("student", *ADDED_COLUMNS, *AFTER_COLUMNS)

# A cell starting with one of these is run as a formula by spreadsheet programs.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


# Where the list separator is ";" (most of Europe), a spreadsheet opening a CSV starts a cell
# after every ";", inside a quoted field or not: what follows one is a cell's start too.
_FORMULA_AFTER_SEMICOLON = re.compile(";(?=[=+\\-@\t\r])")


def text_cell(value: str) -> str:
    """Student names and details are data: never let a spreadsheet evaluate them."""
    value = _FORMULA_AFTER_SEMICOLON.sub(";'", value)
    return "'" + value if value.startswith(_FORMULA_START) else value


def header(section_tags: Sequence[str]) -> list[str]:
    clashes = sorted({tag for tag in section_tags if tag in FIXED_COLUMNS or section_tags.count(tag) > 1})
    if clashes:
        raise ValueError(f"section tags clash with other columns or repeat: {', '.join(clashes)}")
    return ["student", *section_tags, *ADDED_COLUMNS, *AFTER_COLUMNS]


def _row(result: SubmissionResult, section_tags: Sequence[str], adjustment: Adjustment) -> dict[str, str]:
    row = {"student": text_cell(result.student)}
    if result.scored:
        numbers = breakdown(result, section_tags, adjustment)
        row.update(numbers.sections)
        row.update(
            late_penalty=numbers.late_penalty,
            override=numbers.override,
            total=numbers.total,
            late_penalty_percent=numbers.late_percent,
        )
    else:  # an infra error has no points at all; blank is not zero
        row.update({column: "" for column in (*section_tags, *ADDED_COLUMNS, "late_penalty_percent")})
    row["max_total"] = format_number(result.max_score)
    row["override_reason"] = text_cell(adjustment.reason)
    row["status"] = result.status.value
    row["detail"] = text_cell(result.status_detail)
    row["review"] = text_cell(" | ".join(result.review))
    return row


def grades_csv(
    results: Sequence[SubmissionResult],
    section_tags: Sequence[str],
    adjustments: Sequence[Adjustment] | None = None,
) -> str:
    """``adjustments``: one per result, in the same order (the service's late penalties and
    overrides); none given, none made."""
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=header(section_tags), lineterminator="\r\n")
    writer.writeheader()
    for result, adjustment in adjusted(results, adjustments):
        writer.writerow(_row(result, section_tags, adjustment))
    return buffer.getvalue()


def write_grades_csv(
    results: Sequence[SubmissionResult], path: str | os.PathLike[str], section_tags: Sequence[str]
) -> None:
    write_text_atomic(path, grades_csv(results, section_tags))
