"""Smaller programs on which an engine is still wrong: the search, and the math it needs.

A failing probe instance is a program of twenty-odd steps over random inputs; the student
needs the smallest one that shows the same bug. ``shrink`` searches for it greedily, the way
property-based testing shrinks a counterexample: it tries, in a fixed order, programs that
are smaller (fewer operations first, then simpler numbers), keeps the first one on which
``still_wrong`` holds, and starts again from there, until no candidate is kept or the budget
of tries runs out. Candidates:

- the program cut at an earlier node (``backward`` from it; later steps dropped);
- one operation removed, its uses reading one of its operands instead;
- an input or a constant moved to a simple number (1, 2, 0.5, -1, 3), in that order.

Every candidate stays inside the operations' domains (no log of a non-positive number, no
division by zero, finite values), checked with ``exact``: forward values and every node's
gradient in float math, by reverse accumulation over the steps (one rule per operation; a
node used twice gets both contributions). The search is deterministic: the same program and
predicate give the same result. Nothing here touches an engine: the caller's predicate runs
the student's code (in a child) and compares with ``exact``; the host checks the result again
with its own reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

Program = dict[str, Any]
Step = list[Any]

SIMPLE = (1.0, 2.0, 0.5, -1.0, 3.0)
PASSIVE = ("backward", "sgd")  # steps that build no node


class OutsideDomain(ValueError):
    """The program leaves an operation's domain (log of a non-positive number, say)."""


def _forward(op: str, a: float, b: float) -> float:
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        if b == 0:
            raise OutsideDomain("division by zero")
        return a / b
    if op == "pow":
        if a == 0 and b < 0 or a < 0 and b != int(b):
            raise OutsideDomain("a power outside the reals")
        return float(a**b)
    if op == "neg":
        return -a
    if op == "tanh":
        return math.tanh(a)
    if op == "relu":
        return a if a > 0 else 0.0
    if op == "exp":
        return math.exp(a)
    if op == "log":
        if a <= 0:
            raise OutsideDomain("log of a non-positive number")
        return math.log(a)
    raise OutsideDomain(f"unknown operation {op!r}")


def _local(op: str, a: float, b: float, out: float) -> tuple[float, float]:
    """d(out)/d(first operand) and d(out)/d(second operand)."""
    if op == "add":
        return 1.0, 1.0
    if op == "sub":
        return 1.0, -1.0
    if op == "mul":
        return b, a
    if op == "div":
        return 1.0 / b, -a / (b * b)
    if op == "pow":
        return b * a ** (b - 1), 0.0  # the exponent is a constant in these programs
    if op == "neg":
        return -1.0, 0.0
    if op == "tanh":
        return 1.0 - out * out, 0.0
    if op == "relu":
        return (1.0 if a > 0 else 0.0), 0.0
    if op == "exp":
        return out, 0.0
    if op == "log":
        return 1.0 / a, 0.0
    raise OutsideDomain(f"unknown operation {op!r}")


def root(program: Program) -> str:
    """The node backward() starts from, else the last node built."""
    for _, op, *args in program["steps"]:
        if op == "backward":
            return str(args[0])
    built = [target for target, op, *_ in program["steps"] if op not in PASSIVE]
    return str(built[-1]) if built else str(next(iter(program["leaves"])))


def exact(program: Program) -> dict[str, float]:
    """``name.data`` and ``name.grad`` for every node (gradients of the root; 0 off its paths).
    Raises OutsideDomain when a value is undefined or not finite."""
    values: dict[str, float] = {name: float(v) for name, v in program["leaves"].items()}
    built: list[tuple[str, str, list[Any]]] = []
    for target, op, *args in program["steps"]:
        if op in PASSIVE:
            continue
        operands = [values[a] if isinstance(a, str) else float(a) for a in args] + [0.0]
        try:
            value = _forward(op, operands[0], operands[1])
        except (OverflowError, ZeroDivisionError) as error:
            raise OutsideDomain(str(error)) from None
        if not math.isfinite(value):
            raise OutsideDomain(f"{target} is not finite")
        values[target] = value
        built.append((target, op, list(args)))
    grads = dict.fromkeys(values, 0.0)
    grads[root(program)] = 1.0
    for target, op, args in reversed(built):
        operands = [values[a] if isinstance(a, str) else float(a) for a in args] + [0.0]
        local = _local(op, operands[0], operands[1], values[target])
        for arg, d in zip(args, local, strict=False):
            if isinstance(arg, str):
                grads[arg] += d * grads[target]
    if not all(math.isfinite(g) for g in grads.values()):
        raise OutsideDomain("a gradient is not finite")
    return {**{f"{n}.data": v for n, v in values.items()}, **{f"{n}.grad": g for n, g in grads.items()}}


