"""Where an operator's target is: the engine's methods and backward rules, and the writes in them.

``Engine`` holds the lookups every operator shares, over one (already copied) tree. The
functions after it read the parts of a gradient write (``x.grad += v``, ``x.grad = x.grad + v``,
an accumulator call) and recognise operator calls (``operator.mul(a, b)``, ``pow(x, n)``).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable

from ...probes.facts import NotApplicable, graded_class
from ..rules.find import Rule, find_rule
from ..rules.program import Program
from ..rules.writes import BACKWARD_OPS, Write, statement_write

Scope = ast.AST


class Engine:
    """Lookups shared by the operators, over one (already copied) tree."""

    def __init__(self, tree: ast.Module, class_name: str):
        self.tree = tree
        self.cls = graded_class(tree, class_name)
        self.methods = {n.name: n for n in self.cls.body if isinstance(n, ast.FunctionDef)}
        self._program: Program | None = None
        self._rules: dict[str, Rule] = {}

    @property
    def program(self) -> Program:
        if self._program is None:
            self._program = Program(self.tree, self.cls)
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
            self._rules[name] = find_rule(self.program, name)
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
                    if name in self.methods and (name not in BACKWARD_OPS and not name.startswith("__")):
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


def _within(program: Program, node: ast.AST, outer: ast.AST) -> bool:
    return node is not outer and any(n is node for n in ast.walk(outer))


def _is_grad(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def grad_writes(scope: Scope) -> list[ast.stmt]:
    """``x.grad += v`` and ``x.grad = x.grad + v`` statements, in source order."""
    found: list[ast.stmt] = [n for n in ast.walk(scope) if isinstance(n, ast.stmt) and statement_write(n)]
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


Transform = Callable[[Engine], list[int]]


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
