"""Bugs in the local derivatives of pow, relu, tanh, exp and log (LOC), wherever each is written:
in the operation's private backward code, or in the partials it passes to code it shares.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable

from ...probes.facts import NotApplicable
from ..rules.find import Partial, Rule
from ..rules.values import Datas, Field, Operand
from ..rules.writes import Write
from .accumulation import _upstream_dropped
from .edits import _edit_increments, _lines, _number, _walk, replace
from .targets import (
    Engine,
    Scope,
    _as_load,
    _operator_call,
    _power,
    _within,
    increment,
    self_name,
    upstream_owners,
)


def _input_data(engine: Engine, rule: Rule, partial: Partial) -> ast.expr | None:
    """An expression, valid where ``partial`` is written, for the operand's value (``x.data``)."""
    for param, role in partial.roles.items():
        if role == Field(partial.operand, "data"):
            return ast.Name(param, ast.Load())
        if role == Datas():
            return ast.Subscript(ast.Name(param, ast.Load()), ast.Constant(partial.operand), ast.Load())
    for param, role in partial.roles.items():
        if role == Operand(partial.operand):
            return ast.Attribute(ast.Name(param, ast.Load()), "data", ast.Load())
    for param, role in partial.roles.items():
        if role == Operand(-1) and engine.program.ordered_prev:  # the node itself: its parents in order
            prev = ast.Attribute(ast.Name(param, ast.Load()), "_prev", ast.Load())
            return ast.Attribute(ast.Subscript(prev, ast.Constant(partial.operand), ast.Load()), "data", ast.Load())
    method = rule.method
    if partial.in_method and method is not None and partial.operand == 0 and method.args.args:
        me = method.args.args[0].arg
        shadowed = any(
            isinstance(a, (ast.Lambda, ast.FunctionDef))
            and a is not method
            and me in {p.arg for p in a.args.args}
            and _within(engine.program, partial.expr, a)
            for a in ast.walk(method)
        )
        if not shadowed:
            return ast.Attribute(ast.Name(me, ast.Load()), "data", ast.Load())
    return None


def _method_locals(rule: Rule, predicate: Callable[[ast.expr], bool]) -> dict[str, ast.expr]:
    """Names the method assigns from an expression ``predicate`` accepts (``e = math.exp(x)``)."""
    found: dict[str, ast.expr] = {}
    if rule.method is None or isinstance(rule.method, ast.Lambda):
        return found
    for node in ast.walk(rule.method):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and predicate(node.value)
        ):
            found[node.targets[0].id] = node.value
    return found


def _is_construction(engine: Engine, node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and (node.func.id == engine.cls.name or node.func.id in engine.program.subclasses)
    )


def _rule_sites(engine: Engine, name: str) -> tuple[list[ast.expr], list[Write]]:
    """Where a local-derivative bug goes: the private writes' increments, or the operation's own partials."""
    rule = engine.rule(name)
    if rule.shared:
        if not rule.partials:
            raise NotApplicable(f"{name}'s backward rule is shared, and it passes no local derivative of its own")
        return [p.expr for p in rule.partials], []
    return [increment(w) for w in rule.writes], rule.writes


def _edit_sites(engine: Engine, writes: list[Write], swaps: dict[int, ast.AST | None]) -> None:
    if writes:
        _edit_increments(engine, writes, swaps)
    else:
        replace(engine.tree, swaps)


def _holder(writes: list[Write], node: ast.AST) -> list[ast.AST]:
    """The write holding ``node`` (its line is the edit's), or the node itself (a partial)."""
    for write in writes:
        if any(n is node for n in ast.walk(write.value)):
            return [write.anchor]
    return [node]


def _pow_exponent(exprs: list[ast.expr]) -> tuple[ast.expr, ast.expr, ast.Constant]:
    """The ``base ** (n - 1)`` inside pow's backward: (that power, n, the literal 1)."""
    for expr in exprs:
        for node in ast.walk(expr):
            found = _power(node)
            if found is not None:
                power = found[1]
                if (
                    isinstance(power, ast.BinOp)
                    and isinstance(power.op, ast.Sub)
                    and isinstance(power.right, ast.Constant)
                    and _number(power.right) == 1.0
                ):
                    return node, power.left, power.right  # type: ignore[return-value]
    raise NotApplicable("__pow__'s backward has no `x ** (n - 1)` term")


