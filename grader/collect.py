"""Turn what an instructor downloads into one file per student to grade.

Accepted inputs, detected automatically: a folder of per-student folders, a Gradescope "Export Submissions"
zip, a Canvas "Download Submissions" zip (or its unzipped folder) and a plain zip of per-student folders.
Archives are untrusted: members are read into memory with caps, never extracted, never executed.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

import yaml

from grader.errors import SubmissionError

MAX_MEMBERS = 20_000  # a class export has a few thousand members at most; more is a mistake or an attack
MAX_TOTAL_BYTES = 512 * 1024 * 1024  # total bytes read from one input, whatever the per-file cap
MAX_METADATA_BYTES = 16 * 1024 * 1024  # submission_metadata.yml for a very large course stays far below this
MAX_ID_LEN = 80
MAX_LISTED = 10  # names listed in one message before "and N more"

_GRADESCOPE_METADATA = "submission_metadata.yml"
_GRADESCOPE_FOLDER = re.compile(r"^submission_\d+$")
# Canvas names a file <sortable name>[_LATE]_<user id>_<attachment id>_<original name>; the name is the
# lowercased "Last, First" with non-word characters removed, and older Canvas versions wrote "late" in lowercase.
_CANVAS_NAMED = re.compile(r"^(?P<name>\w*?)(?:_(?P<late>late))?_(?P<uid>\d+)_(?P<aid>\d+)_(?P<file>.+)$", re.I)
# With anonymous grading the name is dropped and the id becomes anon_<anonymous id>.
_CANVAS_ANON = re.compile(r"^(?:(?P<late>late)_)?(?P<uid>anon_[A-Za-z0-9]+?)_(?P<aid>\d+)_(?P<file>.+)$", re.I)
# Canvas renames a re-uploaded file autograd_lab-1.py; browsers save a second download as "x (1).py".
_COPY_SUFFIX = re.compile(r"(?:-\d+|\s*\(\d+\))$")
_CLASS_VALUE = re.compile(rb"^[ \t]*class[ \t]+Value\b", re.M)
_ARCHIVE_SUFFIXES = (".zip", ".tar", ".tgz", ".gz", ".bz2", ".xz", ".7z", ".rar")
_JUNK_NAMES = {"__MACOSX", "__pycache__", ".DS_Store", "Thumbs.db", "desktop.ini"}


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


class CollectError(SubmissionError):
    """The path cannot be read as submissions at all: missing, neither a folder nor a zip, or a damaged zip."""


# ---------------------------------------------------------------------------------------------------------------
# A uniform view of a folder or a zip, so detection and choosing never care which one they read.


class _OverBudget(Exception):
    """The input-wide read limit is spent; one student gets a problem instead of the whole run failing."""


@dataclass
class _Budget:
    remaining: int
    warnings: list[str] = field(default_factory=list)

    def charge(self, n: int) -> None:
        self.remaining -= n
        if self.remaining < 0 and not self.warnings:
            self.warnings.append(f"stopped reading after {_size(MAX_TOTAL_BYTES)} in total; later files were not read")


@dataclass(frozen=True)
class _File:
    parts: tuple[str, ...]  # path below the current root
    size: int  # as declared (zip header or stat); the real read is capped anyway
    origin: str
    opener: Callable[[], IO[bytes]]


@dataclass
class _Tree:
    files: list[_File]
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

    def top_files(self) -> list[_File]:
        return [f for f in self.files if len(f.parts) == 1]

    def under(self, folder: str) -> list[_File]:
        return [replace(f, parts=f.parts[1:]) for f in self.files if len(f.parts) > 1 and f.parts[0] == folder]


def _is_junk(name: str) -> bool:
    """Operating-system litter and hidden folders (.git, .ipynb_checkpoints) are never part of a submission."""
    return name in _JUNK_NAMES or name.startswith(".")


def _is_archive(name: str) -> bool:
    return name.lower().endswith(_ARCHIVE_SUFFIXES)


def _read(file: _File, limit: int, budget: _Budget) -> bytes:
    """At most ``limit`` bytes, so a lying header or a zip bomb costs no more than the cap."""
    if budget.remaining <= 0:
        raise _OverBudget
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


def _zip_tree(zf: zipfile.ZipFile, label: str) -> _Tree:
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise CollectError(f"the zip has {len(infos)} members, more than the {MAX_MEMBERS} a class export can have")
    tree = _Tree([], set(), [], label, is_zip=True)
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
    tree: _Tree, parts: tuple[str, ...], is_dir: bool, size: int, origin: str, opener: Callable[[], IO[bytes]]
) -> None:
    tree.dirs.update(parts[:i] for i in range(1, len(parts)))
    if is_dir:
        tree.dirs.add(parts)
        return
    if _is_archive(parts[-1]):
        # Kept (unread) so the student's "found:" list shows it; nested archives are never opened.
        tree.warnings.append(f"did not open {origin}: archives inside the download are not opened")
    tree.files.append(_File(parts, size, origin, opener))


def _dir_tree(root: Path) -> _Tree:
    tree = _Tree([], set(), [], str(root), is_zip=False)
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


def _keep_path(tree: _Tree, path: Path) -> bool:
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


# ---------------------------------------------------------------------------------------------------------------
# Detection


def _canvas_match(name: str) -> re.Match[str] | None:
    return _CANVAS_ANON.match(name) or _CANVAS_NAMED.match(name)


def _looks_canvas(tree: _Tree) -> bool:
    """Canvas downloads are flat: most top-level files carry the Canvas prefix and folders are rare."""
    hits = sum(1 for f in tree.top_files() if _canvas_match(f.parts[0]))
    return hits > 0 and 2 * hits > len(tree.top_files()) and hits >= len(tree.top_dirs())


def _looks_gradescope(tree: _Tree) -> bool:
    if any(f.parts == (_GRADESCOPE_METADATA,) for f in tree.files):
        return True
    dirs = tree.top_dirs()
    return bool(dirs) and all(_GRADESCOPE_FOLDER.match(d) for d in dirs)


def _unwrap(tree: _Tree, stem: str) -> _Tree:
    """Drop one wrapping folder (assignment_123_export/, or a folder zipped as a whole).

    A lone folder holding lone files is one student, so only unwrap when the inside looks like a class.
    """
    dirs = tree.top_dirs()
    if tree.top_files() or len(dirs) != 1:
        return tree
    top = next(iter(dirs))
    inner_dirs = {d[1:] for d in tree.dirs if len(d) > 1 and d[0] == top}
    inner = _Tree(tree.under(top), inner_dirs, tree.warnings, tree.label, tree.is_zip, (*tree.prefix, top))
    if _looks_gradescope(inner) or _looks_canvas(inner):
        return inner
    if any(f.parts[0].lower().endswith(".py") for f in inner.top_files()) or not inner.top_dirs():
        return tree  # the lab file sits right there: this folder is the student
    # A folder given on the command line is taken as is, so a lone student with subfolders is not split up.
    several = tree.is_zip and len(inner.top_dirs()) >= 2
    return inner if several or top.lower() == stem.lower() else tree


# ---------------------------------------------------------------------------------------------------------------
# Choosing the file to grade, identical for every input kind.


@dataclass(frozen=True)
class _Cand:
    file: _File
    shown: str  # how a person recognises it: path inside the student's folder, or the original Canvas name
    match: str  # the name compared with the expected one (Canvas's -N already removed)
    depth: int = 0
    rank: tuple[int, ...] = ()  # higher is newer: breaks ties between otherwise equal candidates


@dataclass(frozen=True)
class _Rules:
    filename: str
    max_bytes: int
    budget: _Budget


@dataclass(frozen=True)
class _Pick:
    chosen: _Cand | None
    notices: tuple[str, ...] = ()
    problem: str = ""


def _loose(name: str) -> str:
    """Compare names as a person would: case, spaces, dashes, underscores and copy suffixes do not matter."""
    stem, dot, ext = name.lower().rpartition(".")
    if not dot:
        stem, ext = ext, ""
    stem = _COPY_SUFFIX.sub("", stem)
    return re.sub(r"[\s_\-]+", "", stem) + "." + ext


def _listing(names: Iterable[str]) -> str:
    items = sorted(names)
    more = len(items) - MAX_LISTED
    return ", ".join(items[:MAX_LISTED]) + (f" and {more} more" if more > 0 else "")


def _best(hits: list[_Cand], rules: _Rules) -> _Pick:
    """Shallowest, then newest; a tie between equals is for a person to settle."""
    top = min(hits, key=lambda c: (c.depth, [-r for r in c.rank]))
    equals = [c for c in hits if (c.depth, c.rank) == (top.depth, top.rank)]
    if len(equals) > 1:
        return _Pick(None, problem=f"several files could be {rules.filename}: {_listing(c.shown for c in equals)}")
    if top.shown == rules.filename:
        return _Pick(top)
    return _Pick(top, (f"graded {top.shown} as {rules.filename}",))


def _defines_value(cand: _Cand, rules: _Rules) -> bool:
    return bool(_CLASS_VALUE.search(_read(cand.file, rules.max_bytes + 1, rules.budget)))


def _choose(cands: list[_Cand], rules: _Rules) -> _Pick:
    if not cands:
        return _Pick(None, problem="nothing was submitted (the folder is empty)")
    py = [c for c in cands if c.match.lower().endswith(".py")]
    exact = [c for c in py if c.match == rules.filename]
    if exact:
        return _best(exact, rules)
    similar = [c for c in py if _loose(c.match) == _loose(rules.filename)]
    if similar:
        return _best(similar, rules)
    if len(py) == 1:
        return _Pick(py[0], (f"graded {py[0].shown} as {rules.filename}: it is the only Python file",))
    if py:
        return _by_class_value(py, rules)
    return _Pick(None, problem=_nothing_gradable(cands, rules))


def _by_class_value(py: list[_Cand], rules: _Rules) -> _Pick:
    """Several Python files: the lab's engine is the one defining class Value (a text search, never an import)."""
    engines = [c for c in py if c.file.size <= rules.max_bytes and _defines_value(c, rules)]
    if len(engines) == 1:
        chosen = engines[0]
        return _Pick(chosen, (f"graded {chosen.shown} as {rules.filename}: it is the one defining class Value",))
    return _Pick(
        None, problem=f"several Python files and none is clearly {rules.filename}: {_listing(c.shown for c in py)}"
    )


