"""Mutation operators: one deliberate bug each, applied to the student's own syntax tree.

This module runs inside the sandbox (stdlib only); ``grader.mutate`` is the host's view of
the same catalogue, with the words shown to students. Operators find their target by role,
not by spelling: ``x.grad += v`` or ``x.grad = x.grad + v`` (or an accumulator function
called with ``x`` and ``v``), operations defined in any order, ``_prev`` of any container
type, and an operation's backward rule wherever the operation puts it (``rules``): closures of
any name, lambdas, helper methods, module-level functions (called, named in a lambda or
``functools.partial``, handed on as objects, or entries of a dispatch table keyed by the
operation's tag). Code that several operations share is edited for this operation only: its
own local derivatives where it passes them in, or the shared ``+=`` under a guard on the
node's tag. When the target is absent an operator raises ``NotApplicable`` saying what it
looked for; it never edits something else instead. The engine is the class Python binds to
the name (``graded_class``, decided in ``probes.facts``). ``mutate`` edits a tree;
``mutate_text`` writes the edit back into the student's own text, changing only the edited
statements (``splice``).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .. import syntax, wire
from ..probes import loader
from ..probes.facts import NotApplicable as NotApplicable  # re-exported: callers use mutate.*
from ..probes.facts import graded_class as graded_class
from . import rules, splice
from .rules import Partial, Rule, Write

STEP5 = "acc_mul"  # the handout's Step-5 bug: += becomes = in __mul__'s backward
FORCED_FAIL = "forced_fail"  # guard mutant: every method raises
EQUIVALENT = wire.EQUIVALENT  # guard: a behaviour-identical copy that honest checks must accept

Scope = ast.AST


find_class = graded_class  # its older name


class Engine:
    """Lookups shared by the operators, over one (already copied) tree."""

    def __init__(self, tree: ast.Module, class_name: str):
        self.tree = tree
        self.cls = graded_class(tree, class_name)
        self.methods = {n.name: n for n in self.cls.body if isinstance(n, ast.FunctionDef)}
        self._program: rules.Program | None = None
        self._rules: dict[str, Rule] = {}

    @property
    def program(self) -> rules.Program:
        if self._program is None:
            self._program = rules.Program(self.tree, self.cls)
        return self._program

    def method(self, name: str) -> ast.FunctionDef | ast.Lambda:
        """The method, as a ``def`` or a class-level ``name = lambda self, ...: ...``."""
        found = self.methods.get(name)
        if found is not None:
            return found
        bound = [
            n
            for n in self.cls.body
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
        ]
        if bound and len(bound[-1].targets) == 1 and isinstance(bound[-1].value, ast.Lambda):
            return bound[-1].value
        unpacked = any(
            isinstance(t, (ast.Tuple, ast.List)) and any(isinstance(e, ast.Name) and e.id == name for e in t.elts)
            for n in self.cls.body
            if isinstance(n, ast.Assign)
            for t in n.targets
        )
        how = (
            "is an alias of another method"
            if bound
            else "is bound by unpacking several values at once"
            if unpacked
            else "is not defined"
        )
        raise NotApplicable(f"{self.cls.name}.{name} {how}")

    def rule(self, name: str) -> Rule:
        """Where ``name``'s backward rule is (NotApplicable when it writes no gradient)."""
        if name not in self._rules:
            if self.program.factory_call(name) is None:
                self.method(name)  # raises when the operation is not defined
            self._rules[name] = rules.find_rule(self.program, name)
        found = self._rules[name]
        if not found.writes:
            raise NotApplicable(f"{name} has no backward rule writing `<x>.grad += ...`")
        return found

    def writes(self, name: str) -> list[Write]:
        return self.rule(name).writes

    def backward_scopes(self, name: str) -> list[Scope]:
        """The code that holds ``name``'s backward rule: the private scopes holding its writes
        first, then its other closures; for a shared rule, the operation's own partials."""
        found = self.rule(name)
        if found.shared:
            return [p.expr for p in found.partials]
        anchors = {id(w.anchor) for w in found.writes}
        holding = [s for s in found.scopes if any(id(n) in anchors for n in ast.walk(s))]
        rest = [
            s
            for s in found.scopes
            if s not in holding and found.method is not None and _within(self.program, s, found.method)
        ]
        return [*holding, *rest]

    def sweep_scopes(self) -> list[Scope]:
        """backward() and what it calls, transitively: helper methods, module-level functions
        (a topological sort, a module-level ``backward(root)`` the method delegates to)."""
        method = self.method("backward")
        functions = self.program.functions
        found: list[Scope] = [method]
        queue: list[Scope] = [method]
        while queue:
            scope = queue.pop(0)
            for node in ast.walk(scope):
                if not isinstance(node, ast.Call):
                    continue
                target: ast.AST | None = None
                if isinstance(node.func, ast.Name):
                    target = functions.get(node.func.id)
                elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                    name = node.func.attr
                    if name in self.methods and (name not in rules.BACKWARD_OPS and not name.startswith("__")):
                        target = self.methods[name]
                if target is not None and all(target is not f for f in found):
                    found.append(target)
                    queue.append(target)
        return found

    def sweep_binding(self, scope: Scope) -> str | None:
        """The name ``scope`` gives the node backward() was called on (its ``self``, or the
        parameter of a module-level function backward() hands ``self`` to)."""
        method = self.method("backward")
        me = self_name(method)
        if scope is method:
            return me
        if isinstance(scope, ast.FunctionDef):
            for node in ast.walk(method):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == scope.name
                    and node.args
                    and isinstance(node.args[0], ast.Name)
                    and node.args[0].id == me
                    and scope.args.args
                ):
                    return scope.args.args[0].arg
        return None


