"""A value used on more than one path, and the same program with each further use given its own copy.

A node's gradient is complete only when every use has added its share (``+=``, not ``=``): that
is what the rubric's reuse checks measure. Another section's program that uses a value twice
(``t = o * x`` after ``o = x * y``) would charge the same fault again, so it has a form where
no value is used twice: each further use of a leaf reads a fresh leaf of the same value, and
each further use of a node reads a fresh copy of it, rebuilt from fresh leaves. The program
names its copies (``"copies"``: copy -> the original it stands for), so the judge compares a
copy's gradient (the share of the uses it took over) under the original's observed quantities
and ``features.same_function`` proves that each original gradient is the sum of its copies'.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

Program = dict[str, Any]
Step = list[Any]

COPIES = "copies"  # program key: copy name -> the original node or leaf it stands for
MAX_COPIES = 200  # nodes and leaves a copy may add; past it a graph stays as it is (and is charged)
_NOT_BUILT = ("backward", "sgd")


def copies(program: Program) -> Mapping[str, str]:
    found = program.get(COPIES, {})
    return found if isinstance(found, dict) else {}


def original_key(program: Program, key: str) -> str:
    """``x2.grad`` as the quantity of the value the copy stands for (``x.grad``); other keys as they are."""
    node, dot, field = key.rpartition(".")
    original = copies(program).get(node)
    return f"{original}{dot}{field}" if original else key


def _backpropagated(program: Program) -> set[str]:
    """The nodes some backward() goes through: uses elsewhere never accumulate a gradient."""
    made = {s[0]: s[2:] for s in program["steps"] if s[1] not in _NOT_BUILT}
    reached: set[str] = set()
    todo = [s[2] for s in program["steps"] if s[1] == "backward"]
    while todo:
        name = todo.pop()
        if name in made and name not in reached:
            reached.add(name)
            todo += [a for a in made[name] if isinstance(a, str)]
    return reached


def _uses(program: Program) -> Counter[str]:
    """How often each value is an operand of a step some backward() goes through (x * x: twice)."""
    through = _backpropagated(program)
    return Counter(a for s in program["steps"] if s[0] in through for a in s[2:] if isinstance(a, str))


def reuses(program: Program) -> bool:
    return any(count > 1 for count in _uses(program).values())


class _NoTree(Exception):
    """The program cannot do without reuse: a copy would change what it computes, or be too big."""


def tree_form(program: Program) -> Program | None:
    """The same function with every value used at most once (None when it cannot be written so:
    more than one backward(), an SGD step reading a shared value's gradient or a value it made,
    or more than ``MAX_COPIES`` copies)."""
    if not reuses(program):
        return program
    if sum(1 for s in program["steps"] if s[1] == "backward") != 1:
        return None  # gradients summed over several backward() calls are another matter
    through = _backpropagated(program)
    made = {s[0]: s for s in program["steps"] if s[1] not in _NOT_BUILT}
    sgd_made = {s[0] for s in program["steps"] if s[1] == "sgd"}
    read_by_sgd = {s[2] for s in program["steps"] if s[1] == "sgd"}
    leaves: dict[str, Any] = dict(program["leaves"])
    found = dict(copies(program))
    used = set(leaves) | {s[0] for s in program["steps"] if s[0]} | set(found)
    steps: list[Step] = []
    seen: set[str] = set()

    def fresh(stem: str) -> str:
        if len(found) - len(copies(program)) >= MAX_COPIES:
            raise _NoTree
        count = 2
        while f"{stem}{count}" in used:
            count += 1
        used.add(f"{stem}{count}")
        return f"{stem}{count}"

    def copy_of(name: str) -> str:
        if name in sgd_made or name in read_by_sgd:
            raise _NoTree  # an SGD step's value, or one whose gradient an SGD step reads
        new = fresh(name)
        found[new] = found.get(name, name)
        if name in made:
            target, op, *args = made[name]
            steps.append([new, op, *(copy_of(a) if isinstance(a, str) else a for a in args)])
        else:
            leaves[new] = leaves[name]
        return new

    try:
        for target, op, *args in program["steps"]:
            if target not in through:
                steps.append([target, op, *args])
                continue
            operands = []
            for arg in args:
                if isinstance(arg, str):
                    arg = copy_of(arg) if arg in seen else arg  # the first use keeps the original
                    seen.add(arg)
                operands.append(arg)
            steps.append([target, op, *operands])
    except _NoTree:
        return None
    return {**program, "leaves": leaves, "steps": steps, COPIES: found}


def shares(copied: Mapping[str, str]) -> dict[str, list[str]]:
    """Original -> its copies."""
    out: dict[str, list[str]] = {}
    for copy, original in copied.items():
        out.setdefault(original, []).append(copy)
    return out