def _nothing_gradable(cands: list[_Cand], rules: _Rules) -> str:
    found = _listing(c.shown for c in cands)
    if any(c.match.lower().endswith(".ipynb") for c in cands):
        return f"notebooks are not accepted; the lab asks for {rules.filename} (found: {found})"
    return f"no Python file was submitted (found: {found})"


def _load(pick: _Pick, rules: _Rules) -> tuple[bytes | None, str]:
    """The chosen file's bytes, or why they cannot be used."""
    cand = pick.chosen
    if cand is None:
        return None, pick.problem
    limit = f"over the {_size(rules.max_bytes)} limit"
    if cand.file.size > rules.max_bytes:
        return None, f"{cand.shown} is {_size(cand.file.size)}, {limit}"
    try:
        data = _read(cand.file, rules.max_bytes + 1, rules.budget)
    except _OverBudget:
        return None, f"{cand.shown} was not read: the download is larger than {_size(MAX_TOTAL_BYTES)} in total"
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
        return None, f"could not read {cand.shown}: {exc}"
    if len(data) > rules.max_bytes:
        return None, f"{cand.shown} is more than {_size(rules.max_bytes)}, {limit}"
    return data, ""


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


# ---------------------------------------------------------------------------------------------------------------
# Per-kind readers: each produces drafts (a raw id plus candidates); ids are made safe and unique afterwards.


