"""The `equivalent` guard's copies (sandbox.harness.mutation.equivalents), tested by behaviour.

For the reference, every tests/cases engine and every submission, 20 seeds each: the copy
parses, grades the same class, passes or fails the file's own checks exactly as the original
does (``python autograd_lab.py`` in a subprocess, from a temporary folder), and computes
bit-identical values, gradients, ``_prev`` sets and ``_op`` labels on a fixed set of graphs.
Student code only ever runs in subprocesses here. Each kind of edit is also tested alone.
"""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from sandbox.harness.mutation import equivalents, mutate
from sandbox.harness.mutation.equivalents import equivalent_text
from sandbox.harness.probes import loader

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "reference" / "autograd_lab.py"
SEEDS = range(20)
# Every other engine gets fewer copies: each copy of each engine runs its file's checks in a
# subprocess, and the reference's twenty already cover every kind of edit.
OTHER_SEEDS = range(4)


def _parses(path: Path) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(path.read_text(encoding="utf-8"))
    except SyntaxError:
        return False
    return True


_ALL = [
    REFERENCE,
    *sorted(REPO.glob("tests/cases/*/autograd_lab.py")),
    *sorted(REPO.glob("submissions/*/autograd_lab.py")),
]
ENGINES = [p for p in _ALL if _parses(p)]
BROKEN = [p for p in _ALL if not _parses(p)]


def _id(path: Path) -> str:
    return str(path.parent.relative_to(REPO))


@cache
def copies(path: Path) -> tuple[tuple[str, tuple[str, ...]], ...]:
    source = path.read_text(encoding="utf-8")
    found = []
    for seed in SEEDS if path == REFERENCE else OTHER_SEEDS:
        text, done = equivalent_text(source, "Value", random.Random(seed))
        found.append((text, tuple(done)))
    return tuple(found)


def _parse(text: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text)


# --- running engines in subprocesses --------------------------------------------------------------

# Loads each file definitions-only (as the grader does when top-level code misbehaves), finds
# the graded class and runs fixed graphs on it; prints one JSON record list per file. Floats
# are compared by their IEEE 754 bits.
DRIVER = r"""
import ast, gc, json, signal, struct, sys, warnings
repo, class_name, *paths = sys.argv[1:]
sys.path.insert(0, repo)
from sandbox.harness.mutation import mutate
from sandbox.harness.probes import loader

def bits(v):
    try:
        return struct.pack("<d", float(v)).hex()
    except Exception:
        return "?" + type(v).__name__

def load(path):
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(source)
    kept, _ = loader.definitions_only(tree)
    namespace = {"__name__": "autograd_lab", "__file__": path}
    for node in kept.body:
        try:
            exec(compile(ast.Module(body=[node], type_ignores=[]), path, "exec"), namespace)
        except Exception:
            pass
    return namespace[mutate.graded_class(tree, class_name).name]

def part1(V):
    a, b, c, d = V(2.0), V(-3.0), V(10.0), V(-1.5)
    e = a * b; f = e + c; L = f * d
    return L, dict(a=a, b=b, c=c, d=d, e=e, f=f, L=L)

def reuse(V):
    x = V(3.0); y = x * x + x
    return y, dict(x=x, y=y)

def doubled(V):
    a = V(2.0); s = a + a; c = s * a
    return c, dict(a=a, s=s, c=c)

def neuron(V):
    x1, x2, w1, w2, b = V(1.0), V(2.0), V(0.5), V(0.3), V(0.1)
    z = w1 * x1 + w2 * x2 + b; act = z.relu(); loss = (act - 1.0) ** 2 * 0.5
    return loss, dict(x1=x1, x2=x2, w1=w1, w2=w2, b=b, z=z, act=act, loss=loss)

def unary(V):
    x = V(0.7); t = x.tanh(); e = x.exp(); g = (x + 2.0).log(); p = x ** 3
    y = (t + e + g) * p * 1.7
    return y, dict(x=x, t=t, e=e, g=g, p=p, y=y)

def derived(V):
    a, b = V(1.3), V(-0.4)
    n = -a; s = a - b; q = a / b; r1 = 2.0 + a; r2 = 3.0 - b; r3 = 2.0 * b; r4 = 1.5 / a
    y = n + s + q + r1 + r2 + r3 + r4
    return y, dict(a=a, b=b, n=n, s=s, q=q, r1=r1, r2=r2, r3=r3, r4=r4, y=y)

def gates(V):
    z, w = V(0.0), V(-0.6)
    y = z.relu() + w.relu() * V(2.0)
    return y, dict(z=z, w=w, y=y)

def diamond(V):
    a, b = V(2.0), V(3.0); t = a * b; L = t * t + t
    return L, dict(a=a, b=b, t=t, L=L)

def deterministic(V):
    # Nodes hash by id (their address) by default, so the order a set of parents is walked in,
    # and with it the order gradients are summed in, varies from run to run. Numbering nodes
    # in the order they are first hashed makes every run (of any copy) walk them alike.
    serial = {}
    if V.__hash__ is object.__hash__:
        V.__hash__ = lambda self: serial.setdefault(id(self), len(serial))
    return serial

class Stuck(Exception):
    pass

def stuck(*_):
    raise Stuck()

signal.signal(signal.SIGALRM, stuck)

def observe(make, serial, program, limit):
    serial.clear()
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        root, nodes = program(make)
        root.backward()
    except Exception as error:
        return ["raised", type(error).__name__]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    names = {id(v): k for k, v in nodes.items()}
    out = []
    for name, node in nodes.items():
        prev = getattr(node, "_prev", ())
        try:
            members = sorted(names.get(id(p), "?") for p in prev)
        except TypeError:
            members = ["?unreadable"]
        out.append([name, bits(node.data), bits(node.grad), repr(getattr(node, "_op", None)), members])
    return out

# A graph that never finishes on the original (an endless backward) must not finish on a copy
# either; after the original, it gets a short limit.
PROGRAMS = (part1, reuse, doubled, neuron, unary, derived, gates, diamond)
limits = [2.0] * len(PROGRAMS)
results = []
for path in paths:
    V = load(path)
    make, _ = loader.constructor(V)
    serial = deterministic(V)
    results.append([observe(make, serial, p, limit) for p, limit in zip(PROGRAMS, limits)])
    limits = [0.1 if r == ["raised", "Stuck"] else 2.0 for r in results[0]]
    del V, make
    gc.collect()
print(json.dumps(results))
"""


