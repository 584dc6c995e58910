"""Choosing the one file to grade among a student's candidate files, identical for every input kind, and reading it.
An exact name wins, then a name a person would call the same, then the only Python file, then the one defining
class Value (a text search, never an import); ties, notebooks and oversized or unreadable files become the student's
problem, never the run's, and every choice that is not the obvious one is said in a notice.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from .tree import Budget, File, OverBudget, read, size, too_large

MAX_LISTED = 10  # names listed in one message before "and N more"

# Canvas renames a re-uploaded file autograd_lab-1.py; browsers save a second download as "x (1).py".
_COPY_SUFFIX = re.compile(r"(?:-\d+|\s*\(\d+\))$")
_CLASS_VALUE = re.compile(rb"^[ \t]*class[ \t]+Value\b", re.M)


# ---------------------------------------------------------------------------------------------------------------
# Choosing the file to grade, identical for every input kind.


@dataclass(frozen=True)
class Cand:
    file: File
    shown: str  # how a person recognises it: path inside the student's folder, or the original Canvas name
    match: str  # the name compared with the expected one (Canvas's -N already removed)
    depth: int = 0
    rank: tuple[int, ...] = ()  # higher is newer: breaks ties between otherwise equal candidates


@dataclass(frozen=True)
class Rules:
    filename: str
    max_bytes: int
    budget: Budget


@dataclass(frozen=True)
class Pick:
    chosen: Cand | None
    notices: tuple[str, ...] = ()
    problem: str = ""


def _loose(name: str) -> str:
    """Compare names as a person would: case, spaces, dashes, underscores and copy suffixes do not matter."""
    stem, dot, ext = name.lower().rpartition(".")
    if not dot:
        stem, ext = ext, ""
    stem = _COPY_SUFFIX.sub("", stem)
    return re.sub(r"[\s_\-]+", "", stem) + "." + ext


def listing(names: Iterable[str]) -> str:
    items = sorted(names)
    more = len(items) - MAX_LISTED
    return ", ".join(items[:MAX_LISTED]) + (f" and {more} more" if more > 0 else "")


def _best(hits: list[Cand], rules: Rules) -> Pick:
    """Shallowest, then newest; a tie between equals is for a person to settle."""
    top = min(hits, key=lambda c: (c.depth, [-r for r in c.rank]))
    equals = [c for c in hits if (c.depth, c.rank) == (top.depth, top.rank)]
    if len(equals) > 1:
        return Pick(None, problem=f"several files could be {rules.filename}: {listing(c.shown for c in equals)}")
    if top.shown == rules.filename:
        return Pick(top)
    return Pick(top, (f"graded {top.shown} as {rules.filename}",))


def _defines_value(cand: Cand, rules: Rules) -> bool:
    return bool(_CLASS_VALUE.search(read(cand.file, rules.max_bytes + 1, rules.budget)))


def _choose(cands: list[Cand], rules: Rules) -> Pick:
    if not cands:
        return Pick(None, problem="nothing was submitted (the folder is empty)")
    py = [c for c in cands if c.match.lower().endswith(".py")]
    exact = [c for c in py if c.match == rules.filename]
    if exact:
        return _best(exact, rules)
    similar = [c for c in py if _loose(c.match) == _loose(rules.filename)]
    if similar:
        return _best(similar, rules)
    if len(py) == 1:
        return Pick(py[0], (f"graded {py[0].shown} as {rules.filename}: it is the only Python file",))
    if py:
        return _by_class_value(py, rules)
    return Pick(None, problem=_nothing_gradable(cands, rules))


def _by_class_value(py: list[Cand], rules: Rules) -> Pick:
    """Several Python files: the lab's engine is the one defining class Value (a text search, never an import)."""
    engines = [c for c in py if c.file.size <= rules.max_bytes and _defines_value(c, rules)]
    if len(engines) == 1:
        chosen = engines[0]
        return Pick(chosen, (f"graded {chosen.shown} as {rules.filename}: it is the one defining class Value",))
    return Pick(
        None, problem=f"several Python files and none is clearly {rules.filename}: {listing(c.shown for c in py)}"
    )


def _nothing_gradable(cands: list[Cand], rules: Rules) -> str:
    found = listing(c.shown for c in cands)
    if any(c.match.lower().endswith(".ipynb") for c in cands):
        return f"notebooks are not accepted; the lab asks for {rules.filename} (found: {found})"
    return f"no Python file was submitted (found: {found})"


def safe_choose(cands: list[Cand], rules: Rules) -> Pick:
    """Choosing may read files (class Value search); a read failure is this student's problem, not the run's."""
    try:
        return _choose(cands, rules)
    except OverBudget:
        return Pick(None, problem=f"not read: {too_large()}")
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
        return Pick(None, problem=f"could not read the submitted files: {exc}")


def load(pick: Pick, rules: Rules) -> tuple[bytes | None, str]:
    """The chosen file's bytes, or why they cannot be used."""
    cand = pick.chosen
    if cand is None:
        return None, pick.problem
    limit = f"over the {size(rules.max_bytes)} limit"
    if cand.file.size > rules.max_bytes:
        return None, f"{cand.shown} is {size(cand.file.size)}, {limit}"
    try:
        data = read(cand.file, rules.max_bytes + 1, rules.budget)
    except OverBudget:
        return None, f"{cand.shown} was not read: {too_large()}"
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
        return None, f"could not read {cand.shown}: {exc}"
    if len(data) > rules.max_bytes:
        return None, f"{cand.shown} is more than {size(rules.max_bytes)}, {limit}"
    return data, ""
