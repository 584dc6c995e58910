"""What a graph program relies on besides Value leaves, + and *: and the same program without it.

A probe of one section must not charge a fault that another section measures. Each program
step is classified by the features it needs (a plain number as an operand, an operation a
float on the left calls, a derived operation, a float-typed exponent), and a program by
whether it uses a value on more than one path (``reuse``: its gradient must accumulate); the
rubric says which checks measure each feature. When one of those checks fails for an engine,
the probes of the other checks are judged in their feature-free form: the same mathematical
function, built from Value leaves, + and * (and ``** -1`` with an int exponent for a
quotient), each value used once (grader/reuse.py), so the fault is charged once, where it is
measured. Only a copy's gradient changes meaning: it is the share of the uses it took over.

``same_function`` proves that a rewritten program computes what the original does (values
of every node the original names, and every gradient, a copied value's as the sum of its
copies' shares), at the planned point and around it:
``grader rubric validate`` and the plan hold every fallback to it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args

from . import reuse

Program = dict[str, Any]
Step = list[Any]

Feature = Literal["number", "radd", "rsub", "rmul", "rdiv", "sub", "neg", "div", "float_exponent", "reuse"]
FEATURES: tuple[Feature, ...] = get_args(Feature)

# Taken out of a program only when a check that measures them fails, never along with another
# feature: a copy for each use hides every fault of accumulation, and the reuse checks measure
# that of + and * alone; fd.log's o = log(x); L = o * x must still catch log's own `=`.
APART: frozenset[Feature] = frozenset({"reuse"})

# A float on the left of a binary operation calls the Value's reflected method.
REFLECTED: Mapping[str, Feature] = {"add": "radd", "sub": "rsub", "mul": "rmul", "div": "rdiv"}
DERIVED: Mapping[str, Feature] = {"sub": "sub", "neg": "neg", "div": "div"}
NUMBER_OPERAND = ("add", "sub", "mul", "div")  # binary operations that wrap a plain number

# How the feedback names the form a feature's steps take without it.
PLAIN_WORDS: Mapping[Feature, str] = {
    "number": "Value leaves in place of plain numbers",
    "radd": "a Value leaf in place of a plain number on the left of +",
    "rsub": "a Value leaf in place of a plain number on the left of -",
    "rmul": "a Value leaf in place of a plain number on the left of *",
    "rdiv": "a Value leaf in place of a plain number on the left of /",
    "sub": "a + b * Value(-1) in place of a - b",
    "neg": "x * Value(-1) in place of -x",
    "div": "a * b ** -1 in place of a / b",
    "float_exponent": "int exponents in place of float ones (x ** 2, not x ** 2.0)",
    "reuse": "a fresh leaf of the same value, or a fresh copy of a node, for each further use of it, "
    "so no gradient adds up two uses",
}


def _number(arg: Any) -> bool:
    return isinstance(arg, (int, float)) and not isinstance(arg, bool)


def step_features(step: Step) -> frozenset[Feature]:
    _, op, *args = step
    found: set[Feature] = set()
    if op in NUMBER_OPERAND:
        if _number(args[0]):
            # One call of the reflected method (0.7 - x is __rsub__, whatever it builds).
            return frozenset({REFLECTED[op]})
        if _number(args[1]):
            found.add("number")
    if op in DERIVED:
        found.add(DERIVED[op])
    if op == "pow" and isinstance(args[1], float):
        found.add("float_exponent")
    return frozenset(found)


def program_features(program: Program) -> frozenset[Feature]:
    out: set[Feature] = set()
    for step in program["steps"]:
        out |= step_features(step)
    if reuse.reuses(program):
        out.add("reuse")
    return frozenset(out)


def removable(program: Program, features: Iterable[Feature]) -> frozenset[Feature]:
    """The features among ``features`` that ``without`` can take out of this program (a
    fractional exponent has no int form: that step is the measuring check's own)."""
    wanted = set(features)
    out: set[Feature] = set()
    for step in program["steps"]:
        for feature in step_features(step) & wanted:
            if feature == "float_exponent" and not float(step[3]).is_integer():
                continue
            out.add(feature)
    if "reuse" in wanted and reuse.reuses(program) and reuse.tree_form(program) is not None:
        out.add("reuse")
    return frozenset(out)


class _Names:
    """Fresh node names that no step of the program uses."""

    def __init__(self, program: Program) -> None:
        self.used = set(program["leaves"]) | {s[0] for s in program["steps"] if s[0]}

    def fresh(self, stem: str) -> str:
        name, count = stem, 1
        while name in self.used:
            count += 1
            name = f"{stem}{count}"
        self.used.add(name)
        return name


def without(program: Program, features: Iterable[Feature]) -> Program:
    """The same function with ``features`` taken out of every step (those that can be)."""
    drop = set(features)
    names = _Names(program)
    leaves: dict[str, Any] = dict(program["leaves"])
    steps: list[Step] = []

    def leaf(value: float) -> str:
        name = names.fresh("k")
        leaves[name] = float(value)
        return name

    for step in program["steps"]:
        target, op, *args = step
        if op in NUMBER_OPERAND and _number(args[0]):
            if REFLECTED[op] not in drop:
                steps.append([target, op, *args])  # a reflected operation kept is kept whole
                continue
            args[0] = leaf(args[0])
        if op in NUMBER_OPERAND:
            if _number(args[1]) and ("number" in drop or (op in DERIVED and DERIVED[op] in drop)):
                args[1] = leaf(args[1])
        if op == "sub" and "sub" in drop:
            negated = names.fresh(f"{target}_neg")
            steps += [[negated, "mul", args[1], leaf(-1.0)], [target, "add", args[0], negated]]
        elif op == "neg" and "neg" in drop:
            steps.append([target, "mul", args[0], leaf(-1.0)])
        elif op == "div" and "div" in drop:
            inverse = names.fresh(f"{target}_inv")
            steps += [[inverse, "pow", args[1], -1], [target, "mul", args[0], inverse]]
        elif op == "pow" and "float_exponent" in drop and isinstance(args[1], float) and args[1].is_integer():
            steps.append([target, op, args[0], int(args[1])])
        else:
            steps.append([target, op, *args])
    rewritten = {**program, "leaves": leaves, "steps": steps}
    if "reuse" in drop:
        # Last: the rewrites above use each value they add once, and a copy of a node that one
        # of them rewrote is built from its rewritten form.
        rewritten = reuse.tree_form(rewritten) or rewritten
    return rewritten


# --- proving two programs compute the same function -------------------------------------------


class _Undefined(ValueError):
    """Outside an operation's domain, or not finite."""


def _apply(op: str, a: float, b: float) -> float:
    try:
        if op == "add":
            value = a + b
        elif op == "sub":
            value = a - b
        elif op == "mul":
            value = a * b
        elif op == "div":
            value = a / b
        elif op == "pow":
            value = a**b
        elif op == "neg":
            value = -a
        elif op == "tanh":
            value = math.tanh(a)
        elif op == "relu":
            value = a if a > 0 else 0.0
        elif op == "exp":
            value = math.exp(a)
        elif op == "log":
            value = math.log(a)
        else:
            raise _Undefined(f"unknown operation {op!r}")
    except (ValueError, OverflowError, ZeroDivisionError) as error:
        raise _Undefined(str(error)) from None
    if isinstance(value, complex) or not math.isfinite(value):
        raise _Undefined("not a finite real number")
    return float(value)


def _local(op: str, a: float, b: float, out: float) -> tuple[float, float]:
    return {
        "add": (1.0, 1.0),
        "sub": (1.0, -1.0),
        "mul": (b, a),
        "div": (1.0 / b, -a / (b * b)) if b else (math.nan, math.nan),
        "pow": (b * a ** (b - 1) if a or b >= 1 else math.nan, 0.0),
        "neg": (-1.0, 0.0),
        "tanh": (1.0 - out * out, 0.0),
        "relu": (1.0 if a > 0 else 0.0, 0.0),
        "exp": (out, 0.0),
        "log": (1.0 / a if a else math.nan, 0.0),
    }[op]


def simulate(program: Program, leaves: Mapping[str, float] | None = None) -> dict[str, float]:
    """What a correct engine holds after the program: ``name.data`` and ``name.grad`` of every
    node, with backward() accumulating into every node reachable from its root and an SGD
    step reading the gradients of the backward() before it."""
    values = {name: float(v) for name, v in (leaves if leaves is not None else program["leaves"]).items()}
    grads = dict.fromkeys(values, 0.0)
    built: list[tuple[str, str, list[Any]]] = []
    for target, op, *args in program["steps"]:
        if op == "backward":
            seeds = dict.fromkeys(values, 0.0)
            seeds[args[0]] = 1.0
            for name, kind, operands in reversed(built):
                numbers = [values[a] if isinstance(a, str) else float(a) for a in operands] + [0.0]
                local = _local(kind, numbers[0], numbers[1], values[name])
                for arg, d in zip(operands, local, strict=False):
                    if isinstance(arg, str):
                        seeds[arg] += d * seeds[name]
            for name, g in seeds.items():
                grads[name] = 1.0 if name == args[0] else grads[name] + g
            continue
        if op == "sgd":
            values[target] = values[args[0]] - float(args[1]) * grads[args[0]]
        else:
            numbers = [values[a] if isinstance(a, str) else float(a) for a in args] + [0.0]
            values[target] = _apply(op, numbers[0], numbers[1])
            built.append((target, op, list(args)))
        grads[target] = 0.0
    if not all(math.isfinite(g) for g in grads.values()):
        raise _Undefined("a gradient is not finite")
    return {**{f"{n}.data": v for n, v in values.items()}, **{f"{n}.grad": g for n, g in grads.items()}}


# Points around the planned one where the two programs must also agree: agreeing at one point
# could be a coincidence of the inputs; agreeing on a neighbourhood is the same function.
_NUDGES = (0.0, 0.137, -0.211, 0.353)


def same_function(original: Program, rewritten: Program) -> str:
    """Why ``rewritten`` is not ``original`` ("" when it is): every node and leaf the original
    names must hold the same value and gradient in both, at the planned inputs and near them;
    leaves the rewrite adds must be constants of its own or copies (grader/reuse.py) that hold
    their original's value wherever it is, and an original's gradient is its own plus its
    copies' (each use's share, added up where the original accumulated them)."""
    missing = [n for n in original["leaves"] if n not in rewritten["leaves"]]
    if missing:
        return f"the rewritten program has no leaf {missing[0]}"
    copied = reuse.copies(rewritten)
    named = set(original["leaves"]) | {s[0] for s in original["steps"] if s[0]}
    built = set(rewritten["leaves"]) | {s[0] for s in rewritten["steps"] if s[0]}
    stray = [c for c, o in copied.items() if c in named or c not in built or o not in named]
    if stray:
        return f"{stray[0]} is not a new copy of a value the original names"
    added = [n for n in rewritten["leaves"] if n not in original["leaves"]]
    for name in added:  # a copied leaf starts where its original does: the plan sends these inputs
        of = copied.get(name)
        if of in original["leaves"] and float(rewritten["leaves"][name]) != float(original["leaves"][of]):
            return f"{name} is {rewritten['leaves'][name]!r} but the {of} it copies is {original['leaves'][of]!r}"
    checked = 0
    for index, nudge in enumerate(_NUDGES):
        point = {
            name: float(value) * (1.0 + nudge * (0.5 + 0.25 * (i % 3)))
            for i, (name, value) in enumerate(original["leaves"].items())
        }
        try:
            want = simulate(original, point)
        except _Undefined:
            if index == 0:
                return "the original program is undefined at its own inputs"
            continue
        # A copied leaf moves with its original; a constant stays.
        extra = {n: point[copied[n]] if copied.get(n) in point else rewritten["leaves"][n] for n in added}
        try:
            got = _summed(simulate(rewritten, {**point, **extra}), copied)
        except _Undefined as error:
            return f"the rewritten program is undefined where the original is not ({error})"
        for copy, of in copied.items():
            if abs(got[f"{copy}.data"] - want[f"{of}.data"]) > 1e-9 + 1e-9 * abs(want[f"{of}.data"]):
                return f"{copy} is {got[f'{copy}.data']!r} but the {of} it copies is {want[f'{of}.data']!r}"
        for key, value in want.items():
            other = got.get(key)
            if other is None:
                return f"the rewritten program has no {key}"
            if abs(other - value) > 1e-9 + 1e-9 * abs(value):
                return f"{key} is {other!r} in the rewritten program but {value!r} in the original"
        checked += 1
    return "" if checked else "the programs could not be compared at any point"


def _summed(values: dict[str, float], copied: Mapping[str, str]) -> dict[str, float]:
    """Each original's gradient with its copies' shares added: what the original accumulates."""
    out = dict(values)
    for original, its in reuse.shares(copied).items():
        out[f"{original}.grad"] = out.get(f"{original}.grad", 0.0) + sum(values[f"{c}.grad"] for c in its)
    return out
