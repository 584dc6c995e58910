"""What happens to a graded score after grading, written so that a spreadsheet adds it up.

A course may take a late penalty off a score and staff may set a score by hand. Every export
writes both as their own columns or fields, in points, so that for each student

    section points + late penalty (negative) + override adjustment = total

holds exactly on the numbers as written (no float in the sum: each column is the difference of
two numbers already written with `format_number`). The CLI grader has neither: both are 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from grader.report.view import format_number
from grader.results import SubmissionResult


@dataclass(frozen=True)
class Adjustment:
    """A counted score's way from the grader's score to the total.

    ``after_late`` is the score the late penalty leaves, as the course counts it (None: the
    grader's score, no penalty); ``override`` is a score staff set, which replaces it."""

    late_percent: float = 0.0
    after_late: float | None = None
    override: float | None = None
    reason: str = ""


NONE = Adjustment()


def written(value: Decimal) -> str:
    """A sum or difference of written numbers, in `format_number`'s form (12.5, 100, -3.25, 0)."""
    if value == 0:
        return "0"
    text = format(value.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


@dataclass(frozen=True)
class Breakdown:
    """One scored result's numbers, as text, in the order they add up."""

    sections: dict[str, str]  # tag -> points ("" for a tag the result has no section for)
    late_penalty: str  # points taken off, negative (or "0")
    late_percent: str
    override: str  # the override's score minus the score before it (or "0")
    total: str
    reason: str

    def adds_up(self) -> bool:
        parts = [Decimal(p) for p in self.sections.values() if p]
        return sum(parts, Decimal(0)) + Decimal(self.late_penalty) + Decimal(self.override) == Decimal(self.total)


def breakdown(result: SubmissionResult, section_tags: Sequence[str], adjustment: Adjustment = NONE) -> Breakdown:
    """The written numbers of a scored result (callers write blanks for an unscored one)."""
    by_tag = {section.tag: section for section in result.sections}
    sections = {tag: format_number(by_tag[tag].points) if tag in by_tag else "" for tag in section_tags}
    points = sum((Decimal(p) for p in sections.values() if p), Decimal(0))
    after_late = Decimal(format_number(result.score if adjustment.after_late is None else adjustment.after_late))
    # The late column is what the penalty leaves minus the sections' sum. The grader's score is
    # its sections' sum, so with no penalty it is 0 (a result stored by a grader that rounded the
    # score apart from its sections shows that cent here rather than nowhere).
    late = after_late - points
    total = after_late if adjustment.override is None else Decimal(format_number(adjustment.override))
    return Breakdown(
        sections=sections,
        late_penalty=written(late),
        late_percent=format_number(adjustment.late_percent),
        override=written(total - after_late),
        total=written(total),
        reason=adjustment.reason,
    )


def as_json(numbers: Breakdown) -> dict[str, object]:
    """The breakdown for a JSON export: numbers as JSON numbers (each prints as written)."""
    return {
        "sections": {tag: float(points) for tag, points in numbers.sections.items() if points},
        "late_penalty": float(numbers.late_penalty),
        "late_penalty_percent": float(numbers.late_percent),
        "override": float(numbers.override),
        "override_reason": numbers.reason,
        "total": float(numbers.total),
    }


def adjusted(
    results: Sequence[SubmissionResult], adjustments: Sequence[Adjustment] | None
) -> list[tuple[SubmissionResult, Adjustment]]:
    """Results paired with their adjustments (none given: none made, as in the CLI grader)."""
    if adjustments is None:
        return [(result, NONE) for result in results]
    if len(adjustments) != len(results):
        raise ValueError("one adjustment per result")
    return list(zip(results, adjustments, strict=True))
