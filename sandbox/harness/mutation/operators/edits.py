"""Small edits of a syntax tree, and of the gradient writes an operator changes.

Nodes are swapped by identity (``replace``, from ``splice``). A write that several operations
share carries a guard: it is edited for the nodes of this operation only, every other node
keeping it as written.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

from .. import splice
from ..rules.writes import Write
from .targets import Engine, Scope, _as_load, set_increment

# --- small tree edits ------------------------------------------------------------------------------


replace = splice.replace  # node swaps by identity (in splice: the module that edits trees)


def _walk(scopes: list[Scope]) -> Iterator[ast.AST]:
    for scope in scopes:
        yield from ast.walk(scope)


def _const(value: float, where: ast.AST) -> ast.expr:
    """A numeric literal as the parser spells it (``-2.0`` is a minus applied to ``2.0``)."""
    node = ast.UnaryOp(ast.USub(), ast.Constant(-value)) if value < 0 else ast.Constant(value)
    return ast.copy_location(node, where)


def _number(node: ast.AST) -> float | None:
    """The value of a numeric literal, including ``-1`` written as a unary minus."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    return None


def _lines(*nodes: ast.AST) -> list[int]:
    return sorted({getattr(n, "lineno", 0) for n in nodes if getattr(n, "lineno", 0)})


def _edit_expression(value: ast.expr, swaps: dict[int, ast.AST | None]) -> ast.expr:
    """``value`` with ``swaps`` made in it (the node itself may be one of them)."""
    if id(value) in swaps:
        new = swaps[id(value)]
        assert isinstance(new, ast.expr)
        return new
    holder = ast.Module(body=[ast.Expr(value)], type_ignores=[])
    replace(holder, swaps)
    result = holder.body[0]
    assert isinstance(result, ast.Expr)
    return result.value


# --- writes: the accumulations an operator edits -----------------------------------------------------


def _grad(write: Write, ctx: ast.expr_context) -> ast.Attribute:
    anchor = write.anchor
    if isinstance(ctx, ast.Store) and write.guard is None:
        if isinstance(anchor, ast.AugAssign):
            return anchor.target  # type: ignore[return-value]
        if isinstance(anchor, ast.Assign):
            return anchor.targets[0]  # type: ignore[return-value]
    return ast.Attribute(value=_as_load(write.target), attr="grad", ctx=ctx)


def _setattr(write: Write, value: ast.expr) -> ast.expr:
    func = ast.Name("setattr", ast.Load())
    return ast.Call(func, [_as_load(write.target), ast.Constant("grad"), value], [])


def _usual(write: Write) -> ast.expr:
    """What the write stores in ``x.grad`` as written (``x.grad + v``)."""
    if isinstance(write.anchor, ast.Assign):
        return write.anchor.value
    return ast.BinOp(_grad(write, ast.Load()), ast.Add(), write.value)


def _stored(write: Write, value: ast.expr) -> ast.AST:
    """The write made to store ``value`` in ``x.grad``; for a shared write only when the node is
    this operation's (the guard), every other node keeping the write as it was."""
    anchor = write.anchor
    if write.guard is not None:
        guard = copy.deepcopy(write.guard)
        if write.is_call:
            choice = ast.IfExp(guard, _setattr(write, value), write.call)
            return ast.copy_location(ast.Expr(choice) if isinstance(anchor, ast.Expr) else choice, anchor)
        new = ast.Assign(targets=[_grad(write, ast.Store())], value=ast.IfExp(guard, value, _usual(write)))
        return ast.copy_location(new, anchor)
    if isinstance(anchor, ast.Call):  # inside a lambda: an expression
        return ast.copy_location(_setattr(write, value), anchor)
    return ast.copy_location(ast.Assign(targets=[_grad(write, ast.Store())], value=value), anchor)


def _assigned(write: Write) -> ast.AST:
    """``x.grad = v`` instead of ``x.grad += v``."""
    return _stored(write, write.value)


def _subtracted(write: Write) -> ast.AST:
    """``x.grad -= v`` instead of ``x.grad += v``."""
    if write.guard is None and not isinstance(write.anchor, ast.Call):
        new = ast.AugAssign(target=_grad(write, ast.Store()), op=ast.Sub(), value=write.value)
        return ast.copy_location(new, write.anchor)
    return _stored(write, ast.BinOp(_grad(write, ast.Load()), ast.Sub(), write.value))


def _dropped(write: Write) -> ast.AST | None:
    """No write at all (None: the statement goes)."""
    if write.guard is None:
        if isinstance(write.anchor, ast.Call):
            return ast.copy_location(ast.Constant(None), write.anchor)
        return None
    return _stored(write, _grad(write, ast.Load()))


def _edit_increments(engine: Engine, writes: list[Write], swaps: dict[int, ast.AST | None]) -> None:
    """Make ``swaps`` (nodes inside the writes' increments); a shared write keeps its increment
    for every other operation (``edited if guard else as written``)."""
    for write in writes:
        inside = {k: v for k, v in swaps.items() if any(id(n) == k for n in ast.walk(write.value))}
        if not inside:
            continue
        for key in inside:
            swaps.pop(key)
        if write.guard is None:
            set_increment(write, _edit_expression(write.value, inside))
        else:
            as_written = copy.deepcopy(write.value)
            edited = _edit_expression(write.value, inside)
            set_increment(write, ast.IfExp(copy.deepcopy(write.guard), edited, as_written))
    replace(engine.tree, swaps)


def _partial_swaps(engine: Engine, swaps: dict[int, ast.AST | None]) -> None:
    replace(engine.tree, swaps)
