"""Wheats and chaffs: the grader's own engines that the student's checks are judged on (Step 5).

A test suite is judged the way testing courses judge one: against implementations the author
did not write. Wheats are correct engines of different designs (the reference and every file
in ``reference/wheats/``); honest checks pass on all of them. Chaffs are the reference with one
catalogue bug, or with every method raising; ``grader rubric validate`` proves each is caught by
the grader's own checks (the kill matrix), so every one is a bug that checks of behaviour can
see. The student's file runs with its graded class replaced by each engine; the student's own
engine plays no part.

The texts are fixed per rubric and key: made once per process, never per submission. Every
one is rewritten by harmless edits drawn from the assignment's key, so no list of known code
(the wheats are public) tells a wheat from a chaff; only testing behaviour does.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import hmac
import json
import os
import random
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sandbox.harness import syntax
from sandbox.harness.mutation import equivalents
from sandbox.harness.mutation.mutate import BY_ID, mutate

REFERENCE = Path(__file__).resolve().parents[1] / "reference" / "autograd_lab.py"
WHEATS = REFERENCE.parent / "wheats"
ENGINE = "Value"  # the class name every engine text uses; the sandbox renames it to the student's
REFERENCE_WHEAT = "wheat.reference"
WHEAT_PREFIX = "wheat."
# Harmless edits per engine: enough that no two disguises share their code, few enough to keep
# every engine's text close to its source (each edit is proved exact in ``equivalents``).
DISGUISE_EDITS = 3


@dataclass(frozen=True)
class Engine:
    id: str  # "wheat.<name>" or a catalogue id ("acc_mul", "forced_fail")
    kind: Literal["wheat", "chaff"]
    title: str  # one line, the only thing of an engine a student ever reads
    text: str  # imports and one class named ``Value``


class _Bare(ast.NodeTransformer):
    """Annotations name typing helpers the student's file may not import, and docstrings would
    tell one engine's text from another's: drop them all."""

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        node.body = _without_docstring(node.body)
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.body = _without_docstring(node.body)
        node.returns = None
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg):
            if arg is not None:
                arg.annotation = None
        self.generic_visit(node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt:
        if node.value is None:
            return ast.Pass()
        return ast.Assign([node.target], node.value)


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        body = body[1:]
    return body or [ast.Pass()]


def engine_text(tree: ast.Module, where: str) -> str:
    """The module's ``Value`` class without annotations, after the plain imports it uses."""
    engine = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == ENGINE), None)
    if engine is None:
        raise ValueError(f"{where}: no top-level class {ENGINE}")
    engine = _Bare().visit(engine)
    used = {n.id for n in ast.walk(engine) if isinstance(n, ast.Name)}
    imports = [
        n
        for n in tree.body
        if isinstance(n, ast.Import) and any((a.asname or a.name).split(".")[0] in used for a in n.names)
    ]
    module = ast.Module(body=[*imports, engine], type_ignores=[])
    return ast.unparse(ast.fix_missing_locations(module))


def _title(tree: ast.Module, fallback: str) -> str:
    doc = ast.get_docstring(tree) or ""
    first = doc.strip().split("\n\n")[0].replace("\n", " ").strip()
    return first or fallback


@functools.lru_cache(maxsize=4)
def _wheats(reference: str, stamp: tuple[int, ...]) -> tuple[Engine, ...]:
    del stamp  # part of the cache key only: an edited file is read again
    path = Path(reference)
    found = [Engine(REFERENCE_WHEAT, "wheat", "the grader's reference engine", _read_engine(path))]
    for wheat in sorted(path.parent.joinpath("wheats").glob("*.py")):
        tree = syntax.parse(wheat.read_text(encoding="utf-8"), filename=str(wheat))
        found.append(
            Engine(WHEAT_PREFIX + wheat.stem, "wheat", _title(tree, wheat.stem), engine_text(tree, str(wheat)))
        )
    return tuple(found)


def _read_engine(path: Path) -> str:
    return engine_text(syntax.parse(path.read_text(encoding="utf-8"), filename=str(path)), str(path))


def _stamp(reference: Path) -> tuple[int, ...]:
    files = [reference, *sorted(reference.parent.joinpath("wheats").glob("*.py"))]
    return tuple(f.stat().st_mtime_ns for f in files)


def wheats(reference: Path = REFERENCE) -> tuple[Engine, ...]:
    """The reference first, then every engine in ``reference/wheats/`` by file name."""
    return _wheats(str(reference), _stamp(reference))


