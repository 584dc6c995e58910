"""The class's similarity report: every pair scored, written as similarity.json and a page.

The page finds similarity, never misconduct: a high score says two files share more of their
own code than independent work usually does, and a person decides what that means. Besides the
pairs it names two other findings: one file holding most of another (containment), and files
that are mostly the reference or the starter code (their own code is too little to compare,
and two such files are alike for that reason). Student names and code reach the template as
plain strings (autoescaped; nothing is marked safe), and the page loads nothing from outside
itself. Its size is bounded whatever the files: unshared runs of lines are folded, and each
side, each line and the whole page have a cap.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.report.site_frame import SiteFrame

from .compare import MIN_PRINTS, MUTUAL, THRESHOLD, Pair, Region, clusters, score_pairs, shared_regions
from .fingerprint import WINDOW, Base, Fingerprint, K, base_hashes, fingerprint

JSON_NAME = "similarity.json"
JSON_VERSION = 2  # 1 was a bare list of pairs
HTML_NAME = "similarity.html"
TEMPLATE = "similarity.html.j2"
MAX_SHOWN = 100  # pairs drawn side by side on the page (the JSON has every pair)
MOSTLY_BASE = 0.8  # of a file's tokens in base code: mostly the reference or the starter code
CONTEXT = 2  # unshared lines shown around shared code; longer unshared runs are folded
MAX_SIDE_LINES = 400  # lines drawn for one side of one pair
MAX_LINE_CHARS = 240  # characters drawn of one line
MAX_PAGE_LINES = 20_000  # lines drawn side by side on the whole page


@dataclass(frozen=True)
class Source:
    name: str  # the student
    text: str


@dataclass(frozen=True)
class SimilarityReport:
    pairs: tuple[Pair, ...]  # every pair, highest first
    groups: tuple[tuple[str, ...], ...]  # three or more joined by pairs at or above the threshold
    prints: dict[str, Fingerprint]
    sources: dict[str, str]
    base: Base
    base_names: tuple[str, ...]
    threshold: float
    too_small: tuple[str, ...]  # fewer than MIN_PRINTS fingerprints of their own
    skipped: tuple[tuple[str, str], ...]  # (student, why) not compared at all
    mostly_base: tuple[MostlyBase, ...] = ()

    @property
    def flagged(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if p.score >= self.threshold)

    @property
    def copies(self) -> tuple[Pair, ...]:
        """Flagged pairs where each file holds much of the other."""
        return tuple(p for p in self.flagged if not p.holder)

    @property
    def contained(self) -> tuple[Pair, ...]:
        """Flagged pairs where one file holds most of the other, and not the other way round."""
        return tuple(p for p in self.flagged if p.holder)


@dataclass(frozen=True)
class MostlyBase:
    name: str  # the student
    base: str  # the base file most of it is, by its label ("reference (autograd_lab.py)")
    share: float  # of the file's tokens, in that base file
    reference: bool  # the base file is the reference solution, not starter code


def _mostly_base(prints: dict[str, Fingerprint]) -> tuple[MostlyBase, ...]:
    found = []
    for name, fp in sorted(prints.items()):
        if not fp.tokens.items or not fp.base_share or fp.base_tokens / len(fp.tokens.items) < MOSTLY_BASE:
            continue
        base, share = max(fp.base_share.items(), key=lambda item: (item[1], item[0]))
        found.append(MostlyBase(name, base, share, base.startswith("reference")))
    return tuple(found)


def build(
    sources: Sequence[Source],
    base: Sequence[Source],
    *,
    threshold: float = THRESHOLD,
    skipped: Sequence[tuple[str, str]] = (),
) -> SimilarityReport:
    base_set = base_hashes([b.text for b in base], [b.name for b in base])
    prints = {s.name: fingerprint(s.name, s.text, base_set) for s in sources}
    pairs = score_pairs(list(prints.values()))
    mostly = _mostly_base(prints)
    given = {m.name for m in mostly}
    return SimilarityReport(
        pairs=tuple(pairs),
        groups=tuple(clusters(pairs, threshold)),
        prints=prints,
        sources={s.name: s.text for s in sources},
        base=base_set,
        base_names=tuple(b.name for b in base),
        threshold=threshold,
        too_small=tuple(sorted(n for n, p in prints.items() if len(p.prints) < MIN_PRINTS and n not in given)),
        skipped=tuple(sorted(skipped)),
        mostly_base=mostly,
    )


def to_json(report: SimilarityReport) -> str:
    """Every pair (highest first) with what it is, the groups, and the files' own findings."""
    data = {
        "version": JSON_VERSION,
        "threshold": report.threshold,
        "pairs": [
            {
                "a": p.a,
                "b": p.b,
                "score": p.score,
                "a_share": p.a_share,
                "b_share": p.b_share,
                "holder": p.holder or None,
            }
            for p in report.pairs
        ],
        "groups": [list(g) for g in report.groups],
        "contained": [
            {"holder": p.holder, "held": p.a if p.holder == p.b else p.b, "score": p.score} for p in report.contained
        ],
        "mostly_base": [
            {"name": m.name, "base": m.base, "share": m.share, "reference": m.reference} for m in report.mostly_base
        ],
        "too_small": list(report.too_small),
        "skipped": [{"name": name, "why": why} for name, why in report.skipped],
    }
    return json.dumps(data, indent=1) + "\n"


