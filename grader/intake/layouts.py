"""Detecting which layout a download has and reading it into per-student drafts (a raw id, a display name when the
source knows one, and the candidate files): a Gradescope "Export Submissions" (submission_<id> folders named by
submission_metadata.yml), a Canvas "Download Submissions" (flat files carrying the Canvas name prefix), or a plain
folder or zip of per-student folders. One wrapping folder is unwrapped first; ids are made safe and unique later.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from dataclasses import dataclass, replace

import yaml

from .choose import Cand, Rules, listing
from .tree import File, OverBudget, Tree, read

MAX_METADATA_BYTES = 16 * 1024 * 1024  # submission_metadata.yml for a very large course stays far below this

_GRADESCOPE_METADATA = "submission_metadata.yml"
_GRADESCOPE_FOLDER = re.compile(r"^submission_\d+$")
# Canvas names a file <sortable name>[_LATE]_<user id>_<attachment id>_<original name>; the name is the
# lowercased "Last, First" with non-word characters removed, and older Canvas versions wrote "late" in lowercase.
_CANVAS_NAMED = re.compile(r"^(?P<name>\w*?)(?:_(?P<late>late))?_(?P<uid>\d+)_(?P<aid>\d+)_(?P<file>.+)$", re.I)
# With anonymous grading the name is dropped and the id becomes anon_<anonymous id>.
_CANVAS_ANON = re.compile(r"^(?:(?P<late>late)_)?(?P<uid>anon_[A-Za-z0-9]+?)_(?P<aid>\d+)_(?P<file>.+)$", re.I)


# ---------------------------------------------------------------------------------------------------------------
# Detection


def _canvas_match(name: str) -> re.Match[str] | None:
    return _CANVAS_ANON.match(name) or _CANVAS_NAMED.match(name)


def looks_canvas(tree: Tree) -> bool:
    """Canvas downloads are flat: most top-level files carry the Canvas prefix and folders are rare."""
    hits = sum(1 for f in tree.top_files() if _canvas_match(f.parts[0]))
    return hits > 0 and 2 * hits > len(tree.top_files()) and hits >= len(tree.top_dirs())


def looks_gradescope(tree: Tree) -> bool:
    if any(f.parts == (_GRADESCOPE_METADATA,) for f in tree.files):
        return True
    dirs = tree.top_dirs()
    return bool(dirs) and all(_GRADESCOPE_FOLDER.match(d) for d in dirs)


def unwrap(tree: Tree, stem: str) -> Tree:
    """Drop one wrapping folder (assignment_123_export/, or a folder zipped as a whole).

    A lone folder holding lone files is one student, so only unwrap when the inside looks like a class.
    """
    dirs = tree.top_dirs()
    if tree.top_files() or len(dirs) != 1:
        return tree
    top = next(iter(dirs))
    inner_dirs = {d[1:] for d in tree.dirs if len(d) > 1 and d[0] == top}
    inner = Tree(tree.under(top), inner_dirs, tree.warnings, tree.label, tree.is_zip, (*tree.prefix, top))
    if looks_gradescope(inner) or looks_canvas(inner):
        return inner
    if any(f.parts[0].lower().endswith(".py") for f in inner.top_files()) or not inner.top_dirs():
        return tree  # the lab file sits right there: this folder is the student
    # A folder given on the command line is taken as is, so a lone student with subfolders is not split up.
    several = tree.is_zip and len(inner.top_dirs()) >= 2
    return inner if several or top.lower() == stem.lower() else tree


# ---------------------------------------------------------------------------------------------------------------
# Per-kind readers: each produces drafts (a raw id plus candidates); ids are made safe and unique afterwards.


@dataclass(frozen=True)
class Draft:
    raw_id: str
    name: str | None  # None: the source does not know a display name
    where: str  # origin when no file is chosen
    cands: tuple[Cand, ...]
    notices: tuple[str, ...] = ()
    problem: str = ""  # known before choosing


def _folder_cands(files: list[File]) -> tuple[Cand, ...]:
    return tuple(Cand(f, "/".join(f.parts), f.parts[-1], depth=len(f.parts) - 1) for f in files)


def folders(tree: Tree) -> list[Draft]:
    loose = [f.parts[0] for f in tree.top_files()]
    if loose:
        tree.warnings.append(f"ignored files outside any student folder: {listing(loose)}")
    return [Draft(d, None, tree.where((d,)), _folder_cands(tree.under(d))) for d in sorted(tree.top_dirs())]


def canvas(tree: Tree) -> list[Draft]:
    groups: dict[str, list[tuple[re.Match[str], File]]] = {}
    for f in tree.top_files():
        m = _canvas_match(f.parts[0])
        if m is None:
            tree.warnings.append(f"ignored {f.origin}: not named like a Canvas submission file")
            continue
        groups.setdefault(m["uid"], []).append((m, f))
    for d in sorted(tree.top_dirs()):
        tree.warnings.append(f"ignored folder {tree.where((d,))}: a Canvas download has no folders")
    return [_canvas_draft(uid, hits, tree) for uid, hits in sorted(groups.items())]


def _canvas_draft(uid: str, hits: list[tuple[re.Match[str], File]], tree: Tree) -> Draft:
    cands = tuple(_canvas_cand(m, f) for m, f in hits)
    names = sorted({m["name"] for m, _ in hits if m.groupdict().get("name")})
    late = ("Canvas marked this submission late",) if any(m["late"] for m, _ in hits) else ()
    return Draft(uid, names[0] if names else None, f"{tree.label}: Canvas user {uid}", cands, late)


def _canvas_cand(m: re.Match[str], f: File) -> Cand:
    original = m["file"]
    stem, dot, ext = original.rpartition(".")
    base, copy = (stem, dot + ext) if dot else (original, "")
    suffix = re.search(r"-(\d+)$", base)
    attempt = int(suffix.group(1)) if suffix else 0
    match = (base[: suffix.start()] if suffix else base) + copy
    return Cand(f, original, match, rank=(int(m["aid"]), attempt))


def gradescope(tree: Tree, rules: Rules) -> list[Draft]:
    meta = _gradescope_metadata(tree, rules)
    folders = tree.top_dirs()
    loose = [f.parts[0] for f in tree.top_files()]
    if loose:
        tree.warnings.append(f"ignored files outside any submission folder: {listing(loose)}")
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


def _gradescope_draft(folder: str, entry: object, where: str, cands: tuple[Cand, ...]) -> Draft:
    people = _submitters(entry)
    if not people:
        return Draft(folder, None, where, cands)
    first = people[0]
    raw_id = first["sid"] or first["email"] or folder
    notices: tuple[str, ...] = ()
    if len(people) > 1:
        names = ", ".join(p["name"] or p["sid"] or p["email"] or "?" for p in people)
        notices = (f"group submission by {names}: graded once and filed under the first submitter",)
    return Draft(raw_id, first["name"] or None, where, cands, notices)


def _gradescope_metadata(tree: Tree, rules: Rules) -> dict[str, object]:
    """submission_<id> -> its metadata entry; {} (with a warning) when missing or unreadable."""
    meta = [f for f in tree.top_files() if f.parts == (_GRADESCOPE_METADATA,)]
    tree.files = [f for f in tree.files if f.parts != (_GRADESCOPE_METADATA,)]
    fallback = "students are named after their Gradescope submission folders"
    if not meta:
        tree.warnings.append(f"no {_GRADESCOPE_METADATA} in the export; {fallback}")
        return {}
    try:
        data = read(meta[0], MAX_METADATA_BYTES, rules.budget)
        loaded = yaml.load(data, Loader=_RubyTolerantLoader)  # a SafeLoader: builds plain data only
    except (yaml.YAMLError, ValueError, OverBudget, zipfile.BadZipFile, zlib.error, OSError) as exc:
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