def operations(program: Program) -> int:
    return sum(1 for _, op, *_ in program["steps"] if op not in PASSIVE)


def _number_cost(value: float) -> int:
    """How far from simple a number is: its place in SIMPLE, else past them all."""
    return SIMPLE.index(value) if value in SIMPLE else len(SIMPLE) + 1


def size(program: Program) -> tuple[int, int, int]:
    """What shrinking lowers, in order: operations, inputs, then how plain the numbers are."""
    numbers = [float(v) for v in program["leaves"].values()]
    numbers += [float(a) for _, op, *args in program["steps"] if op not in PASSIVE for a in args if _is_number(a)]
    return operations(program), len(program["leaves"]), sum(_number_cost(n) for n in numbers)


def _is_number(arg: Any) -> bool:
    return isinstance(arg, (int, float)) and not isinstance(arg, bool)


def _with(program: Program, leaves: dict[str, float], steps: list[Step]) -> Program:
    return {**program, "leaves": leaves, "steps": steps}


def _pruned(program: Program, top: str) -> Program:
    """Only the steps ``top`` depends on, then ``backward(top)``; inputs it never reads dropped."""
    made = {target: (op, args) for target, op, *args in program["steps"] if op not in PASSIVE}
    needed: set[str] = set()
    pending = [top]
    while pending:
        name = pending.pop()
        if name in needed:
            continue
        needed.add(name)
        pending += [a for a in made.get(name, ("", []))[1] if isinstance(a, str)]
    steps = [[t, op, *args] for t, op, *args in program["steps"] if op not in PASSIVE and t in needed]
    leaves = {n: v for n, v in program["leaves"].items() if n in needed}
    return _with(program, leaves, [*steps, ["", "backward", top]])


def candidates(program: Program) -> Iterator[Program]:
    """Smaller programs, the ones that remove most first."""
    built = [target for target, op, *_ in program["steps"] if op not in PASSIVE]
    top = root(program)
    for node in built:  # cut at an earlier node: the smallest first
        if node != top:
            yield _pruned(program, node)
    for index, (target, op, *args) in enumerate(program["steps"]):
        if op in PASSIVE or target == top:
            continue
        for keep in dict.fromkeys(a for a in args if isinstance(a, str)):
            steps = [
                [t, o, *(keep if a == target else a for a in rest)]
                for i, (t, o, *rest) in enumerate(program["steps"])
                if i != index
            ]
            yield _pruned(_with(program, program["leaves"], steps), top)
    for name, value in program["leaves"].items():
        for simple in SIMPLE[: _number_cost(float(value))]:
            yield _with(program, {**program["leaves"], name: simple}, program["steps"])
    for index, (_, op, *args) in enumerate(program["steps"]):
        if op in PASSIVE or op == "pow":  # an exponent stays: it is the operation
            continue
        for place, arg in enumerate(args):
            if not _is_number(arg):
                continue
            for simple in SIMPLE[: _number_cost(float(arg))]:
                steps = [list(s) for s in program["steps"]]
                steps[index][2 + place] = simple
                yield _with(program, program["leaves"], steps)


def _valid(program: Program) -> bool:
    if not program["leaves"]:
        return False
    try:
        exact(program)
    except (OutsideDomain, KeyError):
        return False
    return True


FirstWrong = Callable[[list[Program]], int | None]


def shrink(
    program: Program, first_wrong: FirstWrong, *, rounds: int = 20, batch: int = 64, keep: Sequence[str] = ()
) -> tuple[Program, int]:
    """The smallest program found on which the engine is still wrong, and how many rounds it
    took; ``program`` itself when no smaller one is. Each round hands ``first_wrong`` up to
    ``batch`` smaller candidates, most reduced first (one child can run them all), and goes on
    from the first it says is still wrong; at most ``rounds`` rounds. Every candidate still has
    each operation in ``keep`` (the one a check is about)."""
    best, used = program, 0
    wanted = set(keep)
    while used < rounds:
        current = size(best)
        seen: set[str] = set()
        offered: list[Program] = []
        for candidate in candidates(best):
            key = repr((candidate["leaves"], candidate["steps"]))
            if key in seen or size(candidate) >= current or not _valid(candidate):
                continue
            if wanted and not wanted <= {op for _, op, *_ in candidate["steps"]}:
                continue
            seen.add(key)
            offered.append(candidate)
            if len(offered) >= batch:
                break
        if not offered:
            break
        used += 1
        index = first_wrong(offered)
        if index is None or not 0 <= index < len(offered):
            break
        best = offered[index]
    return best, used


def one_by_one(still_wrong: Callable[[Program], bool]) -> FirstWrong:
    """A ``first_wrong`` from a predicate on one program."""

    def first(batch: list[Program]) -> int | None:
        return next((i for i, candidate in enumerate(batch) if still_wrong(candidate)), None)

    return first
