"""Browser test plumbing: Chromium through Playwright, and feedback pages graded once per session.

Every test in this folder is marked `browser`. Chromium comes from env CHROMIUM (default
/usr/bin/chromium, Debian's package). Without it the tests that need it skip, unless
REQUIRE_BROWSER=1: then a missing browser, or a session that selected browser tests and passed
none of them, fails, so a machine without Chromium cannot look green.

The pages are real grader output: a few sample submissions and one hostile case are graded with
the local runner and a fixed seed, in parallel, exactly once per session.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Dialog, Page, Request, Route, sync_playwright
from run_counts import mark_needs
from support import (
    HERE,
    REPO,
    SEED,
    STUDENTS,
    VIEWPORT,
    XSS_SOURCE,
    XSS_STUDENT,
    ColorScheme,
    GradedPages,
    OpenPage,
    PageVisit,
)

from grader.pipeline import grade_submission
from grader.report.class_report import write_class_report
from grader.report.html import write_feedback_html
from grader.results import SubmissionResult
from grader.rubric import DEFAULT_RUBRIC, load_rubric
from grader.runners.local import LocalRunner
from grader.similarity.batch import read_base
from grader.similarity.report import Source, build
from grader.similarity.report import write as write_similarity

DEFAULT_CHROMIUM = "/usr/bin/chromium"
INSTALL_HINT = "install Debian's chromium package: apt-get install chromium"
REQUIRE_BROWSER = os.environ.get("REQUIRE_BROWSER") == "1"
CLASS_TITLE = "A8 autograd lab: browser test class"


def _in_this_folder(item: pytest.Item) -> bool:
    return Path(str(item.path)).resolve().is_relative_to(HERE)


def _uses_chromium(item: pytest.Item) -> bool:
    return "browser" in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # tryfirst: the marker must be on the items before `-m` selection looks at them.
    for item in items:
        if _in_this_folder(item):
            item.add_marker(pytest.mark.browser)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    if not _in_this_folder(item):
        return
    if _uses_chromium(item):
        mark_needs(report, "chromium")  # counted in tests/conftest.py, which fails a run that passed none
    if REQUIRE_BROWSER and report.skipped:
        report.outcome = "failed"
        report.longrepr = f"Browser test skipped but REQUIRE_BROWSER=1: {report.longrepr}"


def chromium_path() -> Path | None:
    """The Chromium executable named by env CHROMIUM (a path or a command name), if it exists."""
    found = shutil.which(os.environ.get("CHROMIUM", DEFAULT_CHROMIUM))
    return Path(found) if found else None


def _require_chromium() -> Path:
    """Chromium's path; without it, skip the test, or fail it under REQUIRE_BROWSER=1."""
    path = chromium_path()
    if path is None:
        why = f"Chromium not found at {os.environ.get('CHROMIUM', DEFAULT_CHROMIUM)}: {INSTALL_HINT}"
        if REQUIRE_BROWSER:
            pytest.fail(f"{why} (REQUIRE_BROWSER=1)", pytrace=False)
        pytest.skip(why)
    return path


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before any fixture: without Chromium, do not spend ~20 s grading pages nobody will open.
    if _in_this_folder(item) and _uses_chromium(item):
        _require_chromium()


class _Chromium:
    """One Chromium and one context for this folder's tests, closed as a worker leaves the folder:
    Playwright's event loop must not live on into the service's tests, where Django refuses ORM
    calls from a thread with a running loop. (A "package" fixture would not do: this folder is no
    package, and there such a fixture lives as long as the session.)"""

    def __init__(self) -> None:
        self._playwright: Any = None
        self._browser: Browser | None = None
        self._context: BrowserContext | None = None
        self.pages: dict[tuple[Path, ColorScheme], PageVisit] = {}

    def browser(self) -> Browser:
        if self._browser is None:
            path = _require_chromium()
            self._playwright = sync_playwright().start()
            # --no-sandbox: Chromium's own sandbox needs user namespaces, which containers often lack.
            self._browser = self._playwright.chromium.launch(executable_path=str(path), args=["--no-sandbox"])
        return self._browser

    def context(self) -> BrowserContext:
        """One context for every page: pages are independent documents, and a context costs ~0.3 s."""
        if self._context is None:
            context = self.browser().new_context(viewport=VIEWPORT, device_scale_factor=1, reduced_motion="reduce")

            def block(route: Route) -> None:
                # The page's request listener has recorded it already; nothing may leave the machine.
                route.abort()

            context.route(re.compile(r"^(?!file:|data:)"), block)
            self._context = context
        return self._context

    def close(self) -> None:
        self.pages.clear()
        for thing in (self._context, self._browser):
            if thing is not None:
                thing.close()
        if self._playwright is not None:
            self._playwright.stop()
        self._playwright, self._browser, self._context = None, None, None


