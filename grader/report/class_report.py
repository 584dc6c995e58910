"""Class report: one self-contained page (OUT/index.html) summarising every submission for the instructor.

Infra errors carry no score (`SubmissionResult.scored` is False), so every statistic here is taken
over scored submissions only and the page says how many were left out. Everything a student
controls (ids, status details, review reasons, misconception text) reaches the template as plain
strings: autoescape handles it and nothing is ever marked safe. The numbers (summary, histogram,
per-section and per-check rates) come from ``class_stats``; this module adds the per-student tables.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from grader.report.class_stats import BINS as BINS  # re-exported (as are bin_counts, bin_index)
from grader.report.class_stats import (
    NO_VALUE,
    SVG_HEIGHT,
    SVG_WIDTH,
    SectionHead,
    check_rows,
    histogram,
    plot_frame,
    section_heads,
    section_row,
    summary,
)
from grader.report.class_stats import bin_counts as bin_counts
from grader.report.class_stats import bin_index as bin_index
from grader.report.html import environment
from grader.report.site_frame import SiteFrame
from grader.report.view import STATUS_LABELS, format_number, write_text_atomic
from grader.results import Status, SubmissionResult
from grader.similarity.summary import SimilaritySection

TEMPLATE = "class_report.html.j2"
MAX_LINKED_STUDENTS = 5

GRADER_FAULT_NOTE = "the grader's failure, not the student's"


def default_feedback_href(student: str) -> str:
    return f"{student}/feedback.html"


@dataclass(frozen=True)
class StudentLink:
    name: str  # untrusted: escaped by the template
    href: str


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


def _link(student: str, feedback_href: Callable[[str], str]) -> StudentLink:
    # safe="" also encodes "/", so an id can never reach outside its own directory.
    return StudentLink(name=student, href=feedback_href(quote(student, safe="")))


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
    similarity: SimilaritySection | None = None,
    similarity_hint: str = "grader similarity OUT",
    similarity_href: str = "",
    frame: SiteFrame | None = None,
) -> str:
    """The class page. `feedback_href` receives each student id already percent-encoded as one path segment.
    ``similarity`` is the last similarity report's headline; without one the page says how to make
    it: the command ``similarity_hint``, or a link to ``similarity_href`` where a page makes it."""
    scored = [result for result in results if result.scored]
    heads = section_heads(results)
    context = {
        "title": title,
        "summary": summary(results, scored),
        "histogram": histogram(scored),
        "svg_width": SVG_WIDTH,
        "svg_height": SVG_HEIGHT,
        "plot": plot_frame(),
        "frame": frame,
        "section_rows": tuple(section_row(head, scored) for head in heads),
        "check_rows": check_rows(scored),
        "misconceptions": _misconception_rows(scored, feedback_href),
        "unmatched": _unmatched_count(scored),
        "humans": _human_rows(results, feedback_href),
        "grader_fault_note": GRADER_FAULT_NOTE,
        "heads": heads,
        "rows": _submission_rows(results, heads, feedback_href),
        "similarity": similarity,
        "similarity_hint": similarity_hint,
        "similarity_href": similarity_href,
    }
    return environment().get_template(TEMPLATE).render(context)


def write_class_report(results: Sequence[SubmissionResult], path: str | os.PathLike[str], *, title: str) -> None:
    write_text_atomic(path, render_class_report(results, title=title))
