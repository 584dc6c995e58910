"""What `grader grade` shows while a class grades, and the summary at the end (rich).

On a terminal: a progress bar with ETA. Elsewhere (CI logs, a pipe): one line per student, so
the log says what happened without control sequences.
"""

from __future__ import annotations

import statistics
import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from grader.report.view import STATUS_LABELS, format_number, printable
from grader.results import Status, SubmissionResult


class BatchProgress:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.started = time.monotonic()
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> BatchProgress:
        if self.console.is_terminal:
            self._progress = Progress(
                TextColumn("[bold]grading"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
                transient=False,
            )
            self._progress.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.__exit__(kind, error, trace)

    def plan(self, total: int, to_run: int) -> None:
        """Called once the work is known: ``total`` students, ``to_run`` of them need the sandbox."""
        if self._progress is not None:
            self._task = self._progress.add_task("grading", total=to_run)
        else:
            self.console.print(
                f"{total} submissions: {to_run} to run in the sandbox, {total - to_run} answered from the store"
            )

    def event(self, kind: str, result: SubmissionResult) -> None:
        if kind == "graded" and self._progress is not None and self._task is not None:
            self._progress.advance(self._task)
        if self._progress is None or kind != "skipped":
            score = f"{format_number(result.score)}/{format_number(result.max_score)}" if result.scored else "--"
            name = printable(result.student, one_line=True)[:32]
            line = f"  {name:32s} {score:>10s}  {result.status.value:12s} {kind}"
            # A Text, never a str: rich would read "[link=...]" as markup and ":smile:" as an emoji code.
            (self._progress.console if self._progress else self.console).print(Text(line), highlight=False)


def summary_table(
    results: tuple[SubmissionResult, ...], *, ran: int, rejudged: int, skipped: int, seconds: float
) -> Table:
    table = Table(title="Class summary", show_header=False, title_justify="left")
    table.add_column("what")
    table.add_column("value", justify="right")
    scored = [r.score for r in results if r.scored]
    table.add_row("submissions", str(len(results)))
    table.add_row("graded in the sandbox / re-judged / reused", f"{ran} / {rejudged} / {skipped}")
    for status in Status:
        count = sum(1 for r in results if r.status is status)
        if count:
            table.add_row(STATUS_LABELS[status], str(count))
    if scored:
        table.add_row("mean / median score", f"{statistics.mean(scored):.1f} / {statistics.median(scored):.1f}")
    review = sum(1 for r in results if r.review)
    table.add_row("flagged for review", str(review))
    table.add_row("time", f"{seconds:.1f} s" + (f" ({ran / seconds:.2f} submissions/s)" if ran and seconds else ""))
    return table
