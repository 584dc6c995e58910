"""Graph programs: the tiny language probes are written in, and trusted float math for them.

A rubric writes steps as ``"n1 = a * b"``, ``"n3 = relu(d)"``, ``"backward(L)"`` or
``"w1s = sgd(w1, 0.1)"``. They compile to ``[target, op, *args]`` lists (args are node names or
number literals), which the sandbox executes with the student's engine and ``evaluate``
executes with plain floats from ``math``, the independent oracle of the FD checks.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from typing import Any

from sandbox.harness import syntax
from sandbox.harness.probes.programs import SYMBOLS, describe_step

Step = list[Any]
Program = dict[str, Any]

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow"}
UNARY = ("tanh", "relu", "exp", "log")


def _operand(node: ast.expr, known: set[str], text: str) -> str | float:
    if isinstance(node, ast.Name):
        if node.id not in known:
            raise ValueError(f"'{text}': '{node.id}' is used before it is defined")
        return node.id
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _operand(node.operand, known, text)
        if isinstance(inner, float):
            return -inner
    raise ValueError(f"'{text}': operands are node names or numbers, one operation per step")


def compile_steps(leaves: Sequence[str], steps: Sequence[str]) -> list[Step]:
    known = set(leaves)
    out: list[Step] = []
    for text in steps:
        try:
            tree = syntax.parse(text.strip()).body
        except SyntaxError:
            raise ValueError(f"'{text}' is not a step") from None
        if len(tree) != 1:
            raise ValueError(f"'{text}': one step per line")
        stmt = tree[0]
        if (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and getattr(stmt.value.func, "id", "") == "backward"
        ):
            if len(stmt.value.args) != 1 or stmt.value.keywords:
                raise ValueError(f"'{text}': backward takes exactly one node")
            root = _operand(stmt.value.args[0], known, text)
            if not isinstance(root, str):
                raise ValueError(f"'{text}': backward needs a node, not a number")
            out.append(["", "backward", root])
            continue
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            raise ValueError(f"'{text}' must look like 'name = a * b', 'name = relu(a)' or 'backward(name)'")
        target, value = stmt.targets[0].id, stmt.value
        if target in known:
            raise ValueError(f"'{text}': '{target}' is already defined")
        if isinstance(value, ast.BinOp) and type(value.op) in _BINOPS:
            op = _BINOPS[type(value.op)]
            step: Step = [target, op, _operand(value.left, known, text), _operand(value.right, known, text)]
            if op == "pow" and not isinstance(step[3], float):
                raise ValueError(f"'{text}': the exponent must be a number")
        elif isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
            step = [target, "neg", _operand(value.operand, known, text)]
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in UNARY:
            if len(value.args) != 1 or value.keywords:
                raise ValueError(f"'{text}': {value.func.id} takes exactly one operand")
            step = [target, value.func.id, _operand(value.args[0], known, text)]
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "sgd":
            if len(value.args) != 2 or value.keywords:
                raise ValueError(f"'{text}': sgd takes a node and a learning rate")
            param, rate = (_operand(a, known, text) for a in value.args)
            step = [target, "sgd", param, rate]
        else:
            raise ValueError(f"'{text}': unsupported operation")
        if all(isinstance(a, float) for a in step[2:]) and step[1] != "sgd":
            raise ValueError(f"'{text}': at least one operand must be a node")
        known.add(target)
        out.append(step)
    return out


def describe(program: Program) -> str:
    """The program as the Python a student would write; shown as 'what was built'."""
    lines = [f"{name} = Value({value!r})" for name, value in program["leaves"].items()]
    lines += [describe_step(step) for step in program["steps"]]
    return "\n".join(lines)


def program_root(program: Program) -> str:
    """The node backward() starts from (else the last node built)."""
    roots = [args[0] for _, op, *args in program["steps"] if op == "backward"]
    if roots:
        return str(roots[0])
    targets = [target for target, op, *_ in program["steps"] if op != "backward"]
    return str(targets[-1]) if targets else str(next(iter(program["leaves"])))


def operand_text(arg: str | float) -> str:
    return arg if isinstance(arg, str) else f"{arg:g}"


def formula(op: str, operands: Sequence[str]) -> str:
    """One step's right-hand side as written: "a * b", "relu(d)", "-x"."""
    if op in SYMBOLS:
        return f"{operands[0]} {SYMBOLS[op]} {operands[1]}"
    if op == "neg":
        return f"-{operands[0]}"
    if op == "sgd":
        return f"{operands[0]} - {operands[1]}·{operands[0]}.grad"
    return f"{op}({operands[0]})"


