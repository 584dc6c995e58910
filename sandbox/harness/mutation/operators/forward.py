"""Bugs in the forward value of derived operations (FWD): ``-x``, ``a - b``, ``a / b`` and the
reflected operators compute something else, whether the method spells out its operator, aliases
another method, or hands its operands on to a helper.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ... import syntax
from ...probes.facts import NotApplicable
from ..rules.find import builds_node
from .edits import _const, _lines, _number, replace
from .targets import Engine, Transform, _operator_call, _power

# --- forward definitions of derived operations ---


def _forward_walk(body: ast.AST) -> Iterator[ast.AST]:
    """``body``'s nodes, without the lambdas it hands to calls (local derivatives, not the forward value)."""
    stack = [body]
    while stack:
        node = stack.pop(0)
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Lambda) and child is not body:
                continue
            stack.append(child)


_FUNCTION = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.Pow: "pow"}


def _drop_negation(method: str, fallback: tuple[type[ast.operator], type[ast.operator]] | None = None) -> Transform:
    """Remove the first minus sign in ``method`` (``self * -1`` -> ``self * 1``, ``operator.neg(x)``
    -> ``x``); else swap an operator."""

    def transform(engine: Engine) -> list[int]:
        body = engine.method(method)
        for node in _forward_walk(body):
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
                replace(engine.tree, {id(node): node.operand})
                return _lines(node)
            value = _number(node)
            if isinstance(node, ast.Constant) and value is not None and value < 0:
                node.value = -value
                return _lines(node)
            if _operator_call(node, "neg") and len(node.args) == 1:  # type: ignore[attr-defined]
                replace(engine.tree, {id(node): node.args[0]})  # type: ignore[attr-defined]
                return _lines(node)
        if fallback:
            return _swap_operator(method, *fallback)(engine)
        raise NotApplicable(f"{method} has no minus sign")

    return transform


def _swap_operator(method: str, old: type[ast.operator], new: type[ast.operator]) -> Transform:
    """Swap the first ``old`` operator in ``method`` for ``new``; ``x.__add__(y)`` and
    ``operator.add(x, y)`` count as ``x + y``."""

    def transform(engine: Engine) -> list[int]:
        alias = _alias_of(engine, method)
        if alias is not None and alias.value.id == _DUNDER[old]:  # type: ignore[attr-defined]
            # `__radd__ = __add__`: the reflected operation is the forward one; the bug makes it
            # call the other operator instead, as the edited method would.
            alias.value = ast.fix_missing_locations(ast.copy_location(_delegate(_DUNDER[new]), alias.value))
            return _lines(alias)
        for node in _forward_walk(engine.method(method)):
            if isinstance(node, ast.BinOp) and isinstance(node.op, old):
                node.op = new()
                return _lines(node)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == _DUNDER[old]:
                node.func.attr = _DUNDER[new]
                return _lines(node)
            if _operator_call(node, _FUNCTION[old]):
                assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                node.func.attr = _FUNCTION[new]
                return _lines(node)
        raise NotApplicable(f"{method} has no `{_SYMBOL[old]}`")

    return transform


def _delegate(dunder: str) -> ast.Lambda:
    """``lambda self, other: self.<dunder>(other)``."""
    arguments = ast.arguments(
        posonlyargs=[], args=[ast.arg("self"), ast.arg("other")], kwonlyargs=[], kw_defaults=[], defaults=[]
    )
    call = ast.Call(
        ast.Attribute(ast.Name("self", ast.Load()), dunder, ast.Load()), [ast.Name("other", ast.Load())], []
    )
    return ast.Lambda(arguments, call)


def _alias_of(engine: Engine, method: str) -> ast.Assign | None:
    """``method = other_method`` in the class body (the last such binding), when that is how the
    class defines ``method``."""
    if method in engine.methods:
        return None
    found = None
    for node in engine.cls.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == method
            and isinstance(node.value, ast.Name)
        ):
            found = node
    return found


_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_DUNDER = {ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.Div: "__truediv__", ast.Pow: "__pow__"}


