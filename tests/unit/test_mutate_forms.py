"""The catalogue on engines that put their backward rules elsewhere than in closures.

``tests/unit/engines_forms/`` holds correct engines written in the forms real engines use:
module-level backward functions (installed through a lambda, ``functools.partial`` or shared by
several operations), lambdas everywhere (class-level lambda methods, backward lambdas calling
helper methods), ``operator.*`` with tables of local derivatives, and ``_binary``/``_unary``
helpers taking the derivatives as lambdas or numbers. Every catalogue bug applies to each of
them, and each mutant, spliced into the text and run, has the bug: it computes what the
reference computes with the same bug. The similarity class (ten engines in ten styles: tapes,
edge lists, subclasses per operation, dispatch tables, factories...) is held to the part that
matters most: a bug put into code several operations share changes that operation only.
"""

from __future__ import annotations

import ast
import math
import sys
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grader.mutate import CATALOGUE, STEP5, NotApplicable, graded_class, mutate_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_mutate import REFERENCE_SOURCE, battery, differs, first_difference  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FORMS = sorted((REPO / "tests" / "unit" / "engines_forms").glob("*.py"))
SIMILARITY = sorted(REPO.glob("tests/similarity_class*/*/autograd_lab.py"))
CATALOGUE_IDS = [op.id for op in CATALOGUE]
FAMILY = {op.id: op.family for op in CATALOGUE}
BACKWARD_BUGS = [op.id for op in CATALOGUE if op.family in ("ACC", "CHAIN", "LOC")]

# Entries of ``battery``: the graphs built from the seven operations with a backward rule come
# first (0-47); each derived operation has its own graph after them.
CORE = range(0, 48)
DERIVED = {
    "fwd_neg": range(48, 51),
    "fwd_sub": range(51, 56),
    "fwd_div": range(56, 61),
    "fwd_radd": range(61, 64),
    "fwd_rsub": range(64, 67),
    "fwd_rmul": range(67, 70),
    "fwd_rdiv": range(70, 73),
}


def engine_of(source: str, label: str = "engine_under_test") -> Any:
    """The engine class of ``source``, run as a module of its own (never as __main__)."""
    module = types.ModuleType(label)
    sys.modules[label] = module  # dataclasses look their module up
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(source, label, "exec"), module.__dict__)
    finally:
        del sys.modules[label]
    return module.__dict__[graded_class(ast.parse(source), "Value").name]


def _name(path: Path) -> str:
    return str(path.relative_to(REPO).parent.name if path.name == "autograd_lab.py" else path.stem)


_REFERENCE_MUTANTS: dict[str, tuple[float, ...]] = {}


def reference_mutant(op_id: str) -> tuple[float, ...]:
    if op_id not in _REFERENCE_MUTANTS:
        _REFERENCE_MUTANTS[op_id] = battery(engine_of(mutate_text(REFERENCE_SOURCE, op_id, "Value")[0]))
    return _REFERENCE_MUTANTS[op_id]


def _at(values: tuple[float, ...], entries: range) -> list[float]:
    return [values[i] for i in entries if i < len(values)]


@pytest.mark.parametrize("path", FORMS, ids=_name)
def test_each_form_is_a_correct_engine(path: Path) -> None:
    expected = battery(engine_of(REFERENCE_SOURCE))
    observed = battery(engine_of(path.read_text(encoding="utf-8")))
    assert not differs(observed, expected), first_difference(observed, expected)


@pytest.mark.parametrize("op_id", CATALOGUE_IDS)
@pytest.mark.parametrize("path", FORMS, ids=_name)
def test_every_bug_applies_to_each_form_and_has_the_bug(path: Path, op_id: str) -> None:
    """The spliced mutant computes what the reference computes with the same bug (on the graphs
    that bug is about: derived operations are composed differently from one engine to another,
    and how a topological sort breaks depends on the sort)."""
    source = path.read_text(encoding="utf-8")
    text, lines = mutate_text(source, op_id, "Value")
    assert lines and len(text.splitlines()) == len(source.splitlines())
    original, mutated = battery(engine_of(source)), battery(engine_of(text))
    assert differs(mutated, original), f"{op_id} changed nothing"
    if FAMILY[op_id] in ("TOPO", "SEED"):
        return
    entries = DERIVED.get(op_id, CORE)
    expected = reference_mutant(op_id)
    assert len(mutated) == len(expected)
    got, want = _at(mutated, entries), _at(expected, entries)
    assert all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) for a, b in zip(got, want, strict=True)), (got, want)


@pytest.mark.parametrize("path", [*FORMS, *SIMILARITY], ids=_name)
def test_step5_gives_the_handout_numbers(path: Path) -> None:
    """``+=`` becomes ``=`` in __mul__'s backward, wherever it is: x.grad is 3.0, not 7.0, for
    y = x*x + x at x = 3; (a + a) * a at a = 2 still gives 8.0."""
    value = engine_of(mutate_text(path.read_text(encoding="utf-8"), STEP5, "Value")[0])
    x = value(3.0)
    (x * x + x).backward()
    a = value(2.0)
    ((a + a) * a).backward()
    assert (x.grad, a.grad) == pytest.approx((3.0, 8.0))


