"""The service in a real browser: a student from the login form to the feedback page, and an
instructor reading the class view, overriding a score and starting a regrade.

Chromium (env CHROMIUM, default Debian's /usr/bin/chromium) is driven by Playwright against
pytest-django's `live_server`; grading is the real path (the queue, a worker, the Docker sandbox).
Without Chromium these tests skip, unless REQUIRE_BROWSER=1: then they fail.

Playwright's sync API keeps an asyncio loop running in the test's thread, so Django would refuse
ORM calls there and procrastinate could not start its worker: both run in a thread of their own
(`off_loop`). The browser is started after the database is set up and closed before it is flushed.

Screenshots of the service's pages are taken on every run, under pytest's tmp folder; with
UPDATE_SCREENSHOTS=1 they are written to docs/screenshots/service/ instead (the docs' pictures).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connections
from django.utils.formats import localize
from playwright.sync_api import Browser, ConsoleMessage, Page, Route, ViewportSize, expect, sync_playwright
from pytest_django.live_server_helper import LiveServer
from service_cast import BUGGY, REPO, Cast
from service_worker import work

from grader.report.view import format_number
from service.submissions.models import State, Submission

pytestmark = [
    pytest.mark.browser,
    pytest.mark.db,
    pytest.mark.docker,
    pytest.mark.django_db(transaction=True),
]

BUGGY_PATH = REPO / "submissions" / "bob_okafor" / "autograd_lab.py"
SCREENSHOTS = REPO / "docs" / "screenshots" / "service"
UPDATE_SCREENSHOTS = os.environ.get("UPDATE_SCREENSHOTS") == "1"
REQUIRE_BROWSER = os.environ.get("REQUIRE_BROWSER") == "1"
VIEWPORT: ViewportSize = {"width": 1000, "height": 800}
GRADED_WITHIN_MS = 20_000  # follow.js polls every 1.5 s, then reloads the page

T = TypeVar("T")


def off_loop(task: Callable[[], T]) -> T:
    """Run Django code (the ORM, the worker) outside Playwright's event loop, in a thread that
    closes its database connections when done, so none is left open when the database is flushed."""

    def run() -> T:
        try:
            return task()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()


def shown(number: float | None) -> str:
    """A number as Django prints it in a template, with no filter."""
    return str(localize(number))


def points(number: float | None) -> str:
    """Points as the service's pages write them (``|points``: 68, never 68.0)."""
    from service.submissions.templatetags.marks import points as written

    return written(number)


@dataclass(frozen=True)
class Stored:
    """A submission's row as the database has it now (read off the loop: its properties query)."""

    state: str
    lane: str
    score: float | None
    counted_score: float | None
    max_score: float | None
    visible_score: float | None  # what the student sees before the due date
    visible_max_score: float | None
    overrides_audited: int
    regrades_kept: list[float | None]


def stored(pk: int) -> Stored:
    def read() -> Stored:
        row = Submission.objects.get(pk=pk)
        return Stored(
            row.state,
            row.lane,
            row.score,
            row.counted_score,
            row.max_score,
            row.visible_score,
            row.visible_max_score,
            row.audit.filter(action="override").count(),
            list(row.regrades.values_list("old_score", flat=True)),
        )

    return off_loop(read)


@dataclass
class Tab:
    """A page of the browser and the problems it reported: console errors (a CSP violation is
    one), uncaught page errors, and requests that tried to leave the live server."""

    page: Page
    base: str
    problems: list[str] = field(default_factory=list)

    def open(self, path: str) -> None:
        self.page.goto(self.base + path)

    def sign_in(self, username: str, password: str) -> None:
        self.open("/accounts/login/")
        self.page.get_by_label("Username").fill(username)
        self.page.get_by_label("Password").fill(password)
        self.page.get_by_role("button", name="Sign in").click()
        expect(self.page.get_by_text(f"Signed in as {username}")).to_be_visible()

    def screenshot(self, name: str, folder: Path) -> Path:
        target = (SCREENSHOTS if UPDATE_SCREENSHOTS else folder) / f"{name}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        self.page.evaluate("document.fonts.ready.then(() => true)")  # no screenshot with a fallback font
        self.page.screenshot(path=target, full_page=True, animations="disabled", caret="hide", scale="css")
        return target


@pytest.fixture(scope="session", autouse=True)
def chromium() -> str:
    """Chromium's path, looked for before the database starts: without it, skip (or fail)."""
    name = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    found = shutil.which(name)
    if found is None:
        why = f"Chromium not found at {name}: install Debian's chromium package (apt-get install chromium)"
        if REQUIRE_BROWSER:
            pytest.fail(f"{why} (REQUIRE_BROWSER=1)", pytrace=False)
        pytest.skip(why)
    return found


