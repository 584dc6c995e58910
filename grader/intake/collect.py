"""Turn what an instructor downloads into one file per student to grade: the public API of the intake stage.
Accepted inputs, detected automatically: a folder of per-student folders, a Gradescope "Export Submissions"
zip, a Canvas "Download Submissions" zip (or its unzipped folder) and a plain zip of per-student folders.
``collect()`` reads the input (``tree``), finds its layout (``layouts``), chooses and reads each student's file
(``choose``) and gives every student an id safe as a folder name and unique; ``CollectError`` is raised only when
the input cannot be read as submissions at all.
"""

from __future__ import annotations

import re
import unicodedata
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .choose import Cand, Pick, Rules, listing, load, safe_choose
from .layouts import Draft, canvas, folders, gradescope, looks_canvas, looks_gradescope, unwrap
from .tree import CollectError, Tree, dir_tree, new_budget, zip_tree

__all__ = ["CollectError", "Collection", "Found", "collect"]

MAX_ID_LEN = 80


@dataclass(frozen=True)
class Found:
    """One student's submission as the grader will see it."""

    student: str  # stable, filesystem-safe, unique id: used as OUT/<student>/ and as the store key
    name: str  # display name when the source knows it (Gradescope/Canvas), else == student
    source: bytes | None  # the chosen file's bytes; None when nothing can be graded
    origin: str  # where it came from, e.g. "export.zip:submission_123/autograd_lab.py"
    notices: tuple[str, ...]  # things a person should know, said plainly
    problem: str  # "" or why this student cannot be graded


@dataclass(frozen=True)
class Collection:
    """Everything found in one download."""

    kind: str  # "folders", "gradescope", "canvas" or "zip"
    submissions: tuple[Found, ...]  # sorted by student
    warnings: tuple[str, ...]  # archive-level: skipped or unsafe members, unknown files


# ---------------------------------------------------------------------------------------------------------------
# Ids: safe as one folder name on every filesystem, unique even where case does not count (macOS, Windows).


def _safe_id(raw: str) -> str:
    """Map to [A-Za-z0-9._-], no leading dot or dash, at most MAX_ID_LEN characters, never empty."""
    ascii_text = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^A-Za-z0-9._-]+", "_", ascii_text).lstrip(".-")[:MAX_ID_LEN].rstrip(".")
    return text or "student"


def _unique(base: str, taken: set[str]) -> str:
    candidate, n = base, 1
    while candidate.lower() in taken:
        n += 1
        suffix = f"-{n}"
        candidate = base[: MAX_ID_LEN - len(suffix)] + suffix
    taken.add(candidate.lower())
    return candidate


def _finalize(drafts: list[Draft], rules: Rules) -> tuple[Found, ...]:
    taken: set[str] = set()
    found = []
    for draft in sorted(drafts, key=lambda d: (_safe_id(d.raw_id).lower(), d.where)):
        found.append(_found(draft, _student_id(draft, taken), rules))
    return tuple(sorted(found, key=lambda f: f.student))


def _student_id(draft: Draft, taken: set[str]) -> tuple[str, tuple[str, ...]]:
    base = _safe_id(draft.raw_id)
    notes = [] if base == draft.raw_id else [f"id {draft.raw_id!r} was changed to {base!r} to be safe as a folder name"]
    student = _unique(base, taken)
    if student != base:
        notes.append(f"another submission already uses the id {base!r}; this one is filed as {student!r}")
    return student, tuple(notes)


def _found(draft: Draft, ident: tuple[str, tuple[str, ...]], rules: Rules) -> Found:
    student, id_notes = ident
    pick = Pick(None, problem=draft.problem) if draft.problem else safe_choose(list(draft.cands), rules)
    source, problem = load(pick, rules)
    origin = pick.chosen.file.origin if pick.chosen else draft.where
    notices = (*draft.notices, *id_notes, *pick.notices, *_not_graded(draft.cands, pick.chosen))
    return Found(student, draft.name or student, source, origin, notices, problem)


def _not_graded(cands: Iterable[Cand], chosen: Cand | None) -> tuple[str, ...]:
    """Say what else was there, so a wrong pick is easy to spot."""
    others = [c.shown for c in cands if c is not chosen]
    return (f"also submitted, not graded: {listing(others)}",) if chosen and others else ()


# ---------------------------------------------------------------------------------------------------------------


def collect(path: Path, *, filename: str = "autograd_lab.py", max_file_bytes: int = 1024 * 1024) -> Collection:
    """Read a folder or a downloaded zip and pick, for every student, the file to grade."""
    path = Path(path)
    if not path.exists():
        raise CollectError("no such file or folder", where=str(path))
    rules = Rules(filename, max_file_bytes, new_budget())
    if path.is_dir():
        try:
            tree = dir_tree(path)
        except OSError as exc:
            raise CollectError(f"cannot read the folder ({exc})", where=str(path)) from exc
        return _build(tree, path.name, rules)
    if not zipfile.is_zipfile(path):
        raise CollectError(
            "neither a folder nor a zip archive; give the folder or the zip you downloaded", where=str(path)
        )
    try:
        with zipfile.ZipFile(path) as zf:
            return _build(zip_tree(zf, path.name), path.stem, rules)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise CollectError(f"the zip archive is damaged and cannot be read ({exc})", where=str(path)) from exc


def _build(tree: Tree, stem: str, rules: Rules) -> Collection:
    tree = unwrap(tree, stem)
    if looks_gradescope(tree):
        kind, drafts = "gradescope", gradescope(tree, rules)
    elif looks_canvas(tree):
        kind, drafts = "canvas", canvas(tree)
    else:
        kind, drafts = ("zip" if tree.is_zip else "folders"), folders(tree)
    submissions = _finalize(drafts, rules)
    return Collection(kind, submissions, tuple(tree.warnings + rules.budget.warnings))
