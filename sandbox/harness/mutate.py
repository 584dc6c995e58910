"""Mutation operators: one deliberate bug each, applied to the student's own syntax tree.

This module runs inside the sandbox (stdlib only); ``grader.mutate`` is the host's view of
the same catalogue, with the words shown to students. Operators find their target by role,
not by spelling: a backward closure of any name (or a helper method the operation calls),
``x.grad += v`` or ``x.grad = x.grad + v``, operations defined in any order, ``_prev`` of any
container type. When the target is absent an operator raises ``NotApplicable`` saying what
it looked for; it never edits something else instead. The engine is the class Python binds
to the name (``graded_class``). ``mutate`` edits a tree; ``mutate_text`` writes the edit
back into the student's own text, changing only the edited statements (``splice``).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from . import loader, splice, syntax, wire

STEP5 = "acc_mul"  # the handout's Step-5 bug: += becomes = in __mul__'s backward
FORCED_FAIL = "forced_fail"  # guard mutant: every method raises
EQUIVALENT = wire.EQUIVALENT  # guard: a behaviour-identical copy that honest checks must accept

Scope = ast.AST


class NotApplicable(Exception):
    """The operator's target is not in this file; the message says what was missing."""


# --- reading the engine class ------------------------------------------------------------------

ENGINE_METHODS = ("backward", "__add__", "__mul__", "relu", "tanh", "exp", "__pow__")


_BINDERS = {"ClassDef": "a class statement inside a block", "FunctionDef": "a def", "AsyncFunctionDef": "a def"}
_BINDERS |= {"Import": "an import", "ImportFrom": "an import", "ExceptHandler": "an except clause"}


def graded_class(tree: ast.Module, class_name: str) -> ast.ClassDef:
    """The engine class: the one Python binds to ``class_name`` when the module runs.

    That is the last top-level ``class class_name:``, or the class a last top-level alias
    ``class_name = Other`` names (by the same rule, as bound at that line). Any other later
    rebinding of the name (an assignment, import, def, loop target...) or a class defined inside
    a block means the engine is not a plain class definition: NotApplicable. With no binding of
    the name at all, the top-level class defining most of ENGINE_METHODS (at least three) is
    graded, the last one among equal scores (and only classes whose own name is not rebound)."""
    bindings = splice.bindings(tree, class_name)
    if bindings:
        last = bindings[-1]
        if isinstance(last, ast.ClassDef) and last in tree.body:
            return last
        alias = next((s for s in tree.body if isinstance(s, ast.Assign) and last in s.targets), None)
        if alias is not None and isinstance(alias.value, ast.Name) and alias.value.id != class_name:
            named = [b for b in splice.bindings(tree, alias.value.id) if b.lineno < alias.lineno]  # type: ignore[attr-defined]
            if named and isinstance(named[-1], ast.ClassDef) and named[-1] in tree.body:
                return named[-1]
        what = _BINDERS.get(type(last).__name__, "an assignment")
        line = getattr(last, "lineno", 0)
        raise NotApplicable(f"{class_name} is bound last by {what} at line {line}, not by a plain class definition")

    def score(node: ast.ClassDef) -> int:
        names = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
        return sum(name in names for name in ENGINE_METHODS)

    best: ast.ClassDef | None = None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and splice.bindings(tree, node.name)[-1] is node:
            if best is None or score(node) >= score(best):
                best = node
    if best is None or score(best) < 3:
        raise NotApplicable(f"no class {class_name} with backward(), __add__ and __mul__")
    return best


find_class = graded_class  # its older name


class Engine:
    """Lookups shared by the operators, over one (already copied) tree."""

    def __init__(self, tree: ast.Module, class_name: str):
        self.tree = tree
        self.cls = graded_class(tree, class_name)
        self.methods = {n.name: n for n in self.cls.body if isinstance(n, ast.FunctionDef)}

    def method(self, name: str) -> ast.FunctionDef:
        found = self.methods.get(name)
        if found is None:
            aliased = any(
                isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
                for n in self.cls.body
            )
            how = "is an alias of another method" if aliased else "is not defined"
            raise NotApplicable(f"{self.cls.name}.{name} {how}")
        return found

    def helpers_called(self, method: ast.FunctionDef) -> list[ast.FunctionDef]:
        """Methods of the class that ``method`` calls as ``self.x(...)`` or ``Cls.x(...)``."""
        names = []
        for node in ast.walk(method):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                if isinstance(owner, ast.Name) and node.func.attr in self.methods:
                    names.append(node.func.attr)
        return [self.methods[n] for n in dict.fromkeys(names) if self.methods[n] is not method]

    def backward_scopes(self, name: str) -> list[Scope]:
        """Where ``name``'s local gradient rule lives: closures inside it, else helpers it calls."""
        method = self.method(name)
        nested: list[Scope] = [
            n for n in ast.walk(method) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not method
        ]
        if any(grad_writes(s) for s in nested):
            return nested
        helpers: list[Scope] = [h for h in self.helpers_called(method) if grad_writes(h)]
        if helpers:
            return helpers
        raise NotApplicable(f"{name} has no backward rule writing `<x>.grad += ...`")

    def writes(self, name: str) -> list[ast.stmt]:
        return [w for scope in self.backward_scopes(name) for w in grad_writes(scope)]

    def sweep_scopes(self) -> list[Scope]:
        """backward() and what it calls: helper methods, or module-level functions (a topo builder, say)."""
        method = self.method("backward")
        functions = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        called = [
            functions[n.func.id]
            for n in ast.walk(method)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in functions
        ]
        return [method, *self.helpers_called(method), *dict.fromkeys(called)]


