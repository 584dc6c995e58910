"""The similarity section of a class page: what the last report found, and whether it is current.

The full report is its own page; the class page carries its headline (groups, the highest pairs)
and says when the submissions have changed since it was made, so nobody reads a stale one as
current. The summary travels as JSON (in the batch store's meta table, or the service's
database) and is checked for shape when read back, like any stored record.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from .report import SimilarityReport, percent

TOP = 10  # pairs named on the class page


def content_digest(items: Iterable[tuple[str, str]]) -> str:
    """One digest of (student, content sha) pairs: changes whenever any submission does."""
    text = "\n".join(f"{student}\t{sha}" for student, sha in sorted(items))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class TopPair:
    a: str
    b: str
    score: str


@dataclass(frozen=True)
class SimilaritySection:
    href: str
    compared: int
    flagged: int
    threshold: str
    groups: tuple[tuple[str, ...], ...]
    top: tuple[TopPair, ...]
    stale: bool  # submissions changed since the report was made
    contained: int = 0  # flagged pairs where one file holds most of the other
    mostly_reference: tuple[str, ...] = ()  # students whose file is mostly the reference solution


def to_meta(report: SimilarityReport, digest: str) -> str:
    return json.dumps(
        {
            "digest": digest,
            "compared": len(report.prints),
            "flagged": len(report.flagged),
            "threshold": report.threshold,
            "groups": [list(g) for g in report.groups],
            "top": [[p.a, p.b, p.score] for p in report.flagged[:TOP]],
            "contained": len(report.contained),
            "mostly_reference": [m.name for m in report.mostly_base if m.reference],
        }
    )


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number here")


def _names(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("not a list of names")
    return tuple(value)


def section(meta: str | None, *, digest: str, href: str) -> SimilaritySection | None:
    """The section from stored JSON; None when there is none or it does not have the right shape."""
    if not meta:
        return None
    try:
        data = json.loads(meta, parse_constant=_no_constant)
        if not 0.0 <= float(data["threshold"]) <= 1.0:
            return None
        top = tuple(
            TopPair(a, b, percent(float(score)))
            for a, b, score in data["top"]
            if isinstance(a, str) and isinstance(b, str) and isinstance(score, int | float)
        )
        return SimilaritySection(
            href=href,
            compared=int(data["compared"]),
            flagged=int(data["flagged"]),
            threshold=percent(float(data["threshold"])),
            groups=tuple(_names(g) for g in data["groups"]),
            top=top,
            stale=data["digest"] != digest,
            contained=int(data.get("contained", 0)),  # absent from headlines made before it was counted
            mostly_reference=_names(data.get("mostly_reference", [])),
        )
    except (ValueError, KeyError, TypeError, OverflowError):
        return None
