"""The mutation catalogue (sandbox.harness.mutation.mutate, seen through grader.mutate), tested by behaviour.

Every operator is applied to the reference solution and to several alternative engine layouts
(handout style, explicit ``x.grad = x.grad + v``, backward rules in helper methods, a class not
named ``Value``). The mutated module is compiled and executed, never under ``__main__``, and a
battery of small graphs shows that it computes something different from the unmutated engine.
"""

from __future__ import annotations

import ast
import copy
import difflib
import math
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grader.mutate import (
    BY_ID,
    CATALOGUE,
    EQUIVALENT,
    FAMILIES,
    FORCED_FAIL,
    GUARDS,
    INFO,
    STEP5,
    NotApplicable,
    graded_class,
    mutate,
    mutate_source,
    mutate_text,
)
from sandbox.harness.mutation import splice

REPO = Path(__file__).resolve().parents[2]
REFERENCE_SOURCE = (REPO / "reference" / "autograd_lab.py").read_text(encoding="utf-8")
CATALOGUE_IDS = [op.id for op in CATALOGUE]
SIX_FAMILIES = {"ACC", "CHAIN", "LOC", "TOPO", "SEED", "FWD"}

# --- alternative engines -----------------------------------------------------------------------

# a. The handout's layout: every closure is `_backward`, upstream first, `__pow__(self, power)`,
#    relu via max(), recursive build_topo with a `visited` set and reversed(topo).
HANDOUT = """
import math


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += out.grad * other.data
            other.grad += out.grad * self.data

        out._backward = _backward
        return out

    def __pow__(self, power):
        assert isinstance(power, (int, float))
        out = Value(self.data**power, (self,), f"**{power}")

        def _backward():
            self.grad += out.grad * power * (self.data ** (power - 1))

        out._backward = _backward
        return out

    def relu(self):
        out = Value(max(0.0, self.data), (self,), "relu")

        def _backward():
            self.grad += (self.data > 0.0) * out.grad

        out._backward = _backward
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t**2) * out.grad

        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")

        def _backward():
            self.grad += out.data * out.grad

        out._backward = _backward
        return out

    def log(self):
        out = Value(math.log(self.data), (self,), "log")

        def _backward():
            self.grad += (1 / self.data) * out.grad

        out._backward = _backward
        return out

    def backward(self):
        topo = []
        visited = set()

        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)

        build_topo(self)
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()

    def __neg__(self):
        return self * -1

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return other + (-self)

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        return self * other**-1

    def __rtruediv__(self, other):
        return other * self**-1
"""

# b. `x.grad = x.grad + v` everywhere, `_prev` a tuple, backward() first and __add__ last,
#    closures with their own names, an early-return visited check and `order[::-1]`.
EXPLICIT = """
import math


class Value:
    def backward(self):
        order = []
        seen = set()

        def visit(node):
            if node in seen:
                return
            seen.add(node)
            for parent in node._prev:
                visit(parent)
            order.append(node)

        visit(self)
        self.grad = 1
        for node in order[::-1]:
            node._backward()

    def __rtruediv__(self, other):
        return Value(other) * self ** -1.0

    def __truediv__(self, other):
        return self * Value.lift(other) ** -1.0

    def __rsub__(self, other):
        return Value(other) + (-self)

    def __sub__(self, other):
        return self + (-Value.lift(other))

    def __neg__(self):
        return self * -1.0

    def __rmul__(self, other):
        return self * other

    def __radd__(self, other):
        return self + other

    def log(self):
        out = Value(math.log(self.data), (self,), "log")

        def log_rule():
            self.grad = self.grad + out.grad / self.data

        out._backward = log_rule
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")

        def exp_rule():
            self.grad = self.grad + math.exp(self.data) * out.grad

        out._backward = exp_rule
        return out

    def tanh(self):
        out = Value(math.tanh(self.data), (self,), "tanh")

        def tanh_rule():
            self.grad = self.grad + (1.0 - out.data * out.data) * out.grad

        out._backward = tanh_rule
        return out

    def relu(self):
        out = Value(self.data if self.data > 0 else 0.0, (self,), "relu")

        def relu_rule():
            self.grad = self.grad + (out.grad if self.data > 0 else 0.0)

        out._backward = relu_rule
        return out

    def __pow__(self, n):
        out = Value(self.data**n, (self,), "pow")

        def pow_rule():
            self.grad = self.grad + n * self.data ** (n - 1) * out.grad

        out._backward = pow_rule
        return out

    def __mul__(self, other):
        other = Value.lift(other)
        out = Value(self.data * other.data, (self, other), "*")

        def mul_rule():
            self.grad = self.grad + other.data * out.grad
            other.grad = other.grad + self.data * out.grad

        out._backward = mul_rule
        return out

    @staticmethod
    def lift(x):
        return x if isinstance(x, Value) else Value(x)

    def __init__(self, data, children=(), op=""):
        self.data = float(data)
        self.grad = 0
        self._prev = tuple(children)
        self._op = op
        self._backward = lambda: None

    def __add__(self, other):
        other = Value.lift(other)
        out = Value(self.data + other.data, (self, other), "+")

        def add_rule():
            self.grad = self.grad + out.grad
            other.grad = other.grad + out.grad

        out._backward = add_rule
        return out
"""