@functools.lru_cache(maxsize=4)
def _chaffs(reference: str, ids: tuple[str, ...], stamp: int) -> tuple[Engine, ...]:
    del stamp
    tree = syntax.parse(Path(reference).read_text(encoding="utf-8"), filename=reference)
    found = []
    for op_id in ids:
        mutated, _ = mutate(tree, op_id, ENGINE)  # NotApplicable here is a rubric error: validation says so
        found.append(Engine(op_id, "chaff", BY_ID[op_id].summary, engine_text(mutated, f"{reference} ({op_id})")))
    return tuple(found)


def chaffs(ids: Sequence[str], reference: Path = REFERENCE) -> tuple[Engine, ...]:
    """The reference with each named bug, in the order given."""
    return _chaffs(str(reference), tuple(ids), reference.stat().st_mtime_ns)


def _rng(key: bytes, engine_id: str) -> random.Random:
    return random.Random(hmac.new(key, b"engine\0" + engine_id.encode(), hashlib.sha256).digest())


@functools.lru_cache(maxsize=8)
def _disguised(engines: tuple[Engine, ...], key: bytes) -> tuple[Engine, ...]:
    out = []
    for engine in engines:
        rng = _rng(key, engine.id)
        try:
            text, _ = equivalents.equivalent_text(engine.text, ENGINE, rng, edits=DISGUISE_EDITS)
        except Exception:  # no edit applies (a tiny engine): its own text, which is exact too
            text = engine.text
        out.append(Engine(engine.id, engine.kind, engine.title, _salted(text, rng)))
    return tuple(out)


def _salted(text: str, rng: random.Random) -> str:
    """Every function of the engine starts by binding a fresh local to a drawn number: its
    bytecode then matches no public engine's, in every method of every engine, so comparing a
    method with a known copy tells a wheat from a chaff no better than chance. Exact: a local
    no caller sees (no engine function reads its own locals)."""
    tree = syntax.parse(text, filename="<engine>")
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"_{rng.getrandbits(40):010x}"
            while name in taken:
                name = f"_{rng.getrandbits(40):010x}"
            taken.add(name)
            salt = ast.Assign([ast.Name(name, ast.Store())], ast.Constant(round(rng.random(), 6)))
            node.body.insert(0, salt)
    return ast.unparse(ast.fix_missing_locations(tree))


def disguised(engines: Sequence[Engine], key: bytes) -> tuple[Engine, ...]:
    """Each engine rewritten by harmless edits drawn from ``key`` (the assignment's): the same
    behaviour, bit for bit, in code no one outside the course has seen."""
    return _disguised(tuple(engines), key)


@functools.lru_cache(maxsize=8)
def engine_texts(ids: tuple[str, ...], key: bytes, reference: Path = REFERENCE) -> dict[str, str]:
    """Each named engine's disguised text: wheats by id, chaffs by catalogue id. Made once per
    rubric and key and kept on disk (``cache_dir()``), so a self-check pays for none of it."""
    digest = _inputs_digest(ids, key, reference)
    stored = _read_cache(digest, ids)
    if stored is not None:
        return stored
    known = {w.id: w for w in wheats(reference)}
    chosen = [known[i] for i in ids if i in known]
    chosen += chaffs([i for i in ids if i not in known], reference)
    texts = {e.id: e.text for e in disguised(chosen, key)}
    _write_cache(digest, texts)
    return texts


def cache_dir() -> Path:
    """Where made engines are kept: ``$AUTOGRAD_GRADER_CACHE``, else the user's cache folder."""
    base = os.environ.get("AUTOGRAD_GRADER_CACHE") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "autograd-grader" / "engines"


def _inputs_digest(ids: tuple[str, ...], key: bytes, reference: Path) -> str:
    """Everything an engine's text follows from: the key, the ids, the reference and the wheats,
    and the code that writes bugs and disguises (a change to any of them makes new texts)."""
    sha = hashlib.sha256(key + b"\0" + "\0".join(ids).encode())
    code = Path(equivalents.__file__).parent
    files = [reference, *sorted(reference.parent.joinpath("wheats").glob("*.py")), Path(__file__)]
    files += sorted(code.rglob("*.py"))
    for path in files:
        sha.update(b"\0" + path.read_bytes())
    return sha.hexdigest()


def _read_cache(digest: str, ids: tuple[str, ...]) -> dict[str, str] | None:
    try:
        data = json.loads((cache_dir() / f"{digest}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or set(data) != set(ids) or not all(isinstance(v, str) for v in data.values()):
        return None  # another shape than this module writes: made again
    return {str(k): str(v) for k, v in data.items()}


def _write_cache(digest: str, texts: dict[str, str]) -> None:
    """Atomically, readable by this user only; a cache that cannot be written is no error."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, name = tempfile.mkstemp(dir=folder, prefix=".engines-")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(texts, out)
        os.replace(name, folder / f"{digest}.json")
    except OSError:
        return
