"""Per-student HTML feedback: one self-contained page rendered from the result model."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from grader.report.view import (
    INFRA_BANNER,
    OUTCOME_LABELS,
    OUTCOME_SYMBOLS,
    STATUS_LABELS,
    diagnosis_lines,
    format_number,
    group_by_section,
    instances_text,
    self_check_text,
    short_sha,
    shows_details,
    step5_line,
    write_text_atomic,
)
from grader.results import CheckResult, Comparison, SubmissionResult, Visibility

TEMPLATE = "feedback.html.j2"

_VISIBILITY_NOTES: dict[Visibility, str] = {
    Visibility.VISIBLE: "",
    Visibility.HIDDEN: "Hidden check: details are not shown",
    Visibility.AFTER_DUE_DATE: "Hidden until the due date: details are not shown",
}


@functools.cache
def environment() -> Environment:
    # "feedback.html.j2" ends in .j2, so list it explicitly; default=True escapes anything else.
    return Environment(
        loader=PackageLoader("grader.report", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2"), default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


@dataclass(frozen=True)
class CheckCard:
    """One check as the page shows it. Hidden checks never get their details copied in."""

    anchor: str
    number: str
    title: str
    points: str
    max_points: str
    outcome: str  # outcome value, used as a CSS class
    outcome_label: str
    outcome_symbol: str
    public: bool
    visibility_note: str
    message: str
    built: str
    comparisons: tuple[Comparison, ...]
    instances: str
    misconception: str
    hint: str
    output: str
    output_lines: int
    notes: tuple[str, ...]


@dataclass(frozen=True)
class SectionView:
    anchor: str
    index: int
    tag: str
    title: str
    points: str  # "" when the result has no row for this section
    max_points: str
    cards: tuple[CheckCard, ...]


def _card(number: str, check: CheckResult) -> CheckCard:
    public = shows_details(check)
    return CheckCard(
        anchor=f"check-{number.replace('.', '-')}",
        number=number,
        title=check.title,
        points=format_number(check.points),
        max_points=format_number(check.max_points),
        outcome=check.outcome.value,
        outcome_label=OUTCOME_LABELS[check.outcome],
        outcome_symbol=OUTCOME_SYMBOLS[check.outcome],
        public=public,
        visibility_note=_VISIBILITY_NOTES[check.visibility],
        message=check.message,
        built=check.built if public else "",
        comparisons=check.comparisons if public else (),
        instances=instances_text(check) if public else "",
        misconception=check.misconception if public else "",
        hint=check.hint if public else "",
        output=check.output if public else "",
        output_lines=len(check.output.splitlines()) if public else 0,
        notes=check.notes if public else (),
    )


def _sections(result: SubmissionResult) -> tuple[SectionView, ...]:
    views = []
    for group in group_by_section(result):
        views.append(
            SectionView(
                anchor=f"section-{group.index}",
                index=group.index,
                tag=group.tag,
                title=group.title,
                points=format_number(group.section.points) if group.section else "",
                max_points=format_number(group.section.max_points) if group.section else "",
                cards=tuple(_card(numbered.number, numbered.check) for numbered in group.checks),
            )
        )
    return tuple(views)


def render_feedback_html(result: SubmissionResult) -> str:
    context = {
        "student": result.student,
        "filename": result.filename,
        "scored": result.scored,
        "score": format_number(result.score) if result.scored else "",
        "max_score": format_number(result.max_score),
        "status": result.status.value,
        "status_label": STATUS_LABELS[result.status],
        "status_detail": result.status_detail,
        "infra_banner": INFRA_BANNER,
        "rubric_name": result.rubric_name,
        "rubric_sha": short_sha(result.rubric_sha),
        "seed": result.seed,
        "runner": result.runner,
        "image": result.image,
        "execution_time": f"{result.execution_time:.1f}",
        "self_check": self_check_text(result) if result.visible_only else "",
        "load": result.load,
        "sections": _sections(result),
        "diagnoses": diagnosis_lines(result) if result.scored else [],
        "step5_note": step5_line(result),
        "review": result.review,
    }
    return environment().get_template(TEMPLATE).render(context)


def write_feedback_html(result: SubmissionResult, path: str | os.PathLike[str]) -> None:
    write_text_atomic(path, render_feedback_html(result))
