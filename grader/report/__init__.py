"""Writers for the one result model: HTML and Markdown feedback, terminal summary, results.json, grades.csv."""

from __future__ import annotations

from grader.report.csv_export import write_grades_csv
from grader.report.gradescope import to_gradescope, write_gradescope
from grader.report.html import render_feedback_html, write_feedback_html
from grader.report.markdown import render_markdown, write_markdown
from grader.report.terminal import print_summary, render_summary

__all__ = [
    "print_summary",
    "render_feedback_html",
    "render_markdown",
    "render_summary",
    "to_gradescope",
    "write_feedback_html",
    "write_grades_csv",
    "write_gradescope",
    "write_markdown",
]