# --- the page -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    text: str
    region: int  # 0: not shared; else the region's number in this file
    other_line: int  # where the other file has it


@dataclass(frozen=True)
class Line:
    number: int
    segments: tuple[Segment, ...]
    folded: int = 0  # > 0: not a line but this many lines left out here


@dataclass(frozen=True)
class Side:
    name: str
    share: str  # "83%"
    lines: tuple[Line, ...]
    loose: str


@dataclass(frozen=True)
class PairView:
    anchor: str
    a: str
    b: str
    score: str
    left: Side | None  # None: past the page's cap, listed but not drawn
    right: Side | None
    group: int  # 1-based group number, 0 when in none
    holder: str  # the file that holds most of the other, "" for a copy either way
    a_share: str
    b_share: str


def percent(value: float) -> str:
    return f"{round(value * 100)}%"


def _line_starts(text: str) -> list[int]:
    starts = [0]
    at = text.find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def _shown(starts: list[int], size: int, regions: Sequence[Region]) -> list[int]:
    """0-based numbers of the lines to draw: those with shared code and a little around them
    (the first lines when nothing is shared), at most ``MAX_SIDE_LINES``."""
    count = len(starts) - (1 if size and starts[-1] == size else 0)
    wanted: set[int] = set()
    for region in regions:
        first = bisect.bisect_right(starts, region.start) - 1
        last = bisect.bisect_right(starts, max(region.start, region.end - 1)) - 1
        wanted.update(range(max(0, first - CONTEXT), min(count, last + CONTEXT + 1)))
        if len(wanted) > MAX_SIDE_LINES:
            break
    if not wanted:
        wanted = set(range(min(count, 2 * CONTEXT + 1)))
    return sorted(wanted)[:MAX_SIDE_LINES]


