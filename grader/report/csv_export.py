"""The class `grades.csv`: one row per submission, one points column per section tag."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence

from grader.report.view import format_number, write_text_atomic
from grader.results import SubmissionResult

FIXED_COLUMNS = ("student", "total", "max_total", "status", "detail", "review")

# A cell starting with one of these is run as a formula by spreadsheet programs.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def text_cell(value: str) -> str:
    """Student names and details are data: never let a spreadsheet evaluate them."""
    return "'" + value if value.startswith(_FORMULA_START) else value


def header(section_tags: Sequence[str]) -> list[str]:
    clashes = sorted({tag for tag in section_tags if tag in FIXED_COLUMNS or section_tags.count(tag) > 1})
    if clashes:
        raise ValueError(f"section tags clash with other columns or repeat: {', '.join(clashes)}")
    return ["student", *section_tags, "total", "max_total", "status", "detail", "review"]


def _row(result: SubmissionResult, section_tags: Sequence[str]) -> dict[str, str]:
    row = {"student": text_cell(result.student)}
    by_tag = {section.tag: section for section in result.sections}
    for tag in section_tags:
        section = by_tag.get(tag)
        # An infra error has no points at all; blank is not zero.
        row[tag] = format_number(section.points) if section is not None and result.scored else ""
    row["total"] = format_number(result.score) if result.scored else ""
    row["max_total"] = format_number(result.max_score)
    row["status"] = result.status.value
    row["detail"] = text_cell(result.status_detail)
    row["review"] = text_cell(" | ".join(result.review))
    return row


def grades_csv(results: Sequence[SubmissionResult], section_tags: Sequence[str]) -> str:
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=header(section_tags), lineterminator="\r\n")
    writer.writeheader()
    for result in results:
        writer.writerow(_row(result, section_tags))
    return buffer.getvalue()


def write_grades_csv(
    results: Sequence[SubmissionResult], path: str | os.PathLike[str], section_tags: Sequence[str]
) -> None:
    write_text_atomic(path, grades_csv(results, section_tags))