def expression(program: Program) -> str:
    """The root as one expression of the leaves: "log(exp(x))", "(x * y) * 2.3"."""
    made = {target: (op, args) for target, op, *args in program["steps"] if op not in ("backward", "sgd")}

    def inline(name: str, outer: bool) -> str:
        if name not in made:
            return name
        op, args = made[name]
        text = formula(op, [inline(a, False) if isinstance(a, str) else operand_text(a) for a in args])
        return f"({text})" if op in SYMBOLS and not outer else text

    return inline(program_root(program), True)


def consumers(program: Program) -> dict[str, set[str]]:
    """For each node, the nodes computed from it (the ones whose backward must run first)."""
    out: dict[str, set[str]] = {name: set() for name in program["leaves"]}
    for target, op, *args in program["steps"]:
        if op in ("backward", "sgd"):
            continue
        out.setdefault(target, set())
        for arg in args:
            if isinstance(arg, str):
                out[arg].add(target)
    return out


# --- trusted float math ---------------------------------------------------------------------


def _float_op(op: str, args: list[float]) -> float:
    if op == "add":
        return args[0] + args[1]
    if op == "sub":
        return args[0] - args[1]
    if op == "mul":
        return args[0] * args[1]
    if op == "div":
        return args[0] / args[1]
    if op == "pow":
        result = args[0] ** args[1]
        if isinstance(result, complex):
            raise ValueError("a negative base to a fractional power is not real")
        return float(result)
    if op == "neg":
        return -args[0]
    if op == "tanh":
        return math.tanh(args[0])
    if op == "relu":
        return args[0] if args[0] > 0 else 0.0
    if op == "exp":
        return math.exp(args[0])
    if op == "log":
        return math.log(args[0])
    raise ValueError(op)


def evaluate(program: Program, leaves: dict[str, float] | None = None) -> dict[str, float]:
    """Every node's value in float math; raises ValueError/OverflowError outside the domain."""
    values = dict(leaves if leaves is not None else program["leaves"])
    for target, op, *args in program["steps"]:
        if op == "backward":
            continue
        if op == "sgd":
            raise ValueError("sgd steps have no float-math meaning without gradients")
        operands = [values[a] if isinstance(a, str) else float(a) for a in args]
        result = _float_op(op, operands)
        if isinstance(result, complex) or not math.isfinite(result):
            raise ValueError(f"{target} is not a finite real number")
        values[target] = result
    return values


def relu_inputs(program: Program, values: dict[str, float]) -> list[float]:
    return [
        values[args[0]] if isinstance(args[0], str) else float(args[0])
        for _, op, *args in program["steps"]
        if op == "relu"
    ]


def root_of(program: Program) -> str:
    """The root for finite differences, which need exactly one backward() step."""
    if sum(1 for _, op, *_ in program["steps"] if op == "backward") != 1:
        raise ValueError("finite differences need exactly one backward() step")
    return program_root(program)


def central_differences(program: Program, step_scale: float = 1e-6) -> dict[str, float]:
    """d(root)/d(leaf) for every leaf, by centered differences of the float program."""
    root = root_of(program)
    base = dict(program["leaves"])
    grads: dict[str, float] = {}
    for name, x in base.items():
        h = step_scale * max(1.0, abs(x))
        plus = evaluate(program, {**base, name: x + h})[root]
        minus = evaluate(program, {**base, name: x - h})[root]
        grads[name] = (plus - minus) / (2 * h)
    return grads


def math_expectation(program: Program) -> dict[str, float]:
    """Forward values from float math, leaf gradients from centered differences."""
    values = evaluate(program)
    expected = {f"{name}.data": value for name, value in values.items()}
    expected.update({f"{name}.grad": g for name, g in central_differences(program).items()})
    return expected
