"""Class report: one self-contained page (OUT/index.html) summarising every submission for the instructor.

Infra errors carry no score (`SubmissionResult.scored` is False), so every statistic here is taken
over scored submissions only and the page says how many were left out. Everything a student
controls (ids, status details, review reasons, misconception text) reaches the template as plain
strings: autoescape handles it and nothing is ever marked safe.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from grader.report.html import environment
from grader.report.view import STATUS_LABELS, format_number, write_text_atomic
from grader.results import Outcome, Status, SubmissionResult, Visibility

TEMPLATE = "class_report.html.j2"
BINS = 10
MAX_LINKED_STUDENTS = 5
NO_VALUE = "\u2014"  # em dash: a statistic with nothing to average over
_SLACK = 1e-9  # float sums of section points can land a hair under the maximum

# Histogram geometry in SVG user units; the viewBox scales it to the page width.
SVG_WIDTH = 640
SVG_HEIGHT = 260
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 12, 12, 52
_PLOT_WIDTH = SVG_WIDTH - _LEFT - _RIGHT
_PLOT_HEIGHT = SVG_HEIGHT - _TOP - _BOTTOM
_BAR_GAP = 4

GRADER_FAULT_NOTE = "the grader's failure, not the student's"


def default_feedback_href(student: str) -> str:
    return f"{student}/feedback.html"


@dataclass(frozen=True)
class StudentLink:
    name: str  # untrusted: escaped by the template
    href: str


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
class MisconceptionRow:
    operator: str
    family: str
    misconception: str  # from the first submission showing it
    count: int
    students: tuple[StudentLink, ...]
    more: int  # students beyond the linked ones


@dataclass(frozen=True)
class HumanRow:
    student: StudentLink
    status: str
    status_label: str
    grader_fault: bool
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class SubmissionRow:
    student: StudentLink
    score: str
    max_score: str
    status: str
    status_label: str
    sections: tuple[str, ...]  # points per section, in the order of the section columns


@dataclass(frozen=True)
class SectionHead:
    tag: str
    title: str


def _percent(part: int, whole: int) -> str:
    return f"{round(100 * part / whole)}%" if whole else NO_VALUE


def _stat(value: float) -> str:
    # Two decimals are plenty for a class average; format_number drops trailing zeros.
    return format_number(round(value, 2))


def _link(student: str, feedback_href: Callable[[str], str]) -> StudentLink:
    # safe="" also encodes "/", so an id can never reach outside its own directory.
    return StudentLink(name=student, href=feedback_href(quote(student, safe="")))


def _max_score(scored: Sequence[SubmissionResult]) -> float:
    return max((result.max_score for result in scored), default=0.0)


def _summary(results: Sequence[SubmissionResult], scored: Sequence[SubmissionResult]) -> Summary:
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


def _histogram(scored: Sequence[SubmissionResult]) -> Histogram:
    counts = bin_counts(scored)
    top = _max_score(scored)
    tallest = max(max(counts), 1)  # avoids dividing by zero when no one was scored
    return Histogram(
        bars=tuple(_bar(index, count, tallest, top) for index, count in enumerate(counts)),
        x_ticks=_x_ticks(top),
        y_ticks=_y_ticks(tallest),
        description=_describe(counts, top),
    )


def _section_heads(results: Sequence[SubmissionResult]) -> tuple[SectionHead, ...]:
    """Every section tag once, in the order the results list them (rubric order)."""
    heads: dict[str, SectionHead] = {}
    for result in results:
        for section in result.sections:
            heads.setdefault(section.tag, SectionHead(section.tag, section.title))
    return tuple(heads.values())


def _section_row(head: SectionHead, scored: Sequence[SubmissionResult]) -> SectionRow:
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


def _check_rows(scored: Sequence[SubmissionResult]) -> tuple[CheckRow, ...]:
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


def _misconception_rows(
    scored: Sequence[SubmissionResult], feedback_href: Callable[[str], str]
) -> tuple[MisconceptionRow, ...]:
    first: dict[str, tuple[str, str]] = {}  # operator -> (family, misconception) of its first occurrence
    students: dict[str, list[str]] = {}
    for result in scored:
        for diagnosis in result.diagnoses:
            if not diagnosis.operator:
                continue
            first.setdefault(diagnosis.operator, (diagnosis.family, diagnosis.misconception))
            named = students.setdefault(diagnosis.operator, [])
            if result.student not in named:  # one submission counts once per operator
                named.append(result.student)
    ordered = sorted(students, key=lambda operator: (-len(students[operator]), operator))
    return tuple(
        MisconceptionRow(
            operator=operator,
            family=first[operator][0],
            misconception=first[operator][1],
            count=len(students[operator]),
            students=tuple(_link(name, feedback_href) for name in students[operator][:MAX_LINKED_STUDENTS]),
            more=max(0, len(students[operator]) - MAX_LINKED_STUDENTS),
        )
        for operator in ordered
    )


def _unmatched_count(scored: Sequence[SubmissionResult]) -> int:
    return sum(any(not diagnosis.operator for diagnosis in result.diagnoses) for result in scored)


def needs_a_human(result: SubmissionResult) -> bool:
    """Only an unusual status or an explicit review flag; load notices alone are routine."""
    return result.status is not Status.GRADED or bool(result.review)


def _human_reasons(result: SubmissionResult) -> tuple[str, ...]:
    detail = (result.status_detail,) if result.status is not Status.GRADED and result.status_detail else ()
    return detail + result.review


def _human_rows(results: Sequence[SubmissionResult], feedback_href: Callable[[str], str]) -> tuple[HumanRow, ...]:
    # Status rank puts infra errors first (the grader's own failures to fix), graded-with-review last.
    flagged = sorted(
        (result for result in results if needs_a_human(result)),
        key=lambda result: (-result.status.rank, result.student),
    )
    return tuple(
        HumanRow(
            student=_link(result.student, feedback_href),
            status=result.status.value,
            status_label=STATUS_LABELS[result.status],
            grader_fault=not result.status.is_students,
            reasons=_human_reasons(result),
        )
        for result in flagged
    )


def _section_cell(result: SubmissionResult, tag: str) -> str:
    if not result.scored:
        return NO_VALUE
    try:
        return format_number(result.section(tag).points)
    except KeyError:
        return NO_VALUE  # an older rubric or a partial result lacks the section


def _submission_rows(
    results: Sequence[SubmissionResult], heads: Sequence[SectionHead], feedback_href: Callable[[str], str]
) -> tuple[SubmissionRow, ...]:
    return tuple(
        SubmissionRow(
            student=_link(result.student, feedback_href),
            score=format_number(result.score) if result.scored else NO_VALUE,
            max_score=format_number(result.max_score),
            status=result.status.value,
            status_label=STATUS_LABELS[result.status],
            sections=tuple(_section_cell(result, head.tag) for head in heads),
        )
        for result in sorted(results, key=lambda result: result.student)
    )


def render_class_report(
    results: Sequence[SubmissionResult],
    *,
    title: str,
    feedback_href: Callable[[str], str] = default_feedback_href,
) -> str:
    """The class page. `feedback_href` receives each student id already percent-encoded as one path segment."""
    scored = [result for result in results if result.scored]
    heads = _section_heads(results)
    context = {
        "title": title,
        "summary": _summary(results, scored),
        "histogram": _histogram(scored),
        "svg_width": SVG_WIDTH,
        "svg_height": SVG_HEIGHT,
        "plot": {"left": _LEFT, "top": _TOP, "right": _LEFT + _PLOT_WIDTH, "bottom": _TOP + _PLOT_HEIGHT},
        "section_rows": tuple(_section_row(head, scored) for head in heads),
        "check_rows": _check_rows(scored),
        "misconceptions": _misconception_rows(scored, feedback_href),
        "unmatched": _unmatched_count(scored),
        "humans": _human_rows(results, feedback_href),
        "grader_fault_note": GRADER_FAULT_NOTE,
        "heads": heads,
        "rows": _submission_rows(results, heads, feedback_href),
    }
    return environment().get_template(TEMPLATE).render(context)


def write_class_report(results: Sequence[SubmissionResult], path: str | os.PathLike[str], *, title: str) -> None:
    write_text_atomic(path, render_class_report(results, title=title))
