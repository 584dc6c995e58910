"""A deadline week in Chromium, page by page, as a student and as an instructor live it.

The student signs in, self-checks, submits, reads the feedback and asks for a review of one
check. The instructor reads the class view (sorted, filtered), overrides a score inline with a
reason, grants an extension, answers the review request with a new score, reads the audit page
and downloads every export. The student then finds the answer under the check.

Every page the walks visit is checked by axe-core for WCAG 2.1 A and AA, in the light and the
dark scheme, and photographed in both (under docs/screenshots/service/ with UPDATE_SCREENSHOTS=1,
else under pytest's tmp folder). Grading is the real path: the queue, a worker, the sandbox.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from accessibility import SCHEMES, violations
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import Locator, Page, expect
from service_cast import BUGGY, Cast
from service_worker import work
from stored_results import graded
from test_browser import BUGGY_PATH, Tab, browser, chromium, new_tab, off_loop, points  # noqa: F401  # fixtures

from service.submissions.models import AuditEntry, ReviewRequest, Submission

pytestmark = [
    pytest.mark.browser,
    pytest.mark.db,
    pytest.mark.docker,
    pytest.mark.django_db(transaction=True),
]

# The check the bug in bob_okafor's file fails in plain sight (a visible check).
DISPUTED = "y = x*x + x at x = 3 gives x.grad = 7"
NAMES = {"alice": ("Alice", "Zhou"), "bob": ("Bob", "Okafor"), "ines": ("Ines", "Moreau")}


@dataclass
class Walk:
    """What a walk saw: each page's axe violations per scheme, and the pictures taken."""

    folder: Path
    seen: dict[str, list[str]] = field(default_factory=dict)

    def look(self, tab: Tab, name: str) -> None:
        """Photograph the page and run axe on it, in each colour scheme."""
        page = tab.page
        for scheme in SCHEMES:
            page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
            tab.screenshot(f"{name}-{scheme}", self.folder)
            self.seen[f"{name} ({scheme})"] = violations(page)
        page.emulate_media(color_scheme="light")

    def assert_accessible(self, pages: int) -> None:
        assert len(self.seen) == pages * len(SCHEMES), sorted(self.seen)  # every page was checked
        found = [line for lines in self.seen.values() for line in lines]
        assert found == [], "\n".join(found)


def named() -> None:
    for username, (first, last) in NAMES.items():
        User.objects.filter(username=username).update(first_name=first, last_name=last)


def sign_in(tab: Tab, username: str, password: str, walk: Walk | None = None) -> None:
    tab.open("/accounts/login/")
    if walk is not None:
        walk.look(tab, "sign-in")
    tab.page.get_by_label("Username").fill(username)
    tab.page.get_by_label("Password").fill(password)
    tab.page.get_by_role("button", name="Sign in").click()
    first, last = NAMES[username]
    expect(tab.page.locator(".site-header .who")).to_contain_text(f"Signed in as {first} {last}")


def disputed(page: Page) -> Locator:
    """The disputed check's own card (its title in its heading; other cards may quote it)."""
    return page.locator("article.check", has=page.locator("h4", has_text=DISPUTED))


def upload(page: Page, kind: str) -> int:
    page.get_by_label(re.compile("autograd_lab.py")).set_input_files(BUGGY_PATH)
    page.get_by_role("button", name=kind, exact=True).click()
    expect(page).to_have_url(re.compile(r"/submissions/\d+/$"))
    return int(page.url.rstrip("/").rsplit("/", 1)[-1])


def graded_now(page: Page) -> None:
    """A worker grades what is queued; the page, following status.json, shows the outcome."""
    off_loop(work)
    expect(page.locator("[data-follow]")).to_have_count(0, timeout=20_000)


def student_submits_and_asks(tab: Tab, cast: Cast, walk: Walk) -> int:
    page = tab.page
    sign_in(tab, "alice", cast.password, walk)
    walk.look(tab, "home")
    page.get_by_role("link", name="A8").click()
    expect(page.get_by_role("heading", name="A8", level=1)).to_be_visible()

    upload(page, "Self-check")
    walk.look(tab, "receipt-queued")
    graded_now(page)
    expect(page.locator("dl.outcome .status")).to_have_text("graded")
    walk.look(tab, "self-check-done")

    page.get_by_role("link", name=re.compile("A8")).first.click()  # the breadcrumb back
    expect(page).to_have_url(tab.base + "/a/a8/")
    pk = upload(page, "Submit")
    graded_now(page)
    walk.look(tab, "submission-done")

    page.get_by_role("link", name="Feedback").click()
    expect(page).to_have_url(f"{tab.base}/submissions/{pk}/feedback/")
    header = page.locator(".site-header .crumbs")
    expect(header.get_by_role("link", name=f"Submission {pk}")).to_be_visible()  # the way back
    walk.look(tab, "feedback")

    card = disputed(page)
    card.get_by_text("Ask staff to review this check").click()
    card.get_by_label(re.compile("What should staff look at again")).fill(
        "My x.grad is 7 when I run this by hand; could the graph be read again?"
    )
    card.get_by_role("button", name="Ask for a review").click()
    expect(page.locator(".messages")).to_contain_text("review")
    card = disputed(page)
    expect(card.locator(".review")).to_contain_text("My x.grad is 7")
    walk.look(tab, "feedback-review-asked")

    tab.open("/a/a8/")
    expect(page.get_by_role("heading", name="Your review requests")).to_be_visible()
    walk.look(tab, "assignment")
    return pk