# Graphs that each use one operation only: (operation, build(engine) -> (root, leaves)).
Build = Callable[[Any], tuple[Any, list[Any]]]


def _two(op: Callable[[Any, Any], Any], a0: float, b0: float) -> Build:
    def build(engine: Any) -> tuple[Any, list[Any]]:
        a, b = engine(a0), engine(b0)
        return op(a, b), [a, b]

    return build


def _one(op: Callable[[Any], Any], x0: float) -> Build:
    def build(engine: Any) -> tuple[Any, list[Any]]:
        x = engine(x0)
        return op(x), [x]

    return build


ISOLATED: list[tuple[str, Build]] = [
    ("__add__", _two(lambda a, b: a + b, 2.0, 3.0)),
    ("__add__", _one(lambda x: x + x, 1.5)),
    ("__mul__", _two(lambda a, b: a * b, 2.0, 3.0)),
    ("__mul__", _one(lambda x: x * x, 1.5)),
    ("__pow__", _one(lambda x: x**3, 1.3)),
    ("relu", _one(lambda x: x.relu(), 0.7)),
    ("relu", _one(lambda x: x.relu(), -0.6)),
    ("tanh", _one(lambda x: x.tanh(), 0.4)),
    ("exp", _one(lambda x: x.exp(), 0.3)),
    ("log", _one(lambda x: x.log(), 1.8)),
]
OPERATION = {
    "add": "__add__",
    "mul": "__mul__",
    "pow": "__pow__",
    "relu": "relu",
    "tanh": "tanh",
    "exp": "exp",
    "log": "log",
}


def _operation(op_id: str) -> str:
    return next(method for word, method in OPERATION.items() if f"_{word}" in op_id)


def _run(engine: Any, build: Build) -> tuple[float, ...]:
    root, leaves = build(engine)
    root.backward()
    return (float(root.data), *(float(v.grad) for v in leaves))


@pytest.mark.parametrize("op_id", BACKWARD_BUGS)
@pytest.mark.parametrize("path", [*FORMS, *SIMILARITY], ids=_name)
def test_a_bug_in_shared_code_reaches_its_own_operation_only(path: Path, op_id: str) -> None:
    source = path.read_text(encoding="utf-8")
    try:
        text, _ = mutate_text(source, op_id, "Value")
    except NotApplicable:
        assert path not in FORMS
        pytest.skip("not applicable")
    original, mutated = engine_of(source), engine_of(text)
    target = _operation(op_id)
    for operation, build in ISOLATED:
        if operation != target:
            assert _run(mutated, build) == pytest.approx(_run(original, build)), (operation, op_id)


def test_the_forms_are_those_the_catalogue_is_asked_to_reach() -> None:
    """The fixtures keep the forms they are here for (a check on the fixtures themselves)."""
    texts = {path.stem: path.read_text(encoding="utf-8") for path in FORMS}
    assert "partial(_mul_backward, self, other, out)" in texts["module_functions"]
    assert "lambda: _add_backward(self, other, out)" in texts["module_functions"]
    assert "lambda: _chain(self, out, 1 - t**2)" in texts["module_functions"]
    assert "lambda: self._mul_back(other, out)" in texts["lambda_methods"]
    assert "__rmul__ = lambda self, other: self * other" in texts["lambda_methods"]
    assert "operator.add(self, operator.neg(other))" in texts["operator_table"]
    assert '"*": (lambda a, b: b, lambda a, b: a)' in texts["operator_table"]
    assert "Value._acc(self, d_self(a, b) * out.grad)" in texts["helper_methods"]
    assert 'self._unary("exp", e, e)' in texts["helper_methods"]


def test_a_shared_write_is_guarded_by_the_operations_tag() -> None:
    """In code all operations share, ``+=`` becomes ``=`` for the operation's own nodes only."""
    source = (REPO / "tests" / "unit" / "engines_forms" / "module_functions.py").read_text(encoding="utf-8")
    text, lines = mutate_text(source, "acc_tanh", "Value")
    changed = [b for a, b in zip(source.splitlines(), text.splitlines(), strict=True) if a != b]
    assert changed == ["    x.grad = local * out.grad if out._op == 'tanh' else x.grad + local * out.grad"]
    assert lines == [source.splitlines().index("    x.grad += local * out.grad") + 1]


def test_an_operation_without_a_tag_of_its_own_is_not_guarded() -> None:
    """When the nodes of two operations carry the same tag, a bug in their shared code cannot be
    told apart: not applicable, never a bug put into both."""
    source = (REPO / "tests" / "unit" / "engines_forms" / "module_functions.py").read_text(encoding="utf-8")
    source = source.replace('out = Value(t, (self,), "tanh")', 'out = Value(t, (self,), "exp")')
    with pytest.raises(NotApplicable, match="carry no tag of their own"):
        mutate_text(source, "acc_tanh", "Value")
    # Its own local derivative is still its own.
    text, _ = mutate_text(source, "loc_tanh_linear", "Value")
    assert "_chain(self, out, 1 - t)" in text
