"""Golden screenshots of the feedback page catch visual regressions a DOM test cannot see.

Full-page screenshots at 1000 px wide (alice_nguyen, bob_okafor and henry_adams in light mode,
bob_okafor in dark mode), with run-dependent parts (elements marked data-volatile: timing, runner,
image tag) masked, compared with docs/screenshots/<student>[-dark].png by golden.py. The goldens
are rendered by Debian's Chromium with this machine's fonts. To accept an intended change:

    UPDATE_GOLDENS=1 .venv/bin/pytest tests/browser/test_screenshots.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from golden import check_screenshot
from support import REPO, ColorScheme, GradedPages, OpenPage

GOLDENS = REPO / "docs" / "screenshots"
UPDATE = os.environ.get("UPDATE_GOLDENS") == "1"


def golden_path(student: str, scheme: ColorScheme) -> Path:
    return GOLDENS / (f"{student}-dark.png" if scheme == "dark" else f"{student}.png")


@pytest.mark.parametrize(
    ("student", "scheme"),
    [("alice_nguyen", "light"), ("bob_okafor", "light"), ("henry_adams", "light"), ("bob_okafor", "dark")],
)
def test_feedback_page_matches_golden_screenshot(
    student: str, scheme: ColorScheme, graded: GradedPages, open_page: OpenPage, tmp_path: Path
) -> None:
    page = open_page(graded.feedback[student], color_scheme=scheme).page
    page.evaluate("document.fonts.ready.then(() => true)")  # no screenshot with a fallback font
    png = page.screenshot(
        full_page=True,
        mask=[page.locator("[data-volatile]")],
        animations="disabled",
        caret="hide",
        scale="css",
    )
    check_screenshot(png, golden_path(student, scheme), artifacts=tmp_path, update=UPDATE)


def test_the_assign_bug_picture_matches_golden(graded: GradedPages, open_page: OpenPage, tmp_path: Path) -> None:
    """bob_okafor's `=` bug in __mul__: the reuse graph with x marked and two lost paths (docs/students.md shows it)."""
    page = open_page(graded.feedback["bob_okafor"]).page
    page.evaluate("document.fonts.ready.then(() => true)")
    card = page.locator("article.check", has_text="y = x*x + x at x = 3 gives x.grad = 7")
    figure = card.locator("figure.graph")
    assert figure.count() == 1 and figure.locator("g.node.bad").count() == 1
    assert figure.locator("path.edge-lost").count() == 2
    png = figure.screenshot(animations="disabled", caret="hide", scale="css")
    check_screenshot(png, GOLDENS / "bob_okafor-reuse-graph.png", artifacts=tmp_path, update=UPDATE)


def test_a_smallest_failing_program_matches_golden(graded: GradedPages, open_page: OpenPage, tmp_path: Path) -> None:
    """bob_okafor's `=` bug shrunk from a hidden random graph to a program of a few operations:
    a hidden check's, so the right answers and the quantity that is wrong, never the engine's
    own values nor a graph of them (shrunk after hidden inputs entered the sandbox, they could
    carry one; the page as the service shows it once hidden results are released)."""
    page = open_page(graded.feedback["bob_okafor"]).page
    page.evaluate("document.fonts.ready.then(() => true)")
    found = page.locator("section.counterexample").first
    assert found.count() == 1
    program = found.locator("pre.program").inner_text()
    assert "backward()" in program and len(program.splitlines()) <= 1 + 3 + 4  # leaves, steps, backward
    assert found.locator("td.ok-no").count() == 1 and found.locator("figure.graph").count() == 0
    assert "Observed" not in found.inner_text() and "The right answers on this program" in found.inner_text()
    png = found.screenshot(animations="disabled", caret="hide", scale="css")
    check_screenshot(png, GOLDENS / "bob_okafor-smallest-program.png", artifacts=tmp_path, update=UPDATE)