@pytest.fixture
def browser(chromium: str, cast: Cast, live_server: LiveServer) -> Iterator[Browser]:
    """After `cast` (the database is ready) and torn down before the database is flushed: while
    Playwright runs, Django refuses ORM calls in this thread."""
    with sync_playwright() as playwright:
        # --no-sandbox: Chromium's own sandbox needs user namespaces, which containers often lack.
        launched = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def new_tab(browser: Browser, live_server: LiveServer) -> Callable[[], Tab]:
    """A fresh browser context (its own cookies: one user) and page per call."""

    def open_tab() -> Tab:
        context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, reduced_motion="reduce")
        tab = Tab(context.new_page(), live_server.url)

        def outside(route: Route) -> None:
            tab.problems.append(f"request left the service: {route.request.url}")
            route.abort()

        context.route(lambda url: not url.startswith(live_server.url + "/"), outside)

        def on_console(message: ConsoleMessage) -> None:
            if message.type == "error":
                tab.problems.append(f"console error: {message.text} at {message.location}")

        tab.page.on("console", on_console)
        tab.page.on("pageerror", lambda error: tab.problems.append(f"page error: {error}"))
        return tab

    return open_tab


def test_a_student_uploads_follows_the_grading_and_reads_the_feedback(
    cast: Cast, new_tab: Callable[[], Tab], tmp_path: Path
) -> None:
    tab = new_tab()
    page = tab.page
    tab.sign_in(cast.student.username, cast.password)
    page.get_by_role("link", name="A8").click()
    expect(page).to_have_url(tab.base + "/a/a8/")
    expect(page.get_by_role("heading", name="A8")).to_be_visible()
    expect(page.get_by_text("Nothing yet.")).to_be_visible()

    page.get_by_label("Upload autograd_lab.py").set_input_files(BUGGY_PATH)
    page.get_by_role("button", name="Submit", exact=True).click()

    # The receipt, while the submission waits in the queue.
    expect(page).to_have_url(re.compile(re.escape(tab.base) + r"/submissions/\d+/$"))
    pk = int(page.url.rstrip("/").rsplit("/", 1)[-1])
    expect(page.locator("[data-state]")).to_have_text("queued")
    expect(page.locator(".receipt code")).to_have_text(hashlib.sha256(BUGGY).hexdigest())
    expect(page.locator(".receipt")).to_contain_text(f"autograd_lab.py ({len(BUGGY)} bytes)")
    expect(page.locator("[data-position]")).to_have_text("position 1 in the queue")

    # A worker grades it; the page, polling status.json, reloads by itself.
    off_loop(work)
    graded = stored(pk)
    assert graded.state == State.GRADED and graded.counted_score is not None
    assert 0 < graded.counted_score < (graded.max_score or 0)  # the `=` bug costs points, not all of them
    outcome = page.locator("dl.outcome")
    expect(outcome.locator(".status")).to_have_text("graded", timeout=GRADED_WITHIN_MS)  # one status word
    expect(page.get_by_text("graded", exact=True)).to_have_count(1)  # said once, not again as a detail
    # Before the due date the student sees the visible checks' points; the hidden ones come later.
    expect(outcome.locator(".score-value")).to_have_text(
        f"{points(graded.visible_score)} / {points(graded.visible_max_score)}"
    )
    expect(outcome).to_contain_text("hidden checks' results are shown after the deadline")
    assert page.locator("[data-follow]").count() == 0  # nothing left to follow

    # The grader's own feedback page, under its strict policy.
    with page.expect_response(re.compile(rf"/submissions/{pk}/feedback/$")) as answer:
        page.get_by_role("link", name="Feedback").click()
    response = answer.value
    assert response.status == 200
    policy = response.header_value("content-security-policy") or ""
    assert "script-src 'none'" in policy and "default-src 'none'" in policy
    card = page.locator("article.check", has_text="y = x*x + x at x = 3 gives x.grad = 7")
    expect(card.locator("figure.graph svg")).to_be_visible()
    expect(card.locator("figure.graph g.node.bad")).to_have_count(1)  # x, whose grad is wrong
    expect(page.get_by_text("results are shown after the deadline")).to_be_visible()

    # Back on the assignment page, the history shows the graded submission that counts.
    tab.open("/a/a8/")
    row = page.locator("tr", has=page.get_by_role("link", name=str(pk), exact=True))
    expect(row).to_contain_text("graded")
    expect(row).to_contain_text(f"{points(graded.visible_score)} / {points(graded.visible_max_score)}")
    expect(row).to_contain_text("counts")

    assert tab.problems == []