@dataclass(frozen=True)
class _Draft:
    raw_id: str
    name: str | None  # None: the source does not know a display name
    where: str  # origin when no file is chosen
    cands: tuple[_Cand, ...]
    notices: tuple[str, ...] = ()
    problem: str = ""  # known before choosing


def _folder_cands(files: list[_File]) -> tuple[_Cand, ...]:
    return tuple(_Cand(f, "/".join(f.parts), f.parts[-1], depth=len(f.parts) - 1) for f in files)


def _folders(tree: _Tree) -> list[_Draft]:
    loose = [f.parts[0] for f in tree.top_files()]
    if loose:
        tree.warnings.append(f"ignored files outside any student folder: {_listing(loose)}")
    return [_Draft(d, None, tree.where((d,)), _folder_cands(tree.under(d))) for d in sorted(tree.top_dirs())]


def _canvas(tree: _Tree) -> list[_Draft]:
    groups: dict[str, list[tuple[re.Match[str], _File]]] = {}
    for f in tree.top_files():
        m = _canvas_match(f.parts[0])
        if m is None:
            tree.warnings.append(f"ignored {f.origin}: not named like a Canvas submission file")
            continue
        groups.setdefault(m["uid"], []).append((m, f))
    for d in sorted(tree.top_dirs()):
        tree.warnings.append(f"ignored folder {tree.where((d,))}: a Canvas download has no folders")
    return [_canvas_draft(uid, hits, tree) for uid, hits in sorted(groups.items())]


