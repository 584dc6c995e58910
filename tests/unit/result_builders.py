"""Builders for result-model objects, shared by the report tests (HTML, Markdown, class report, figures)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from grader.results import CheckResult, LoadReport, Outcome, SectionResult, Status, SubmissionResult, Visibility


def make_check(
    check_id: str,
    section: str,
    *,
    outcome: Outcome = Outcome.PASSED,
    visibility: Visibility = Visibility.VISIBLE,
    points: float | None = None,
    max_points: float = 2.0,
    **fields: Any,
) -> CheckResult:
    """A check; without `points`, full marks when it passed and none otherwise."""
    base: dict[str, Any] = {"title": check_id, "built": "", "message": "Correct.", "hint": ""}
    base.update(fields)
    if points is None:
        points = max_points if outcome is Outcome.PASSED else 0.0
    return CheckResult(
        check_id=check_id,
        section=section,
        visibility=visibility,
        points=points,
        max_points=max_points,
        outcome=outcome,
        **base,
    )


def make_submission(checks: Sequence[CheckResult], titles: Mapping[str, str], **overrides: Any) -> SubmissionResult:
    """A graded submission whose sections (tag -> title, in order) add up its checks."""
    sections = tuple(
        SectionResult(
            tag=tag,
            title=title,
            points=sum(c.points for c in checks if c.section == tag),
            max_points=sum(c.max_points for c in checks if c.section == tag),
        )
        for tag, title in titles.items()
    )
    fields: dict[str, Any] = {
        "student": "ada",
        "filename": "autograd_lab.py",
        "status": Status.GRADED,
        "score": sum(s.points for s in sections),
        "max_score": sum(s.max_points for s in sections),
        "sections": sections,
        "checks": tuple(checks),
        "load": LoadReport(ok=True, mode="full", class_name="Value"),
        "status_detail": "All checks ran.",
        "rubric_name": "a8_autograd_lab",
        "rubric_sha": "3f9c2b7a1d0e4c5b6a7980f1e2d3c4b5a6978877",
        "seed": 20240917,
        "runner": "docker",
        "image": "autograd-grader:1",
        "execution_time": 3.4,
    }
    fields.update(overrides)
    return SubmissionResult(**fields)