def _is_grad(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def grad_writes(scope: Scope) -> list[ast.stmt]:
    """``x.grad += v`` and ``x.grad = x.grad + v`` statements, in source order."""
    found: list[ast.stmt] = []
    for node in ast.walk(scope):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and _is_grad(node.target):
            found.append(node)
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and _is_grad(node.targets[0])
            and isinstance(node.value, ast.BinOp)
            and isinstance(node.value.op, ast.Add)
            and ast.dump(_as_load(node.targets[0])) in (ast.dump(node.value.left), ast.dump(node.value.right))
        ):
            found.append(node)
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


def increment(write: ast.stmt) -> ast.expr:
    """The value a grad write adds (``v`` in ``x.grad += v``, ``x.grad = x.grad + v`` or ``v + x.grad``)."""
    if isinstance(write, ast.AugAssign):
        return write.value
    assert isinstance(write, ast.Assign) and isinstance(write.value, ast.BinOp)
    return write.value.right if _grad_on_left(write) else write.value.left


def set_increment(write: ast.stmt, value: ast.expr) -> None:
    if isinstance(write, ast.AugAssign):
        write.value = value
    else:
        assert isinstance(write, ast.Assign) and isinstance(write.value, ast.BinOp)
        if _grad_on_left(write):
            write.value.right = value
        else:
            write.value.left = value


def target_owner(write: ast.stmt) -> str | None:
    """``self`` in ``self.grad += ...`` (None when the target is not a plain name)."""
    target = write.target if isinstance(write, ast.AugAssign) else write.targets[0]  # type: ignore[attr-defined]
    assert isinstance(target, ast.Attribute)
    return target.value.id if isinstance(target.value, ast.Name) else None


def upstream_owners(writes: list[ast.stmt]) -> set[str]:
    """Names whose ``.grad`` is read inside the increments: the output node (``out``)."""
    owners = set()
    for write in writes:
        for node in ast.walk(increment(write)):
            if _is_grad(node) and isinstance(node.value, ast.Name):  # type: ignore[attr-defined]
                owners.add(node.value.id)  # type: ignore[attr-defined]
    return owners


def self_name(method: ast.FunctionDef) -> str:
    if not method.args.args:
        raise NotApplicable(f"{method.name} takes no self argument")
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


# --- the operators ---------------------------------------------------------------------------------

Transform = Callable[[Engine], list[int]]


@dataclass(frozen=True)
class Operator:
    id: str
    family: str  # ACC, CHAIN, LOC, TOPO, SEED, FWD
    summary: str  # the bug, in a few words
    transform: Transform


def _accumulate_to_assign(method: str) -> Transform:
    def transform(engine: Engine) -> list[int]:
        writes = engine.writes(method)
        swaps: dict[int, ast.AST | None] = {}
        for write in writes:
            target = write.target if isinstance(write, ast.AugAssign) else write.targets[0]  # type: ignore[attr-defined]
            swaps[id(write)] = ast.copy_location(ast.Assign(targets=[target], value=increment(write)), write)
        replace(engine.tree, swaps)
        return _lines(*writes)

    return transform


def _add_forgets_operand(engine: Engine) -> list[int]:
    writes = engine.writes("__add__")
    if len(writes) < 2:
        raise NotApplicable("__add__'s backward writes fewer than two gradients")
    replace(engine.tree, {id(writes[-1]): None})
    return _lines(writes[-1])


def _mul_drops_upstream(engine: Engine) -> list[int]:
    writes = engine.writes("__mul__")
    ups = upstream_owners(writes)
    swaps: dict[int, ast.AST | None] = {}
    for write in writes:
        for node in ast.walk(increment(write)):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                for keep, drop in ((node.left, node.right), (node.right, node.left)):
                    if _is_grad(drop) and isinstance(drop.value, ast.Name) and drop.value.id in ups:  # type: ignore[attr-defined]
                        swaps[id(node)] = keep
                        break
    if not swaps:
        raise NotApplicable("__mul__'s backward does not multiply by the output's .grad")
    _swap_in_increments(engine, writes, swaps)
    return _lines(*writes)


