"""Every pair of submissions scored, groups of similar ones, and the regions two files share.

A pair's share for one side is the fraction of that file's own fingerprints (base code taken
out) that the other file also has. The score is the larger of the two shares: a copy padded with
dead code or extra checks still holds almost all of the original's fingerprints. A file with
fewer than ``MIN_PRINTS`` fingerprints of its own (empty, starter code only, a dozen lines) is
too small to compare, and every pair it is in scores 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .fingerprint import Fingerprint, K
from .tokens import DEDENT, INDENT, NEWLINE

STRUCTURE = (NEWLINE, INDENT, DEDENT)  # tokens of layout, not of code

MIN_PRINTS = 24  # a few lines of attribute assignments alone look alike in anyone's code
THRESHOLD = 0.5  # pairs at or above it are listed in the report


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    score: float  # 0..1
    a_share: float  # of a's own fingerprints, the fraction b has too
    b_share: float


def _ratio(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def score_pairs(prints: Sequence[Fingerprint]) -> list[Pair]:
    """Every pair, highest score first (then by name, so the order is the same on every run)."""
    ordered = sorted(prints, key=lambda p: p.name)
    pairs: list[Pair] = []
    for i, first in enumerate(ordered):
        small_first = len(first.prints) < MIN_PRINTS
        for second in ordered[i + 1 :]:
            if small_first or len(second.prints) < MIN_PRINTS:
                pairs.append(Pair(first.name, second.name, 0.0, 0.0, 0.0))
                continue
            shared = len(first.prints & second.prints)
            a_share, b_share = _ratio(shared, len(first.prints)), _ratio(shared, len(second.prints))
            pairs.append(Pair(first.name, second.name, max(a_share, b_share), a_share, b_share))
    pairs.sort(key=lambda p: (-p.score, p.a, p.b))
    return pairs


def clusters(pairs: Sequence[Pair], threshold: float) -> list[tuple[str, ...]]:
    """Groups of three or more joined by pairs at or above ``threshold``, largest first."""
    parent: dict[str, str] = {}

    def root(name: str) -> str:
        while parent.setdefault(name, name) != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for pair in pairs:
        if pair.score >= threshold:
            parent[root(pair.a)] = root(pair.b)
    groups: dict[str, list[str]] = {}
    for name in parent:
        groups.setdefault(root(name), []).append(name)
    found = [tuple(sorted(members)) for members in groups.values() if len(members) >= 3]
    return sorted(found, key=lambda g: (-len(g), g))


@dataclass(frozen=True)
class Region:
    start: int  # character offsets in this file, [start, end)
    end: int
    other_line: int  # where the other file has the start of it (1-based)


def _line_of(source: str, offset: int) -> int:
    return source.count("\n", 0, offset) + 1


def shared_regions(mine: Fingerprint, theirs: Fingerprint, their_source: str, base: frozenset[int]) -> list[Region]:
    """The runs of ``mine`` made of k-grams ``theirs`` also has (base code excluded), as text
    spans. Every shared k-gram counts here, not only fingerprints, so the marking is complete."""
    first_at: dict[int, int] = {}
    for i, value in enumerate(theirs.hashes):
        first_at.setdefault(value, i)
    runs: list[list[int]] = []  # [first token, last token + 1, a shared k-gram's position there]
    for i, value in enumerate(mine.hashes):
        if value in base or value not in first_at:
            continue
        if runs and i <= runs[-1][1]:
            runs[-1][1] = i + K
        else:
            runs.append([i, i + K, first_at[value]])
    items, their_items = mine.tokens.items, theirs.tokens.items

    def first_code(at: int) -> int:
        """Skip line-end and nesting tokens: the run's line is that of its first real token."""
        end = min(at + K, len(their_items)) - 1
        while at < end and their_items[at].text in STRUCTURE:
            at += 1
        return at

    return [
        Region(items[a].start, items[b - 1].end, _line_of(their_source, their_items[first_code(at)].start))
        for a, b, at in runs
    ]