def _pow_no_factor(engine: Engine) -> list[int]:
    exprs, writes = _rule_sites(engine, "__pow__")
    _, exponent, _ = _pow_exponent(exprs)
    wanted = ast.dump(exponent)
    for expr in exprs:
        for node in ast.walk(expr):
            keep = _upstream_dropped(node, lambda n: ast.dump(n) == wanted)  # noqa: B023
            if keep is not None:
                lines = _lines(*_holder(writes, node))
                _edit_sites(engine, writes, {id(node): keep})
                return lines
    raise NotApplicable("__pow__'s backward does not multiply by the exponent")


def _pow_exponent_off(engine: Engine) -> list[int]:
    exprs, _ = _rule_sites(engine, "__pow__")
    _, _, one = _pow_exponent(exprs)
    one.value = 2 if isinstance(one.value, int) else 2.0
    return _lines(one)


def _partial_scopes(engine: Engine, rule: Rule) -> list[ast.AST]:
    """The operation's partials, and what the method assigns to the names they read
    (``positive = self.data > 0`` read by ``1.0 if positive else 0.0``)."""
    scopes: list[ast.AST] = [p.expr for p in rule.partials]
    assigned = _method_locals(rule, lambda _: True)
    for partial in rule.partials:
        if partial.in_method:
            for node in ast.walk(partial.expr):
                if isinstance(node, ast.Name) and node.id in assigned and node.id not in partial.roles:
                    scopes.append(assigned[node.id])
    return scopes


def _rule_scopes(engine: Engine, name: str) -> list[ast.AST]:
    rule = engine.rule(name)
    if rule.shared:
        if not rule.partials:
            raise NotApplicable(f"{name}'s backward rule is shared, and it passes no local derivative of its own")
        return _partial_scopes(engine, rule)
    return engine.backward_scopes(name)


_STRICTER = {ast.Gt: ast.GtE, ast.Lt: ast.LtE, ast.GtE: ast.Gt, ast.LtE: ast.Lt}


def _relu_gate(engine: Engine) -> list[int]:
    for node in _walk(_rule_scopes(engine, "relu")):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _STRICTER:
            node.ops = [_STRICTER[type(node.ops[0])]()]
            return _lines(node)
    raise NotApplicable("relu's backward has no comparison gating the gradient")


def _square_in(scopes: list[Scope]) -> tuple[ast.expr, ast.expr]:
    """``t * t`` or ``t ** 2`` in tanh's backward: the node and ``t``."""
    for node in _walk(scopes):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mult)
            and ast.dump(node.left) == ast.dump(node.right)
        ):
            return node, node.left
        found = _power(node)
        if found is not None and _number(found[1]) == 2.0:
            return node, found[0]  # type: ignore[return-value]
    raise NotApplicable("tanh's backward has no `t * t` or `t ** 2` term")


def _tanh_linear(engine: Engine) -> list[int]:
    square, base = _square_in(_rule_scopes(engine, "tanh"))
    replace(engine.tree, {id(square): copy.deepcopy(base)})
    return _lines(square)


def _tanh_input(engine: Engine) -> list[int]:
    rule = engine.rule("tanh")
    square, base = _square_in(_rule_scopes(engine, "tanh"))
    own = _input_at(engine, rule, square)
    if own is None:
        raise NotApplicable("tanh's backward has no name for its input where it squares the output")
    if ast.dump(base) == ast.dump(own):
        raise NotApplicable("tanh's backward already squares its input")
    new = ast.copy_location(ast.BinOp(left=own, op=ast.Mult(), right=copy.deepcopy(own)), square)
    replace(engine.tree, {id(square): new})
    return _lines(square)


def _input_at(engine: Engine, rule: Rule, node: ast.AST) -> ast.expr | None:
    """The operation's input value (``x.data``), as an expression valid at ``node``."""
    if rule.shared:
        for partial in rule.partials:
            if any(n is node for n in ast.walk(partial.expr)):
                return _input_data(engine, rule, partial)
        if rule.method is not None and _within(engine.program, node, rule.method):
            return ast.Attribute(ast.Name(self_name(rule.method), ast.Load()), "data", ast.Load())
        return None
    write = rule.writes[0]
    scope = _scope_of(rule, write.anchor)
    pure = all(
        isinstance(n, (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Load)) for n in ast.walk(write.target)
    )
    if pure and scope is not None and any(n is node for n in ast.walk(scope)):
        inner = _scope_of(rule, node)
        if inner is scope or (inner is not None and not _rebinds(inner, write.target)):
            return ast.Attribute(_as_load(write.target), "data", ast.Load())
    if rule.method is not None and any(n is node for n in ast.walk(rule.method)):
        return ast.Attribute(ast.Name(self_name(rule.method), ast.Load()), "data", ast.Load())
    return None