def _swap_in_increments(engine: Engine, writes: list[ast.stmt], swaps: dict[int, ast.AST | None]) -> None:
    # An increment may itself be the node to swap; set it directly, then edit the rest in place.
    for write in writes:
        value = increment(write)
        if id(value) in swaps:
            new = swaps.pop(id(value))
            assert isinstance(new, ast.expr)
            set_increment(write, new)
    replace(engine.tree, swaps)


def _mul_own_operand(engine: Engine) -> list[int]:
    writes = engine.writes("__mul__")
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
    _swap_in_increments(engine, [write], swaps)
    return _lines(write)


def _mul_subtracts(engine: Engine) -> list[int]:
    writes = engine.writes("__mul__")
    swaps: dict[int, ast.AST | None] = {}
    for write in writes:
        target = write.target if isinstance(write, ast.AugAssign) else write.targets[0]  # type: ignore[attr-defined]
        swaps[id(write)] = ast.copy_location(ast.AugAssign(target=target, op=ast.Sub(), value=increment(write)), write)
    replace(engine.tree, swaps)
    return _lines(*writes)


def _pow_exponent(writes: list[ast.stmt]) -> tuple[ast.BinOp, ast.expr, ast.Constant]:
    """The ``base ** (n - 1)`` inside pow's backward: (that power, n, the literal 1)."""
    for write in writes:
        for node in ast.walk(increment(write)):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
                power = node.right
                if (
                    isinstance(power, ast.BinOp)
                    and isinstance(power.op, ast.Sub)
                    and isinstance(power.right, ast.Constant)
                    and _number(power.right) == 1.0
                ):
                    return node, power.left, power.right
    raise NotApplicable("__pow__'s backward has no `x ** (n - 1)` term")


def _pow_no_factor(engine: Engine) -> list[int]:
    writes = engine.writes("__pow__")
    _, exponent, _ = _pow_exponent(writes)
    wanted = ast.dump(exponent)
    for write in writes:
        for node in ast.walk(increment(write)):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                for keep, drop in ((node.left, node.right), (node.right, node.left)):
                    if ast.dump(drop) == wanted:
                        _swap_in_increments(engine, [write], {id(node): keep})
                        return _lines(write)
    raise NotApplicable("__pow__'s backward does not multiply by the exponent")


def _pow_exponent_off(engine: Engine) -> list[int]:
    writes = engine.writes("__pow__")
    _, _, one = _pow_exponent(writes)
    one.value = 2 if isinstance(one.value, int) else 2.0
    return _lines(one)


_STRICTER = {ast.Gt: ast.GtE, ast.Lt: ast.LtE, ast.GtE: ast.Gt, ast.LtE: ast.Lt}


def _relu_gate(engine: Engine) -> list[int]:
    for node in _walk(engine.backward_scopes("relu")):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _STRICTER:
            node.ops = [_STRICTER[type(node.ops[0])]()]
            return _lines(node)
    raise NotApplicable("relu's backward has no comparison gating the gradient")


def _square_in(scopes: list[Scope]) -> tuple[ast.BinOp, ast.expr]:
    """``t * t`` or ``t ** 2`` in tanh's backward: the node and ``t``."""
    for node in _walk(scopes):
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Mult) and ast.dump(node.left) == ast.dump(node.right):
                return node, node.left
            if isinstance(node.op, ast.Pow) and _number(node.right) == 2.0:
                return node, node.left
    raise NotApplicable("tanh's backward has no `t * t` or `t ** 2` term")


def _tanh_linear(engine: Engine) -> list[int]:
    scopes = engine.backward_scopes("tanh")
    square, base = _square_in(scopes)
    replace(engine.tree, {id(square): copy.deepcopy(base)})
    return _lines(square)


def _tanh_input(engine: Engine) -> list[int]:
    me = self_name(engine.method("tanh"))
    scopes = engine.backward_scopes("tanh")
    square, base = _square_in(scopes)
    own = ast.Attribute(value=ast.Name(me, ast.Load()), attr="data", ctx=ast.Load())
    if ast.dump(base) == ast.dump(own):
        raise NotApplicable("tanh's backward already squares its input")
    new = ast.copy_location(ast.BinOp(left=own, op=ast.Mult(), right=copy.deepcopy(own)), square)
    replace(engine.tree, {id(square): new})
    return _lines(square)


def _is_exp_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or len(node.args) != 1:
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "exp") or (isinstance(func, ast.Name) and func.id == "exp")


