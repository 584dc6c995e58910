"""A Canvas gradebook import file for a class downloaded from Canvas.

Canvas matches rows by its user ID (the number in each downloaded file's name) and columns by
assignment name; every other column it does not know becomes a new assignment, which is why
this file carries only the total and `grades.csv` keeps the per-section detail.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence

from grader.report.adjustments import Adjustment, breakdown
from grader.report.csv_export import text_cell
from grader.report.view import write_text_atomic
from grader.results import SubmissionResult

HEADER = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


CanvasRow = tuple[str, str, SubmissionResult] | tuple[str, str, SubmissionResult, str]


def canvas_csv(rows: Sequence[CanvasRow], assignment: str, adjustments: Sequence[Adjustment] | None = None) -> str:
    """``rows``: (display name, Canvas user id, result[, SIS login id]). Canvas matches a row by
    its user id, else by the SIS login id. Infra errors are left blank, not zero. The score is
    the total after any late penalty and override (``adjustments``, one per row), the same
    number as `grades.csv`'s total: the breakdown stays there, since Canvas would make every
    extra column a new assignment."""
    if adjustments is not None and len(adjustments) != len(rows):
        raise ValueError("one adjustment per row")
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([*HEADER, assignment])
    for number, (name, user_id, result, *login) in enumerate(rows):
        adjustment = adjustments[number] if adjustments is not None else Adjustment()
        sections = [section.tag for section in result.sections]
        score = breakdown(result, sections, adjustment).total if result.scored else ""
        sis_login = str(login[0]) if login else ""
        writer.writerow([text_cell(name), text_cell(user_id), "", text_cell(sis_login), "", score])
    return buffer.getvalue()


def write_canvas_csv(rows: Sequence[CanvasRow], path: str | os.PathLike[str], assignment: str) -> None:
    write_text_atomic(path, canvas_csv(rows, assignment))