# c. Backward rules of + and * as helper methods called from lambdas, `_prev` a list, and the
#    topological sort in a helper method (iterative, with a visited set).
HELPERS = """
import math


class Value:
    def __init__(self, data, children=(), op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = list(children)
        self._op = op
        self._backward = lambda: None

    @staticmethod
    def _wrap(x):
        return x if isinstance(x, Value) else Value(x)

    def _add_back(self, other, out):
        self.grad += out.grad
        other.grad += out.grad

    def _mul_back(self, other, out):
        self.grad += other.data * out.grad
        other.grad += self.data * out.grad

    def __add__(self, other):
        other = self._wrap(other)
        out = Value(self.data + other.data, [self, other], "+")
        out._backward = lambda: self._add_back(other, out)
        return out

    def __mul__(self, other):
        other = self._wrap(other)
        out = Value(self.data * other.data, [self, other], "*")
        out._backward = lambda: self._mul_back(other, out)
        return out

    def __pow__(self, k):
        out = Value(self.data**k, [self], "pow")

        def back():
            self.grad += k * self.data ** (k - 1) * out.grad

        out._backward = back
        return out

    def relu(self):
        out = Value(max(self.data, 0.0), [self], "relu")

        def back():
            self.grad += out.grad * float(self.data > 0)

        out._backward = back
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, [self], "tanh")

        def back():
            self.grad += out.grad * (1 - t * t)

        out._backward = back
        return out

    def exp(self):
        e = math.exp(self.data)
        out = Value(e, [self], "exp")

        def back():
            self.grad += out.grad * out.data

        out._backward = back
        return out

    def log(self):
        out = Value(math.log(self.data), [self], "log")

        def back():
            self.grad += out.grad * self.data**-1

        out._backward = back
        return out

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-self._wrap(other))

    def __truediv__(self, other):
        return self * self._wrap(other) ** -1

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __rsub__(self, other):
        return -self + other

    def __rtruediv__(self, other):
        return self**-1 * other

    def _topo(self):
        order, visited, stack = [], set(), [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
            elif id(node) not in visited:
                visited.add(id(node))
                stack.append((node, True))
                for parent in node._prev:
                    stack.append((parent, False))
        return order

    def backward(self):
        order = self._topo()
        self.grad = 1.0
        for node in reversed(order):
            node._backward()
"""

# d. The engine is `Scalar`, preceded by an unrelated class; the order is reversed in place.
SCALAR = """
import math


class Settings:
    def __init__(self):
        self.verbose = False

    def describe(self):
        return "settings"


class Scalar:
    def __init__(self, data, _children=(), _op=""):
        self.data = data
        self.grad = 0.0
        self._prev = set(_children)
        self._op = _op
        self._backward = lambda: None

    def __add__(self, other):
        other = other if isinstance(other, Scalar) else Scalar(other)
        out = Scalar(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Scalar) else Scalar(other)
        out = Scalar(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def __pow__(self, other):
        out = Scalar(self.data**other, (self,), "**")

        def _backward():
            self.grad += other * self.data ** (other - 1) * out.grad

        out._backward = _backward
        return out

    def relu(self):
        out = Scalar(0.0 if self.data < 0 else self.data, (self,), "relu")

        def _backward():
            self.grad += (out.data > 0) * out.grad

        out._backward = _backward
        return out

    def tanh(self):
        out = Scalar(math.tanh(self.data), (self,), "tanh")

        def _backward():
            self.grad += (1 - out.data**2) * out.grad

        out._backward = _backward
        return out

    def exp(self):
        out = Scalar(math.exp(self.data), (self,), "exp")

        def _backward():
            self.grad += out.data * out.grad

        out._backward = _backward
        return out

    def log(self):
        out = Scalar(math.log(self.data), (self,), "log")

        def _backward():
            self.grad += out.grad / self.data

        out._backward = _backward
        return out

    def backward(self):
        topo = []
        visited = set()

        def build(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build(child)
                topo.append(v)

        build(self)
        topo.reverse()
        self.grad = 1.0
        for v in topo:
            v._backward()

    def __neg__(self):
        return self * -1

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return other + (-self)

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        return self * other**-1

    def __rtruediv__(self, other):
        return other * self**-1
"""


def _handout_with(old: str, new: str) -> str:
    assert HANDOUT.count(old) == 1, old
    return HANDOUT.replace(old, new)


_HANDOUT_TOPO = """        topo = []
        visited = set()

        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)

        build_topo(self)
"""

_MODULE_LEVEL_TOPO = """import math


def build_topo(root):
    topo, visited = [], set()

    def visit(v):
        if v not in visited:
            visited.add(v)
            for child in v._prev:
                visit(child)
            topo.append(v)

    visit(root)
    return topo
"""

# Correct engines, each one small step away from the handout, that an operator must still reach.
# (variant source, operator that should apply and bite, the layout detail it has to see through)
GAPS: dict[str, tuple[str, str, str]] = {
    "annotated-grad-init": (
        _handout_with("self.grad = 0.0", "self.grad: float = 0.0"),
        "seed_leaf_one",
        "an annotated assignment initialises grad",
    ),
    "annotated-seed": (
        _handout_with("self.grad = 1.0", "self.grad: float = 1.0"),
        "seed_root_zero",
        "an annotated assignment seeds the root",
    ),
    "radd-delegates": (
        _handout_with(
            "def __radd__(self, other):\n        return self + other",
            "def __radd__(self, other):\n        return self.__add__(other)",
        ),
        "fwd_radd",
        "__radd__ calls __add__ by name",
    ),
    "rmul-delegates": (
        _handout_with(
            "def __rmul__(self, other):\n        return self * other",
            "def __rmul__(self, other):\n        return self.__mul__(other)",
        ),
        "fwd_rmul",
        "__rmul__ calls __mul__ by name",
    ),
    "explicit-grad-last": (
        _handout_with(
            "self.grad += out.grad * other.data\n            other.grad += out.grad * self.data",
            "self.grad = out.grad * other.data + self.grad\n            other.grad = out.grad * self.data + other.grad",
        ),
        "acc_mul",
        "the old grad is added last: x.grad = v + x.grad",
    ),
    "module-level-topo": (
        _handout_with(_HANDOUT_TOPO, "        topo = build_topo(self)\n").replace(
            "import math\n", _MODULE_LEVEL_TOPO, 1
        ),
        "topo_no_visited",
        "the topological sort is a module-level function",
    ),
}