def score_cell(page: Any, row: Any) -> Any:
    """The class view's Total cell of a row, found by its column's heading (columns come and go;
    a row's first cell is its header, the student's name)."""
    table = page.locator("table", has=page.locator("th", has_text="Counted"))
    headings = table.locator("thead th").all_inner_texts()
    return row.locator("th, td").nth([text.strip() for text in headings].index("Total"))


def test_an_instructor_overrides_a_score_and_starts_a_regrade(
    cast: Cast, new_tab: Callable[[], Tab], tmp_path: Path
) -> None:
    def submit_and_grade() -> int:
        client = cast.client(cast.student)
        answer = client.post("/a/a8/", {"kind": "submit", "file": SimpleUploadedFile("autograd_lab.py", BUGGY)})
        assert answer.status_code == 302, answer.content[:500]
        work()
        return int(answer["Location"].strip("/").rsplit("/", 1)[-1])

    pk = off_loop(submit_and_grade)
    old_score = stored(pk).score
    assert old_score is not None

    tab = new_tab()
    page = tab.page
    tab.sign_in(cast.instructor.username, cast.password)
    tab.open("/a/a8/class/")
    expect(page.get_by_role("heading", name="Class view: A8")).to_be_visible()
    row = page.locator("tr", has_text=cast.student.username)
    expect(score_cell(page, row)).to_have_text(format_number(old_score))  # as the |points filter writes it

    row.get_by_role("link", name=f"#{pk}").first.click()
    expect(page).to_have_url(f"{tab.base}/submissions/{pk}/")
    expect(page.get_by_role("link", name="Feedback")).to_be_visible()
    page.get_by_label(re.compile(r"^Override .*score")).fill("87.5")  # the label names the student
    page.get_by_label("Reason").fill("partial credit for the explained fix")
    page.get_by_role("button", name="Override").click()

    expect(page).to_have_url(f"{tab.base}/a/a8/class/")
    row = page.locator("tr", has_text=cast.student.username)
    expect(score_cell(page, row)).to_have_text(format_number(87.5))
    overridden = stored(pk)
    assert overridden.counted_score == 87.5 and overridden.score == old_score  # the grader's score is kept
    assert overridden.overrides_audited == 1

    page.locator("select[name=which]").select_option("latest")
    page.get_by_role("button", name="Regrade").click()
    expect(page).to_have_url(f"{tab.base}/a/a8/class/")
    expect(row).to_contain_text(f"#{pk} queued")
    again = stored(pk)
    assert again.lane == "regrade" and again.state == State.QUEUED
    assert again.regrades_kept == [old_score]  # the old score is kept beside the coming one

    assert tab.problems == []


def test_the_receipt_shows_each_section_as_the_worker_settles_it(cast: Cast, new_tab: Callable[[], Tab]) -> None:
    """A running grading, its sections written onto the row as a worker does: the page adds each
    one without a reload, as text (a title is never markup), and says when there is none yet."""
    import json

    def section(title: str, points: float, most: float) -> dict[str, Any]:
        return {"tag": title, "title": title, "points": points, "max_points": most,
                "visible_points": points, "visible_max_points": most}  # fmt: skip

    def running() -> int:
        row = Submission.objects.create(
            assignment=cast.assignment, user=cast.student, kind="self_check", filename="autograd_lab.py",
            sha256="0" * 64, size=len(BUGGY), content=BUGGY, state=State.RUNNING,
        )  # fmt: skip
        return int(row.pk)

    pk = off_loop(running)
    tab = new_tab()
    page = tab.page
    tab.sign_in(cast.student.username, cast.password)
    tab.open(f"/submissions/{pk}/")
    items = page.locator("[data-sections] li")
    expect(items).to_have_count(0)
    expect(page.locator("[data-none]")).to_be_visible()
    hostile = "<img src=x onerror=alert(1)>"
    settled = [section("API", 10, 10), section(hostile, 12.5, 25)]
    off_loop(lambda: Submission.objects.filter(pk=pk).update(progress_json=json.dumps(settled)))
    expect(items).to_have_count(2, timeout=GRADED_WITHIN_MS)
    expect(items.nth(0)).to_have_text("API: 10 / 10")
    expect(items.nth(1)).to_have_text(f"{hostile}: 12.5 / 25")
    expect(page.locator("[data-sections] img")).to_have_count(0)
    expect(page.locator("[data-none]")).to_be_hidden()
    assert page.locator("[data-follow]").count() == 1  # still following: the grading goes on
    assert tab.problems == []