def a_class_around(cast: Cast) -> None:
    """Classmates graded earlier: one late, one flagged for review, one who never submits."""

    def make() -> None:
        for username, first, last in (("chen", "Chen", "Wu"), ("dara", "Dara", "Singh"), ("eve", "Eve", "Nowak")):
            user = User.objects.create_user(username, f"{username}@example.edu", cast.password)
            User.objects.filter(pk=user.pk).update(first_name=first, last_name=last)
            cast.course.enrolments.create(user=user, role="student")
        late = {"api": 8, "part1_trace": 22.5, "a6_parity": 14, "reuse": 12, "bug_injection": 10,
                "finite_difference": 9}  # fmt: skip
        graded(cast.assignment, User.objects.get(username="chen"), late, late_penalty=10)
        flagged = {"api": 10, "part1_trace": 25, "a6_parity": 15, "reuse": 6.67, "bug_injection": 3.33}
        graded(cast.assignment, User.objects.get(username="dara"), flagged, review=("reuse",))

    off_loop(make)


def instructor_works_the_class(tab: Tab, cast: Cast, walk: Walk, pk: int) -> None:
    page = tab.page
    page.set_viewport_size({"width": 1440, "height": 900})  # staff's wide class view, on a desk screen
    sign_in(tab, "ines", cast.password)
    tab.open("/a/a8/class/")
    expect(page.get_by_role("heading", name="Class view: A8")).to_be_visible()
    expect(page.locator("table.data tbody tr")).to_have_count(5)  # alice, bob, chen, dara, eve
    walk.look(tab, "class-view")

    # Sorted by total, highest first, on the server.
    total = page.locator("thead th", has=page.get_by_role("link", name="Total", exact=True))
    total.get_by_role("link").click()
    expect(total).to_have_attribute("aria-sort", re.compile("ascending|descending"))
    if total.get_attribute("aria-sort") == "ascending":
        total.get_by_role("link").click()  # the same heading again reverses the order
    expect(total).to_have_attribute("aria-sort", "descending")
    headings = [text.strip() for text in page.locator("thead th").all_inner_texts()]
    totals = page.locator("tbody tr").locator(f"td:nth-child({headings.index('Total') + 1})").all_inner_texts()
    written = [Decimal(text.split()[0]) for text in totals if text.strip()]
    assert len(written) == 3 and written == sorted(written, reverse=True), totals  # highest first
    assert totals[3:] == ["", ""], totals  # no score: last

    # Filtered: who has not submitted, then back to everyone.
    page.get_by_label("Show").select_option("not-submitted")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("tbody th[scope=row]")).to_have_count(2)  # bob and eve
    expect(page.locator("#shown-count")).to_contain_text("2 of 5 students shown")
    walk.look(tab, "class-view-not-submitted")
    page.get_by_role("link", name="Show everyone").click()

    # An inline override, with its reason, and the message that confirms it.
    row = page.locator("tbody tr", has=page.locator("th", has_text="Chen Wu"))
    row.get_by_text("Change").click()
    row.get_by_label("Score of Chen Wu").fill("70")
    row.get_by_label("Reason for the override").fill("late work accepted: a documented illness")
    row.get_by_role("button", name="Override score").click()
    expect(page.locator(".messages")).to_contain_text("Score of Chen Wu set to 70")
    row = page.locator("tbody tr", has=page.locator("th", has_text="Chen Wu"))
    expect(row.locator(".badge-override")).to_have_attribute("title", "late work accepted: a documented illness")
    walk.look(tab, "class-view-override")

    # An extension for a student who has not submitted.
    row = page.locator("tbody tr", has=page.locator("th", has_text="Eve Nowak"))
    row.get_by_text("Change").click()
    due = (timezone.localtime() + timedelta(days=10)).strftime("%Y-%m-%dT%H:%M")
    row.get_by_label(re.compile("New due date for Eve Nowak")).fill(due)
    row.get_by_role("button", name="Set extension").click()
    expect(page.locator(".messages")).to_contain_text("Extension for Eve Nowak: due")
    expect(page.locator("tbody tr", has=page.locator("th", has_text="Eve Nowak"))).to_contain_text("extended to")

    # The review request, answered with a new score.
    page.get_by_role("link", name="Review requests").click()
    request = page.locator("article", has_text=DISPUTED)
    expect(request).to_contain_text("My x.grad is 7")
    walk.look(tab, "review-requests")
    answer = "Read again: the graph is right, but the step is explained well."
    request.get_by_label(re.compile("Answer to")).fill(answer)
    request.get_by_label(re.compile("New score")).fill("80")
    request.get_by_role("button", name="Answer").click()
    expect(page.locator(".messages")).to_contain_text("the score is now 80")
    walk.look(tab, "review-requests-answered")

    # The grader's class report, from the class view's links.
    tab.open("/a/a8/class/")
    page.get_by_role("link", name="Class report").click()
    expect(page).to_have_url(f"{tab.base}/a/a8/class/report/")
    expect(page.locator(".site-header .crumbs")).to_contain_text("Class view")  # the way back
    walk.look(tab, "class-report")
    page.locator(".site-header").get_by_role("link", name="Class view").click()
    page.get_by_role("link", name="Similarity report", exact=True).click()
    expect(page).to_have_url(f"{tab.base}/a/a8/class/similarity/")
    expect(page.get_by_text("similarity, not misconduct")).to_be_visible()
    walk.look(tab, "similarity-report")

    # Everything above, on the audit page.
    tab.open("/a/a8/class/audit/")
    audit = page.locator("table.data")
    for action in ("override", "extension", "review_ask", "review_answer"):
        expect(audit).to_contain_text(action)
    walk.look(tab, "audit")

    tab.open("/a/a8/class/")
    exports_add_up(page)


