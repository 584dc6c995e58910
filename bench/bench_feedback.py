"""What the feedback visuals cost: graph figures in the HTML page, measured against the same page
without them, and the whole page set against grading itself, all in the same run.

Grades the sample class once (local runner, fixed seed), then renders every student's feedback
with and without its figures, interleaved, and reports ratios of medians.

    .venv/bin/python bench/bench_feedback.py [--repeats 20] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from markdown_section import write_section

from grader.pipeline import grade_submission
from grader.report.html import render_feedback_html
from grader.report.markdown import render_markdown
from grader.results import SubmissionResult
from grader.rubric import DEFAULT_RUBRIC, load_rubric
from grader.runners.local import LocalRunner

REPO = Path(__file__).resolve().parents[1]


def without_figures(result: SubmissionResult) -> SubmissionResult:
    checks = tuple(dataclasses.replace(c, figure="", fd_rows=()) for c in result.checks)
    return dataclasses.replace(result, checks=checks, figures=())


def timed(render: Callable[[SubmissionResult], str], result: SubmissionResult) -> float:
    started = time.perf_counter()
    render(result)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--write", type=Path, help="replace this benchmark's section of a Markdown file")
    args = parser.parse_args()

    rubric = load_rubric(DEFAULT_RUBRIC)
    files = sorted((REPO / "submissions").glob("*/autograd_lab.py"))
    grading: list[float] = []
    results: list[SubmissionResult] = []
    for path in files:
        started = time.perf_counter()
        results.append(grade_submission(path, student=path.parent.name, rubric=rubric, runner=LocalRunner(), seed=7))
        grading.append(time.perf_counter() - started)
    render_feedback_html(results[0])  # template compilation is a one-off cost, not per student
    plain = [without_figures(r) for r in results]
    times: dict[str, list[float]] = {"html without figures": [], "html": [], "markdown": []}
    for _ in range(args.repeats):
        for result, bare in zip(results, plain, strict=True):  # interleaved: noise hits each alike
            times["html without figures"].append(timed(render_feedback_html, bare))
            times["html"].append(timed(render_feedback_html, result))
            times["markdown"].append(timed(render_markdown, result))
    median = {name: statistics.median(values) for name, values in times.items()}
    base = median["html without figures"]
    grade = statistics.median(grading)
    figures = sum(len(r.figures) for r in results)
    rows = [
        "| rendering | median ms / student | ratio to HTML without figures | share of grading one submission |",
        "|---|---|---|---|",
        *(
            f"| {name} | {median[name] * 1000:.2f} | {median[name] / base:.2f} | {median[name] / grade:.4f} |"
            for name in times
        ),
    ]
    summary = (
        f"Graph figures make the HTML page {median['html'] / base:.2f}x as costly to render "
        f"({figures} figures over {len(results)} sample students); the whole page is "
        f"{median['html'] / grade:.2%} of the median time to grade one submission ({grade:.2f} s, local runner, "
        "same run)."
    )
    lines = [
        "## Feedback rendering (bench/bench_feedback.py)",
        "",
        f"Sample class ({len(results)} students) graded once, then each page rendered {args.repeats} times, "
        "interleaved with its figure-free twin.",
        "",
        *rows,
        "",
        summary,
    ]
    print("\n".join(lines))
    if args.write:
        write_section(args.write, "bench_feedback", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