def _lines(text: str, regions: Sequence[Region]) -> tuple[Line, ...]:
    """The lines to draw, each cut where a shared region starts or ends, with a fold row where
    lines are left out."""
    starts = _line_starts(text)
    shown = _shown(starts, len(text), regions)
    count = len(starts) - (1 if text and starts[-1] == len(text) else 0)
    rows: list[Line] = []
    previous = -1
    r = 0  # regions are sorted and do not overlap: one pointer walks them
    for index in shown:
        if index > previous + 1:
            rows.append(Line(0, (), folded=index - previous - 1))
        previous = index
        line_start = starts[index]
        line_end = starts[index + 1] - 1 if index + 1 < len(starts) else len(text)
        if line_end > line_start and text[line_end - 1] == "\r":  # a CRLF file's line end
            line_end -= 1
        cut = min(line_end, line_start + MAX_LINE_CHARS)
        while r < len(regions) and regions[r].end <= line_start:
            r += 1
        segments: list[Segment] = []
        at = line_start
        k = r
        while at < cut:
            region = regions[k] if k < len(regions) else None
            if region is None or region.start >= cut:
                segments.append(Segment(text[at:cut], 0, 0))
                break
            if region.start > at:
                segments.append(Segment(text[at : region.start], 0, 0))
                at = region.start
            stop = min(region.end, cut)
            piece = text[at:stop]
            if not segments or all(not s.text.strip() for s in segments):
                indent = piece[: len(piece) - len(piece.lstrip(" \t"))]  # indentation is not shared code
                if indent:
                    segments.append(Segment(indent, 0, 0))
                    piece = piece[len(indent) :]
            if piece:
                segments.append(Segment(piece, k + 1, region.other_line))
            at = stop
            if region.end <= cut:
                k += 1
        if line_end > cut:
            segments.append(Segment(f" … ({line_end - cut} more characters)", 0, 0))
        rows.append(Line(index + 1, tuple(segments)))
    if previous + 1 < count:
        rows.append(Line(0, (), folded=count - previous - 1))
    return tuple(rows)


def _side(report: SimilarityReport, mine: str, theirs: str, share: float) -> Side:
    regions = shared_regions(
        report.prints[mine], report.prints[theirs], report.sources[theirs], report.base, report.sources[mine]
    )
    return Side(mine, percent(share), _lines(report.sources[mine], regions), report.prints[mine].tokens.loose)


def _drawn(side: Side) -> int:
    return sum(1 for line in side.lines if not line.folded)


def pair_views(report: SimilarityReport) -> list[PairView]:
    group_of = {name: i for i, group in enumerate(report.groups, start=1) for name in group}
    views = []
    budget = MAX_PAGE_LINES
    for n, pair in enumerate(report.flagged[:MAX_SHOWN], start=1):
        group = group_of.get(pair.a, 0) if group_of.get(pair.a) == group_of.get(pair.b) else 0
        left = right = None
        if budget > 0:
            left = _side(report, pair.a, pair.b, pair.a_share)
            right = _side(report, pair.b, pair.a, pair.b_share)
            budget -= _drawn(left) + _drawn(right)
        views.append(
            PairView(
                anchor=f"pair-{n}",
                a=pair.a,
                b=pair.b,
                score=percent(pair.score),
                left=left,
                right=right,
                group=group if not pair.holder else 0,
                holder=pair.holder,
                a_share=percent(pair.a_share),
                b_share=percent(pair.b_share),
            )
        )
    return views


def render_html(report: SimilarityReport, *, title: str, frame: SiteFrame | None = None) -> str:
    """The page; a site that serves it passes its ``frame`` (header, way back, stylesheets)."""
    from grader.report.html import environment

    views = pair_views(report)
    context = {
        "title": title,
        "report": report,
        "pairs": views,
        "grouped": [[v for v in views if v.group == i] for i in range(1, len(report.groups) + 1)],
        "ungrouped": [v for v in views if v.group == 0 and not v.holder],
        "contained": [v for v in views if v.holder],
        "references": [m for m in report.mostly_base if m.reference],
        "compared": len(report.prints),
        "pair_count": len(report.pairs),
        "shown_cap": MAX_SHOWN,
        "undrawn": sum(1 for v in views if v.left is None),
        "threshold": percent(report.threshold),
        "mutual": percent(MUTUAL),
        "mostly": percent(MOSTLY_BASE),
        "k": K,
        "guarantee": K + WINDOW - 1,
        "min_prints": MIN_PRINTS,
        "frame": frame,
    }
    return environment().get_template(TEMPLATE).render(context)


def write(report: SimilarityReport, out: Path, *, title: str) -> None:
    from grader.report.view import write_text_atomic

    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / JSON_NAME, to_json(report))
    write_text_atomic(out / HTML_NAME, render_html(report, title=title))
