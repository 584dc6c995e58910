"""The class view's table: one row per enrolled student, read for the whole class in a fixed
number of queries, then sorted and filtered by the query string's bounded choices."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.db.models import Prefetch

from grader.errors import StoreError
from grader.results_io import summary_from_json

from ..submissions.models import Kind, Regrade, ScoreOverride, State, Submission
from ..submissions.standing import counted_among
from .models import Assignment, Enrolment, Role
from .people import full_name

NOT_SUBMITTED = "not_submitted"
FILTERS = {
    "all": "All students",
    "not-submitted": "Not submitted",
    "review": "Needs review",
    "late": "Late",
    "overridden": "Overridden",
}
FIXED_SORTS = ("name", "username", "total", "late", "status")
MAX_SEARCH = 100  # characters of a name search; a longer one is cut, never refused
MAX_TRIES_SHOWN = 5  # a row lists a student's latest submissions, not all of them
# How a status sorts: what needs staff first, a grade last.
STATUS_ORDER = [
    State.INFRA_ERROR,
    State.UNGRADABLE,
    State.NOT_LOADABLE,
    State.TIMEOUT,
    State.OOM,
    State.OUTPUT_LIMIT,
    State.RUNNING,
    State.QUEUED,
    NOT_SUBMITTED,
    State.GRADED,
    State.SUPERSEDED,
]
UNUSUAL = {
    str(s.value)
    for s in (State.INFRA_ERROR, State.UNGRADABLE, State.NOT_LOADABLE, State.TIMEOUT, State.OOM, State.OUTPUT_LIMIT)
}
STATUS_CHOICES = [(NOT_SUBMITTED, "not submitted"), *((str(s.value), str(s.label).lower()) for s in State)]


@dataclass
class Row:
    user: User
    left_at: datetime | None
    counted: Submission | None
    tries: list[Submission]
    more_tries: int
    status: str  # the latest submission's state, or NOT_SUBMITTED
    sections: dict[str, float | None] = field(default_factory=dict)
    review: tuple[str, ...] = ()
    late_percent: float = 0.0
    late_points: float = 0.0  # taken off, positive
    override: ScoreOverride | None = None
    override_from: float | None = None  # the score before the override
    before_regrade: float | None = None
    unreadable: bool = False  # a stored result this grader cannot read
    extension: datetime | None = None
    lms: str = ""
    section_points: list[float | None] = field(default_factory=list)  # in the rubric's order

    @property
    def name(self) -> str:
        return full_name(self.user)

    @property
    def total(self) -> float | None:
        return self.counted.counted_score if self.counted else None

    @property
    def late(self) -> bool:
        return self.late_percent > 0

    @property
    def needs_review(self) -> bool:
        """The class report's "needs a human": an unusual status or a review flag."""
        return bool(self.review) or self.unreadable or self.status in UNUSUAL

    @property
    def review_reasons(self) -> str:
        reasons = list(self.review)
        if self.status in UNUSUAL:
            reasons.insert(0, f"status: {self.status_label}")
        if self.unreadable:
            reasons.insert(0, "its stored result cannot be read by this grader")
        return "; ".join(reasons)

    @property
    def status_badge(self) -> str:
        """The badge class of the status: a grade, nothing yet, or something to look at."""
        if self.status == State.GRADED:
            return "badge-ok"
        if self.status in UNUSUAL:
            return "badge-error"
        return "badge-muted"

    @property
    def status_label(self) -> str:
        return "not submitted" if self.status == NOT_SUBMITTED else self.status.replace("_", " ")


def class_rows(assignment: Assignment, extensions: Mapping[int, datetime], lms: Mapping[int, str]) -> list[Row]:
    """Every enrolled student's row: five queries whatever the class's size."""
    enrolments = list(
        Enrolment.objects.filter(course=assignment.course, role=Role.STUDENT)
        .select_related("user")
        .order_by("user__username")
    )
    latest_regrade = Prefetch("regrades", queryset=Regrade.objects.only("submission_id", "old_score", "at"))
    submissions = (
        Submission.objects.filter(assignment=assignment, kind=Kind.SUBMIT)
        .defer("content", "result_json", "detail", "problem")
        .prefetch_related("overrides", latest_regrade)
        .order_by("user_id", "-received_at", "-id")
    )
    by_user: dict[int, list[Submission]] = defaultdict(list)
    for submission in submissions:
        by_user[submission.user_id].append(submission)
    rows = []
    for enrolment in enrolments:
        mine = by_user.get(enrolment.user_id, [])
        counted = counted_among(assignment.counted, mine)
        rows.append(
            Row(
                user=enrolment.user,
                left_at=enrolment.left_at,
                counted=counted,
                tries=mine[:MAX_TRIES_SHOWN],
                more_tries=max(0, len(mine) - MAX_TRIES_SHOWN),
                status=str(mine[0].state) if mine else NOT_SUBMITTED,
                extension=extensions.get(enrolment.user_id),
                lms=lms.get(enrolment.user_id, ""),
            )
        )
    _add_results(rows)
    return rows