def _canvas_draft(uid: str, hits: list[tuple[re.Match[str], _File]], tree: _Tree) -> _Draft:
    cands = tuple(_canvas_cand(m, f) for m, f in hits)
    names = sorted({m["name"] for m, _ in hits if m.groupdict().get("name")})
    late = ("Canvas marked this submission late",) if any(m["late"] for m, _ in hits) else ()
    return _Draft(uid, names[0] if names else None, f"{tree.label}: Canvas user {uid}", cands, late)


def _canvas_cand(m: re.Match[str], f: _File) -> _Cand:
    original = m["file"]
    stem, dot, ext = original.rpartition(".")
    base, copy = (stem, dot + ext) if dot else (original, "")
    suffix = re.search(r"-(\d+)$", base)
    attempt = int(suffix.group(1)) if suffix else 0
    match = (base[: suffix.start()] if suffix else base) + copy
    return _Cand(f, original, match, rank=(int(m["aid"]), attempt))


def _gradescope(tree: _Tree, rules: _Rules) -> list[_Draft]:
    meta = _gradescope_metadata(tree, rules)
    folders = tree.top_dirs()
    loose = [f.parts[0] for f in tree.top_files()]
    if loose:
        tree.warnings.append(f"ignored files outside any submission folder: {_listing(loose)}")
    drafts = []
    for folder in sorted(folders | set(meta)):
        files = tree.under(folder)
        draft = _gradescope_draft(folder, meta.get(folder), tree.where((folder,)), _folder_cands(files))
        if folder not in folders:
            draft = replace(draft, problem="Gradescope lists this submission but the export holds no files for it")
        elif meta and folder not in meta:
            tree.warnings.append(f"{folder} is not in {_GRADESCOPE_METADATA}; named after its folder")
        drafts.append(draft)
    return drafts


def _gradescope_draft(folder: str, entry: object, where: str, cands: tuple[_Cand, ...]) -> _Draft:
    people = _submitters(entry)
    if not people:
        return _Draft(folder, None, where, cands)
    first = people[0]
    raw_id = first["sid"] or first["email"] or folder
    notices: tuple[str, ...] = ()
    if len(people) > 1:
        names = ", ".join(p["name"] or p["sid"] or p["email"] or "?" for p in people)
        notices = (f"group submission by {names}: graded once and filed under the first submitter",)
    return _Draft(raw_id, first["name"] or None, where, cands, notices)


def _gradescope_metadata(tree: _Tree, rules: _Rules) -> dict[str, object]:
    """submission_<id> -> its metadata entry; {} (with a warning) when missing or unreadable."""
    meta = [f for f in tree.top_files() if f.parts == (_GRADESCOPE_METADATA,)]
    tree.files = [f for f in tree.files if f.parts != (_GRADESCOPE_METADATA,)]
    fallback = "students are named after their Gradescope submission folders"
    if not meta:
        tree.warnings.append(f"no {_GRADESCOPE_METADATA} in the export; {fallback}")
        return {}
    try:
        data = _read(meta[0], MAX_METADATA_BYTES, rules.budget)
        loaded = yaml.load(data, Loader=_RubyTolerantLoader)  # a SafeLoader: builds plain data only
    except (yaml.YAMLError, ValueError, _OverBudget, zipfile.BadZipFile, zlib.error, OSError) as exc:
        tree.warnings.append(f"could not read {_GRADESCOPE_METADATA} ({exc}); {fallback}")
        return {}
    if not isinstance(loaded, dict):
        tree.warnings.append(f"{_GRADESCOPE_METADATA} is not a mapping of submissions; {fallback}")
        return {}
    return {str(k): v for k, v in loaded.items()}


class _RubyTolerantLoader(yaml.SafeLoader):
    """Gradescope writes this YAML from Ruby; tags such as !ruby/object:BigDecimal must not hide the names."""


def _untagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> object:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    return None


_RubyTolerantLoader.add_multi_constructor("!", _untagged)


