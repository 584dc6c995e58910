"""Late penalties and overrides in the exports: the written columns add up to the total."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal

from grader.report.adjustments import Adjustment, breakdown, written
from grader.report.canvas import canvas_csv
from grader.report.csv_export import grades_csv
from grader.report.gradescope import to_gradescope
from grader.report.prairielearn import to_prairielearn
from grader.results import LoadReport, SectionResult, Status, SubmissionResult

TAGS = ("api", "trace", "dags")


def result(*points: float, student: str = "ada") -> SubmissionResult:
    sections = tuple(SectionResult(tag, tag.title(), p, 40.0) for tag, p in zip(TAGS, points, strict=True))
    return SubmissionResult(
        student, "autograd_lab.py", Status.GRADED, round(sum(points), 2), 120.0, sections, (),
        LoadReport(ok=True, mode="full", class_name="Value"), "", "a8", "0" * 40, 1, "local", "", 1.0,
    )  # fmt: skip


def test_written_decimals_read_as_format_number_writes() -> None:
    texts = ("12.50", "-3.250", "0.000", "100", "-0")
    assert [written(Decimal(t)) for t in texts] == ["12.5", "-3.25", "0", "100", "0"]


def test_a_late_penalty_and_an_override_are_their_own_columns_and_add_up() -> None:
    graded = result(25.33, 25.33, 26.27)  # 76.93
    late = Adjustment(late_percent=10, after_late=round(76.93 * 0.9, 2))
    both = Adjustment(late_percent=10, after_late=round(76.93 * 0.9, 2), override=77.5, reason="fair reading")
    assert breakdown(graded, TAGS).late_penalty == "0"
    numbers = breakdown(graded, TAGS, late)
    assert (numbers.late_penalty, numbers.override, numbers.total) == ("-7.69", "0", "69.24") and numbers.adds_up()
    numbers = breakdown(graded, TAGS, both)
    assert (numbers.late_penalty, numbers.override, numbers.total) == ("-7.69", "8.26", "77.5") and numbers.adds_up()

    rows = list(csv.DictReader(io.StringIO(grades_csv([graded, graded], TAGS, [late, both]))))
    for row in rows:
        parts = [row[tag] for tag in TAGS] + [row["late_penalty"], row["override"]]
        assert sum(Decimal(p) for p in parts) == Decimal(row["total"])
    assert rows[1]["override_reason"] == "fair reading" and rows[1]["late_penalty_percent"] == "10"
    canvas = list(csv.reader(io.StringIO(canvas_csv([("Ada", "1", graded), ("Ada", "1", graded)], "A8", [late, both]))))
    assert [row[-1] for row in canvas[1:]] == ["69.24", "77.5"]
    for data in (to_gradescope(graded, both)["extra_data"]["grade"], to_prairielearn(graded, both)["grade"]):  # type: ignore[index]
        exact = json.loads(json.dumps(data), parse_float=Decimal)
        parts = [*exact["sections"].values(), exact["late_penalty"], exact["override"]]
        assert sum(parts) == exact["total"] == Decimal("77.5")
    assert to_gradescope(graded, both)["score"] == 77.5
    assert to_prairielearn(graded, both)["score"] == round(77.5 / 120, 6)  # type: ignore[index]
