"""Shared pieces of the browser tests: what was graded, what a page visit recorded, and WCAG colour maths.

A plain module (not conftest.py) so test modules can import its types and functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from playwright.sync_api import Page, ViewportSize

from grader.results import SubmissionResult

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SEED = 20261130

# Sample students: a full score, a partial score with program output, a timeout, a zero, and a
# submission with no autograd_lab.py at all (the load-error banner).
STUDENTS = ("alice_nguyen", "bob_okafor", "henry_adams", "frank_zhou", "leo_martin")
# A working engine whose every student-controlled string is markup (see cases/xss/).
XSS_STUDENT = "xss"
XSS_SOURCE = HERE / "cases" / "xss" / "autograd_lab.py"

VIEWPORT: ViewportSize = {"width": 1000, "height": 800}
# Only the page itself and inline data may load: the pages must be self-contained.
LOCAL_SCHEMES = ("file:", "data:")
ColorScheme = Literal["light", "dark"]


@dataclass(frozen=True)
class GradedPages:
    out: Path
    results: dict[str, SubmissionResult]
    feedback: dict[str, Path]  # student -> feedback.html
    index: Path  # the class report over every result above
    similarity: Path  # the similarity report over the same files

    def all_pages(self) -> dict[str, Path]:
        pages = {f"{name}/feedback.html": path for name, path in self.feedback.items()}
        pages["index.html"] = self.index
        pages["similarity.html"] = self.similarity
        return pages


@dataclass
class PageVisit:
    """An open page and everything it did that a static, self-contained page must not do."""

    page: Page
    problems: list[str] = field(default_factory=list)  # console errors/warnings and page errors
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def foreign_requests(self) -> list[str]:
        return [url for url in self.requests if not url.startswith(LOCAL_SCHEMES)]


class OpenPage(Protocol):
    def __call__(self, path: Path, *, color_scheme: ColorScheme = "light") -> PageVisit: ...


# --- colour contrast (WCAG 2.x) ----------------------------------------------------------------

RGBA = tuple[float, float, float, float]  # channels 0..255, alpha 0..1
_RGB = re.compile(r"rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?\s*\)")


def parse_css_color(value: str) -> RGBA:
    """A computed colour as getComputedStyle reports it ("rgb(1, 2, 3)" or "rgba(1, 2, 3, 0.5)")."""
    if value.strip() == "transparent":
        return (0.0, 0.0, 0.0, 0.0)
    match = _RGB.fullmatch(value.strip())
    if match is None:
        raise ValueError(f"unsupported computed colour {value!r}: expected rgb() or rgba()")
    red, green, blue, alpha = match.groups()
    if alpha is None:
        opacity = 1.0
    elif alpha.endswith("%"):
        opacity = float(alpha[:-1]) / 100
    else:
        opacity = float(alpha)
    return (float(red), float(green), float(blue), opacity)


def composite(top: RGBA, bottom: RGBA) -> RGBA:
    """`top` painted over an opaque `bottom` (source-over)."""
    alpha = top[3]
    mixed = [alpha * t + (1 - alpha) * b for t, b in zip(top[:3], bottom[:3], strict=True)]
    return (mixed[0], mixed[1], mixed[2], 1.0)


def flatten(layers: list[str], canvas: RGBA = (255.0, 255.0, 255.0, 1.0)) -> RGBA:
    """The opaque colour seen through background layers listed innermost first."""
    seen = canvas
    for layer in reversed(layers):
        seen = composite(parse_css_color(layer), seen)
    return seen


def relative_luminance(color: RGBA) -> float:
    def linear(channel: float) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    red, green, blue = (linear(c) for c in color[:3])
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def contrast_ratio(first: RGBA, second: RGBA) -> float:
    light, dark = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)