def exports_add_up(page: Page) -> None:
    """Each export downloads from the class view; in grades.csv every row adds up as written."""
    bodies: dict[str, str] = {}
    for label in ("grades CSV", "Canvas CSV", "Gradescope JSON", "PrairieLearn JSON"):
        with page.expect_download() as download:
            page.get_by_role("link", name=label).click()
        bodies[label] = Path(download.value.path()).read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(bodies["grades CSV"], newline="")))
    assert {row["student"] for row in rows} == {"alice", "chen", "dara"}
    for row in rows:
        fixed = {"student", "name", "late_penalty", "override", "total", "max_total", "late_penalty_percent",
                 "override_reason", "status", "detail", "review"}  # fmt: skip
        parts = [value for key, value in row.items() if key not in fixed] + [row["late_penalty"], row["override"]]
        assert sum(Decimal(part) for part in parts) == Decimal(row["total"]), row
    totals = {row["student"]: row["total"] for row in rows}
    assert totals["chen"] == "70" and totals["alice"] == "80"
    assert "70" in bodies["Canvas CSV"] and "80" in bodies["Canvas CSV"]
    assert json.loads(bodies["Gradescope JSON"]) and json.loads(bodies["PrairieLearn JSON"])


def student_reads_the_answer(tab: Tab, walk: Walk, pk: int) -> None:
    page = tab.page
    tab.open(f"/submissions/{pk}/feedback/")
    card = disputed(page)
    expect(card.locator(".review")).to_contain_text("the step is explained well")
    # Before the deadline the new score waits with the hidden results: its number would tell them.
    expect(card.locator(".review")).to_contain_text("A new score was set: it shows after the deadline")
    expect(card.locator(".review")).not_to_contain_text("80")
    walk.look(tab, "feedback-review-answered")


def test_a_deadline_week_as_a_student_and_an_instructor(
    cast: Cast,
    new_tab: Callable[[], Tab],  # noqa: F811  # the fixture imported above
    tmp_path: Path,
) -> None:
    off_loop(named)
    walk = Walk(tmp_path)
    student = new_tab()
    # The checker itself finds what it must: an unlabelled field and low contrast.
    student.page.set_content(
        '<html lang="en"><title>t</title><main><input>'
        '<p style="color:#bbb;background:#fff">Grey words on white paper</p></main></html>'
    )
    found = " ".join(violations(student.page))
    assert "[label]" in found and "[color-contrast]" in found, found

    pk = student_submits_and_asks(student, cast, walk)
    a_class_around(cast)

    instructor = new_tab()
    instructor_works_the_class(instructor, cast, walk, pk)
    student_reads_the_answer(student, walk, pk)

    def recorded() -> tuple[str, float | None, int]:
        review = ReviewRequest.objects.get(submission_id=pk)
        return review.state, Submission.objects.get(pk=pk).counted_score, AuditEntry.objects.count()

    state, score, audited = off_loop(recorded)
    assert (state, score) == ("answered", 80)
    assert audited >= 5  # the ask, the override, the extension, the answer and its score
    walk.assert_accessible(pages=17)  # 8 of the student's, 9 of staff's
    assert student.problems == [] and instructor.problems == []
    assert BUGGY  # the same file the cast grades elsewhere
