"""What a student may see of a result, decided before the grader's page is rendered."""

from __future__ import annotations

from dataclasses import replace

from grader.results import SectionResult, Status, SubmissionResult, Visibility

from .models import REGRADE_FAILED, State, Submission


def student_view(result: SubmissionResult, submission: Submission) -> SubmissionResult:
    """What the student may see: never the grading machinery (``without_machinery``), and a
    counted submission's hidden checks out of sight until the student's due date (Gradescope's
    ``after_due_date``), unless the assignment shows them at once."""
    result = without_machinery(result)
    if not submission.hides_hidden(viewer_is_staff=False):
        return result
    shown = tuple(c for c in result.checks if c.visibility is Visibility.VISIBLE)
    hidden = len(result.checks) - len(shown)
    # A rubric may let students see a hidden check's smallest failing program at once: only
    # that, under no title and for no points (its section's totals leave it out).
    early = tuple(
        replace(
            c,
            title="A hidden check",
            points=0.0,
            max_points=0.0,
            message="",
            hint="",
            misconception="",
            comparisons=(),
            notes=(),
            figure="",
            fd_rows=(),
            output="",
        )
        for c in result.checks
        if c.visibility is not Visibility.VISIBLE and c.counterexample is not None and c.counterexample.shown == "always"
    )
    sections = tuple(
        SectionResult(
            s.tag,
            s.title,
            round(sum(c.points for c in shown if c.section == s.tag), 2),
            round(sum(c.max_points for c in shown if c.section == s.tag), 2),
        )
        for s in result.sections
    )
    note = f"(The {hidden} hidden checks' results are shown after the deadline.)"
    # A time, memory or output limit may have been hit in a hidden check: not told either (the
    # visible checks' own outcomes still say what happened to them).
    resource = result.status in RESOURCE_STATUSES
    return replace(
        result,
        checks=shown + early,
        sections=sections,
        score=round(sum(c.points for c in shown), 2),
        max_score=round(sum(c.max_points for c in shown), 2),
        diagnoses=(),  # they can rest on hidden checks
        status=Status.GRADED if resource else result.status,
        status_detail=note if resource else " ".join(
            part for part in (without_hidden_titles(result.status_detail, result), note) if part
        ),
    )


RESOURCE_STATUSES = (Status.TIMEOUT, Status.OOM, Status.OUTPUT_LIMIT)
# Said to a student in place of an infrastructure failure's own words, which can name the
# engine, an image, a container or a host.
INFRA_DETAIL = "the grader failed, not your submission: nothing counts against you"
REGRADE_FAILED_DETAIL = "a regrade could not be done; the earlier result stands"


def without_machinery(result: SubmissionResult) -> SubmissionResult:
    """No sandbox image (its digest), runner, or infrastructure error text: how and where the
    service grades is for its staff (the feedback page then shows no runner line at all)."""
    return replace(
        result,
        runner="",
        image="",
        status_detail="" if result.status is Status.INFRA_ERROR else result.status_detail,
    )


def without_hidden_titles(detail: str, result: SubmissionResult) -> str:
    """The status line may name a check (the first to time out): a hidden one stays unnamed."""
    for check in result.checks:
        if check.visibility is not Visibility.VISIBLE and check.title:
            detail = detail.replace(check.title, "a hidden check")
    return detail


def detail_for(submission: Submission, viewer_is_staff: bool) -> str:
    if not viewer_is_staff and submission.detail:
        if submission.state == State.INFRA_ERROR:
            return INFRA_DETAIL
        if submission.detail.startswith(REGRADE_FAILED):
            return REGRADE_FAILED_DETAIL
    if not submission.detail or not submission.hides_hidden(viewer_is_staff) or not submission.result_json:
        return submission.detail
    if submission.shown_state(viewer_is_staff) != submission.state:
        return ""  # a limit that may have been hit in a hidden check
    from grader.results_io import result_from_json

    return without_hidden_titles(submission.detail, result_from_json(submission.result_json))
