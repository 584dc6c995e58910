"""The class report's numbers: score summary, score histogram, per-section and per-check rates.

Everything here is taken over scored submissions only (infra errors carry no score), and
comes out as frozen rows of display strings; the histogram is laid out in SVG user units.
``grader.report.class_report`` puts these next to the per-student tables and renders the page.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from grader.report.view import format_number
from grader.results import Outcome, Status, SubmissionResult, Visibility

BINS = 10
NO_VALUE = "\u2014"  # em dash: a statistic with nothing to average over
_SLACK = 1e-9  # float sums of section points can land a hair under the maximum

# Histogram geometry in SVG user units; the viewBox scales it to the page width.
SVG_WIDTH = 640
SVG_HEIGHT = 260
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 12, 12, 52
_PLOT_WIDTH = SVG_WIDTH - _LEFT - _RIGHT
_PLOT_HEIGHT = SVG_HEIGHT - _TOP - _BOTTOM
_BAR_GAP = 4


@dataclass(frozen=True)
class Summary:
    submissions: int
    graded: int
    scored: int
    excluded: int  # infra errors: no score, left out of every statistic
    mean: str
    median: str
    highest: str
    max_score: str


@dataclass(frozen=True)
class Bar:
    label: str  # score range, e.g. "10 to under 20"
    count: int
    tooltip: str
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Tick:
    label: str
    position: float  # x for the score axis, y for the count axis


@dataclass(frozen=True)
class Histogram:
    bars: tuple[Bar, ...]
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    description: str


@dataclass(frozen=True)
class SectionRow:
    tag: str
    title: str
    full: int  # scored submissions with every point of the section
    total: int  # scored submissions that have the section
    rate: str
    mean: str
    max_points: str


@dataclass(frozen=True)
class CheckRow:
    check_id: str
    title: str
    section: str
    visibility: str
    passed: int
    ran: int
    rate: str


@dataclass(frozen=True)
class SectionHead:
    tag: str
    title: str


def _percent(part: int, whole: int) -> str:
    return f"{round(100 * part / whole)}%" if whole else NO_VALUE


def _stat(value: float) -> str:
    # Two decimals are plenty for a class average; format_number drops trailing zeros.
    return format_number(round(value, 2))


def _max_score(scored: Sequence[SubmissionResult]) -> float:
    return max((result.max_score for result in scored), default=0.0)


def summary(results: Sequence[SubmissionResult], scored: Sequence[SubmissionResult]) -> Summary:
    scores = [result.score for result in scored]
    return Summary(
        submissions=len(results),
        graded=sum(result.status is Status.GRADED for result in results),
        scored=len(scored),
        excluded=len(results) - len(scored),
        mean=_stat(statistics.fmean(scores)) if scores else NO_VALUE,
        median=_stat(statistics.median(scores)) if scores else NO_VALUE,
        highest=_stat(max(scores)) if scores else NO_VALUE,
        max_score=format_number(_max_score(scored)),
    )


def bin_index(score: float, max_score: float) -> int:
    """Which of the BINS equal bins over 0..max_score holds `score`; the top bin includes the maximum."""
    if max_score <= 0:
        return BINS - 1  # nothing to earn: every score is full marks
    # The slack keeps 0.7 * 10 / 1 in bin 7 despite binary floating point.
    index = math.floor(score * BINS / max_score + _SLACK)
    return min(BINS - 1, max(0, index))


def bin_counts(scored: Sequence[SubmissionResult]) -> list[int]:
    counts = [0] * BINS
    top = _max_score(scored)
    for result in scored:
        counts[bin_index(result.score, top)] += 1
    return counts


def _edge(index: int, max_score: float) -> str:
    return _stat(max_score * index / BINS)


def _range_label(index: int, max_score: float) -> str:
    low, high = _edge(index, max_score), _edge(index + 1, max_score)
    return f"{low} to {high}" if index == BINS - 1 else f"{low} to under {high}"


def _bar(index: int, count: int, tallest: int, max_score: float) -> Bar:
    slot = _PLOT_WIDTH / BINS
    height = _PLOT_HEIGHT * count / tallest
    label = _range_label(index, max_score)
    noun = "submission" if count == 1 else "submissions"
    return Bar(
        label=label,
        count=count,
        tooltip=f"{label}: {count} {noun}",
        x=round(_LEFT + index * slot + _BAR_GAP / 2, 2),
        y=round(_TOP + _PLOT_HEIGHT - height, 2),
        width=round(slot - _BAR_GAP, 2),
        height=round(height, 2),
    )


def _y_ticks(tallest: int) -> tuple[Tick, ...]:
    values = sorted({0, tallest // 2, tallest})  # integer counts only: no "1.5 submissions"
    return tuple(Tick(str(value), round(_TOP + _PLOT_HEIGHT * (1 - value / tallest), 2)) for value in values)


def _x_ticks(max_score: float) -> tuple[Tick, ...]:
    slot = _PLOT_WIDTH / BINS
    return tuple(Tick(_edge(index, max_score), round(_LEFT + index * slot, 2)) for index in range(BINS + 1))


def _describe(counts: Sequence[int], max_score: float) -> str:
    # The <desc> a screen reader announces: every non-empty range, so ties are not hidden.
    ranges = "; ".join(f"{_range_label(index, max_score)}: {count}" for index, count in enumerate(counts) if count)
    return f"Scored submissions in {BINS} equal score ranges from 0 to {format_number(max_score)}. {ranges}."


def histogram(scored: Sequence[SubmissionResult]) -> Histogram:
    counts = bin_counts(scored)
    top = _max_score(scored)
    tallest = max(max(counts), 1)  # avoids dividing by zero when no one was scored
    return Histogram(
        bars=tuple(_bar(index, count, tallest, top) for index, count in enumerate(counts)),
        x_ticks=_x_ticks(top),
        y_ticks=_y_ticks(tallest),
        description=_describe(counts, top),
    )


def plot_frame() -> dict[str, int]:
    """The plot area inside the SVG, for the axes the template draws."""
    return {"left": _LEFT, "top": _TOP, "right": _LEFT + _PLOT_WIDTH, "bottom": _TOP + _PLOT_HEIGHT}


def section_heads(results: Sequence[SubmissionResult]) -> tuple[SectionHead, ...]:
    """Every section tag once, in the order the results list them (rubric order)."""
    heads: dict[str, SectionHead] = {}
    for result in results:
        for section in result.sections:
            heads.setdefault(section.tag, SectionHead(section.tag, section.title))
    return tuple(heads.values())


def section_row(head: SectionHead, scored: Sequence[SubmissionResult]) -> SectionRow:
    present = [s for result in scored for s in result.sections if s.tag == head.tag]
    full = sum(s.points >= s.max_points - _SLACK for s in present)
    return SectionRow(
        tag=head.tag,
        title=head.title,
        full=full,
        total=len(present),
        rate=_percent(full, len(present)),
        mean=_stat(statistics.fmean(s.points for s in present)) if present else NO_VALUE,
        max_points=format_number(max((s.max_points for s in present), default=0.0)),
    )


@dataclass
class _CheckTally:
    title: str
    section: str
    visibility: Visibility
    order: int  # first appearance, i.e. rubric order, to break ties
    passed: int = 0
    ran: int = 0


def _tally_checks(scored: Sequence[SubmissionResult]) -> dict[str, _CheckTally]:
    tallies: dict[str, _CheckTally] = {}
    for result in scored:
        for check in result.checks:
            tally = tallies.setdefault(
                check.check_id, _CheckTally(check.title, check.section, check.visibility, len(tallies))
            )
            if check.outcome is Outcome.NOT_RUN:
                continue  # a check that never ran says nothing about the class
            tally.ran += 1
            tally.passed += check.outcome is Outcome.PASSED
    return tallies


def check_rows(scored: Sequence[SubmissionResult]) -> tuple[CheckRow, ...]:
    def most_failed_first(item: tuple[str, _CheckTally]) -> tuple[bool, float, int, int]:
        tally = item[1]
        rate = tally.passed / tally.ran if tally.ran else 0.0
        # Checks that never ran have no rate: after every check that did.
        return (tally.ran == 0, rate, -(tally.ran - tally.passed), tally.order)

    return tuple(
        CheckRow(
            check_id=check_id,
            title=tally.title,
            section=tally.section,
            visibility=tally.visibility.value,
            passed=tally.passed,
            ran=tally.ran,
            rate=_percent(tally.passed, tally.ran),
        )
        for check_id, tally in sorted(_tally_checks(scored).items(), key=most_failed_first)
    )
