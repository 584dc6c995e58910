"""Per-student HTML feedback: one self-contained page rendered from the result model."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from grader.report.graph_svg import NODE_W, Layout, layout
from grader.report.site_frame import SiteFrame
from grader.report.view import (
    INFRA_BANNER,
    OUTCOME_LABELS,
    OUTCOME_SYMBOLS,
    STATUS_LABELS,
    VISIBILITY_NOTES,
    WITHHELD_NOTE,
    NumberedCheck,
    checks_to_fix,
    counterexample_of,
    diagnosis_lines,
    format_number,
    group_by_section,
    instances_text,
    printable,
    self_check_text,
    short_sha,
    shows_details,
    status_detail,
    step5_line,
    write_text_atomic,
)
from grader.results import CheckResult, Comparison, GraphFigure, Status, SubmissionResult

TEMPLATE = "feedback.html.j2"


def _visible(value: object) -> object:
    """Every printed string shows control characters (ESC, BEL, ...) instead of carrying them raw;
    already-rendered markup (a captured block) is left alone."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return printable(value)
    return value


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
        finalize=_visible,
    )


@dataclass(frozen=True)
class FigureView:
    anchor: str
    figure: GraphFigure
    layout: Layout
    node_width: int = NODE_W


@dataclass(frozen=True)
class FdTableRow:
    """One row of a section's finite-difference table; a hidden check shows only its outcome."""

    anchor: str  # the check's card
    number: str
    operation: str
    point: str
    quantity: str
    analytic: str
    numeric: str
    rel_error: str
    ok: bool
    public: bool
    note: str = ""  # a hidden check's outcome in words (its card's message)


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
    figure: FigureView | None = None  # drawn in this card
    figure_link: str = ""  # anchor of this check's graph, drawn at the top of the section
    counterexample: CounterexampleView | None = None
    check_id: str = ""  # how a site names the check (its review requests), never shown


@dataclass(frozen=True)
class CounterexampleView:
    """A check's smallest failing program. A hidden check carries one only where its inputs may
    be shown (the rubric's ``counterexamples``, then the service's release rules)."""

    program: str
    operations: int
    comparisons: tuple[Comparison, ...]
    figure: FigureView | None
    same_as: str = ""  # anchor of an earlier check showing this very program (drawn there only)
    same_as_number: str = ""
    withheld: bool = False  # a hidden check's: the right answers and the wrong quantity, no engine value
    withheld_note: str = WITHHELD_NOTE


def _counterexample(
    number: str, check: CheckResult, shown: dict[tuple[str, bool], tuple[str, str]]
) -> CounterexampleView | None:
    """The view of a check's counterexample; one already on the page is linked, not repeated."""
    found = counterexample_of(check)
    if found is None:
        return None
    key = (found.program, found.withheld)
    earlier = shown.get(key)
    if earlier is not None:
        return CounterexampleView(found.program, found.operations, (), None, earlier[0], earlier[1], found.withheld)
    anchor = check_anchor(number)
    shown[key] = (f"{anchor}-smallest-title", number)
    figure = FigureView(f"{anchor}-smallest", found.figure, layout(found.figure)) if found.figure else None
    if found.withheld:
        figure = None  # a figure draws the engine's values
    return CounterexampleView(found.program, found.operations, found.comparisons, figure, withheld=found.withheld)


@dataclass(frozen=True)
class SectionView:
    anchor: str
    index: int
    tag: str
    title: str
    points: str  # "" when the result has no row for this section
    max_points: str
    cards: tuple[CheckCard, ...]
    figures: tuple[FigureView, ...] = ()  # graphs several checks of the section share
    fd_rows: tuple[FdTableRow, ...] = ()


def check_anchor(number: str) -> str:
    return f"check-{number.replace('.', '-')}"


def _card(
    number: str,
    check: CheckResult,
    figure: FigureView | None,
    figure_link: str,
    shown: dict[tuple[str, bool], tuple[str, str]] | None = None,
) -> CheckCard:
    public = shows_details(check)
    return CheckCard(
        anchor=check_anchor(number),
        number=number,
        title=check.title,
        points=format_number(check.points),
        max_points=format_number(check.max_points),
        outcome=check.outcome.value,
        outcome_label=OUTCOME_LABELS[check.outcome],
        outcome_symbol=OUTCOME_SYMBOLS[check.outcome],
        public=public,
        visibility_note=VISIBILITY_NOTES[check.visibility],
        message=check.message,
        built=check.built if public else "",
        comparisons=check.comparisons if public else (),
        instances=instances_text(check) if public else "",
        misconception=check.misconception if public else "",
        hint=check.hint if public else "",
        output=check.output if public else "",
        output_lines=len(check.output.splitlines()) if public else 0,
        notes=check.notes if public else (),
        figure=figure if public else None,
        figure_link=figure_link if public else "",
        counterexample=_counterexample(number, check, {} if shown is None else shown),
        check_id=check.check_id,
    )