_CHROMIUM = _Chromium()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    yield  # the test's own fixtures (its pages) first
    if _in_this_folder(item) and (nextitem is None or not _in_this_folder(nextitem)):
        _CHROMIUM.close()


@pytest.fixture
def browser() -> Browser:
    return _CHROMIUM.browser()


@pytest.fixture(scope="session")
def graded(tmp_path_factory: pytest.TempPathFactory) -> GradedPages:
    rubric = load_rubric(DEFAULT_RUBRIC)
    sources = {name: REPO / "submissions" / name / rubric.filename for name in STUDENTS}
    sources[XSS_STUDENT] = XSS_SOURCE

    def grade(item: tuple[str, Path]) -> SubmissionResult:
        name, path = item
        # One runner per job: each grading owns its subprocess.
        return grade_submission(path, student=name, rubric=rubric, runner=LocalRunner(), seed=SEED)

    # Grading waits on subprocesses, so threads overlap the slow submission (a timeout, ~16 s).
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = {result.student: result for result in pool.map(grade, sources.items())}
    out = tmp_path_factory.mktemp("pages")
    feedback: dict[str, Path] = {}
    for name, result in results.items():
        feedback[name] = out / name / "feedback.html"
        write_feedback_html(result, feedback[name])
    index = out / "index.html"
    write_class_report(list(results.values()), index, title=CLASS_TITLE)
    # The similarity page over the same files (the hostile one included), with copies in it.
    files = {name: p for name, p in sources.items() if p.is_file()}
    texts = [Source(name, p.read_text(encoding="utf-8", errors="replace")) for name, p in files.items()]
    write_similarity(build(texts, read_base([])), out, title=f"{CLASS_TITLE}: similarity")
    return GradedPages(out=out, results=results, feedback=feedback, index=index, similarity=out / "similarity.html")


@pytest.fixture
def browser_context(browser: Browser) -> BrowserContext:  # through `browser`: the test needs Chromium
    return _CHROMIUM.context()


def visit(context: BrowserContext, path: Path, color_scheme: ColorScheme) -> PageVisit:
    """Open a file in a new page and record what the page does: console errors and warnings,
    uncaught page errors, dialogs (dismissed) and every request."""
    page = context.new_page()
    page.emulate_media(color_scheme=color_scheme)
    seen = PageVisit(page)

    def on_console(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            seen.problems.append(f"console {message.type}: {message.text} at {message.location}")

    def on_dialog(dialog: Dialog) -> None:
        seen.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def on_request(request: Request) -> None:
        seen.requests.append(request.url)

    page.on("console", on_console)
    page.on("pageerror", lambda error: seen.problems.append(f"page error: {error}"))
    page.on("dialog", on_dialog)
    page.on("request", on_request)
    page.goto(path.as_uri(), wait_until="load")
    return seen


@pytest.fixture
def open_page(browser_context: BrowserContext) -> Iterator[OpenPage]:
    """A fresh page per call, for tests that type, click or change the media."""
    pages: list[Page] = []

    def open_(path: Path, *, color_scheme: ColorScheme = "light") -> PageVisit:
        opened = visit(browser_context, path, color_scheme)
        pages.append(opened.page)
        return opened

    yield open_
    for page in pages:
        page.close()


@pytest.fixture
def loaded_page(browser_context: BrowserContext) -> OpenPage:
    """A page opened once while the folder runs, shared by tests that only read it."""

    def load(path: Path, *, color_scheme: ColorScheme = "light") -> PageVisit:
        key = (path, color_scheme)
        if key not in _CHROMIUM.pages:
            _CHROMIUM.pages[key] = visit(browser_context, path, color_scheme)
        return _CHROMIUM.pages[key]

    return load
