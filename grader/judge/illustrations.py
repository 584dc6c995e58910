"""The pictures and tables a result carries: graph figures and finite-difference rows.

Both are built on the host from the same typed observations the comparers judged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..plan import Plan
from ..program import expression, program_root
from ..results import CheckResult, FdRow, GraphFigure
from ..rubric import Compare, Rubric
from .comparers import Context, missing_reason, number_ok, observes
from .expected import Expected, math_expected
from .figures import build_figure
from .records import SandboxReport
from .wording import show

# Checks on a graph program get its picture (when one failed, or when the graph itself is graded).
FIGURE_COMPARES: tuple[Compare, ...] = ("values", "graph", "schedule")
MAX_FD_ROWS = 8


def fd_rows(ctx: Context) -> tuple[FdRow, ...]:
    """The engine's leaf gradients beside centered differences, one row per leaf and instance."""
    rows: list[FdRow] = []
    for index, program in enumerate(ctx.probe.programs):
        numeric = math_expected(program)
        observed = ctx.report.observations(index)
        operation = expression(program)
        for leaf in program["leaves"]:
            key = f"{leaf}.grad"
            if key not in numeric or not observes(ctx, index, key):
                continue
            got, want = observed.get(key), numeric[key]
            rel = math.nan
            if isinstance(got, float) and not isinstance(got, bool):
                rel = abs(got - want) / max(1e-8, abs(got) + abs(want))
            rows.append(
                FdRow(
                    operation=operation,
                    point=", ".join(f"{k} = {v:g}" for k, v in program["leaves"].items()),
                    quantity=key,
                    analytic=show(got),
                    numeric=show(want),
                    rel_error=f"{rel:.2e}" if math.isfinite(rel) else "n/a",
                    ok=number_ok(got, want, ctx.tolerance),
                )
            )
    return tuple(rows[:MAX_FD_ROWS])


def build_figures(
    rubric: Rubric, plan: Plan, expected: Expected, report: SandboxReport, checks: Sequence[CheckResult]
) -> tuple[GraphFigure, ...]:
    """The graphs the checks refer to, each built once, from the first check that names it."""
    figures: dict[str, GraphFigure] = {}
    by_id = {c.id: c for c in plan.checks}
    for result in checks:
        if not result.figure or result.figure in figures:
            continue
        check = by_id[result.check_id]
        probe_id, index_text = result.figure.rsplit("#", 1)
        index = int(index_text)
        probe = plan.probe(probe_id)
        program = probe.programs[index]
        want = dict(expected.program(probe_id, index))
        if check.expect_from == "math":
            want.update(math_expected(program))
        ctx = Context(
            check, probe, report.probe(probe_id), expected, rubric.tolerances[check.tolerance], None, rubric.class_name
        )
        observed = ctx.report.observations(index)
        reached = observed.get(f"{program_root(program)}.grad") is not None
        problem = "" if reached else missing_reason(ctx, index).problem
        title = rubric.section(check.section).title if "graph" in program.get("record", ()) else check.title
        figures[result.figure] = build_figure(
            result.figure, title, program, observed, want, ctx.tolerance, problem=problem
        )
    return tuple(figures.values())