def _scope_of(rule: Rule, node: ast.AST) -> ast.AST | None:
    """The innermost function of the rule's code holding ``node``."""
    holders = [s for s in [*rule.scopes, rule.method] if s is not None and any(n is node for n in ast.walk(s))]
    return min(holders, key=lambda s: sum(1 for _ in ast.walk(s)), default=None)


def _rebinds(scope: ast.AST, target: ast.expr) -> bool:
    """Does ``scope`` (a function nested where ``target`` is known) take a parameter of the name
    ``target`` starts with, hiding it?"""
    base = target
    while isinstance(base, (ast.Attribute, ast.Subscript)):
        base = base.value
    params = getattr(scope, "args", None)
    return (
        not isinstance(base, ast.Name)
        or params is None
        or base.id in {a.arg for a in [*params.args, *params.kwonlyargs, *params.posonlyargs]}
    )


def _is_exp_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or len(node.args) != 1:
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "exp") or (isinstance(func, ast.Name) and func.id == "exp")


def _exp_derivative_x(engine: Engine) -> list[int]:
    rule = engine.rule("exp")
    if rule.shared:
        return _exp_partials(engine, rule)
    writes = rule.writes
    ups = upstream_owners(writes)
    swaps: dict[int, ast.AST | None] = {}
    # `e = math.exp(self.data)` kept in a local and read by the closure: that local is exp(x).
    held = set(_method_locals(rule, _is_exp_call))
    for write in writes:
        own = _input_at(engine, rule, write.value)
        if own is None:
            continue
        in_method = rule.method is not None and _within(engine.program, write.anchor, rule.method)
        for node in ast.walk(increment(write)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in held and in_method:
                swaps[id(node)] = ast.copy_location(copy.deepcopy(own), node)
                continue
            is_out_data = (
                isinstance(node, ast.Attribute)
                and node.attr == "data"
                and isinstance(node.value, ast.Name)
                and node.value.id in ups
            )
            if is_out_data or _is_exp_call(node):
                swaps[id(node)] = ast.copy_location(copy.deepcopy(own), node)
    if not swaps:
        raise NotApplicable("exp's backward reads neither the output's .data nor exp(x)")
    _edit_increments(engine, writes, swaps)
    return _lines(*(w.anchor for w in writes))


def _exp_partials(engine: Engine, rule: Rule) -> list[int]:
    """exp's own local derivative reads exp(x) (the output, a kept local or a call): x instead."""
    held = set(_method_locals(rule, _is_exp_call))
    made = set(_method_locals(rule, lambda v: _is_construction(engine, v)))
    swaps: dict[int, ast.AST | None] = {}
    where = []
    for partial in rule.partials:
        own = _input_data(engine, rule, partial)
        if own is None:
            continue
        outputs = {k for k, v in partial.roles.items() if v == Field(-1, "data")}
        nodes = {k for k, v in partial.roles.items() if v == Operand(-1)}  # `self.data` in the node's own method
        for node in ast.walk(partial.expr):
            local = partial.in_method and isinstance(node, ast.Name) and node.id not in partial.roles
            output_data = (
                isinstance(node, ast.Attribute)
                and node.attr == "data"
                and isinstance(node.value, ast.Name)
                and node.value.id in nodes
            )
            if (
                (isinstance(node, ast.Name) and node.id in outputs)
                or output_data
                or (local and node.id in held)  # type: ignore[attr-defined]
                or (
                    partial.in_method
                    and isinstance(node, ast.Attribute)
                    and node.attr == "data"
                    and isinstance(node.value, ast.Name)
                    and node.value.id in made
                )
                or _is_exp_call(node)
            ):
                swaps[id(node)] = ast.copy_location(copy.deepcopy(own), node)
                where.append(node)
    if not swaps:
        raise NotApplicable("exp's local derivative reads neither the output's value nor exp(x)")
    replace(engine.tree, swaps)
    return _lines(*where)


def _log_derivative_x(engine: Engine) -> list[int]:
    exprs, writes = _rule_sites(engine, "log")
    for expr in exprs:
        for node in ast.walk(expr):
            new: ast.expr | None = None
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                new = ast.BinOp(left=node.left, op=ast.Mult(), right=node.right)
            elif _operator_call(node, "truediv") and len(node.args) == 2:  # type: ignore[attr-defined]
                new = ast.BinOp(left=node.args[0], op=ast.Mult(), right=node.args[1])  # type: ignore[attr-defined]
            else:
                power = _power(node)
                if power is not None and _number(power[1]) == -1.0:
                    new = power[0]
            if new is not None:
                lines = _lines(*_holder(writes, node))
                _edit_sites(engine, writes, {id(node): ast.copy_location(new, node)})
                return lines
    raise NotApplicable("log's backward has no division by x (or x ** -1)")
