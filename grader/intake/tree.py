"""A uniform, budgeted, capped view of a folder or a zip, so detection and choosing never care which one they read.
Archives are untrusted: members are read into memory with caps, never extracted, never executed; unsafe members
(absolute paths, '..', symbolic links, encrypted) are skipped with a warning, nested archives are listed but never
opened, and every read is charged to one input-wide byte budget. The limits live here and are read only here.
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from grader.errors import SubmissionError

MAX_MEMBERS = 20_000  # a class export has a few thousand members at most; more is a mistake or an attack
MAX_TOTAL_BYTES = 512 * 1024 * 1024  # total bytes read from one input, whatever the per-file cap

_ARCHIVE_SUFFIXES = (".zip", ".tar", ".tgz", ".gz", ".bz2", ".xz", ".7z", ".rar")
_JUNK_NAMES = {"__MACOSX", "__pycache__", ".DS_Store", "Thumbs.db", "desktop.ini"}


class CollectError(SubmissionError):
    """The path cannot be read as submissions at all: missing, neither a folder nor a zip, or a damaged zip."""


# ---------------------------------------------------------------------------------------------------------------
# A uniform view of a folder or a zip, so detection and choosing never care which one they read.


class OverBudget(Exception):
    """The input-wide read limit is spent; one student gets a problem instead of the whole run failing."""


@dataclass
class Budget:
    remaining: int
    warnings: list[str] = field(default_factory=list)

    def charge(self, n: int) -> None:
        self.remaining -= n
        if self.remaining < 0 and not self.warnings:
            self.warnings.append(f"stopped reading after {size(MAX_TOTAL_BYTES)} in total; later files were not read")


def new_budget() -> Budget:
    """The read budget for one whole input."""
    return Budget(MAX_TOTAL_BYTES)


def too_large() -> str:
    """How a student's problem says the input-wide read limit was spent before their file was read."""
    return f"the download is larger than {size(MAX_TOTAL_BYTES)} in total"


@dataclass(frozen=True)
class File:
    parts: tuple[str, ...]  # path below the current root
    size: int  # as declared (zip header or stat); the real read is capped anyway
    origin: str
    opener: Callable[[], IO[bytes]]


@dataclass
class Tree:
    files: list[File]
    dirs: set[tuple[str, ...]]
    warnings: list[str]
    label: str  # "export.zip" or the folder path, for origins
    is_zip: bool
    prefix: tuple[str, ...] = ()  # parts removed by unwrapping, kept for origins

    def where(self, parts: tuple[str, ...]) -> str:
        inner = "/".join(self.prefix + parts)
        return f"{self.label}:{inner}/" if self.is_zip else str(Path(self.label, *self.prefix, *parts))

    def top_dirs(self) -> set[str]:
        return {d[0] for d in self.dirs if d} | {f.parts[0] for f in self.files if len(f.parts) > 1}

    def top_files(self) -> list[File]:
        return [f for f in self.files if len(f.parts) == 1]

    def under(self, folder: str) -> list[File]:
        return [replace(f, parts=f.parts[1:]) for f in self.files if len(f.parts) > 1 and f.parts[0] == folder]


def _is_junk(name: str) -> bool:
    """Operating-system litter and hidden folders (.git, .ipynb_checkpoints) are never part of a submission."""
    return name in _JUNK_NAMES or name.startswith(".")


def _is_archive(name: str) -> bool:
    return name.lower().endswith(_ARCHIVE_SUFFIXES)


def read(file: File, limit: int, budget: Budget) -> bytes:
    """At most ``limit`` bytes, so a lying header or a zip bomb costs no more than the cap."""
    if budget.remaining <= 0:
        raise OverBudget
    with file.opener() as stream:
        data = stream.read(limit)
    budget.charge(len(data))
    return data


def _unsafe_reason(info: zipfile.ZipInfo, name: str) -> str:
    """Why a member must not be read at all, or ""."""
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return "absolute path"
    if ".." in name.split("/"):
        return "'..' in its path"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "symbolic link"
    if info.flag_bits & 0x1:
        return "encrypted"
    return ""


def zip_tree(zf: zipfile.ZipFile, label: str) -> Tree:
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise CollectError(f"the zip has {len(infos)} members, more than the {MAX_MEMBERS} a class export can have")
    tree = Tree([], set(), [], label, is_zip=True)
    for info in infos:
        name = info.filename.replace("\\", "/")  # zips made on Windows sometimes use backslashes
        reason = _unsafe_reason(info, name)
        if reason:
            tree.warnings.append(f"skipped {info.filename!r}: {reason}")
            continue
        parts = tuple(p for p in name.split("/") if p not in ("", "."))
        if not parts or any(_is_junk(p) for p in parts):
            continue
        _add_entry(tree, parts, info.is_dir(), info.file_size, f"{label}:{info.filename}", _zip_opener(zf, info))
    return tree


def _zip_opener(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[], IO[bytes]]:
    return lambda: zf.open(info)


def _add_entry(
    tree: Tree, parts: tuple[str, ...], is_dir: bool, size: int, origin: str, opener: Callable[[], IO[bytes]]
) -> None:
    tree.dirs.update(parts[:i] for i in range(1, len(parts)))
    if is_dir:
        tree.dirs.add(parts)
        return
    if _is_archive(parts[-1]):
        # Kept (unread) so the student's "found:" list shows it; nested archives are never opened.
        tree.warnings.append(f"did not open {origin}: archives inside the download are not opened")
    tree.files.append(File(parts, size, origin, opener))


def dir_tree(root: Path) -> Tree:
    tree = Tree([], set(), [], str(root), is_zip=False)
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        rel = here.relative_to(root).parts
        dirnames[:] = [d for d in sorted(dirnames) if _keep_path(tree, here / d)]
        for d in dirnames:
            tree.dirs.add((*rel, d))
        for f in sorted(filenames):
            if not _keep_path(tree, here / f):
                continue
            if len(tree.files) >= MAX_MEMBERS:
                raise CollectError(f"more than {MAX_MEMBERS} files; is this really a folder of submissions?")
            _add_entry(tree, (*rel, f), False, (here / f).stat().st_size, str(here / f), _path_opener(here / f))
    return tree


def _keep_path(tree: Tree, path: Path) -> bool:
    """Symbolic links could point anywhere on the instructor's machine, so they are never followed."""
    if _is_junk(path.name):
        return False
    if path.is_symlink():
        tree.warnings.append(f"skipped {path}: symbolic link")
        return False
    if not (path.is_dir() or path.is_file()):
        tree.warnings.append(f"skipped {path}: not a regular file")
        return False
    return True


def _path_opener(path: Path) -> Callable[[], IO[bytes]]:
    return lambda: path.open("rb")


def size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"
