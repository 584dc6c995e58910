"""A hostile submission cannot put markup, script or terminal escapes into its feedback.

tests/browser/cases/xss/autograd_lab.py is a working engine whose multiplication label, repr,
printed output and failing self-check message are HTML and script. Graded for real and opened in
Chromium, its feedback page runs nothing (no dialog, no `window.__pwned`), turns none of it into
elements (no <script>, <img>, event-handler attribute, script URL, or <b> inside program output),
and still shows every string as visible text. The terminal summary of the same result carries
none of the submission's escape sequences.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page
from support import XSS_STUDENT, GradedPages, OpenPage

from grader.report.terminal import render_summary
from grader.results import SubmissionResult

MUL_LABEL = '<img src=x onerror="window.__pwned=1">'
REPR = "<script>window.__pwned=2</script>"
PRINTED = "<script>window.__pwned=3</script><b>bold</b>"
LINK = "[x](javascript:alert(1))"
FAILURE = '<svg onload="window.__pwned=4">'
# Where a submission's own text lands on the page: program output, messages, observed values.
OUTPUT_AREAS = "pre, code, details, .message, table"
# Escape sequences the submission raises: clear screen, red text, a hyperlink, a bell. ("\x1b[31m"
# alone is also the writer's own red, so the student's is recognised by the text that follows it.)
STUDENT_ESCAPES = ("\x1b[2J", "\x1b[31mred", "\x1b]8;;", "\x07")


@pytest.fixture(scope="module")
def result(graded: GradedPages) -> SubmissionResult:
    found = graded.results[XSS_STUDENT]
    # The premise: the hostile strings really reached the result, in the places the page shows.
    observed = [c.observed for check in found.checks for c in check.comparisons]
    outputs = "\n".join(check.output for check in found.checks)
    messages = "\n".join(check.message for check in found.checks)
    assert found.load.ok and found.scored, found.status_detail
    assert any(MUL_LABEL in value for value in observed), "the graph check did not report the _op label"
    assert REPR in outputs and PRINTED in outputs and LINK in outputs, outputs
    assert FAILURE in messages, messages
    return found


def open_every_details(page: Page) -> int:
    """Click every summary, as a reader would, so innerText includes the program output."""
    summaries = page.locator("details:not([open]) > summary")
    count = summaries.count()
    for _ in range(count):
        summaries.first.click()
    return count


def test_hostile_feedback_runs_nothing(result: SubmissionResult, graded: GradedPages, open_page: OpenPage) -> None:
    visit = open_page(graded.feedback[XSS_STUDENT])
    assert open_every_details(visit.page) >= 1, "the program output is not in a <details>"
    visit.page.wait_for_load_state("load")
    assert visit.dialogs == [], visit.dialogs
    assert visit.page.evaluate("typeof window.__pwned") == "undefined"
    assert visit.problems == [], visit.problems
    assert visit.foreign_requests() == [], visit.foreign_requests()  # an <img src=x> would have fetched


def test_hostile_markup_never_becomes_elements(
    result: SubmissionResult, graded: GradedPages, open_page: OpenPage
) -> None:
    page = open_page(graded.feedback[XSS_STUDENT]).page
    open_every_details(page)
    assert page.locator("script").count() == 0
    assert page.locator("img").count() == 0
    # Every attribute of every element, SVG included: no inline handler, no script URL anywhere.
    active: list[str] = page.evaluate(
        """() => [...document.querySelectorAll('*')].flatMap((el) => [...el.attributes]
             .filter((a) => /^on/i.test(a.name) || /^\\s*(javascript|vbscript):/i.test(a.value))
             .map((a) => `<${el.localName} ${a.name}="${a.value}">`))"""
    )
    assert active == []
    bold_in_output = page.locator(f":is({OUTPUT_AREAS}) b")
    assert bold_in_output.count() == 0, bold_in_output.first.evaluate("el => el.outerHTML")
    assert page.locator("svg[onload]").count() == 0


def test_hostile_strings_are_shown_as_plain_text(
    result: SubmissionResult, graded: GradedPages, open_page: OpenPage
) -> None:
    page = open_page(graded.feedback[XSS_STUDENT]).page
    open_every_details(page)
    shown: str = page.evaluate("document.body.innerText")
    for literal in ("<script>window.__pwned=3</script>", "onerror=", REPR, PRINTED, LINK, FAILURE, MUL_LABEL):
        assert literal in shown, f"{literal!r} is not visible on the page"


@pytest.mark.parametrize("color", [False, True])
def test_terminal_summary_carries_no_student_escapes(result: SubmissionResult, color: bool) -> None:
    summary = render_summary(result, color=color)
    for escape in STUDENT_ESCAPES:
        assert escape not in summary, f"{escape!r} from the submission reached the terminal"
    if not color:
        assert "\x1b" not in summary
    else:
        # Colour on: the only escapes are the writer's own SGR codes (ESC [ digits ; ... m).
        assert re.sub(r"\x1b\[[0-9;]*m", "", summary).count("\x1b") == 0
        assert "\x1b[" in summary, "colour was asked for but nothing is coloured"
    # Shown, not dropped: the failing self-check's message is there with its escapes made visible.
    words = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", summary).split())  # the summary wraps long lines
    assert "\\x1b[2J\\x1b[31mred" in words and FAILURE in words, words


def test_feedback_file_carries_no_control_characters(result: SubmissionResult, graded: GradedPages) -> None:
    # ESC and BEL are not allowed in HTML and invisible to a reader: they are shown, as the terminal shows them.
    html = graded.feedback[XSS_STUDENT].read_text(encoding="utf-8")
    assert re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", html) is None
    assert "\\x1b[2J" in html
