"""Bugs in how an operation's backward rule accumulates and chains: ``+=`` becomes ``=`` (ACC),
``__add__`` forgets an operand or ``__mul__`` drops the upstream gradient (CHAIN), and
``__mul__``'s local derivative uses the wrong operand or is subtracted (LOC).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable

from ...probes.facts import NotApplicable
from ..rules.find import Rule
from ..rules.values import Field
from ..rules.writes import Write
from .edits import _assigned, _dropped, _edit_increments, _lines, _subtracted, replace
from .targets import Engine, Transform, _is_grad, _operator_call, increment, target_owner, upstream_owners


def _own_writes(rule: Rule) -> list[Write]:
    """The writes an edit may touch: private ones, or shared ones that can be guarded."""
    if rule.shared and any(w.guard is None for w in rule.writes):
        raise NotApplicable(
            f"{rule.name}'s backward rule is shared with other operations, and its nodes carry no tag of their own"
        )
    return rule.writes


def _accumulate_to_assign(method: str) -> Transform:
    def transform(engine: Engine) -> list[int]:
        writes = _own_writes(engine.rule(method))
        replace(engine.tree, {id(w.anchor): _assigned(w) for w in writes})
        return _lines(*(w.anchor for w in writes))

    return transform


def _add_forgets_operand(engine: Engine) -> list[int]:
    rule = engine.rule("__add__")
    second = [p for p in rule.partials if p.operand == 1]
    if rule.shared and second:
        replace(engine.tree, {id(p.expr): ast.copy_location(ast.Constant(0.0), p.expr) for p in second})
        return _lines(*(p.expr for p in second))
    writes = _own_writes(rule)
    if len(writes) < 2:
        raise NotApplicable("__add__'s backward writes fewer than two gradients")
    replace(engine.tree, {id(writes[-1].anchor): _dropped(writes[-1])})
    return _lines(writes[-1].anchor)


def _upstream_dropped(node: ast.AST, ups: Callable[[ast.AST], bool]) -> ast.expr | None:
    """``v`` for ``v * up`` or ``up * v`` (``operator.mul`` too), where ``ups(up)``."""
    pair: tuple[ast.expr, ast.expr] | None = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        pair = (node.left, node.right)
    elif _operator_call(node, "mul") and len(node.args) == 2:  # type: ignore[attr-defined]
        pair = (node.args[0], node.args[1])  # type: ignore[attr-defined]
    if pair is not None:
        for keep, drop in (pair, pair[::-1]):
            if ups(drop):
                return keep
    return None


def _mul_drops_upstream(engine: Engine) -> list[int]:
    rule = engine.rule("__mul__")
    swaps: dict[int, ast.AST | None] = {}
    if rule.shared:
        # The upstream gradient handed to the operation's own partials (a pullback `lambda g: (g * b, g * a)`).
        where = []
        for partial in rule.partials:
            ups = {k for k, v in partial.roles.items() if v == Field(-1, "grad")}
            for node in ast.walk(partial.expr):
                keep = _upstream_dropped(node, lambda n: isinstance(n, ast.Name) and n.id in ups)  # noqa: B023
                if keep is not None:
                    swaps[id(node)] = keep
                    where.append(node)
        if swaps:
            replace(engine.tree, swaps)
            return _lines(*where)
    writes = _own_writes(rule)
    owners = upstream_owners(writes)
    for write in writes:
        for node in ast.walk(increment(write)):
            keep = _upstream_dropped(
                node,
                lambda n: _is_grad(n) and isinstance(n.value, ast.Name) and n.value.id in owners,  # type: ignore[attr-defined]
            )
            if keep is not None:
                swaps[id(node)] = keep
    if not swaps:
        raise NotApplicable("__mul__'s backward does not multiply by the output's .grad")
    _edit_increments(engine, writes, swaps)
    return _lines(*(w.anchor for w in writes))


def _mul_own_operand(engine: Engine) -> list[int]:
    rule = engine.rule("__mul__")
    if rule.shared and rule.partials:
        return _own_operand_partial(engine, rule)
    writes = _own_writes(rule)
    ups = upstream_owners(writes)
    write = writes[0]
    owner = target_owner(write)
    if owner is None:
        raise NotApplicable("__mul__'s backward writes a gradient not held by a plain name")
    swaps: dict[int, ast.AST | None] = {}
    for node in ast.walk(increment(write)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "data"
            and isinstance(node.value, ast.Name)
            and node.value.id not in ups
            and node.value.id != owner
        ):
            swaps[id(node)] = ast.copy_location(
                ast.Attribute(value=ast.Name(owner, ast.Load()), attr="data", ctx=ast.Load()), node
            )
    if not swaps:
        raise NotApplicable("__mul__'s backward does not read the other operand's .data")
    _edit_increments(engine, [write], swaps)
    return _lines(write.anchor)


def _own_operand_partial(engine: Engine, rule: Rule) -> list[int]:
    """The first operand's derivative becomes the second's (the receiver's own value)."""
    first = [p for p in rule.partials if p.operand == 0]
    second = [p for p in rule.partials if p.operand == 1]
    if not first or not second:
        raise NotApplicable("__mul__ passes no local derivative for each operand")
    mine, theirs = first[0], second[0]
    new = copy.deepcopy(theirs.expr)
    if mine.lam is not theirs.lam:
        if mine.lam is None or theirs.lam is None:
            raise NotApplicable("__mul__'s local derivatives are written in different forms")
        names = dict(zip((a.arg for a in theirs.lam.args.args), (a.arg for a in mine.lam.args.args), strict=False))
        for node in ast.walk(new):
            if isinstance(node, ast.Name) and node.id in names:
                node.id = names[node.id]
    if ast.dump(new) == ast.dump(mine.expr):
        raise NotApplicable("__mul__'s local derivative already uses the operand's own value")
    replace(engine.tree, {id(mine.expr): ast.copy_location(new, mine.expr)})
    return _lines(mine.expr)


def _mul_subtracts(engine: Engine) -> list[int]:
    rule = engine.rule("__mul__")
    if rule.shared and rule.partials:
        swaps: dict[int, ast.AST | None] = {
            id(p.expr): ast.copy_location(ast.UnaryOp(ast.USub(), p.expr), p.expr) for p in rule.partials
        }
        replace(engine.tree, swaps)
        return _lines(*(p.expr for p in rule.partials))
    writes = _own_writes(rule)
    replace(engine.tree, {id(w.anchor): _subtracted(w) for w in writes})
    return _lines(*(w.anchor for w in writes))