LAYOUTS: dict[str, tuple[str, str]] = {  # name -> (source, the engine class's real name)
    "handout": (HANDOUT, "Value"),
    "explicit": (EXPLICIT, "Value"),
    "helpers": (HELPERS, "Value"),
    "scalar": (SCALAR, "Scalar"),
}

# Operators that every reasonable layout must support.
CORE_OPERATORS = [
    "acc_mul",
    "acc_add",
    "chain_mul_no_upstream",
    "loc_mul_own_operand",
    "topo_not_reversed",
    "topo_no_visited",
    "seed_root_zero",
    "seed_leaf_one",
]

# --- running an engine -------------------------------------------------------------------------


def load_engine(tree: ast.Module, class_name: str, label: str = "<mutant>") -> Any:
    """Execute ``tree`` as a fresh module (never as __main__) and return its engine class."""
    namespace: dict[str, Any] = {"__name__": "mutant_under_test"}
    exec(compile(tree, label, "exec"), namespace)
    return namespace[class_name]


def engine_from(source: str, class_name: str, operator_id: str | None = None) -> Any:
    tree = ast.parse(source)
    if operator_id is not None:
        tree, _ = mutate(tree, operator_id, "Value")
    return load_engine(tree, class_name, f"<{operator_id or 'original'}>")


UNARY: list[tuple[str, Callable[[Any], Any], float]] = [
    ("tanh", lambda v: v.tanh(), 0.4),
    ("relu(+)", lambda v: v.relu(), 0.7),
    ("relu(-)", lambda v: v.relu(), -0.6),
    ("exp", lambda v: v.exp(), 0.3),
    ("log", lambda v: v.log(), 1.8),
    ("pow3", lambda v: v**3, 1.3),
]


def battery(engine: Any) -> tuple[float, ...]:
    """Root data, leaf data and leaf grads over a fixed set of small graphs, flattened.

    A graph whose construction or backward raises contributes a single NaN, which compares
    unequal to everything (and changes the tuple's length).
    """
    values: list[float] = []

    def probe(build: Callable[[], tuple[Any, list[Any]]]) -> None:
        try:
            root, leaves = build()
            root.backward()
            values.extend([float(root.data), *(float(v.data) for v in leaves), *(float(v.grad) for v in leaves)])
        except Exception:
            values.append(math.nan)

    def reuse() -> tuple[Any, list[Any]]:
        x = engine(3.0)
        return x * x + x, [x]

    def add_then_mul() -> tuple[Any, list[Any]]:
        a = engine(2.0)
        return (a + a) * a, [a]

    def twice() -> tuple[Any, list[Any]]:
        x = engine(1.5)
        return x + x, [x]

    def product() -> tuple[Any, list[Any]]:
        a, b = engine(2.0), engine(3.0)
        return a * b, [a, b]

    def total() -> tuple[Any, list[Any]]:
        a, b = engine(2.0), engine(3.0)
        return a + b, [a, b]

    def diamond() -> tuple[Any, list[Any]]:
        a, b = engine(2.0), engine(3.0)
        t = a * b
        return t * t + t, [a, b]

    def unary(g: Callable[[Any], Any], x0: float) -> Callable[[], tuple[Any, list[Any]]]:
        def build() -> tuple[Any, list[Any]]:
            x = engine(x0)
            return g(x) * x * 1.7, [x]

        return build

    def relu_at(x0: float) -> Callable[[], tuple[Any, list[Any]]]:
        def build() -> tuple[Any, list[Any]]:
            x = engine(x0)
            return x.relu(), [x]

        return build

    def binary(op: Callable[[Any, Any], Any], a0: float, b0: float) -> Callable[[], tuple[Any, list[Any]]]:
        def build() -> tuple[Any, list[Any]]:
            a, b = engine(a0), engine(b0)
            return op(a, b), [a, b]

        return build

    def with_number(op: Callable[[Any], Any], x0: float) -> Callable[[], tuple[Any, list[Any]]]:
        def build() -> tuple[Any, list[Any]]:
            x = engine(x0)
            return op(x), [x]

        return build

    for build in (reuse, add_then_mul, twice, product, total, diamond):
        probe(build)
    for _, g, x0 in UNARY:
        probe(unary(g, x0))
    probe(relu_at(0.0))
    probe(relu_at(-0.6))
    probe(with_number(lambda x: -x, 2.0))
    probe(binary(lambda a, b: a - b, 5.0, 2.0))
    probe(binary(lambda a, b: a / b, 3.0, 2.0))
    probe(with_number(lambda x: 2.0 + x, 0.8))
    probe(with_number(lambda x: 2.0 - x, 0.8))
    probe(with_number(lambda x: 2.0 * x, 0.8))
    probe(with_number(lambda x: 2.0 / x, 0.8))
    return tuple(values)


def differs(left: tuple[float, ...], right: tuple[float, ...], tol: float = 1e-9) -> bool:
    if len(left) != len(right):
        return True
    return any(not math.isclose(a, b, rel_tol=tol, abs_tol=tol) for a, b in zip(left, right, strict=True))


def first_difference(left: tuple[float, ...], right: tuple[float, ...]) -> str:
    pairs = [(i, a, b) for i, (a, b) in enumerate(zip(left, right, strict=False)) if not math.isclose(a, b)]
    return f"len {len(left)} vs {len(right)}; differing entries {pairs[:5]}"


@pytest.fixture(scope="module")
def reference_tree() -> ast.Module:
    return ast.parse(REFERENCE_SOURCE)


@pytest.fixture(scope="module")
def reference_battery(reference_tree: ast.Module) -> tuple[float, ...]:
    values = battery(load_engine(reference_tree, "Value"))
    assert all(math.isfinite(v) for v in values), values
    return values


