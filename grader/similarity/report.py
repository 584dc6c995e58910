"""The class's similarity report: every pair scored, written as similarity.json and a page.

The page finds similarity, never misconduct: a high score says two files share more of their
own code than independent work usually does, and a person decides what that means. Student
names and code reach the template as plain strings (autoescaped; nothing is marked safe), and
the page loads nothing from outside itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .compare import MIN_PRINTS, THRESHOLD, Pair, Region, clusters, score_pairs, shared_regions
from .fingerprint import WINDOW, Fingerprint, K, base_hashes, fingerprint

JSON_NAME = "similarity.json"
HTML_NAME = "similarity.html"
TEMPLATE = "similarity.html.j2"
MAX_SHOWN = 100  # pairs drawn side by side on the page (the JSON has every pair)


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
    base: frozenset[int]
    base_names: tuple[str, ...]
    threshold: float
    too_small: tuple[str, ...]  # fewer than MIN_PRINTS fingerprints of their own
    skipped: tuple[tuple[str, str], ...]  # (student, why) not compared at all

    @property
    def flagged(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if p.score >= self.threshold)


def build(
    sources: Sequence[Source],
    base: Sequence[Source],
    *,
    threshold: float = THRESHOLD,
    skipped: Sequence[tuple[str, str]] = (),
) -> SimilarityReport:
    base_set = base_hashes(b.text for b in base)
    prints = {s.name: fingerprint(s.name, s.text, base_set) for s in sources}
    pairs = score_pairs(list(prints.values()))
    return SimilarityReport(
        pairs=tuple(pairs),
        groups=tuple(clusters(pairs, threshold)),
        prints=prints,
        sources={s.name: s.text for s in sources},
        base=base_set,
        base_names=tuple(b.name for b in base),
        threshold=threshold,
        too_small=tuple(sorted(n for n, p in prints.items() if len(p.prints) < MIN_PRINTS)),
        skipped=tuple(sorted(skipped)),
    )


def to_json(report: SimilarityReport) -> str:
    rows = [{"a": p.a, "b": p.b, "score": p.score, "a_share": p.a_share, "b_share": p.b_share} for p in report.pairs]
    return json.dumps(rows, indent=1) + "\n"


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
    left: Side
    right: Side
    group: int  # 1-based group number, 0 when in none


def percent(value: float) -> str:
    return f"{round(value * 100)}%"


def _lines(text: str, regions: Sequence[Region]) -> tuple[Line, ...]:
    """The text cut into lines, each cut again where a shared region starts or ends."""
    cuts: list[tuple[int, int, int, int]] = []  # start, end, region number, other line
    position = 0
    for number, region in enumerate(regions, start=1):
        if region.start > position:
            cuts.append((position, region.start, 0, 0))
        cuts.append((region.start, region.end, number, region.other_line))
        position = region.end
    if position < len(text):
        cuts.append((position, len(text), 0, 0))
    lines: list[list[Segment]] = [[]]
    for start, end, number, other in cuts:
        for i, piece in enumerate(text[start:end].split("\n")):
            if i:
                lines.append([])
                if lines[-2] and lines[-2][-1].text.endswith("\r"):  # a CRLF file's line end
                    last = lines[-2][-1]
                    lines[-2][-1] = Segment(last.text[:-1], last.region, last.other_line)
                    if not lines[-2][-1].text:
                        lines[-2].pop()
            if number and not lines[-1]:  # indentation is not shared code: leave it unmarked
                indent = piece[: len(piece) - len(piece.lstrip(" \t"))]
                if indent:
                    lines[-1].append(Segment(indent, 0, 0))
                    piece = piece[len(indent) :]
            if piece:
                lines[-1].append(Segment(piece, number, other))
    if lines and not lines[-1] and text.endswith("\n"):
        lines.pop()
    return tuple(Line(n, tuple(segments)) for n, segments in enumerate(lines, start=1))


def _side(report: SimilarityReport, mine: str, theirs: str, share: float) -> Side:
    regions = shared_regions(report.prints[mine], report.prints[theirs], report.sources[theirs], report.base)
    return Side(mine, percent(share), _lines(report.sources[mine], regions), report.prints[mine].tokens.loose)


def pair_views(report: SimilarityReport) -> list[PairView]:
    group_of = {name: i for i, group in enumerate(report.groups, start=1) for name in group}
    views = []
    for n, pair in enumerate(report.flagged[:MAX_SHOWN], start=1):
        group = group_of.get(pair.a, 0) if group_of.get(pair.a) == group_of.get(pair.b) else 0
        views.append(
            PairView(
                anchor=f"pair-{n}",
                a=pair.a,
                b=pair.b,
                score=percent(pair.score),
                left=_side(report, pair.a, pair.b, pair.a_share),
                right=_side(report, pair.b, pair.a, pair.b_share),
                group=group,
            )
        )
    return views


def render_html(report: SimilarityReport, *, title: str) -> str:
    from grader.report.html import environment

    views = pair_views(report)
    context = {
        "title": title,
        "report": report,
        "pairs": views,
        "grouped": [[v for v in views if v.group == i] for i in range(1, len(report.groups) + 1)],
        "ungrouped": [v for v in views if v.group == 0],
        "compared": len(report.prints),
        "pair_count": len(report.pairs),
        "shown_cap": MAX_SHOWN,
        "threshold": percent(report.threshold),
        "k": K,
        "guarantee": K + WINDOW - 1,
        "min_prints": MIN_PRINTS,
    }
    return environment().get_template(TEMPLATE).render(context)


def write(report: SimilarityReport, out: Path, *, title: str) -> None:
    from grader.report.view import write_text_atomic

    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / JSON_NAME, to_json(report))
    write_text_atomic(out / HTML_NAME, render_html(report, title=title))
