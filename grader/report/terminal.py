"""Short self-check summary for the terminal: score, sections, then what to fix first."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from grader.report.view import (
    INFRA_BANNER,
    OUTCOME_LABELS,
    OUTCOME_SYMBOLS,
    STATUS_LABELS,
    NumberedCheck,
    comparison_line,
    counterexample_lines,
    counterexample_of,
    diagnosis_lines,
    failing_checks,
    format_number,
    group_by_section,
    printable,
    score_text,
    self_check_text,
    shows_details,
    status_detail,
    step5_line,
)
from grader.results import Outcome, Status, SubmissionResult

MAX_LISTED = 8  # failing checks listed; the HTML feedback has the rest
MAX_COMPARISONS = 4
WIDTH = 100

_OUTCOME_STYLES: dict[Outcome, str] = {
    Outcome.PASSED: "green",
    Outcome.PARTIAL: "yellow",
    Outcome.FAILED: "red",
    Outcome.ERROR: "red",
    Outcome.TIMEOUT: "yellow",
    Outcome.NOT_RUN: "dim",
}


def _text(value: str, style: str = "", *, one_line: bool = False) -> Text:
    # Text(), never markup: student strings such as "[bold]", "[link=...]" or "\x1b[2J" stay inert.
    return Text(printable(value, one_line=one_line), style=style)


def _header(result: SubmissionResult) -> RenderableType:
    head = Text(style="bold")
    # One line each: a newline in a folder or file name must not start a line of its own.
    head.append_text(_text(result.student, one_line=True))
    head.append(" \u00b7 ")
    head.append_text(_text(result.filename, one_line=True))
    if result.scored:
        head.append(f" \u00b7 {score_text(result)}")
    status_style = "green" if result.status is Status.GRADED else "yellow" if result.scored else "red"
    head.append(" \u00b7 ")
    head.append(STATUS_LABELS[result.status], style=status_style)
    lines: list[RenderableType] = [head]
    if not result.scored:
        lines.append(Text(INFRA_BANNER, style="bold"))
    if status_detail(result):
        lines.append(_text(status_detail(result), "dim"))
    if result.visible_only:
        lines.append(Text(f"{self_check_text(result)}; the score counts visible checks only.", style="yellow"))
    return Group(*lines)


def _load(result: SubmissionResult) -> list[RenderableType]:
    parts: list[RenderableType] = []
    if not result.load.ok:
        parts.append(Text("Your file could not be loaded; no check could run.", style="bold red"))
        parts.append(Padding(_text(result.load.error), (0, 0, 0, 4), expand=False))
        if result.load.excerpt:
            parts.append(Padding(_text(result.load.excerpt), (0, 0, 0, 4), expand=False))
    for notice in result.load.notices:
        line = Text("Note: ", style="yellow")
        line.append_text(_text(notice))
        parts.append(line)
    return parts


def _sections(result: SubmissionResult) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("#", justify="right")
    table.add_column("Section")
    table.add_column("Points", justify="right")
    table.add_column("Max", justify="right")
    for group in group_by_section(result):
        if group.section is None:
            continue
        full = group.section.points >= group.section.max_points
        table.add_row(
            str(group.index),
            _text(group.title),
            Text(format_number(group.section.points), style="green" if full else "red"),
            format_number(group.section.max_points),
        )
    return table


def _failing(numbered: NumberedCheck, result: SubmissionResult) -> RenderableType:
    check = numbered.check
    head = Text()
    head.append(f"{numbered.number} ", style="bold")
    head.append_text(_text(check.title, "bold"))
    head.append("  ")
    head.append(
        f"{OUTCOME_SYMBOLS[check.outcome]} {OUTCOME_LABELS[check.outcome]}", style=_OUTCOME_STYLES[check.outcome]
    )
    head.append(f"  {format_number(check.points)} / {format_number(check.max_points)}")
    if not shows_details(check):
        head.append("  (hidden check)", style="dim")
    body: list[RenderableType] = []
    if check.message:
        body.append(_text(check.message))
    found = counterexample_of(check)
    if found is not None:
        count = f"{found.operations} operation{'' if found.operations == 1 else 's'}"
        body.append(_text(f"Smallest failing program ({count}):", "bold"))
        body.extend(_text("  " + line) for line in found.program.splitlines())
        body.extend(_text(line, "red") for line in counterexample_lines(found))
    if shows_details(check):
        shown = check.comparisons[:MAX_COMPARISONS]
        for comparison in shown:
            body.append(_text(comparison_line(comparison), "" if comparison.ok else "red"))
        if len(check.comparisons) > len(shown):
            body.append(Text(f"... {len(check.comparisons) - len(shown)} more in the HTML feedback", style="dim"))
        figure = result.figure(check.figure) if check.figure else None
        if figure is not None:
            body.append(_text(f"Graph: {figure.summary}", "red"))
        body.extend(_text(f"- {note}") for note in check.notes)
        if check.misconception:
            body.append(_text(f"Likely misconception: {check.misconception}", "yellow"))
        if check.hint:
            body.append(_text(f"Hint: {check.hint}", "cyan"))
    # One Padding per line: a padded Group would fill every line to the longest one.
    return Group(head, *(Padding(line, (0, 0, 0, 4), expand=False) for line in body))


def _renderables(result: SubmissionResult) -> list[RenderableType]:
    parts: list[RenderableType] = [_header(result), *_load(result)]
    if result.scored and result.sections:
        parts.extend((Text(""), _sections(result)))
    if not result.scored:
        return parts
    for heading, text in diagnosis_lines(result):
        parts.append(_text(f"{heading}: {text}", "yellow"))
    if step5_line(result):
        parts.append(_text(step5_line(result), "dim"))
    for reason in result.review:
        parts.append(_text(f"Flagged for review: {reason}", "magenta"))
    failing = failing_checks(result)
    if failing:
        parts.extend((Text(""), Text("To fix, first failing idea first:", style="bold")))
        parts.extend(_failing(numbered, result) for numbered in failing[:MAX_LISTED])
        if len(failing) > MAX_LISTED:
            parts.append(
                Text(f"... and {len(failing) - MAX_LISTED} more failing checks in the HTML feedback.", style="dim")
            )
    not_run = sum(1 for check in result.checks if check.outcome is Outcome.NOT_RUN)
    if not_run:
        parts.append(Text(f"{not_run} check{'s were' if not_run != 1 else ' was'} not run.", style="dim"))
    if result.load.ok and result.checks and not failing and not not_run:
        parts.append(Text("All checks passed.", style="bold green"))
    return parts


def _print(result: SubmissionResult, console: Console) -> None:
    for part in _renderables(result):
        console.print(part, highlight=False)


def render_summary(result: SubmissionResult, *, color: bool) -> str:
    """The summary as a string; plain text (no escape sequences) when `color` is False."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=WIDTH,
        force_terminal=color,
        color_system="standard" if color else None,
        no_color=not color,
        highlight=False,
        emoji=False,
        legacy_windows=False,
        force_jupyter=False,
    )
    _print(result, console)
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def print_summary(result: SubmissionResult, console: Console | None = None) -> None:
    """Print to `console` (default: stdout); rich drops colour when it is not a terminal."""
    _print(result, console if console is not None else Console(highlight=False, emoji=False))