def _fd_rows(anchor: str, number: str, check: CheckResult) -> list[FdTableRow]:
    if not shows_details(check):
        # A hidden check's row says only what its card says: the outcome, never a point or a value.
        return [FdTableRow(anchor, number, check.title, "", "", "", "", "", check.passed, False, check.message)]
    return [
        FdTableRow(anchor, number, r.operation, r.point, r.quantity, r.analytic, r.numeric, r.rel_error, r.ok, True)
        for r in check.fd_rows
    ]


def _sections(result: SubmissionResult) -> tuple[SectionView, ...]:
    views = []
    drawn = 0
    counterexamples: dict[tuple[str, bool], tuple[str, str]] = {}  # program -> where the page first shows it
    for group in group_by_section(result):
        # A graph several checks share is drawn once at the top of the section; one check's, in its card.
        uses: dict[str, int] = {}
        for numbered in group.checks:
            if numbered.check.figure and shows_details(numbered.check):
                uses[numbered.check.figure] = uses.get(numbered.check.figure, 0) + 1
        views_by_id: dict[str, FigureView] = {}
        for figure_id in uses:
            figure = result.figure(figure_id)
            if figure is not None:
                drawn += 1
                views_by_id[figure_id] = FigureView(f"figure-{drawn}", figure, layout(figure))
        shared = tuple(v for k, v in views_by_id.items() if uses[k] > 1)
        cards = []
        fd_rows: list[FdTableRow] = []
        for numbered in group.checks:
            check = numbered.check
            view = views_by_id.get(check.figure) if shows_details(check) else None
            inline = view if view is not None and uses[check.figure] == 1 else None
            link = view.anchor if view is not None and inline is None else ""
            card = _card(numbered.number, check, inline, link, counterexamples)
            cards.append(card)
            if check.finite_difference:
                fd_rows.extend(_fd_rows(card.anchor, numbered.number, check))
        views.append(
            SectionView(
                anchor=f"section-{group.index}",
                index=group.index,
                tag=group.tag,
                title=group.title,
                points=format_number(group.section.points) if group.section else "",
                max_points=format_number(group.section.max_points) if group.section else "",
                cards=tuple(cards),
                figures=shared,
                fd_rows=tuple(fd_rows),
            )
        )
    return tuple(views)


MAX_FIX_FIRST = 5


@dataclass(frozen=True)
class FixItem:
    anchor: str
    number: str
    title: str
    outcome: str
    outcome_label: str
    summary: str  # the figure's one-line story when there is one, else the check's message


def _fix_first(result: SubmissionResult, to_fix: tuple[NumberedCheck, ...]) -> tuple[FixItem, ...]:
    """The failing checks in rubric order: the first failing idea first."""
    items = []
    for numbered in to_fix[:MAX_FIX_FIRST]:
        check = numbered.check
        figure = result.figure(check.figure) if shows_details(check) and check.figure else None
        lost = next((n.lost for n in figure.nodes if n.lost), "") if figure else ""
        items.append(
            FixItem(
                anchor=check_anchor(numbered.number),
                number=numbered.number,
                title=check.title,
                outcome=check.outcome.value,
                outcome_label=OUTCOME_LABELS[check.outcome],
                summary=lost or check.message,
            )
        )
    return tuple(items)


def render_feedback_html(result: SubmissionResult, frame: SiteFrame | None = None) -> str:
    """The page; ``frame`` is what a web site serving it adds (none for the CLI's files)."""
    to_fix = checks_to_fix(result)
    context = {
        "student": result.student,
        "filename": result.filename,
        "scored": result.scored,
        "score": format_number(result.score) if result.scored else "",
        "max_score": format_number(result.max_score),
        "status": result.status.value,
        "status_label": STATUS_LABELS[result.status],
        "status_detail": status_detail(result),
        "infra_banner": INFRA_BANNER,
        "rubric_name": result.rubric_name,
        "rubric_sha": short_sha(result.rubric_sha),
        "runner": result.runner,
        "image": result.image,
        "execution_time": f"{result.execution_time:.1f}",
        "self_check": self_check_text(result) if result.visible_only else "",
        "load": result.load,
        "sections": _sections(result),
        "fix_first": _fix_first(result, to_fix) if result.scored else (),
        "failing_total": len(to_fix),
        "diagnoses": diagnosis_lines(result) if result.scored else [],
        "step5_note": step5_line(result),
        # A file that does not load is flagged in its load banner: no Step-5 note was read.
        "review": () if result.status is Status.NOT_LOADABLE else result.review,
        "load_review": result.review if result.status is Status.NOT_LOADABLE else (),
        "frame": frame,
    }
    return environment().get_template(TEMPLATE).render(context)


def write_feedback_html(result: SubmissionResult, path: str | os.PathLike[str]) -> None:
    write_text_atomic(path, render_feedback_html(result))