def _exp_derivative_x(engine: Engine) -> list[int]:
    me = self_name(engine.method("exp"))
    writes = engine.writes("exp")
    ups = upstream_owners(writes)
    own = ast.Attribute(value=ast.Name(me, ast.Load()), attr="data", ctx=ast.Load())
    swaps: dict[int, ast.AST | None] = {}
    # `e = math.exp(self.data)` kept in a local and read by the closure: that local is exp(x).
    held = {
        node.targets[0].id
        for node in ast.walk(engine.method("exp"))
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and _is_exp_call(node.value)
    }
    for write in writes:
        for node in ast.walk(increment(write)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in held:
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
    _swap_in_increments(engine, writes, swaps)
    return _lines(*writes)


def _log_derivative_x(engine: Engine) -> list[int]:
    writes = engine.writes("log")
    for write in writes:
        for node in ast.walk(increment(write)):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                node.op = ast.Mult()
                return _lines(write)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and _number(node.right) == -1.0:
                _swap_in_increments(engine, [write], {id(node): node.left})
                return _lines(write)
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


def _seed_assignments(method: ast.FunctionDef, me: str, value: float) -> list[ast.Assign | ast.AnnAssign]:
    """``me.grad = value`` (or ``me.grad: float = value``) statements in ``method``."""
    found: list[ast.Assign | ast.AnnAssign] = []
    for n in ast.walk(method):
        if isinstance(n, ast.Assign) and len(n.targets) == 1:
            target: ast.expr = n.targets[0]
        elif isinstance(n, ast.AnnAssign) and n.value is not None:
            target = n.target
        else:
            continue
        if (
            _is_grad(target)
            and isinstance(target.value, ast.Name)  # type: ignore[attr-defined]
            and target.value.id == me  # type: ignore[attr-defined]
            and n.value is not None
            and _number(n.value) == value
        ):
            found.append(n)
    return found


def _reseed(method_name: str, old: float, new: float, missing: str) -> Transform:
    """``self.grad = old`` becomes ``self.grad = new`` in ``method_name``."""

    def transform(engine: Engine) -> list[int]:
        method = engine.method(method_name)
        found = _seed_assignments(method, self_name(method), old)
        if not found:
            raise NotApplicable(missing)
        for node in found:
            node.value = _const(new, node)
        return _lines(*found)

    return transform


def _drop_negation(method: str, fallback: tuple[type[ast.operator], type[ast.operator]] | None = None) -> Transform:
    """Remove the first minus sign in ``method`` (``self * -1`` -> ``self * 1``); else swap an operator."""

    def transform(engine: Engine) -> list[int]:
        body = engine.method(method)
        for node in ast.walk(body):
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
                replace(engine.tree, {id(node): node.operand})
                return _lines(node)
            value = _number(node)
            if isinstance(node, ast.Constant) and value is not None and value < 0:
                node.value = -value
                return _lines(node)
        if fallback:
            return _swap_operator(method, *fallback)(engine)
        raise NotApplicable(f"{method} has no minus sign")

    return transform


def _swap_operator(method: str, old: type[ast.operator], new: type[ast.operator]) -> Transform:
    """Swap the first ``old`` operator in ``method`` for ``new``; ``x.__add__(y)`` counts as ``x + y``."""

    def transform(engine: Engine) -> list[int]:
        alias = _alias_of(engine, method)
        if alias is not None and alias.value.id == _DUNDER[old]:  # type: ignore[attr-defined]
            # `__radd__ = __add__`: the reflected operation is the forward one; the bug makes it
            # call the other operator instead, as the edited method would.
            alias.value = ast.fix_missing_locations(ast.copy_location(_delegate(_DUNDER[new]), alias.value))
            return _lines(alias)
        for node in ast.walk(engine.method(method)):
            if isinstance(node, ast.BinOp) and isinstance(node.op, old):
                node.op = new()
                return _lines(node)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == _DUNDER[old]:
                node.func.attr = _DUNDER[new]
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
    for node in ast.walk(body):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and _number(node.right) == -1.0:
            node.right = _const(-2.0, node.right)
            return _lines(node)
    return _swap_operator("__truediv__", ast.Div, ast.Mult)(engine)


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
    Operator("fwd_neg", "FWD", "-x computes x (the minus sign is lost)", _drop_negation("__neg__")),
    Operator("fwd_sub", "FWD", "a - b computes a + b", _drop_negation("__sub__", (ast.Sub, ast.Add))),
    Operator("fwd_div", "FWD", "a / b computes a * b**-2", _div_square),
    Operator("fwd_rdiv", "FWD", "k / x computes k * x", _drop_negation("__rtruediv__", (ast.Div, ast.Mult))),
    Operator("fwd_rsub", "FWD", "k - x computes k + x", _drop_negation("__rsub__", (ast.Sub, ast.Add))),
    Operator("fwd_radd", "FWD", "k + x computes x - k", _swap_operator("__radd__", ast.Add, ast.Sub)),
    Operator("fwd_rmul", "FWD", "k * x computes x / k", _swap_operator("__rmul__", ast.Mult, ast.Div)),
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
