"""The feedback pages and the class report, opened in Chromium, behave as static accessible documents.

Proves, on real grader output: every page loads without console errors, warnings or page errors,
requests nothing but itself (no external assets), and has no script; the first Tab lands on the
skip link and a <details> summary is reachable and operable from the keyboard; every picture has
a name, every table a caption, and heading levels never skip; dark mode changes the colours and
keeps every text legible (WCAG AA); printing works and shows the content of closed <details>.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page
from support import (
    STUDENTS,
    XSS_STUDENT,
    ColorScheme,
    GradedPages,
    OpenPage,
    composite,
    contrast_ratio,
    flatten,
    parse_css_color,
    relative_luminance,
)

PAGES = [f"{name}/feedback.html" for name in (*STUDENTS, XSS_STUDENT)] + ["index.html", "similarity.html"]
AA_NORMAL = 4.5
AA_LARGE = 3.0  # WCAG "large text": at least 24 px, or 18.66 px bold
MAX_TABS = 300


def page_path(graded: GradedPages, name: str) -> Path:
    return graded.all_pages()[name]


# Attributes that would make a "static" page do something: inline handlers and javascript: URLs.
_ACTIVE_ATTRIBUTES_JS = """() => {
  const found = [];
  for (const el of document.querySelectorAll('*')) {
    for (const attr of el.attributes) {
      const name = attr.name.toLowerCase();
      const value = attr.value.replace(/[\\s\\u0000-\\u001f]/g, '').toLowerCase();
      if (name.startsWith('on') || value.startsWith('javascript:') || value.startsWith('vbscript:')) {
        found.push(`<${el.localName} ${attr.name}="${attr.value}">`);
      }
    }
  }
  return found;
}"""


def active_attributes(page: Page) -> list[str]:
    found: list[str] = page.evaluate(_ACTIVE_ATTRIBUTES_JS)
    return found


@pytest.mark.parametrize("name", PAGES)
def test_page_is_static_and_self_contained(name: str, graded: GradedPages, loaded_page: OpenPage) -> None:
    path = page_path(graded, name)
    visit = loaded_page(path)
    assert visit.problems == [], f"{name} logged problems: {visit.problems}"
    assert visit.dialogs == [], f"{name} opened dialogs: {visit.dialogs}"
    # The page's own load is recorded, so an empty foreign list means nothing else was fetched.
    assert path.as_uri() in visit.requests, visit.requests
    assert visit.foreign_requests() == [], f"{name} requested non-local URLs: {visit.foreign_requests()}"
    assert visit.page.locator("script").count() == 0, f"{name} contains a <script> element"
    assert active_attributes(visit.page) == [], f"{name} has event handlers or script URLs"
    assert visit.page.locator("h1").count() >= 1, f"{name} did not render a heading"


@pytest.mark.parametrize("name", ["alice_nguyen/feedback.html", "index.html"])
def test_first_tab_reaches_skip_link_and_it_moves_to_the_content(
    name: str, graded: GradedPages, open_page: OpenPage
) -> None:
    page = open_page(page_path(graded, name)).page
    page.keyboard.press("Tab")
    focused: dict[str, Any] = page.evaluate(
        """() => { const el = document.activeElement; const box = el.getBoundingClientRect();
                   return {tag: el.localName, text: el.textContent.trim(), href: el.getAttribute('href'),
                           left: box.left, top: box.top, width: box.width, height: box.height}; }"""
    )
    assert focused["tag"] == "a" and focused["text"].lower() == "skip to content", focused
    href = focused["href"] or ""
    assert href.startswith("#") and page.locator(f"[id='{href[1:]}']").count() == 1, f"skip target {href!r}"
    # Hidden until focused, then on screen: a sighted keyboard user must see where focus is.
    assert focused["left"] >= 0 and focused["top"] >= 0 and focused["width"] > 0 and focused["height"] > 0, focused
    page.keyboard.press("Enter")
    assert page.evaluate("location.hash") == href


def test_details_summary_is_reachable_by_tab_and_opens_with_enter(graded: GradedPages, open_page: OpenPage) -> None:
    # bob_okafor fails a visible check that shows his program's output in a closed <details>.
    page = open_page(graded.feedback["bob_okafor"]).page
    assert page.locator("details:not([open]) > summary").count() >= 1, "bob_okafor's page has no closed <details>"
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.matches('details:not([open]) > summary')"):
            break
    else:
        pytest.fail(f"no closed <details> summary received focus within {MAX_TABS} presses of Tab")
    details = page.locator("details:has(> summary:focus)")
    content = details.locator(":scope > :not(summary)").first
    assert not content.is_visible()
    page.keyboard.press("Enter")
    assert details.evaluate("d => d.open") is True
    assert content.is_visible()
    page.keyboard.press("Enter")  # and closes again
    assert details.evaluate("d => d.open") is False


_ACCESSIBILITY_JS = """() => {
  const problems = [];
  const text = (el) => (el && el.textContent || '').trim();
  const named = (el) => {
    if ((el.getAttribute('aria-label') || '').trim()) return true;
    const ids = (el.getAttribute('aria-labelledby') || '').split(/\\s+/).filter(Boolean);
    const missing = ids.filter((id) => !document.getElementById(id));
    if (missing.length) problems.push(`${describe(el)}: aria-labelledby names missing id(s) ${missing.join(' ')}`);
    return ids.some((id) => text(document.getElementById(id)));
  };
  const describe = (el) => `<${el.localName}${el.id ? ' id=' + el.id : ''}> ${text(el).slice(0, 40)}`;
  // Outermost <svg> elements only: nested ones are parts of a picture.
  const svgs = [...document.querySelectorAll('svg')].filter((svg) => !svg.parentElement.closest('svg'));
  for (const svg of svgs) {
    const role = svg.getAttribute('role');
    if (role !== 'img') problems.push(`${describe(svg)}: role="${role}", not "img"`);
    const title = [...svg.children].some((child) => child.localName === 'title' && text(child));
    if (!named(svg) && !title) problems.push(`${describe(svg)}: no accessible name`);
  }
  const tables = [...document.querySelectorAll('table')];
  for (const table of tables) {
    const caption = table.querySelector(':scope > caption');
    if (!text(caption) && !named(table)) problems.push(`${describe(table)}: no caption or aria-label`);
  }
  const headings = [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')]
    .map((h) => [Number(h.localName[1]), text(h).slice(0, 60)]);
  return {svgs: svgs.length, tables: tables.length, headings, problems};
}"""


def heading_skips(headings: list[tuple[int, str]]) -> list[str]:
    """Where the outline jumps down more than one level (or does not start at h1)."""
    skips = []
    previous = 0
    for level, title in headings:
        if level > previous + 1:
            skips.append(f"h{level} {title!r} follows h{previous}" if previous else f"first heading is h{level}")
        previous = level
    return skips


def test_heading_skips_are_found() -> None:
    assert heading_skips([(1, "a"), (2, "b"), (3, "c"), (2, "d"), (3, "e"), (4, "f"), (2, "g")]) == []
    assert heading_skips([(1, "a"), (3, "b")]) == ["h3 'b' follows h1"]
    assert heading_skips([(2, "a")]) == ["first heading is h2"]


@pytest.mark.parametrize("name", PAGES)
def test_pictures_tables_and_headings_are_accessible(name: str, graded: GradedPages, loaded_page: OpenPage) -> None:
    page = loaded_page(page_path(graded, name)).page
    found: dict[str, Any] = page.evaluate(_ACCESSIBILITY_JS)
    assert found["problems"] == [], f"{name}: {found['problems']}"
    assert heading_skips([(level, title) for level, title in found["headings"]]) == [], name
    if name == "index.html":
        # The score histogram is an inline <svg>: the loop above must have had one to check.
        assert found["svgs"] >= 1, "the class report has no histogram <svg>"
    result = graded.results.get(name.removesuffix("/feedback.html"))
    if result is not None and result.scored:
        assert found["tables"] >= 1, f"{name}: a scored page shows its points in a table"


def body_colors(page: Page) -> tuple[str, str]:
    colors: list[str] = page.evaluate(
        "() => { const s = getComputedStyle(document.body); return [s.color, s.backgroundColor]; }"
    )
    return colors[0], colors[1]


def test_color_maths_matches_wcag() -> None:
    white, black = parse_css_color("rgb(255, 255, 255)"), parse_css_color("rgb(0, 0, 0)")
    assert contrast_ratio(white, black) == pytest.approx(21.0)
    assert contrast_ratio(parse_css_color("rgb(119, 119, 119)"), white) == pytest.approx(4.48, abs=0.01)
    assert relative_luminance(parse_css_color("rgba(0, 0, 0, 0)")) == 0.0
    half = flatten(["rgba(0, 0, 0, 0.5)", "rgb(255, 255, 255)"])
    assert half[:3] == pytest.approx((127.5, 127.5, 127.5))
    with pytest.raises(ValueError, match="unsupported"):
        parse_css_color("oklch(0.5 0.1 120)")


@pytest.mark.parametrize("name", ["bob_okafor/feedback.html", "index.html"])
def test_dark_mode_changes_background_and_keeps_body_text_legible(
    name: str, graded: GradedPages, loaded_page: OpenPage
) -> None:
    path = page_path(graded, name)
    light_fg, light_bg = (parse_css_color(c) for c in body_colors(loaded_page(path, color_scheme="light").page))
    dark_fg, dark_bg = (parse_css_color(c) for c in body_colors(loaded_page(path, color_scheme="dark").page))
    # Opaque: otherwise what shows through is the browser's canvas, not the page's palette.
    assert light_bg[3] == 1.0 and dark_bg[3] == 1.0, (light_bg, dark_bg)
    assert dark_bg != light_bg, "the body background is the same in dark mode"
    assert relative_luminance(dark_bg) < relative_luminance(light_bg), "dark mode is not darker"
    for scheme, fg, bg in (("light", light_fg, light_bg), ("dark", dark_fg, dark_bg)):
        ratio = contrast_ratio(composite(fg, bg), bg)
        assert ratio >= AA_NORMAL, f"{name} ({scheme}): body text contrast {ratio:.2f} < {AA_NORMAL}"


# Every visible element with its own text: its colour, and the background colours from it upwards.
_TEXT_COLORS_JS = """() => {
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('svg') || !el.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
    if (![...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim())) continue;
    const style = getComputedStyle(el);
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const bg = getComputedStyle(e).backgroundColor;
      layers.push(bg);
      if (/^rgb\\(/.test(bg)) break;  // opaque: nothing below shows through
    }
    out.push({what: `<${el.localName} class="${el.className}">${el.textContent.trim().slice(0, 40)}`,
              color: style.color, layers, size: parseFloat(style.fontSize), weight: Number(style.fontWeight)});
  }
  return out;
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("name", PAGES)
def test_all_visible_text_meets_wcag_aa_contrast(
    name: str, scheme: ColorScheme, graded: GradedPages, loaded_page: OpenPage
) -> None:
    page = loaded_page(page_path(graded, name), color_scheme=scheme).page
    elements: list[dict[str, Any]] = page.evaluate(_TEXT_COLORS_JS)
    assert elements, f"{name}: no visible text found"
    failures = []
    for element in elements:
        background = flatten(element["layers"])
        foreground = flatten([element["color"]], background)
        large = element["size"] >= 24 or (element["size"] >= 18.66 and element["weight"] >= 700)
        needed = AA_LARGE if large else AA_NORMAL
        ratio = contrast_ratio(foreground, background)
        if ratio < needed:
            failures.append(f"{element['what']!r}: {ratio:.2f} < {needed} ({element['color']} on {element['layers']})")
    assert failures == [], f"{name} ({scheme}): {failures[:10]}"


def test_print_shows_closed_details_and_renders_a_pdf(graded: GradedPages, open_page: OpenPage) -> None:
    page = open_page(graded.feedback["bob_okafor"]).page
    script = """() => [...document.querySelectorAll('details:not([open]) > :not(summary)')]
                        .map((el) => el.checkVisibility())"""
    on_screen: list[bool] = page.evaluate(script)
    assert on_screen and not any(on_screen), f"closed <details> content should be hidden on screen: {on_screen}"
    # Chromium reports the print stylesheet's effect through checkVisibility(), which honours the
    # content-visibility that hides a closed <details>' content: no need to read the CSS rule itself.
    page.emulate_media(media="print")
    in_print: list[bool] = page.evaluate(script)
    assert all(in_print), f"closed <details> content is hidden in print: {in_print}"
    skip_link = page.locator("a", has_text="Skip to content")
    assert skip_link.evaluate("el => el.checkVisibility()") is False, "the skip link is printed"
    pdf = page.pdf(format="A4", print_background=True)
    assert pdf.startswith(b"%PDF-") and len(pdf) > 10_000, f"{len(pdf)} bytes"


# Text drawn in the graph pictures: its fill against the box it sits in (a node or a pill), or
# else the figure's background. The HTML audit above skips <svg>; this covers it.
_SVG_TEXT_JS = """() => [...document.querySelectorAll('svg text')].map((t) => {
  const style = getComputedStyle(t);
  const box = t.closest('g') && t.closest('g').querySelector(':scope > rect');
  let bg = box ? getComputedStyle(box).fill : null;
  for (let e = t.closest('figure'); !bg && e; e = e.parentElement) {
    const b = getComputedStyle(e).backgroundColor;
    if (/^rgb\\(/.test(b)) bg = b;
  }
  return {what: t.textContent.trim().slice(0, 40), color: style.fill, layers: [bg || 'rgb(255, 255, 255)'],
          size: parseFloat(style.fontSize), weight: Number(style.fontWeight)};
})"""


@pytest.mark.parametrize("media", ["screen", "print"])
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("name", ["bob_okafor", "henry_adams", XSS_STUDENT])
def test_graph_pictures_are_legible_on_screen_and_paper(
    name: str, scheme: ColorScheme, media: str, graded: GradedPages, open_page: OpenPage
) -> None:
    page = open_page(graded.feedback[name], color_scheme=scheme).page
    page.emulate_media(media="print" if media == "print" else "screen", color_scheme=scheme)
    texts: list[dict[str, Any]] = page.evaluate(_SVG_TEXT_JS)
    assert texts, f"{name}: no graph picture"
    # Printed from a dark-mode browser, the whole page must still be light-on-paper legible.
    if media == "print":
        texts += page.evaluate(_TEXT_COLORS_JS)
    failures = []
    for text in texts:
        background = flatten(text["layers"])
        ratio = contrast_ratio(flatten([text["color"]], background), background)
        large = text["size"] >= 24 or (text["size"] >= 18.66 and text["weight"] >= 700)
        if ratio < (AA_LARGE if large else AA_NORMAL):
            failures.append(f"{text['what']!r}: {ratio:.2f} ({text['color']} on {text['layers']})")
    assert failures == [], f"{name} ({scheme}, {media}): {failures[:10]}"