def observe(paths: list[Path]) -> list[Any]:
    done = subprocess.run(
        [sys.executable, "-I", "-c", DRIVER, str(REPO), "Value", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return list(json.loads(done.stdout))


def exit_status(text: str, timeout: float) -> int | str:
    """``python autograd_lab.py`` on ``text``, from a fresh temporary folder."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "autograd_lab.py").write_text(text, encoding="utf-8")
        try:
            done = subprocess.run(
                [sys.executable, "-I", "autograd_lab.py"],
                cwd=folder,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return "timeout"
        return done.returncode


# --- every engine, 20 seeds -------------------------------------------------------------------------


def test_seeds_give_different_texts_on_the_reference() -> None:
    source = REFERENCE.read_text(encoding="utf-8")
    texts = [text for text, _ in copies(REFERENCE)]
    assert len(set(texts)) == len(texts) == 20
    assert source not in texts
    assert all(len(done) == 3 for _, done in copies(REFERENCE))


def test_same_seed_same_copy() -> None:
    source = REFERENCE.read_text(encoding="utf-8")
    assert equivalent_text(source, "Value", random.Random(7)) == equivalent_text(source, "Value", random.Random(7))


def test_every_kind_of_edit_is_drawn_on_the_reference() -> None:
    described = " | ".join(d for _, done in copies(REFERENCE) for d in done)
    for words in ("no-op", "swapped the operands", "grad write", "parentheses", "renamed", "comment `", "blanked"):
        assert words in described, words


def test_every_copy_starts_with_a_statement_rewritten_as_a_mutant_would_be() -> None:
    for _, done in copies(REFERENCE):
        assert done[0].startswith(("swapped the operands", "grad write", "local `")), done


@pytest.mark.parametrize("path", ENGINES, ids=_id)
def test_copies_parse_and_grade_the_same_class(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    graded = mutate.graded_class(_parse(source), "Value").name
    for text, done in copies(path):
        assert text != source
        assert 1 <= len(done) <= 3 and all(d.strip() for d in done)
        assert mutate.graded_class(_parse(text), "Value").name == graded
        # As in a mutant, no line moves: a check cannot tell them apart by line numbers.
        assert len(text.splitlines()) == len(source.splitlines()), done


@pytest.mark.slow  # every engine of the corpus, run twice
@pytest.mark.parametrize("path", ENGINES, ids=_id)
def test_copies_compute_bit_identical_graphs(path: Path, tmp_path: Path) -> None:
    files = [path, path]
    for seed, (text, _) in enumerate(copies(path)):
        files.append(tmp_path / f"copy{seed}.py")
        files[-1].write_text(text, encoding="utf-8")
    original, again, *observed = observe(files)
    assert again == original, "the original itself computes different bits on a second run"
    if path.parent.name != "henry_adams":  # its backward() never ends
        assert any(record[0] != "raised" for record in original), "no graph ran on the original"
    for seed, seen in enumerate(observed):
        assert seen == original, (seed, copies(path)[seed][1])


@pytest.mark.slow  # every engine of the corpus, run twice
@pytest.mark.parametrize("path", ENGINES, ids=_id)
def test_copies_pass_or_fail_the_files_own_checks_alike(path: Path) -> None:
    original = exit_status(path.read_text(encoding="utf-8"), timeout=20)
    # An original that never finishes (an endless loop in its checks) must not finish either.
    limit = 2 if original == "timeout" else 60
    with ThreadPoolExecutor(max_workers=2) as pool:
        statuses = list(pool.map(lambda c: exit_status(c[0], limit), copies(path)))
    for seed, status in enumerate(statuses):
        assert status == original, (seed, copies(path)[seed][1])


@pytest.mark.parametrize("path", BROKEN, ids=_id)
def test_a_file_that_does_not_parse_is_a_load_error(path: Path) -> None:
    with pytest.raises(loader.LoadError):
        equivalent_text(path.read_text(encoding="utf-8"), "Value", random.Random(0))


# --- each kind of edit alone ------------------------------------------------------------------------

SMALL = '''
import math


class Value:
    """A node."""

    def __init__(self, data, children=(), op=""):
        self.data = data
        self.grad = 0.0
        self._prev = set(children)
        self._op = op
        self._backward = lambda: None

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")  # the sum

        def _backward():
            self.grad += out.grad
            other.grad = other.grad + out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        """Product."""
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def backward(self):
        topo, seen = [], set()

        def build(v):
            if v not in seen:
                seen.add(v)
                for child in v._prev:
                    build(child)
                topo.append(v)

        build(self)
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()
'''


def _file(source: str = SMALL) -> equivalents._File:
    return equivalents._File(source, "Value")


def _changed_binops(before: str, after: str) -> list[tuple[ast.BinOp, ast.BinOp]]:
    pairs = zip(ast.walk(_parse(before)), ast.walk(_parse(after)), strict=True)
    return [
        (a, b) for a, b in pairs if isinstance(a, ast.BinOp) and isinstance(b, ast.BinOp) and ast.dump(a) != ast.dump(b)
    ]


def test_harmless_statements_go_after_docstrings_and_bind_only_fresh_names() -> None:
    for seed in range(40):
        result = equivalents.harmless_statements(_file(), random.Random(seed))
        assert result is not None
        text, _ = result
        tree = _parse(text)
        cls = mutate.graded_class(tree, "Value")
        methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
        assert ast.get_docstring(methods["__mul__"]) == "Product."
        assert ast.get_docstring(cls) == "A node."
        added = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - {
            n.id for n in ast.walk(_parse(SMALL)) if isinstance(n, ast.Name)
        }
        assert all(name.startswith("_") for name in added), added


def test_swapped_operands_are_plain_numbers_never_values() -> None:
    seen = set()
    for seed in range(40):
        result = equivalents.swap_operands(_file(), random.Random(seed))
        assert result is not None
        changed = _changed_binops(SMALL, result[0])
        outer = changed[0]
        assert ast.dump(outer[0].left) == ast.dump(outer[1].right)
        assert ast.dump(outer[0].right) == ast.dump(outer[1].left)
        for side in (outer[0].left, outer[0].right):
            assert equivalents._plain_number(side), ast.dump(side)
        seen.add(ast.unparse(outer[0]))
    assert "self.data + other.data" in seen and "other.data * out.grad" in seen
    assert not any("self * " in s or "self + " in s for s in seen)


def test_swap_is_off_when_data_is_a_property() -> None:
    source = SMALL.replace(
        "    def backward(self):", "    @property\n    def data(self):\n        return 1\n\n    def backward(self):"
    )
    assert equivalents.swap_operands(_file(source), random.Random(0)) is None


def test_grad_writes_are_rewritten_both_ways() -> None:
    texts = set()
    for seed in range(30):
        result = equivalents.grad_write_form(_file(), random.Random(seed))
        assert result is not None
        texts.add(result[0])
    assert any("self.grad = self.grad + out.grad" in t for t in texts)
    assert any("other.grad += out.grad" in t and "other.grad = other.grad" not in t for t in texts)
    assert any("other.grad = other.grad + self.data * out.grad" in t for t in texts)


def test_grad_writes_stay_when_grad_may_be_mutable() -> None:
    source = SMALL.replace("self.grad = 0.0", "self.grad = zeros_like(data)")
    assert equivalents.grad_write_form(_file(source), random.Random(0)) is None


def test_parentheses_and_blank_lines_leave_the_tree_alone() -> None:
    for seed in range(20):
        for edit in (equivalents.parenthesize, equivalents.blank_or_comment):
            result = edit(_file(), random.Random(seed))
            assert result is not None
            assert result[0] != SMALL
            assert ast.dump(_parse(result[0])) == ast.dump(_parse(SMALL))
            before, after = SMALL.splitlines(), result[0].splitlines()
            assert len(after) == len(before)
            assert sum(a != b for a, b in zip(before, after, strict=True)) == 1


def test_renames_are_consistent_and_only_of_plain_locals() -> None:
    renamed = set()
    for seed in range(60):
        result = equivalents.rename_local(_file(), random.Random(seed))
        assert result is not None
        text, done = result
        old = done.split("`")[1]
        renamed.add(old)
        before = [n.id for n in ast.walk(_parse(SMALL)) if isinstance(n, ast.Name)]
        after = [n.id for n in ast.walk(_parse(text)) if isinstance(n, ast.Name)]
        new = {b for a, b in zip(before, after, strict=True) if a != b}
        assert len(new) == 1 and not new & set(before)
    # Locals, some read inside closures; never a parameter (`other`, `v`), never a def's name.
    assert renamed == {"out", "topo", "seen", "child"}


def test_names_that_are_not_plain_locals_are_never_renamed() -> None:
    source = """
class Value:
    def __init__(self, data):
        self.data = data
        self.grad = 0.0

    def __add__(self, other):
        return self

    def __mul__(self, other):
        return self

    def backward(self):
        count = 0
        label = "x"
        table = {}

        def bump():
            nonlocal count
            count += 1

        print(f"{label=}")
        return [table for table in range(2)] + [count for count in range(3)]

    def relu(self):
        snapshot = 1
        return locals()
"""
    for seed in range(20):
        assert equivalents.rename_local(_file(source), random.Random(seed)) is None


def test_no_edit_applies_without_an_engine_class() -> None:
    with pytest.raises(mutate.NotApplicable, match="no class Value"):
        equivalent_text("x = 1\n", "Value", random.Random(0))


def test_a_rebound_engine_name_is_not_applicable() -> None:
    source = REFERENCE.read_text(encoding="utf-8") + "\nValue = None\n"
    with pytest.raises(mutate.NotApplicable, match="bound last by an assignment"):
        equivalent_text(source, "Value", random.Random(0))


def test_copies_of_a_tab_indented_crlf_engine_with_one_line_bodies(tmp_path: Path) -> None:
    source = (
        SMALL.replace("    ", "\t")
        .replace("\tdef backward(self):", "\tdef zero(self): return Value(0.0)  # one line\n\n\tdef backward(self):")
        .replace("\n", "\r\n")
    )
    files = [tmp_path / "original.py"]
    files[0].write_bytes(source.encode())
    for seed in SEEDS:
        text, _ = equivalent_text(source, "Value", random.Random(seed))
        assert text.count("\r\n") == text.count("\n") and "\t" in text and "    " not in text.replace("\t", "")
        files.append(tmp_path / f"copy{seed}.py")
        files[-1].write_bytes(text.encode())
    original, *observed = observe(files)
    assert all(seen == original for seen in observed)


def test_no_op_statements_need_a_blank_line_inside_a_function() -> None:
    compact = "\n".join(line for line in SMALL.splitlines() if line.strip())
    assert equivalents.harmless_statements(_file(compact), random.Random(0)) is None
    result = equivalents.harmless_statements(_file(), random.Random(0))
    assert result is not None and len(result[0].splitlines()) == len(SMALL.splitlines())