def _div_square(engine: Engine) -> list[int]:
    body = engine.method("__truediv__")
    for node in _forward_walk(body):
        power = _power(node)
        if power is not None and _number(power[1]) == -1.0:
            replace(engine.tree, {id(power[1]): _const(-2.0, power[1])})
            return _lines(node)
    return _swap_operator("__truediv__", ast.Div, ast.Mult)(engine)


def _arithmetic(node: ast.AST) -> bool:
    """Does the forward value of ``node`` spell out an operator (``+``, ``-x``, ``x.__add__``, ``operator.add``)?"""
    for sub in _forward_walk(node):
        if isinstance(sub, ast.BinOp) or (isinstance(sub, ast.UnaryOp) and isinstance(sub.op, ast.USub)):
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
            if sub.func.attr in _DUNDER.values() or sub.func.attr == "__neg__":
                return True
            if _operator_call(sub, *_FUNCTION.values(), "neg"):
                return True
    return False


def _rewritten(method: str, template: str, needs: tuple[str, ...]) -> Callable[[Transform], Transform]:
    """Return ``template`` built from the engine's own operators: the bug, whatever the form, for
    a method that computes its result without spelling out an operator (it hands its operands to
    a helper, a table or a module function: ``return _apply("sub", self, o)``) when the operator
    sought is not found, and first of all for a method that builds its node itself with a
    backward rule of its own (editing only its forward value would leave that rule as it was).
    A method that spells out operators but not the one sought keeps NotApplicable."""

    def wrap(primary: Transform) -> Transform:
        def transform(engine: Engine) -> list[int]:
            site = _returned(engine, method)
            primitive = site is not None and builds_node(engine.program, method)
            try:
                if not primitive:
                    return primary(engine)
                raise NotApplicable(f"{method} builds its node itself")
            except NotApplicable as why:
                if site is None or (_arithmetic(site[1]) and not primitive):
                    raise why from None
                holder, expr, params = site
                missing = [n for n in needs if not _binds(engine, n)]
                if missing or len(params) < template.count("{other}") + 1:
                    if primitive:
                        return primary(engine)
                    raise why from None
                text = template.format(self=params[0], other=params[1] if len(params) > 1 else "")
                parsed = syntax.parse(text).body[0]
                assert isinstance(parsed, ast.Expr)
                new: ast.expr = parsed.value
                if isinstance(holder, ast.Assign):  # `__sub__ = _binary(...)`: a method of its own
                    args = [ast.arg(p) for p in ("self", "other")[: len(params)]]
                    new = ast.Lambda(ast.arguments([], args, None, [], [], None, []), new)
                replace(engine.tree, {id(expr): ast.copy_location(new, expr)})
                return _lines(expr)

        return transform

    return wrap


def _returned(engine: Engine, method: str) -> tuple[ast.AST, ast.expr, list[str]] | None:
    """(holder, the expression the method returns, its parameters) when it is one expression."""
    if method in engine.methods:
        fn = engine.methods[method]
        returns = [n for n in _own_statements(fn) if isinstance(n, ast.Return)]
        last = fn.body[-1] if fn.body else None
        if len(returns) == 1 and returns[0] is last and isinstance(last, ast.Return) and last.value is not None:
            return fn, last.value, [a.arg for a in fn.args.args]
        return None
    for node in reversed(engine.cls.body):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == method for t in node.targets):
            if len(node.targets) != 1:
                return None
            if isinstance(node.value, ast.Lambda):
                return node.value, node.value.body, [a.arg for a in node.value.args.args]
            if isinstance(node.value, ast.Call) and engine.program.factory_call(method) is node.value:
                arity = 1 if method == "__neg__" else 2
                return node, node.value, ["self", "other"][:arity]
            return None
    return None


def _own_statements(fn: ast.FunctionDef) -> Iterator[ast.AST]:
    """The nodes of ``fn``'s body, not those of functions, lambdas or classes defined in it."""
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        yield node
        stack += [
            c for c in ast.iter_child_nodes(node) if not isinstance(c, (ast.FunctionDef, ast.Lambda, ast.ClassDef))
        ]


def _binds(engine: Engine, name: str) -> bool:
    return name in engine.methods or any(
        isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
        for n in engine.cls.body
    )
