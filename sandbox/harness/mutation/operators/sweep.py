"""Bugs in the backward pass itself: it walks the topological order forwards or drops the sort's
visited check (TOPO), or seeds the output's or a new node's gradient wrong (SEED).
"""

from __future__ import annotations

import ast

from ...probes.facts import NotApplicable
from .edits import _const, _lines, _number, _walk, replace
from .targets import Engine, Scope, Transform, _is_grad, self_name


def _not_reversed(engine: Engine) -> list[int]:
    for node in _walk(engine.sweep_scopes()):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "reversed":
            if len(node.args) == 1:
                replace(engine.tree, {id(node): node.args[0]})
                return _lines(node)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            step = node.slice.step
            if step is not None and _number(step) == -1.0 and node.slice.lower is None and node.slice.upper is None:
                replace(engine.tree, {id(node): node.value})
                return _lines(node)
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr == "reverse"
        ):
            replace(engine.tree, {id(node): None})
            return _lines(node)
        if isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Name) and node.func.id == "sorted")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "sort")
        ):
            flag = next((k for k in node.keywords if k.arg == "reverse"), None)
            if flag is not None and isinstance(flag.value, ast.Constant) and flag.value.value is True:
                flag.value = ast.copy_location(ast.Constant(False), flag.value)
                return _lines(node)
    raise NotApplicable("backward() never reverses its topological order (reversed(...), [::-1] or .reverse())")


def _no_visited(engine: Engine) -> list[int]:
    swaps: dict[int, ast.AST | None] = {}
    for node in _walk(engine.sweep_scopes()):
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and not isinstance(node.comparators[0], (ast.Tuple, ast.List, ast.Set, ast.Constant))
        ):
            swaps[id(node)] = ast.copy_location(ast.Constant(isinstance(node.ops[0], ast.NotIn)), node)
    if not swaps:
        raise NotApplicable("backward() has no `in visited` membership test")
    lines = _lines(*(n for n in _walk(engine.sweep_scopes()) if id(n) in swaps))
    replace(engine.tree, swaps)
    return lines


def _seed_assignments(method: Scope, me: str, value: float) -> list[tuple[ast.stmt, ast.expr]]:
    """``me.grad = value`` (``me.grad: float = value``, ``me.data, me.grad = d, value``) in
    ``method``: (the statement, the value's node)."""
    found: list[tuple[ast.stmt, ast.expr]] = []
    for n in ast.walk(method):
        pairs: list[tuple[ast.expr, ast.expr]] = []
        if isinstance(n, ast.Assign) and len(n.targets) == 1:
            target = n.targets[0]
            if (
                isinstance(target, ast.Tuple)
                and isinstance(n.value, ast.Tuple)
                and len(target.elts) == len(n.value.elts)
            ):
                pairs = list(zip(target.elts, n.value.elts, strict=True))
            else:
                pairs = [(target, n.value)]
        elif isinstance(n, ast.AnnAssign) and n.value is not None:
            pairs = [(n.target, n.value)]
        for target, item in pairs:
            if (
                _is_grad(target)
                and isinstance(target.value, ast.Name)  # type: ignore[attr-defined]
                and target.value.id == me  # type: ignore[attr-defined]
                and _number(item) == value
            ):
                found.append((n, item))  # type: ignore[arg-type]
    return found


def _reseed(method_name: str, old: float, new: float, missing: str) -> Transform:
    """``self.grad = old`` becomes ``self.grad = new`` in ``method_name`` (for backward(), in
    the module-level function it hands ``self`` to, when the seed is there)."""

    def transform(engine: Engine) -> list[int]:
        method = engine.method(method_name)
        found = _seed_assignments(method, self_name(method), old)
        if not found and method_name == "backward":
            for scope in engine.sweep_scopes()[1:]:
                me = engine.sweep_binding(scope)
                if me is not None:
                    found += _seed_assignments(scope, me, old)
        if not found:
            raise NotApplicable(missing)
        replace(engine.tree, {id(item): _const(new, item) for _, item in found})
        return _lines(*(statement for statement, _ in found))

    return transform
