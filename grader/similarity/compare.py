"""Every pair of submissions scored, groups of similar ones, and the regions two files share.

A pair's share for one side is the fraction of that file's own fingerprints (base code taken
out) that the other file also has. The score is the larger of the two shares: a copy padded with
dead code or extra checks still holds almost all of the original's fingerprints. When the
other share is under ``MUTUAL`` of it, one file holds most of the other (a small engine pasted
into a larger file, or one file holding many students' code): that is its own finding, and such
a pair never joins a group, so one file holding many others cannot chain them all into one.
A file with fewer than ``MIN_PRINTS`` fingerprints of its own (empty, starter code only, a
dozen lines) is too small to compare, and every pair it is in scores 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .fingerprint import NO_KGRAM, Base, Fingerprint, K

MIN_PRINTS = 24  # a few lines of attribute assignments alone look alike in anyone's code
THRESHOLD = 0.5  # pairs at or above it are listed in the report
MUTUAL = 0.6  # a smaller share under this part of the larger: one file holds the other


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    score: float  # 0..1
    a_share: float  # of a's own fingerprints, the fraction b has too
    b_share: float

    @property
    def holder(self) -> str:
        """The file that holds most of the other while the other holds little of it, else ""."""
        if min(self.a_share, self.b_share) >= MUTUAL * self.score or self.score == 0:
            return ""
        return self.b if self.a_share >= self.b_share else self.a

    def joins(self, threshold: float) -> bool:
        """Whether the pair puts both files in one group: both hold much of each other."""
        return self.score >= threshold and not self.holder


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
    """Groups of three or more joined by pairs at or above ``threshold`` that are not one file
    holding the other, largest first."""
    parent: dict[str, str] = {}

    def root(name: str) -> str:
        while parent.setdefault(name, name) != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for pair in pairs:
        if pair.joins(threshold):
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


def shared_regions(
    mine: Fingerprint, theirs: Fingerprint, their_source: str, base: Base | frozenset[int], my_source: str = ""
) -> list[Region]:
    """The runs of ``mine`` made of k-grams ``theirs`` also has (base code excluded), as text
    spans. Every shared k-gram counts here, not only fingerprints, so the marking is complete.
    Units with nothing in common are passed over whole (a set test), so a large file costs
    little against a small one."""
    common = (mine.all_hashes & theirs.all_hashes) - (base.union if isinstance(base, Base) else base)
    if not common:
        return []
    first_at: dict[int, int] = {}
    for i, value in enumerate(theirs.hashes):
        if value in common and value not in first_at:
            first_at[value] = i
    # Each shared token's counterpart in the other file, through the latest shared k-gram that
    # covers it (a copy with a line added is aligned again after it).
    counterpart: dict[int, int] = {}
    for start, end in mine.tokens.units:
        unit = mine.hashes[start:end]
        if common.isdisjoint(unit):
            continue
        for i, value in enumerate(unit, start=start):
            if value != NO_KGRAM and value in common:
                there = first_at[value]
                for p in range(i, min(i + K, end)):
                    counterpart[p] = there + (p - i)
    items, their_items = mine.tokens.items, theirs.tokens.items

    def first_code(at: int) -> int:
        """Skip zero-width block markers: the line is that of the first real token."""
        at = min(at, len(their_items) - 1)
        while at < len(their_items) - 1 and their_items[at].start == their_items[at].end:
            at += 1
        return at

    # A unit's tokens are not all in the order of the text (the module's own statements are one
    # unit around the definitions), so the marking is the union of the shared tokens' spans,
    # joined across what is not code (spaces, brackets, commas); a region's first token names
    # the line of its counterpart.
    spans = sorted(
        (items[p].start, items[p].end, there) for p, there in counterpart.items() if items[p].end > items[p].start
    )
    found: list[list[int]] = []
    for start, end, there in spans:
        if found and (start <= found[-1][1] or (my_source and _GLUE.fullmatch(my_source, found[-1][1], start))):
            found[-1][1] = max(found[-1][1], end)
            continue
        found.append([start, end, there])
    return [
        Region(start, end, _line_of(their_source, their_items[first_code(there)].start)) for start, end, there in found
    ]


_GLUE = re.compile(r"[\s()\[\]{},:;.\\]*")  # between two shared tokens: still one marked run
