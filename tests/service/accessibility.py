"""axe-core on a page as the browser shows it: WCAG 2.1 A and AA, in light and in dark.

Colour contrast is a rule of its own in each scheme, so a page is checked once per scheme the
stylesheets honour (`prefers-color-scheme`), after the scheme is emulated. Playwright evaluates
axe through the DevTools protocol, so the feedback page's `script-src 'none'` does not stop it.
"""

from __future__ import annotations

from typing import Any

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page

WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
SCHEMES = ("light", "dark")

_axe = Axe()


def violations(page: Page) -> list[str]:
    """Every WCAG 2.1 A/AA violation on the page as it is now, one line per element."""
    results = _axe.run(page, options={"runOnly": {"type": "tag", "values": WCAG_21_AA}, "resultTypes": ["violations"]})
    found: list[str] = []
    for rule in results.response.get("violations", []):
        nodes: list[dict[str, Any]] = rule.get("nodes", [])
        for node in nodes:
            target = " ".join(str(part) for part in node.get("target", []))
            found.append(f"{page.url} [{rule['id']}] {rule['help']}: {target}: {node.get('failureSummary', '')}")
    return found


def in_each_scheme(page: Page) -> dict[str, list[str]]:
    """The page's violations per colour scheme; the page is left in the light scheme."""
    found: dict[str, list[str]] = {}
    for scheme in SCHEMES:
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        found[scheme] = violations(page)
    page.emulate_media(color_scheme="light")
    return found