# --- 1. the catalogue and its descriptions ------------------------------------------------------


def test_catalogue_is_large_unique_and_covers_every_family() -> None:
    assert len(CATALOGUE) >= 20
    assert len(CATALOGUE_IDS) == len(set(CATALOGUE_IDS))
    assert {op.family for op in CATALOGUE} == SIX_FAMILIES
    assert set(FAMILIES) == SIX_FAMILIES
    assert all(op.summary.strip() for op in CATALOGUE)


def test_guard_step5_and_lookup_table_agree_with_catalogue() -> None:
    assert [op.id for op in GUARDS] == [FORCED_FAIL, EQUIVALENT]
    assert FORCED_FAIL not in CATALOGUE_IDS and EQUIVALENT not in CATALOGUE_IDS
    assert STEP5 == "acc_mul" and STEP5 in CATALOGUE_IDS
    assert set(BY_ID) == {*CATALOGUE_IDS, FORCED_FAIL, EQUIVALENT}
    assert all(BY_ID[op.id] is op for op in (*CATALOGUE, *GUARDS))


def test_every_operator_has_info_and_every_info_has_an_operator() -> None:
    assert set(INFO) == {*CATALOGUE_IDS, FORCED_FAIL, EQUIVALENT}
    for op_id, info in INFO.items():
        assert info.misconception.strip() and info.handout.strip() and info.example_check.strip(), op_id


# --- 2. every operator changes what the reference computes ---------------------------------------


def test_battery_sees_the_reference_as_correct(reference_battery: tuple[float, ...]) -> None:
    # Spot-check a few known values so the battery itself is not vacuous: y = x*x + x at 3.
    assert reference_battery[:3] == pytest.approx((12.0, 3.0, 7.0))
    # (a + a) * a at 2 -> data 8, a.grad 8
    assert reference_battery[3:6] == pytest.approx((8.0, 2.0, 8.0))


@pytest.mark.parametrize("op_id", CATALOGUE_IDS)
def test_operator_changes_reference_behaviour(
    op_id: str, reference_tree: ast.Module, reference_battery: tuple[float, ...]
) -> None:
    mutated, lines = mutate(reference_tree, op_id, "Value")
    assert lines, f"{op_id} reported no edited lines"
    assert all(1 <= line <= len(REFERENCE_SOURCE.splitlines()) for line in lines)
    observed = battery(load_engine(mutated, "Value", f"<{op_id}>"))
    assert differs(observed, reference_battery), f"{op_id} computes exactly what the reference computes"


@pytest.mark.parametrize("op_id", CATALOGUE_IDS)
def test_mutate_source_round_trips(op_id: str) -> None:
    text, lines = mutate_source(REFERENCE_SOURCE, op_id, "Value")
    assert lines
    assert text != ast.unparse(ast.parse(REFERENCE_SOURCE))
    engine = load_engine(ast.parse(text), "Value")
    assert differs(battery(engine), battery(engine_from(REFERENCE_SOURCE, "Value")))


# --- 3. the Step-5 operator ----------------------------------------------------------------------


def _line_of(text: str) -> int:
    found = [i for i, line in enumerate(REFERENCE_SOURCE.splitlines(), start=1) if line.strip() == text]
    assert len(found) == 1, (text, found)
    return found[0]


def _class_methods(tree: ast.Module, class_name: str) -> dict[str, ast.FunctionDef]:
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def _grad_statements(method: ast.FunctionDef) -> list[tuple[str, int]]:
    """(kind, line) of every statement writing ``<x>.grad`` inside ``method``."""
    found = []
    for node in ast.walk(method):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute) and node.target.attr == "grad":
            found.append((type(node.op).__name__, node.lineno))
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr == "grad" for t in node.targets
        ):
            found.append(("=", node.lineno))
    return sorted(found, key=lambda item: item[1])


def test_step5_turns_exactly_the_two_mul_accumulations_into_assignments(reference_tree: ast.Module) -> None:
    mutated, lines = mutate(reference_tree, STEP5, "Value")
    first = _line_of("self.grad += other.data * out.grad")
    second = _line_of("other.grad += self.data * out.grad")
    assert lines == [first, second]

    before, after = _class_methods(reference_tree, "Value"), _class_methods(mutated, "Value")
    assert _grad_statements(before["__mul__"]) == [("Add", first), ("Add", second)]
    assert _grad_statements(after["__mul__"]) == [("=", first), ("=", second)]
    add_writes = _grad_statements(after["__add__"])
    assert [kind for kind, _ in add_writes] == ["Add", "Add"]
    # Nothing else in the class changed.
    assert before.keys() == after.keys()
    for name in before:
        if name != "__mul__":
            assert ast.dump(before[name]) == ast.dump(after[name]), name


def test_step5_mutant_reproduces_the_handout_observation(reference_tree: ast.Module) -> None:
    value = load_engine(mutate(reference_tree, STEP5, "Value")[0], "Value")
    x = value(3.0)
    y = x * x + x
    y.backward()
    assert x.grad == pytest.approx(3.0)

    a = value(2.0)
    c = (a + a) * a
    c.backward()
    assert c.data == pytest.approx(8.0)
    assert a.grad == pytest.approx(8.0)


# --- 4. alternative layouts -----------------------------------------------------------------------


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layout_is_a_correct_engine(layout: str) -> None:
    """Each alternative engine agrees with the reference on the whole battery."""
    source, class_name = LAYOUTS[layout]
    expected = battery(engine_from(REFERENCE_SOURCE, "Value"))
    observed = battery(engine_from(source, class_name))
    assert not differs(observed, expected), first_difference(observed, expected)