def _field(entry: object, key: str) -> object:
    """Keys are Ruby symbols (":sid"); accept plain keys too in case the export changes."""
    if not isinstance(entry, dict):
        return None
    return entry.get(f":{key}", entry.get(key))


def _submitters(entry: object) -> list[dict[str, str]]:
    people = _field(entry, "submitters")
    if not isinstance(people, list):
        return []
    out = []
    for person in people:
        values = {k: _field(person, k) for k in ("name", "sid", "email")}
        # Only plain scalars: YAML aliases can make a tiny file stand for a huge structure.
        out.append({k: str(v).strip() if isinstance(v, str | int | float) else "" for k, v in values.items()})
    return out


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


def _finalize(drafts: list[_Draft], rules: _Rules) -> tuple[Found, ...]:
    taken: set[str] = set()
    found = []
    for draft in sorted(drafts, key=lambda d: (_safe_id(d.raw_id).lower(), d.where)):
        found.append(_found(draft, _student_id(draft, taken), rules))
    return tuple(sorted(found, key=lambda f: f.student))


def _student_id(draft: _Draft, taken: set[str]) -> tuple[str, tuple[str, ...]]:
    base = _safe_id(draft.raw_id)
    notes = [] if base == draft.raw_id else [f"id {draft.raw_id!r} was changed to {base!r} to be safe as a folder name"]
    student = _unique(base, taken)
    if student != base:
        notes.append(f"another submission already uses the id {base!r}; this one is filed as {student!r}")
    return student, tuple(notes)


def _found(draft: _Draft, ident: tuple[str, tuple[str, ...]], rules: _Rules) -> Found:
    student, id_notes = ident
    pick = _Pick(None, problem=draft.problem) if draft.problem else _safe_choose(list(draft.cands), rules)
    source, problem = _load(pick, rules)
    origin = pick.chosen.file.origin if pick.chosen else draft.where
    notices = (*draft.notices, *id_notes, *pick.notices, *_not_graded(draft.cands, pick.chosen))
    return Found(student, draft.name or student, source, origin, notices, problem)


def _not_graded(cands: Iterable[_Cand], chosen: _Cand | None) -> tuple[str, ...]:
    """Say what else was there, so a wrong pick is easy to spot."""
    others = [c.shown for c in cands if c is not chosen]
    return (f"also submitted, not graded: {_listing(others)}",) if chosen and others else ()


def _safe_choose(cands: list[_Cand], rules: _Rules) -> _Pick:
    """Choosing may read files (class Value search); a read failure is this student's problem, not the run's."""
    try:
        return _choose(cands, rules)
    except _OverBudget:
        return _Pick(None, problem=f"not read: the download is larger than {_size(MAX_TOTAL_BYTES)} in total")
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
        return _Pick(None, problem=f"could not read the submitted files: {exc}")


# ---------------------------------------------------------------------------------------------------------------


def collect(path: Path, *, filename: str = "autograd_lab.py", max_file_bytes: int = 1024 * 1024) -> Collection:
    """Read a folder or a downloaded zip and pick, for every student, the file to grade."""
    path = Path(path)
    if not path.exists():
        raise CollectError("no such file or folder", where=str(path))
    rules = _Rules(filename, max_file_bytes, _Budget(MAX_TOTAL_BYTES))
    if path.is_dir():
        try:
            tree = _dir_tree(path)
        except OSError as exc:
            raise CollectError(f"cannot read the folder ({exc})", where=str(path)) from exc
        return _build(tree, path.name, rules)
    if not zipfile.is_zipfile(path):
        raise CollectError(
            "neither a folder nor a zip archive; give the folder or the zip you downloaded", where=str(path)
        )
    try:
        with zipfile.ZipFile(path) as zf:
            return _build(_zip_tree(zf, path.name), path.stem, rules)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise CollectError(f"the zip archive is damaged and cannot be read ({exc})", where=str(path)) from exc


def _build(tree: _Tree, stem: str, rules: _Rules) -> Collection:
    tree = _unwrap(tree, stem)
    if _looks_gradescope(tree):
        kind, drafts = "gradescope", _gradescope(tree, rules)
    elif _looks_canvas(tree):
        kind, drafts = "canvas", _canvas(tree)
    else:
        kind, drafts = ("zip" if tree.is_zip else "folders"), _folders(tree)
    submissions = _finalize(drafts, rules)
    return Collection(kind, submissions, tuple(tree.warnings + rules.budget.warnings))