def _add_results(rows: list[Row]) -> None:
    """Sections and review flags from the counted results (one query), penalty and override."""
    counted = {row.counted.pk: row for row in rows if row.counted is not None}
    stored = Submission.objects.filter(pk__in=list(counted)).values_list("pk", "result_json")
    texts = dict(stored) if counted else {}
    for pk, row in counted.items():
        submission = row.counted
        assert submission is not None
        text = texts.get(pk, "")
        if text:
            try:
                summary = summary_from_json(text)
            except StoreError:
                row.unreadable = True
            else:
                row.sections = dict(summary.sections)
                row.review = summary.review
        row.late_percent = submission.late_penalty
        if submission.score is not None:
            # As Submission.counted_score takes it off, before any override.
            after_late = round(submission.score * (1 - submission.late_penalty / 100), 2)
            row.late_points = round(submission.score - after_late, 6) if submission.late_penalty else 0.0
            row.override_from = after_late
        row.override = max(submission.overrides.all(), key=lambda o: (o.at, o.pk), default=None)
        regrades = sorted(submission.regrades.all(), key=lambda r: r.at, reverse=True)
        row.before_regrade = regrades[0].old_score if regrades else None


@dataclass(frozen=True)
class View:
    """The table's sort and filter, read from the query string: anything unknown is the default."""

    sort: str = "name"
    descending: bool = False
    show: str = "all"
    status: str = ""
    search: str = ""

    def query(self, **changes: object) -> str:
        """This view's query string (with ``changes``), defaults left out."""
        values = {
            "sort": self.sort,
            "dir": "desc" if self.descending else "asc",
            "show": self.show,
            "status": self.status,
            "q": self.search,
        }
        values.update({key: str(value) for key, value in changes.items()})
        defaults = {"sort": "name", "dir": "asc", "show": "all", "status": "", "q": ""}
        kept = {key: value for key, value in values.items() if value != defaults[key]}
        return urlencode(kept)


def read_view(params: Mapping[str, str], section_tags: list[str]) -> View:
    sort = params.get("sort", "name")
    sorts = {*FIXED_SORTS, *(f"section:{tag}" for tag in section_tags)}
    show = params.get("show", "all")
    status = params.get("status", "")
    return View(
        sort=sort if sort in sorts else "name",
        descending=params.get("dir") == "desc",
        show=show if show in FILTERS else "all",
        status=status if status in dict(STATUS_CHOICES) else "",
        # A NUL cannot be in a name; from a form's ``back`` it would make the next address a 400.
        search=" ".join(params.get("q", "").replace("\x00", " ").split())[:MAX_SEARCH],
    )


def shown(rows: list[Row], view: View, section_tags: list[str]) -> list[Row]:
    """The rows this view shows, in its order (ties by name, then username), each with its
    sections' points in the rubric's order."""
    kept = [row for row in rows if _passes(row, view)]
    for row in kept:
        row.section_points = [row.sections.get(tag) for tag in section_tags]
    kept.sort(key=lambda row: (row.name.casefold(), row.user.username))
    if view.sort != "name":
        # Rows without the value (nobody's score yet) go last whichever the direction.
        present = [row for row in kept if _key(row, view.sort) is not None]
        absent = [row for row in kept if _key(row, view.sort) is None]
        present.sort(key=lambda row: _key(row, view.sort), reverse=view.descending)  # type: ignore[arg-type, return-value]
        return present + absent
    return list(reversed(kept)) if view.descending else kept


def _passes(row: Row, view: View) -> bool:
    if view.show == "not-submitted" and row.status != NOT_SUBMITTED:
        return False
    if view.show == "review" and not row.needs_review:
        return False
    if view.show == "late" and not row.late:
        return False
    if view.show == "overridden" and row.override is None:
        return False
    if view.status and row.status != view.status:
        return False
    if view.search:
        wanted = view.search.casefold()
        return wanted in row.name.casefold() or wanted in row.user.username.casefold()
    return True


def _key(row: Row, sort: str) -> object:
    if sort == "username":
        return row.user.username
    if sort == "total":
        return row.total
    if sort == "late":
        return row.late_points if row.counted else None
    if sort == "status":
        return STATUS_ORDER.index(row.status) if row.status in STATUS_ORDER else len(STATUS_ORDER)
    tag = sort.removeprefix("section:")
    return row.sections.get(tag)