def _within(program: rules.Program, node: ast.AST, outer: ast.AST) -> bool:
    return node is not outer and any(n is node for n in ast.walk(outer))


def _is_grad(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def grad_writes(scope: Scope) -> list[ast.stmt]:
    """``x.grad += v`` and ``x.grad = x.grad + v`` statements, in source order."""
    found: list[ast.stmt] = [n for n in ast.walk(scope) if isinstance(n, ast.stmt) and rules.statement_write(n)]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def _as_load(node: ast.expr) -> ast.expr:
    clone = copy.deepcopy(node)
    for sub in ast.walk(clone):
        if hasattr(sub, "ctx"):
            sub.ctx = ast.Load()
    return clone


def _grad_on_left(write: ast.Assign) -> bool:
    assert isinstance(write.value, ast.BinOp)
    return ast.dump(write.value.left) == ast.dump(_as_load(write.targets[0]))


def increment(write: ast.stmt | Write) -> ast.expr:
    """The value a grad write adds (``v`` in ``x.grad += v``, ``x.grad = x.grad + v`` or ``v + x.grad``)."""
    if isinstance(write, Write):
        return write.value
    if isinstance(write, ast.AugAssign):
        return write.value
    assert isinstance(write, ast.Assign) and isinstance(write.value, ast.BinOp)
    return write.value.right if _grad_on_left(write) else write.value.left


def set_increment(write: ast.stmt | Write, value: ast.expr) -> None:
    if isinstance(write, Write):
        if write.is_call:
            call = write.call
            call.args = [value if a is write.value else a for a in call.args]
            if isinstance(call.func, ast.Attribute) and call.func.value is write.value:
                call.func.value = value
        else:
            set_increment(write.anchor, value)  # type: ignore[arg-type]
        write.value = value
        return
    if isinstance(write, ast.AugAssign):
        write.value = value
    else:
        assert isinstance(write, ast.Assign) and isinstance(write.value, ast.BinOp)
        if _grad_on_left(write):
            write.value.right = value
        else:
            write.value.left = value


def target_owner(write: ast.stmt | Write) -> str | None:
    """``self`` in ``self.grad += ...`` (None when the target is not a plain name)."""
    if isinstance(write, Write):
        return write.target.id if isinstance(write.target, ast.Name) else None
    target = write.target if isinstance(write, ast.AugAssign) else write.targets[0]  # type: ignore[attr-defined]
    assert isinstance(target, ast.Attribute)
    return target.value.id if isinstance(target.value, ast.Name) else None


def upstream_owners(writes: list[Write]) -> set[str]:
    """Names whose ``.grad`` is read inside the increments: the output node (``out``)."""
    owners = set()
    for write in writes:
        for node in ast.walk(increment(write)):
            if _is_grad(node) and isinstance(node.value, ast.Name):  # type: ignore[attr-defined]
                owners.add(node.value.id)  # type: ignore[attr-defined]
    return owners


def self_name(method: ast.FunctionDef | ast.Lambda) -> str:
    if not method.args.args:
        raise NotApplicable(f"{getattr(method, 'name', 'a method')} takes no self argument")
    return method.args.args[0].arg


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


def _input_data(engine: Engine, rule: Rule, partial: Partial) -> ast.expr | None:
    """An expression, valid where ``partial`` is written, for the operand's value (``x.data``)."""
    for param, role in partial.roles.items():
        if role == rules.Field(partial.operand, "data"):
            return ast.Name(param, ast.Load())
        if role == rules.Datas():
            return ast.Subscript(ast.Name(param, ast.Load()), ast.Constant(partial.operand), ast.Load())
    for param, role in partial.roles.items():
        if role == rules.Operand(partial.operand):
            return ast.Attribute(ast.Name(param, ast.Load()), "data", ast.Load())
    for param, role in partial.roles.items():
        if role == rules.Operand(-1) and engine.program.ordered_prev:  # the node itself: its parents in order
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


# --- the operators ---------------------------------------------------------------------------------

Transform = Callable[[Engine], list[int]]


@dataclass(frozen=True)
class Operator:
    id: str
    family: str  # ACC, CHAIN, LOC, TOPO, SEED, FWD
    summary: str  # the bug, in a few words
    transform: Transform


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
            ups = {k for k, v in partial.roles.items() if v == rules.Field(-1, "grad")}
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


def _operator_call(node: ast.AST, *names: str) -> bool:
    """``operator.mul(a, b)``, ``math.pow(a, b)`` or a bare ``pow(a, b)`` (for names ``mul``, ``pow``)."""
    if not isinstance(node, ast.Call) or node.keywords:
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.value.id in ("operator", "math") and func.attr.strip("_") in names
    return isinstance(func, ast.Name) and func.id in names and func.id == "pow"


def _power(node: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """(base, exponent) of ``x ** n`` or ``pow(x, n)``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return node.left, node.right
    if _operator_call(node, "pow") and len(node.args) == 2:  # type: ignore[attr-defined]
        return node.args[0], node.args[1]  # type: ignore[attr-defined]
    return None


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
        outputs = {k for k, v in partial.roles.items() if v == rules.Field(-1, "data")}
        nodes = {k for k, v in partial.roles.items() if v == rules.Operand(-1)}  # `self.data` in the node's own method
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
            primitive = site is not None and rules.builds_node(engine.program, method)
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


def _first_in_every_method(statement: str) -> Transform:
    """Put ``statement`` at the start of every method of the engine (after a docstring)."""

    def transform(engine: Engine) -> list[int]:
        edited = []
        for method in engine.methods.values():
            first = method.body[0] if method.body else None
            start = 1 if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) else 0
            method.body.insert(start, ast.copy_location(syntax.parse(statement).body[0], method))
            edited.append(method.lineno)
        if not edited:
            raise NotApplicable("the engine class has no methods")
        return sorted(edited)

    return transform


# Every method raises: checks that never touch this engine still pass.
_forced_fail = _first_in_every_method("raise RuntimeError('forced-fail mutant: every method raises')")
# A harmless assignment: the same behaviour in different code. Checks that test what the engine
# computes pass on it; "checks" comparing the file's text, tree or bytecode with a constant fail.
_equivalent = _first_in_every_method("_unchanged_ = None")


CATALOGUE: tuple[Operator, ...] = (
    *(
        Operator(f"acc_{op}", "ACC", f"`+=` becomes `=` in {method}'s backward", _accumulate_to_assign(method))
        for op, method in (
            ("add", "__add__"),
            ("mul", "__mul__"),
            ("pow", "__pow__"),
            ("relu", "relu"),
            ("tanh", "tanh"),
            ("exp", "exp"),
            ("log", "log"),
        )
    ),
    Operator("chain_add_one_operand", "CHAIN", "__add__'s backward updates only one operand", _add_forgets_operand),
    Operator("chain_mul_no_upstream", "CHAIN", "__mul__'s backward drops the upstream out.grad", _mul_drops_upstream),
    Operator("loc_mul_own_operand", "LOC", "__mul__'s backward uses the operand's own value", _mul_own_operand),
    Operator("loc_mul_subtract", "LOC", "`+=` becomes `-=` in __mul__'s backward", _mul_subtracts),
    Operator("loc_pow_no_factor", "LOC", "pow's derivative misses the factor n", _pow_no_factor),
    Operator("loc_pow_exponent", "LOC", "pow's derivative uses x**(n-2)", _pow_exponent_off),
    Operator("loc_relu_gate", "LOC", "relu's gradient gate flips strictness (> vs >=)", _relu_gate),
    Operator("loc_tanh_linear", "LOC", "tanh's derivative is 1 - t instead of 1 - t**2", _tanh_linear),
    Operator("loc_tanh_input", "LOC", "tanh's derivative is 1 - x**2 (the input, not the output)", _tanh_input),
    Operator("loc_exp_derivative", "LOC", "exp's derivative is x instead of exp(x)", _exp_derivative_x),
    Operator("loc_log_derivative", "LOC", "log's derivative is x instead of 1/x", _log_derivative_x),
    Operator("topo_not_reversed", "TOPO", "backward() walks the topological order forwards", _not_reversed),
    Operator("topo_no_visited", "TOPO", "the topological sort drops its visited check", _no_visited),
    Operator(
        "seed_root_zero",
        "SEED",
        "backward() seeds the output's grad with 0",
        _reseed("backward", 1.0, 0.0, "backward() has no `self.grad = 1.0` seed"),
    ),
    Operator(
        "seed_leaf_one",
        "SEED",
        "new nodes start with grad 1 instead of 0",
        _reseed("__init__", 0.0, 1.0, "__init__ has no `self.grad = 0` initialisation"),
    ),
    Operator(
        "fwd_neg",
        "FWD",
        "-x computes x (the minus sign is lost)",
        _rewritten("__neg__", "{self} * 1", ("__mul__",))(_drop_negation("__neg__")),
    ),
    Operator(
        "fwd_sub",
        "FWD",
        "a - b computes a + b",
        _rewritten("__sub__", "{self} + {other}", ("__add__",))(_drop_negation("__sub__", (ast.Sub, ast.Add))),
    ),
    Operator(
        "fwd_div",
        "FWD",
        "a / b computes a * b**-2",
        _rewritten("__truediv__", "{self} * {other} ** -2", ("__mul__", "__pow__"))(_div_square),
    ),
    Operator(
        "fwd_rdiv",
        "FWD",
        "k / x computes k * x",
        _rewritten("__rtruediv__", "{self} * {other}", ("__mul__",))(
            _drop_negation("__rtruediv__", (ast.Div, ast.Mult))
        ),
    ),
    Operator(
        "fwd_rsub",
        "FWD",
        "k - x computes k + x",
        _rewritten("__rsub__", "{self} + {other}", ("__add__",))(_drop_negation("__rsub__", (ast.Sub, ast.Add))),
    ),
    Operator(
        "fwd_radd",
        "FWD",
        "k + x computes x - k",
        _rewritten("__radd__", "{self} - {other}", ("__sub__",))(_swap_operator("__radd__", ast.Add, ast.Sub)),
    ),
    Operator(
        "fwd_rmul",
        "FWD",
        "k * x computes x / k",
        _rewritten("__rmul__", "{self} / {other}", ("__truediv__",))(_swap_operator("__rmul__", ast.Mult, ast.Div)),
    ),
)

GUARDS: tuple[Operator, ...] = (
    Operator(FORCED_FAIL, "GUARD", "every method raises", _forced_fail),
    Operator(EQUIVALENT, "GUARD", "a harmless assignment starts every method", _equivalent),
)

BY_ID: dict[str, Operator] = {op.id: op for op in (*CATALOGUE, *GUARDS)}


def mutate(
    tree: ast.Module, operator_id: str, class_name: str, *, in_place: bool = False, locations: bool = True
) -> tuple[ast.Module, list[int]]:
    """A mutated copy of ``tree`` and the lines edited; the original is left untouched unless
    ``in_place`` (a tree parsed just for this mutant: copying costs more than parsing).
    ``locations=False`` leaves new nodes without positions: for a tree that is only written
    back as text, never compiled."""
    operator = BY_ID.get(operator_id)
    if operator is None:
        raise NotApplicable(f"unknown mutation {operator_id!r}")
    copied = tree if in_place else copy.deepcopy(tree)
    lines = operator.transform(Engine(copied, class_name))
    return (ast.fix_missing_locations(copied) if locations else copied), lines


_ORIGINAL: dict[tuple[str, str], ast.Module] = {}  # the last file's tree, read-only, shared by its mutants


def _original(source: str, filename: str) -> ast.Module:
    """The student's file parsed once for all its mutants (splicing only reads it)."""
    key = (source, filename)
    tree = _ORIGINAL.get(key)
    if tree is None:  # kept in a local: another thread may replace the entry meanwhile
        tree = loader.parse(source, filename)
        _ORIGINAL.clear()
        _ORIGINAL[key] = tree
    return tree


def mutate_text(
    source: str, operator_id: str, class_name: str, filename: str = "autograd_lab.py"
) -> tuple[str, list[int]]:
    """The mutated file as text, and the lines edited as ``mutate`` reports them. Only edited
    statements are rewritten (``splice``): a mutant differs from the student's file only where
    its bug is. Raises NotApplicable as ``mutate`` does (loader.LoadError if it does not parse)."""
    tree = _original(source, filename)
    mutated, lines = mutate(loader.parse(source, filename), operator_id, class_name, in_place=True, locations=False)
    return splice.write_back(source, tree, mutated, lines), lines
