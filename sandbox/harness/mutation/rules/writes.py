"""What a gradient write looks like: ``x.grad += v``, ``x.grad = x.grad + v`` or ``v + x.grad``,
or a call of an accumulator function (``Value._acc(x, v)``); where they are in a scope; the
operations whose rules are sought; small helpers over syntax trees.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .program import Program


# Operations with a backward rule of their own (the catalogue's ACC, CHAIN and LOC targets).
BACKWARD_OPS = ("__add__", "__mul__", "__pow__", "relu", "tanh", "exp", "log")
# Operations whose nodes must not share a backward operation's tag (the guard tells them apart).
OTHER_OPS = ("__sub__", "__truediv__", "__neg__", "__rsub__", "__rtruediv__")
# Methods that are operations or the sweep: following calls stops there (using another
# operation is composition, not sharing its rule).
_STOPS = frozenset(
    {*BACKWARD_OPS, *OTHER_OPS, "__radd__", "__rmul__", "__rpow__", "backward", "__init__", "__iadd__", "__imul__"}
)


def is_grad(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def _load(node: ast.expr) -> ast.expr:
    clone = copy.deepcopy(node)
    for sub in ast.walk(clone):
        if hasattr(sub, "ctx"):
            sub.ctx = ast.Load()
    return clone


def statement_write(node: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """(target, increment) of ``x.grad += v``, ``x.grad = x.grad + v`` or ``x.grad = v + x.grad``."""
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and isinstance(node.target, ast.Attribute):
        if node.target.attr == "grad":
            return node.target.value, node.value
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and is_grad(node.targets[0])
        and isinstance(node.value, ast.BinOp)
        and isinstance(node.value.op, ast.Add)
    ):
        target = ast.dump(_load(node.targets[0]))
        if ast.dump(node.value.left) == target:
            return node.targets[0].value, node.value.right  # type: ignore[attr-defined]
        if ast.dump(node.value.right) == target:
            return node.targets[0].value, node.value.left  # type: ignore[attr-defined]
    return None


@dataclass(eq=False)
class Write:
    """One accumulation into a node's gradient: a statement, or a call of an accumulator
    function (``Value._acc(x, v)``, whose body is ``node.grad += g``)."""

    anchor: ast.AST  # the statement, or the call when it is not a statement of its own
    target: ast.expr  # x in x.grad
    value: ast.expr  # what is added
    guard: ast.expr | None = None  # shared code: true exactly for this operation's nodes

    @property
    def is_call(self) -> bool:
        return isinstance(self.anchor, ast.Call) or (
            isinstance(self.anchor, ast.Expr) and isinstance(self.anchor.value, ast.Call)
        )

    @property
    def call(self) -> ast.Call:
        node = self.anchor.value if isinstance(self.anchor, ast.Expr) else self.anchor
        assert isinstance(node, ast.Call)
        return node


def _contains(outer: ast.AST, node: ast.AST) -> bool:
    return any(n is node for n in ast.walk(outer))


def _pairs(targets: Sequence[ast.expr], value: ast.expr) -> Iterator[tuple[ast.expr, ast.expr]]:
    """(target, value) pairs of an assignment, tuple unpacking included."""
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
            if len(target.elts) == len(value.elts):
                yield from zip(target.elts, value.elts, strict=True)
        else:
            yield target, value


def _shallow_calls(fn: ast.AST) -> Iterator[ast.Call]:
    """Calls in ``fn``'s own body (a lambda's body included), not in functions nested in it."""
    body: list[ast.AST] = [fn.body] if isinstance(fn, ast.Lambda) else list(getattr(fn, "body", []))
    stack = body
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.append(child)


def _accumulator(fn: ast.FunctionDef) -> tuple[int, int] | None:
    """(target, increment) parameter positions when ``fn``'s body is one ``p.grad += q``."""
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1:
        return None
    found = statement_write(body[0])
    if found is None:
        return None
    target, value = found
    params = [a.arg for a in fn.args.args]
    if isinstance(target, ast.Name) and isinstance(value, ast.Name) and {target.id, value.id} <= set(params):
        if target.id != value.id:
            return params.index(target.id), params.index(value.id)
    return None


def writes_in(program: Program, scope: ast.AST) -> list[Write]:
    """Every accumulation in ``scope``: ``x.grad += v`` statements and accumulator calls, in source order."""
    found: list[Write] = []
    statements = {id(n.value): n for n in ast.walk(scope) if isinstance(n, ast.Expr)}
    for node in ast.walk(scope):
        plain = statement_write(node)
        if plain is not None:
            found.append(Write(node, plain[0], plain[1]))
        elif isinstance(node, ast.Call):
            write = accumulator_call(program, node, statements.get(id(node)))
            if write is not None:
                found.append(write)
    return sorted(found, key=lambda w: (getattr(w.anchor, "lineno", 0), getattr(w.anchor, "col_offset", 0)))


def accumulator_call(program: Program, call: ast.Call, statement: ast.stmt | None = None) -> Write | None:
    """``acc(x, v)`` as a write (``statement``: the expression statement it is, if it is one)."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if name is None or name not in program.accumulators or call.keywords:
        return None
    fn = program.methods.get(name) if isinstance(func, ast.Attribute) else program.functions.get(name)
    if fn is None:
        return None
    args: list[ast.expr] = list(call.args)
    if isinstance(func, ast.Attribute) and fn is program.methods.get(name) and not _static(fn):
        receiver = func.value
        if not (isinstance(receiver, ast.Name) and receiver.id == program.cls.name):
            args = [receiver, *args]  # a bound call: the receiver is the first parameter
    if any(isinstance(a, ast.Starred) for a in args):
        return None
    target, value = program.accumulators[name]
    if max(target, value) >= len(args):
        return None
    return Write(statement if statement is not None else call, args[target], args[value])


def _static(fn: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