@pytest.mark.parametrize("op_id", CORE_OPERATORS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_core_operator_applies_to_layout_and_changes_gradients(layout: str, op_id: str) -> None:
    source, class_name = LAYOUTS[layout]
    original = battery(engine_from(source, class_name))
    mutated = battery(engine_from(source, class_name, op_id))
    assert differs(mutated, original), f"{op_id} changed nothing on the {layout} layout"


@pytest.mark.parametrize("op_id", [i for i in CATALOGUE_IDS if i not in CORE_OPERATORS])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_other_operators_apply_to_complete_layouts(layout: str, op_id: str) -> None:
    """The layouts define every operation, so every operator has its target and must bite."""
    source, class_name = LAYOUTS[layout]
    original = battery(engine_from(source, class_name))
    mutated = battery(engine_from(source, class_name, op_id))
    assert differs(mutated, original), f"{op_id} changed nothing on the {layout} layout"


def test_core_operators_edit_the_expected_lines_in_the_helper_layout() -> None:
    tree = ast.parse(HELPERS)
    methods = _class_methods(tree, "Value")
    mul_back = [line for _, line in _grad_statements(methods["_mul_back"])]
    add_back = [line for _, line in _grad_statements(methods["_add_back"])]
    assert mutate(tree, "acc_mul", "Value")[1] == mul_back
    assert mutate(tree, "acc_add", "Value")[1] == add_back
    mutated = _class_methods(mutate(tree, "acc_mul", "Value")[0], "Value")
    assert [kind for kind, _ in _grad_statements(mutated["_mul_back"])] == ["=", "="]
    assert [kind for kind, _ in _grad_statements(mutated["_add_back"])] == ["Add", "Add"]


def test_explicit_layout_step5_gives_the_handout_numbers() -> None:
    value = engine_from(EXPLICIT, "Value", STEP5)
    x = value(3.0)
    (x * x + x).backward()
    a = value(2.0)
    ((a + a) * a).backward()
    assert (x.grad, a.grad) == pytest.approx((3.0, 8.0))


def test_fallback_class_is_the_engine_not_the_first_class() -> None:
    mutated, _ = mutate(ast.parse(SCALAR), FORCED_FAIL, "Value")
    namespace: dict[str, Any] = {"__name__": "mutant_under_test"}
    exec(compile(mutated, "<forced>", "exec"), namespace)
    assert namespace["Settings"]().describe() == "settings"
    with pytest.raises(RuntimeError, match="forced-fail"):
        namespace["Scalar"](1.0)


@pytest.mark.parametrize("gap", list(GAPS))
def test_gap_variant_is_a_correct_engine(gap: str) -> None:
    source, _, _ = GAPS[gap]
    expected = battery(engine_from(REFERENCE_SOURCE, "Value"))
    observed = battery(engine_from(source, "Value"))
    assert not differs(observed, expected), first_difference(observed, expected)


@pytest.mark.parametrize("gap", list(GAPS))
def test_operator_reaches_gap_variant(gap: str) -> None:
    source, op_id, _ = GAPS[gap]
    original = battery(engine_from(source, "Value"))
    mutated = battery(engine_from(source, "Value", op_id))
    assert differs(mutated, original), f"{op_id} changed nothing on the {gap} variant"


# --- 5. NotApplicable ------------------------------------------------------------------------------

MINIMAL = """
class Value:
    def __init__(self, data, children=()):
        self.data = data
        self.grad = 0.0
        self._prev = set(children)
        self._backward = lambda: None

    def __add__(self, other):
        out = Value(self.data + other.data, (self, other))

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    __radd__ = __add__

    def __mul__(self, other):
        out = Value(self.data * other.data, (self, other))

        def _backward():
            self.grad = other.data * out.grad
            other.grad = self.data * out.grad

        out._backward = _backward
        return out

    def relu(self):
        return Value(max(0.0, self.data), (self,))

    def backward(self):
        for node in [self]:
            node._backward()
"""


@pytest.mark.parametrize(
    ("op_id", "message"),
    [
        ("fwd_rdiv", "Value.__rtruediv__ is not defined"),
        ("acc_mul", "__mul__ has no backward rule writing `<x>.grad += ...`"),
        ("loc_mul_subtract", "__mul__ has no backward rule writing `<x>.grad += ...`"),
        ("acc_relu", "relu has no backward rule writing `<x>.grad += ...`"),
        ("loc_tanh_linear", "Value.tanh is not defined"),
        ("seed_root_zero", "backward() has no `self.grad = 1.0` seed"),
        ("topo_not_reversed", "backward() never reverses its topological order"),
        ("topo_no_visited", "backward() has no `in visited` membership test"),
    ],
)
def test_absent_target_is_not_applicable(op_id: str, message: str) -> None:
    tree = ast.parse(MINIMAL)
    with pytest.raises(NotApplicable, match=re.escape(message)):
        mutate(tree, op_id, "Value")


def test_a_reflected_alias_gets_the_bug_too() -> None:
    """`__radd__ = __add__` is how many engines write it: the bug replaces the alias with a
    method that calls the other operator, so k + x computes x - k."""
    tree = ast.parse(MINIMAL)
    mutated, lines = mutate(tree, "fwd_radd", "Value")
    namespace: dict[str, Any] = {}
    exec(compile(mutated, "<mutant>", "exec"), namespace)
    lifted = namespace["Value"](5.0)
    assert lines and hasattr(lifted, "__radd__")
    assert "__sub__" in ast.unparse(mutated)


def test_acc_add_still_applies_to_the_minimal_engine() -> None:
    # The contrast with the NotApplicable cases above: the target is present, so it is edited.
    _, lines = mutate(ast.parse(MINIMAL), "acc_add", "Value")
    methods = _class_methods(ast.parse(MINIMAL), "Value")
    assert lines == [line for _, line in _grad_statements(methods["__add__"])]


def test_unknown_operator_is_not_applicable(reference_tree: ast.Module) -> None:
    with pytest.raises(NotApplicable, match=re.escape("unknown mutation 'acc_nothing'")):
        mutate(reference_tree, "acc_nothing", "Value")


@pytest.mark.parametrize(
    "source",
    [
        "x = 1\n",
        "class Point:\n    def __add__(self, other):\n        return self\n\n    def backward(self):\n        pass\n",
    ],
    ids=["no-class", "two-engine-methods-only"],
)
def test_no_engine_like_class_is_not_applicable(source: str) -> None:
    with pytest.raises(NotApplicable, match=re.escape("no class Value with backward(), __add__ and __mul__")):
        mutate(ast.parse(source), "acc_mul", "Value")


def test_class_named_value_is_taken_by_name_and_its_missing_method_reported() -> None:
    source = "class Value:\n    def __init__(self, data):\n        self.data = data\n"
    with pytest.raises(NotApplicable, match=re.escape("Value.__mul__ is not defined")):
        mutate(ast.parse(source), "acc_mul", "Value")


# --- 6. purity and the guard mutant ---------------------------------------------------------------


@pytest.mark.parametrize("op_id", [*CATALOGUE_IDS, FORCED_FAIL])
def test_mutate_leaves_its_input_tree_untouched(op_id: str) -> None:
    for source in (REFERENCE_SOURCE, HANDOUT, EXPLICIT, HELPERS, SCALAR):
        tree = ast.parse(source)
        before = ast.dump(tree, include_attributes=True)
        mutated, _ = mutate(tree, op_id, "Value")
        assert mutated is not tree
        assert ast.dump(tree, include_attributes=True) == before
        assert ast.dump(mutated) != ast.dump(tree)


def test_mutate_leaves_its_input_untouched_when_not_applicable() -> None:
    tree = ast.parse(MINIMAL)
    before = ast.dump(tree, include_attributes=True)
    with pytest.raises(NotApplicable):
        mutate(tree, "acc_mul", "Value")
    assert ast.dump(tree, include_attributes=True) == before


def test_forced_fail_makes_construction_raise(reference_tree: ast.Module) -> None:
    mutated, lines = mutate(reference_tree, FORCED_FAIL, "Value")
    methods = _class_methods(reference_tree, "Value")
    assert lines == sorted(m.lineno for m in methods.values())
    value = load_engine(mutated, "Value")
    with pytest.raises(RuntimeError, match="forced-fail mutant"):
        value(1.0)
    # The unmutated reference constructs fine, so the raise is the mutant's doing.
    assert load_engine(reference_tree, "Value")(1.0).data == 1.0


def test_the_equivalent_guard_changes_code_but_not_behaviour() -> None:
    mutated, lines = mutate(ast.parse(REFERENCE_SOURCE), EQUIVALENT, "Value")
    assert len(lines) >= 15  # every method
    assert ast.dump(mutated) != ast.dump(ast.parse(REFERENCE_SOURCE))
    original = battery(engine_from(REFERENCE_SOURCE, "Value"))
    copy = battery(engine_from(REFERENCE_SOURCE, "Value", EQUIVALENT))
    assert not differs(copy, original), first_difference(copy, original)


# --- 7. the graded class is the one Python binds ----------------------------------------------------

_BROKEN_LAST = HANDOUT.replace("self.grad += out.grad * other.data", "self.grad = out.grad * other.data").split(
    "\n\n\nclass Value:", 1
)[1]


def test_a_correct_decoy_defined_first_is_not_the_graded_class() -> None:
    source = HANDOUT + "\n\nclass Value:" + _BROKEN_LAST
    tree = ast.parse(source)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert len(classes) == 2 and graded_class(tree, "Value") is classes[-1]
    _, lines = mutate(tree, "acc_add", "Value")
    assert all(line > classes[0].end_lineno for line in lines)  # type: ignore[operator]
    # The mutated file's engine (the last class, the one Python binds) is the one edited.
    value = load_engine(mutate(tree, FORCED_FAIL, "Value")[0], "Value")
    with pytest.raises(RuntimeError, match="forced-fail"):
        value(1.0)


@pytest.mark.parametrize(
    ("tail", "binder"),
    [
        ("Value = int\n", "an assignment"),
        ("from fractions import Fraction as Value\n", "an import"),
        ("def Value(x):\n    return x\n", "a def"),
        ("if True:\n    pass\nelse:\n    class Value:\n        pass\n", "a class statement inside a block"),
        ("for Value in [int]:\n    pass\n", "an assignment"),
    ],
)
def test_a_later_rebinding_of_the_engine_name_is_not_applicable(tail: str, binder: str) -> None:
    source = HANDOUT + "\n\n" + tail
    line = len(HANDOUT.splitlines()) + 3 + tail.split("\n").index(next(t for t in tail.split("\n") if "Value" in t))
    with pytest.raises(NotApplicable, match=re.escape(f"Value is bound last by {binder} at line {line}")):
        mutate(ast.parse(source), "acc_mul", "Value")
    with pytest.raises(NotApplicable):
        mutate_text(source, "acc_mul", "Value")


def test_an_alias_of_the_engine_class_grades_that_class() -> None:
    tree = ast.parse(SCALAR + "\nValue = Scalar\n")
    assert graded_class(tree, "Value").name == "Scalar"
    assert mutate_text(SCALAR + "\nValue = Scalar\n", STEP5, "Value")[1] == mutate(ast.parse(SCALAR), STEP5, "Value")[1]
    # An alias of something that is not a top-level class, as bound at that line, is not.
    for tail in ("\nValue = Other\nclass Other:\n    pass\n", "\nValue = math\n"):
        with pytest.raises(NotApplicable, match="bound last by an assignment"):
            graded_class(ast.parse(SCALAR + tail), "Value")


def test_a_binding_before_the_class_does_not_matter() -> None:
    tree = ast.parse("Value = None\n" + HANDOUT)
    assert graded_class(tree, "Value") is tree.body[-1]


def test_the_misnamed_fallback_takes_the_last_of_equal_scores() -> None:
    scalar = SCALAR.split("\n\n\nclass Scalar:", 1)[1]
    source = SCALAR + "\n\nclass Other:" + scalar.replace("Scalar", "Other")
    tree = ast.parse(source)
    assert graded_class(tree, "Value").name == "Other"
    # A class whose own name is rebound later is not a candidate.
    tree = ast.parse(source + "\nOther = None\n")
    assert graded_class(tree, "Value").name == "Scalar"


def test_graded_class_is_the_rule_everything_uses() -> None:
    from sandbox.harness.mutation import mutate as harness_mutate

    assert harness_mutate.find_class is graded_class
    assert "last" in (graded_class.__doc__ or "")


# --- 8. mutants as splices of the student's own text --------------------------------------------------


def _engine_files() -> list[tuple[str, str]]:
    found = [("reference", REFERENCE_SOURCE)]
    for path in [
        *sorted(REPO.glob("tests/cases/*/autograd_lab.py")),
        *sorted(REPO.glob("submissions/*/autograd_lab.py")),
        *sorted(REPO.glob("tests/similarity_class*/*/autograd_lab.py")),
    ]:
        found.append((str(path.parent.relative_to(REPO)), path.read_text(encoding="utf-8")))
    for path in sorted(REPO.glob("tests/unit/engines_forms/*.py")):  # backward rules outside closures
        found.append((str(path.relative_to(REPO)), path.read_text(encoding="utf-8")))
    found += [(f"layout:{name}", source) for name, (source, _) in LAYOUTS.items()]
    found += [(f"gap:{name}", source) for name, (source, _, _) in GAPS.items()]
    return found


ENGINE_FILES = _engine_files()


def _parsed(source: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except SyntaxError:
        return None


def _edited_spans(tree: ast.Module, lines: list[int]) -> list[tuple[int, int]]:
    """The smallest statement around each reported line: the only place a splice may touch."""
    spans = []
    for line in lines:
        around = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and n.lineno <= line <= n.end_lineno]  # type: ignore[operator]
        smallest = min(around, key=lambda n: n.end_lineno - n.lineno)  # type: ignore[operator]
        spans.append((smallest.lineno, smallest.end_lineno or smallest.lineno))
    return spans


def _assert_spliced(source: str, mutated: ast.Module, op_id: str, text: str, lines: list[int], label: str) -> None:
    """``text`` parses to ``mutated`` (``mutate``'s tree) and differs from ``source`` only there."""
    tree = _parsed(source)
    assert tree is not None
    assert ast.dump(_parsed(text) or ast.Module(body=[], type_ignores=[])) == ast.dump(mutated), label
    before, after = source.splitlines(keepends=True), text.splitlines(keepends=True)
    opcodes = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    changed = [tag for tag, *_ in opcodes if tag != "equal"]
    assert changed, label
    if op_id in (FORCED_FAIL, EQUIVALENT):
        # Taking the inserted statements out again gives the original, byte for byte.
        statement = {FORCED_FAIL: "raise RuntimeError('forced-fail mutant: every method raises')"}.get(
            op_id, "_unchanged_ = None"
        )
        restored = re.sub(rf"^[ \t]*{re.escape(statement)}(\r\n|\n)", "", text, flags=re.MULTILINE)
        assert restored.replace(statement + "; ", "") == source, label
        return
    assert len(after) == len(before), label  # later lines keep their numbers
    spans = _edited_spans(tree, lines)
    for tag, i1, i2, _, _ in opcodes:
        if tag != "equal":
            outside = [i + 1 for i in range(i1, i2) if not any(a <= i + 1 <= b for a, b in spans)]
            assert not outside, (label, outside, spans)


@pytest.mark.slow  # every operator on every engine of the corpus
@pytest.mark.parametrize("op_id", [*CATALOGUE_IDS, FORCED_FAIL, EQUIVALENT])
def test_mutate_text_splices_exactly_the_mutated_tree_into_every_engine(op_id: str) -> None:
    applied = 0
    for label, source in ENGINE_FILES:
        tree = _parsed(source)
        if tree is None:
            continue
        try:
            mutated, expected_lines = mutate(tree, op_id, "Value", in_place=True)
        except NotApplicable:
            with pytest.raises(NotApplicable):
                mutate_text(source, op_id, "Value")
            continue
        text, lines = mutate_text(source, op_id, "Value")
        assert lines == expected_lines, label
        _assert_spliced(source, mutated, op_id, text, lines, label)
        applied += 1
    assert applied >= 20, f"{op_id} applied to only {applied} engines"


def test_mutants_keep_every_comment_and_the_original_spelling() -> None:
    text, lines = mutate_text(REFERENCE_SOURCE, STEP5, "Value")
    comments = [line for line in REFERENCE_SOURCE.splitlines() if "#" in line]
    assert all(comment in text.splitlines() for comment in comments)
    assert '"""A8 lab: a scalar reverse-mode autograd engine' in text
    changed = [
        i + 1 for i, (a, b) in enumerate(zip(REFERENCE_SOURCE.splitlines(), text.splitlines(), strict=True)) if a != b
    ]
    assert changed == lines


def test_forced_fail_text_raises_and_keeps_the_file() -> None:
    text, _ = mutate_text(REFERENCE_SOURCE, FORCED_FAIL, "Value")
    assert [line for line in text.splitlines() if "forced-fail" not in line] == REFERENCE_SOURCE.splitlines()
    value = load_engine(ast.parse(text), "Value")
    with pytest.raises(RuntimeError, match="forced-fail"):
        value(1.0)


def test_mutate_source_is_the_spliced_text() -> None:
    assert mutate_source(REFERENCE_SOURCE, "acc_add", "Value") == mutate_text(REFERENCE_SOURCE, "acc_add", "Value")


# One-line methods and closures, tabs, decorators, non-ASCII before an edit, an elif, a
# statement spread over lines with comments inside, and a helper defined before the class.
TRICKY = '''# -*- coding: utf-8 -*-
"""Ünïcödé — a docstring."""
import math

def _lift(x):
\treturn x if isinstance(x, Value) else Value(x)

class Value:
\t_backward = staticmethod(lambda: None)

\tdef __init__(self, data, kids=(), op=""): self.tag = "λ→"; self.data = data; self.grad = 0.0; self._prev = set(kids)

\tdef __add__(self, other):
\t\tother = _lift(other)
\t\tout = Value(self.data + other.data,   # sum — forward
\t\t            (self, other), "+")
\t\tdef _backward():
\t\t\tself.grad += (out.grad   # upstream
\t\t\t              * 1.0)
\t\t\tother.grad += out.grad
\t\tout._backward = _backward
\t\treturn out

\tdef __mul__(self, other):
\t\tother = _lift(other)
\t\tout = Value(self.data * other.data, (self, other), "*")
\t\tdef _backward(): self.grad += other.data * out.grad; other.grad += self.data * out.grad
\t\tout._backward = _backward
\t\treturn out

\t@staticmethod
\tdef zero(): return Value(0.0)

\tdef relu(self):
\t\tout = Value(self.data if self.data > 0 else 0.0, (self,), "relu")
\t\tdef _backward():
\t\t\tif self.data > 0:
\t\t\t\tself.grad += out.grad
\t\t\telif self.data == 0:  # kink
\t\t\t\tpass
\t\tout._backward = _backward
\t\treturn out

\tdef backward(self):
\t\t"""Reverse sweep."""
\t\ttopo, seen = [], set()
\t\tdef build(v):
\t\t\tif v not in seen:
\t\t\t\tseen.add(v)
\t\t\t\tfor c in v._prev: build(c)
\t\t\t\ttopo.append(v)
\t\tbuild(self)
\t\tself.grad = 1.0
\t\tfor v in reversed(topo):   # reverse order
\t\t\tv._backward()

\tdef __neg__(self): return self * -1
\tdef __radd__(self, other): return self + other
\tdef __sub__(self, other): return self + (-other)
\tdef __rsub__(self, other): return other + (-self)
\tdef __rmul__(self, other): return self * other
'''


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_splices_survive_unusual_layouts(newline: str) -> None:
    source = TRICKY.replace("\n", newline)
    tree = ast.parse(source)
    assert battery(load_engine(tree, "Value"))  # a working engine
    applied = []
    for op_id in [*CATALOGUE_IDS, FORCED_FAIL, EQUIVALENT]:
        try:
            text, lines = mutate_text(source, op_id, "Value")
        except NotApplicable:
            continue
        applied.append(op_id)
        _assert_spliced(source, mutate(tree, op_id, "Value")[0], op_id, text, lines, op_id)
        assert text.count("\r\n") == (text.count("\n") if newline == "\r\n" else 0), op_id
        assert "λ→" in text and "# sum — forward" in text
    assert {"acc_add", "acc_mul", "seed_leaf_one", "loc_relu_gate", "topo_not_reversed", "topo_no_visited"} <= set(
        applied
    )
    assert {FORCED_FAIL, EQUIVALENT, "fwd_neg", "fwd_sub", "fwd_rsub", "fwd_radd", "fwd_rmul"} <= set(applied)


def test_splice_details_on_unusual_layouts() -> None:
    text, _ = mutate_text(TRICKY, "seed_leaf_one", "Value")
    assert 'self.tag = "λ→"; self.data = data; self.grad = 1.0; self._prev' in text
    text, _ = mutate_text(TRICKY, "acc_mul", "Value")
    assert "\t\tdef _backward(): self.grad = other.data * out.grad; other.grad = self.data * out.grad\n" in text
    text, _ = mutate_text(TRICKY, "topo_not_reversed", "Value")
    assert "\t\tfor v in topo:   # reverse order\n" in text
    text, _ = mutate_text(TRICKY, "acc_add", "Value")
    assert "\t\t\tself.grad = out.grad * 1.0\n\n\t\t\tother.grad = out.grad\n" in text  # a blank line keeps numbering
    text, _ = mutate_text(TRICKY, FORCED_FAIL, "Value")
    assert "\tdef zero(): raise RuntimeError('forced-fail mutant: every method raises'); return Value(0.0)\n" in text
    assert '\t\t"""Reverse sweep."""\n\t\traise RuntimeError(' in text


def test_splice_rewrites_an_elif_header_only() -> None:
    source = "if a:\n    x = 1\nelif b:  # note\n    x = 2  # two\nelse:\n    x = 3\n"
    old = ast.parse(source)
    new = copy.deepcopy(old)
    elif_ = new.body[0].orelse[0]  # type: ignore[attr-defined]
    elif_.test = ast.Name("c", ast.Load())
    assert splice.splice(source, old, new) == source.replace("elif b:", "elif c:")


def test_write_back_falls_back_to_the_enclosing_statement() -> None:
    source = "import math  # keep\n\n\ndef f():\n    a = 1  # gone\n    b = 2\n    return a\n\n\nX = 3  # kept\n"
    old = ast.parse(source)
    new = copy.deepcopy(old)
    del new.body[1].body[1]  # type: ignore[attr-defined]
    text = splice.write_back(source, old, new)
    assert ast.dump(ast.parse(text)) == ast.dump(new)
    assert text.startswith("import math  # keep\n") and text.endswith("X = 3  # kept\n")
