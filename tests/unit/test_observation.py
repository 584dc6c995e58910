"""What the harness can read from an engine that differs from the handout in one respect only:
another name for ``_prev``, NumPy numbers, and set iteration that follows memory addresses.
Each such difference is one fault of one check, never a failure of every check that reads."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sandbox.harness import wire
from sandbox.harness.mutation import scripts
from sandbox.harness.probes import programs

REPO = Path(__file__).resolve().parents[2]


class Renamed:
    """A correct engine (for + and *) that keeps its inputs in ``_children``."""

    def __init__(self, data: float, children: tuple[Any, ...] = (), op: str = "") -> None:
        self.data = data
        self.grad = 0.0
        self._children = children
        self._op = op
        self._backward = lambda: None

    def __add__(self, other: Renamed) -> Renamed:
        out = Renamed(self.data + other.data, (self, other), "+")

        def backward() -> None:
            self.grad += out.grad
            other.grad += out.grad

        out._backward = backward
        return out

    def __mul__(self, other: Renamed) -> Renamed:
        out = Renamed(self.data * other.data, (self, other), "*")

        def backward() -> None:
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = backward
        return out

    def backward(self) -> None:
        order: list[Renamed] = []
        seen: set[int] = set()

        def build(node: Renamed) -> None:
            if id(node) not in seen:
                seen.add(id(node))
                for child in node._children:
                    build(child)
                order.append(node)

        build(self)
        self.grad = 1.0
        for node in reversed(order):
            node._backward()


PROGRAM = {
    "leaves": {"a": 2.0, "b": 3.0},
    "steps": [["m", "mul", "a", "b"], ["s", "add", "m", "a"], ["", "backward", "s"]],
    "record": ["graph", "schedule"],
}


def test_another_name_for_prev_is_one_unread_field_and_every_value_is_still_read() -> None:
    obs = programs.run_program(Renamed, PROGRAM, lambda phase, o: None)
    assert (obs["s.data"], obs["a.grad"], obs["b.grad"]) == (8.0, 4.0, 2.0)
    assert obs["m.prev"] == {wire.UNREAD: "no _prev field"}
    assert obs["m.op"] == "*"
    assert obs["schedule"] == ["s", "m", "b", "a"]  # no _prev is needed to see the order


def test_the_api_probe_follows_links_under_another_name() -> None:
    a, b = Renamed(1.0), Renamed(2.0)
    assert programs.links_of(a * b, Renamed) == [a, b]
    assert programs._api_op(Renamed, Renamed, "mul", lambda x, y, c, k: x * y, (1.3, 0.6, 0.5, 2.5)) == {
        "op.mul.status": "ok",
        "op.mul.data": pytest.approx(0.78),
    }
    assert programs._field(Renamed(1.3), "_prev", 1.3) == "missing"


@pytest.mark.parametrize(
    ("value", "read"),
    [
        (np.float64(1.5), 1.5),
        (np.float32(0.5), 0.5),
        (np.array([2.25]), 2.25),
        (np.array([[2.25]], dtype=np.float32), 2.25),
        (np.array([1.0, 2.0]), {wire.BAD: "ndarray"}),
        (np.array([3]), {wire.BAD: "ndarray"}),  # integers: not a float array
        (np.array(["1.0"]), {wire.BAD: "ndarray"}),
        (np.array([np.nan]), {wire.NONFINITE: "nan"}),
    ],
)
def test_numpy_numbers_are_read_as_the_number_they_hold(value: Any, read: Any) -> None:
    assert programs.read_float(value) == read


def test_a_numpy_field_is_named_once_by_the_api_check() -> None:
    class Leaf:
        def __init__(self, data: float) -> None:
            self.data = np.array([data])
            self.grad = 0.0

    assert programs._field(Leaf(1.3), "data", 1.3) == "a ndarray, not a Python float: store float(...)"
    assert programs._field(Leaf(1.3), "grad", 1.3) == "ok"


def test_a_subclass_of_ndarray_is_not_read_through_its_own_methods() -> None:
    class Sly(np.ndarray):
        def reshape(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("the grader called the submission's method")

    assert programs.read_float(np.array([1.0]).view(Sly)) == {wire.BAD: "Sly"}


# --- where a failing run of the student's checks stopped -----------------------------------------

TRACEBACK = """\
Traceback (most recent call last):
  File "autograd_lab.py", line 120, in <module>
    check_reuse()
  File "autograd_lab.py", line 101, in check_reuse
    y.backward()
  File "autograd_lab.py", line 40, in backward
    node._backward()
AssertionError: x.grad
"""


def test_the_stop_point_leaves_out_the_class_and_maps_lines_back() -> None:
    record = {"exception": "AssertionError"}
    # The class spans lines 10-60 of the file as submitted.
    assert scripts.stop_point(TRACEBACK, "autograd_lab.py", record, (10, 60), 0) == "autograd_lab.py:120,101"
    # A copy whose class grew by 5 lines: frames in the checks map back to the same lines.
    shifted = TRACEBACK.replace("line 120", "line 125").replace("line 101", "line 106").replace("line 40", "line 44")
    assert scripts.stop_point(shifted, "autograd_lab.py", record, (10, 60), 5) == "autograd_lab.py:120,101"
    assert scripts.stop_point("no traceback here", "autograd_lab.py", record, (10, 60), 0) == ""


def test_the_stop_point_is_the_place_never_the_exception_name() -> None:
    """Checks name their exceptions freely (after a hash of the values, say): only file and line
    tell two stops apart."""
    renamed = TRACEBACK.replace("AssertionError: x.grad", "E3f9aError: 0.41")
    first = scripts.stop_point(TRACEBACK, "autograd_lab.py", {"exception": "AssertionError"}, (10, 60), 0)
    second = scripts.stop_point(renamed, "autograd_lab.py", {"exception": "E3f9aError"}, (10, 60), 0)
    assert first == second == "autograd_lab.py:120,101"


# --- hashes that follow the program, not the memory layout ---------------------------------------

ORDER = textwrap.dedent(
    """
    import sys
    from sandbox.harness.probes import stable_hash
    stable_hash.install(frozenset({"__main__"}))
    junk = [bytearray(int(sys.argv[1]) * 16 + n) for n in range(200)]  # shift later addresses

    class Node:
        def __init__(self, name):
            self.name = name

    nodes = [Node(str(i)) for i in range(40)]
    for node in reversed(nodes):
        hash(node)
    children = set(nodes)
    import fractions  # a library class keeps its own hash
    print("".join(n.name + "," for n in children), fractions.Fraction.__hash__ is not Node.__hash__)
    """
)


def test_sets_of_student_objects_iterate_in_the_same_order_whatever_the_addresses() -> None:
    runs = {
        subprocess.run(
            [sys.executable, "-c", ORDER, str(shift)], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout
        for shift in (0, 1, 7, 33)
    }
    assert len(runs) == 1, runs
    assert runs.pop().strip().endswith("True")
