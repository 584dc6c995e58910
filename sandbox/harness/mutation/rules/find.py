"""Where one operation's backward rule is (``find_rule``): the writes in its private code, or the
shared writes under a guard on its tag with the local derivatives it passes in, or what it
stores in its node for the backward pass to apply (see the package's docstring).
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from .program import Program
from .trace import Trace
from .values import Code, Const, Each, Field, Found, Operand, Own, Prefix, Provider, Results, role
from .writes import BACKWARD_OPS, OTHER_OPS, Write, _contains, writes_in


@dataclass(eq=False)
class Partial:
    """One local derivative the operation passes to shared code (for operand ``operand``)."""

    expr: ast.expr
    operand: int
    lam: ast.Lambda | ast.FunctionDef | None = None  # the lambda (or function) it is the result of
    roles: dict[str, object] = field(default_factory=dict)  # that lambda's parameters: what they hold
    in_method: bool = False  # written in the operation's method, where its own names are in scope


@dataclass(eq=False)
class Rule:
    """Where one operation's backward rule is."""

    name: str
    writes: list[Write]  # the accumulations that run for its nodes (private, or shared and guarded)
    shared: bool  # the writes run for other operations' nodes too
    partials: list[Partial]  # its own local derivatives, when the writes are shared
    scopes: list[ast.AST]  # private code: closures, private helpers (searched for a rule's syntax)
    method: ast.FunctionDef | ast.Lambda | None  # the method, when written as one
    missing: str = ""  # why no write was found


# --- an operation's rule ------------------------------------------------------------------------------


def builds_node(program: Program, name: str) -> bool:
    """Does operation ``name`` make its node itself (with a backward rule of its own), rather
    than through other operations (``self + (-other)``)?"""
    return program.trace(name, full=False).made


def find_rule(program: Program, name: str) -> Rule:
    """Where operation ``name``'s backward rule is (see the package's docstring)."""
    method = program.method_node(name)
    if method is not None:
        inside = writes_in(program, method)
        if inside:  # closures (or lambdas) in the method itself: its own by definition
            nested: list[ast.AST] = [
                n for n in ast.walk(method) if isinstance(n, (ast.FunctionDef, ast.Lambda)) and n is not method
            ]
            return Rule(name, inside, False, [], nested, method)
    trace = program.trace(name)
    tag = trace.tag()
    regions = program.private(name, tag.value if isinstance(tag, Const) else None)
    scopes: list[ast.AST] = []
    if method is not None:
        scopes += [n for n in ast.walk(method) if isinstance(n, (ast.FunctionDef, ast.Lambda)) and n is not method]
    for fn in [*program.functions.values(), *program.methods.values()]:
        if id(fn) in regions and fn is not method:
            scopes.append(fn)
    for table in program.tables.values():
        for value in table.values:
            if id(value) in regions:
                named = program.functions.get(value.id) if isinstance(value, ast.Name) else None
                scopes.append(named if named is not None else value)
    seen: set[int] = set()
    private: list[Write] = []
    roots = [s for s in scopes if not any(o is not s and _contains(o, s) for o in scopes)]
    for scope in [*([method] if method is not None else []), *roots]:
        for write in writes_in(program, scope):
            if id(write.anchor) not in seen:
                seen.add(id(write.anchor))
                private.append(write)
    private.sort(key=lambda w: (getattr(w.anchor, "lineno", 0), getattr(w.anchor, "col_offset", 0)))
    if private:
        return Rule(name, private, False, [], scopes, method)
    shared = [f for f in trace.found if not f.own]
    if shared:
        guard_tag = _unique_tag(program, name, tag)
        writes = []
        for f in shared:
            out = next((k for k, v in f.env.items() if v == Operand(-1) and not k.startswith("<")), None)
            guarded = _guard(ast.Name(out, ast.Load()), guard_tag) if out is not None and guard_tag else None
            writes.append(Write(f.write.anchor, f.write.target, f.write.value, guarded))
        collect = _Partials(program, trace, method)
        collect.from_writes(shared)
        return Rule(name, writes, True, collect.sorted(), scopes, method)
    return _swept(program, name, trace, method, scopes)


def _swept(
    program: Program, name: str, trace: Trace, method: ast.FunctionDef | ast.Lambda | None, scopes: list[ast.AST]
) -> Rule:
    """The backward pass applies every node's local derivatives itself (``parent.grad += local *
    node.grad``), reading what the operation stored in the node: (operand, derivative) pairs, a
    lambda returning them, a pullback of the upstream gradient, or a method of the node's own
    subclass. Those are the operation's partials; the shared accumulation is guarded by its tag."""
    missing = Rule(name, [], False, [], scopes, method, missing="no backward rule")
    if not trace.providers:
        return missing
    sweep = program.sweep()
    found: list[tuple[Write, set[str], ast.expr | None]] = []
    for scope in sweep:
        for write in writes_in(program, scope):
            attributes, node = _read_through(program, scope, write)
            found.append((write, attributes, node))
    links = set().union(*(attributes for _, attributes, _ in found)) if found else set()
    linked = [p for p in trace.providers if p.links & links]
    if not linked:
        return missing
    collect = _Partials(program, trace, method)
    for provider in linked:
        collect.from_provider(provider, sweep)
    if not collect.found:
        return missing
    guard_tag = _unique_tag(program, name, trace.tag())
    writes = [
        Write(w.anchor, w.target, w.value, _guard(node, guard_tag) if node is not None and guard_tag else None)
        for w, attributes, node in found
        if any(p.links & attributes for p in linked)
    ]
    return Rule(name, writes, True, collect.sorted(), scopes, method)


def _read_through(program: Program, scope: ast.AST, write: Write) -> tuple[set[str], ast.expr | None]:
    """The attributes a write's increment is read through (following the locals it is computed
    from: ``for parent, local in zip(node._prev, node.local_grads())``), and the node whose
    gradient flows down (the ``x`` of the ``x.grad`` read there)."""
    sources: dict[str, list[ast.expr]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        sources.setdefault(name.id, []).append(node.value)
        elif isinstance(node, (ast.For, ast.comprehension)):
            for name in ast.walk(node.target):
                if isinstance(name, ast.Name):
                    sources.setdefault(name.id, []).append(node.iter)
    read: list[ast.expr] = [write.value]
    done: set[str] = set()
    attributes: set[str] = set()
    upstream: ast.expr | None = None
    while read:
        expr = read.pop(0)
        for node in ast.walk(expr):
            if isinstance(node, ast.Attribute):
                attributes.add(node.attr)
                pure = all(isinstance(n, (ast.Name, ast.Attribute, ast.Load)) for n in ast.walk(node.value))
                if node.attr == "grad" and upstream is None and pure:
                    upstream = node.value
            elif isinstance(node, ast.Name) and node.id not in done:
                done.add(node.id)
                read += sources.get(node.id, [])
    return attributes, upstream


def _unique_tag(program: Program, name: str, tag: object) -> object:
    """The tag that tells this operation's nodes apart, if no other operation's could match it."""
    if not (isinstance(tag, Const) and isinstance(tag.value, str)) and not isinstance(tag, Prefix):
        return None

    def clash(other: object) -> bool:
        """Could a node ``other`` tags pass this operation's guard?"""
        if isinstance(tag, Const):
            assert isinstance(tag.value, str)
            if isinstance(other, Const):
                return bool(other.value == tag.value)
            return isinstance(other, Prefix) and tag.value.startswith(other.text)
        assert isinstance(tag, Prefix)
        if isinstance(other, Const):
            return isinstance(other.value, str) and other.value.startswith(tag.text)
        return isinstance(other, Prefix) and (other.text.startswith(tag.text) or tag.text.startswith(other.text))

    for other in (*BACKWARD_OPS, *OTHER_OPS):
        if other == name or program.method_node(other) is None and program.factory_call(other) is None:
            continue
        if any(clash(t) for t in program.trace(other, full=False).tags):
            return None
    return tag


def _guard(node: ast.expr, tag: object) -> ast.expr:
    op = ast.Attribute(copy.deepcopy(node), "_op", ast.Load())
    if isinstance(tag, Prefix):
        method = ast.Attribute(op, "startswith", ast.Load())
        return ast.Call(method, [ast.Constant(tag.text)], [])
    assert isinstance(tag, Const) and isinstance(tag.value, str)
    return ast.Compare(op, [ast.Eq()], [ast.Constant(tag.value)])


def _operand(target: ast.expr, env: dict[str, object]) -> int | None:
    if isinstance(target, ast.Name):
        value = env.get(target.id)
        if isinstance(value, Operand) and value.index >= 0:
            return value.index
    return None


class _Partials:
    """Collects an operation's own local derivatives, with what each lambda parameter holds."""

    def __init__(self, program: Program, trace: Trace, method: ast.AST | None):
        self.program, self.trace, self.method = program, trace, method
        self.found: list[Partial] = []
        self.seen: set[int] = set()

    def sorted(self) -> list[Partial]:
        return sorted(self.found, key=lambda q: q.operand)

    def add(self, expr: ast.expr, operand: int | None, lam: ast.AST | None, roles: dict[str, object]) -> None:
        if operand is None or id(expr) in self.seen:
            return
        self.seen.add(id(expr))
        inside = self.method is not None and _contains(self.method, expr)
        fn = lam if isinstance(lam, (ast.Lambda, ast.FunctionDef)) else None
        self.found.append(Partial(expr, operand, fn, roles, inside))

    def called(self, call: ast.Call, operand: int | None, each: bool) -> bool:
        """The body of an own lambda called at ``call`` (its parameters bound to the arguments)."""
        if id(call) not in self.trace.calls:
            return False
        code, args, node = self.trace.calls[id(call)]
        self.results(code, args, node, operand, each)
        return True

    def results(
        self, code: Code, args: tuple[object, ...], call: ast.Call | None, operand: int | None, each: bool
    ) -> None:
        lam = code.fn
        roles: dict[str, object] = {}
        for i, a in enumerate(lam.args.args):
            value = role(args[i]) if i < len(args) else None
            given = call.args[i] if call is not None and i < len(call.args) else None
            if value is None and isinstance(given, ast.Name) and given.id in self.trace.data_names:
                value = Field(-1, "data")  # the new node's data: the output's value
            roles[a.arg] = value
        body = lam.body
        if not isinstance(body, ast.expr):
            return
        if each and isinstance(body, (ast.Tuple, ast.List)):
            for i, item in enumerate(body.elts):
                self.add(item, i, lam, roles)
        else:
            self.add(body, 0 if each else operand, lam, roles)

    def from_writes(self, found: list[Found]) -> None:
        """Partials a shared accumulation reads: own expressions and lambdas the operation passed in."""
        for f in found:
            operand = _operand(f.write.target, f.env)
            for node in ast.walk(f.write.value):
                if isinstance(node, ast.Name):
                    value = f.env.get(node.id)
                    if isinstance(value, Own):
                        self.add(value.node, operand, None, {})
                    elif isinstance(value, Results):
                        self.results(value.code, value.args, None, operand, False)
                    elif isinstance(value, Each) and isinstance(value.of, Results):
                        self.results(value.of.code, value.of.args, None, None, True)
                elif isinstance(node, ast.Call):
                    self.called(node, operand, False)

    def from_provider(self, provider: Provider, sweep: list[ast.AST]) -> None:
        """Partials stored in the node for the backward pass (see ``_swept``)."""
        if provider.kind == "pairs":
            for operand, expr in provider.pairs:
                self.add(expr, operand, None, {})
        elif provider.kind == "code" and provider.code is not None:
            lam = provider.code.fn
            body = lam.body
            if isinstance(body, ast.Call) and self.called(body, None, True):
                return
            if isinstance(body, (ast.Tuple, ast.List)):
                for i, item in enumerate(body.elts):
                    if not (isinstance(item, ast.Call) and self.called(item, i, False)):
                        self.add(item, i, lam, self._sweep_roles(lam, provider, sweep))
            elif isinstance(body, ast.expr):
                self.add(body, 0, lam, self._sweep_roles(lam, provider, sweep))
        elif provider.kind == "subclass" and provider.cls is not None:
            for fn in provider.cls.body:
                if isinstance(fn, ast.FunctionDef) and fn.name in provider.links and fn.args.args:
                    env: dict[str, object] = {fn.args.args[0].arg: Operand(-1)}
                    Trace(self.program, "").block(fn.body, env, True)
                    result = fn.body[-1] if fn.body else None
                    if isinstance(result, ast.Return) and isinstance(result.value, (ast.Tuple, ast.List)):
                        for i, item in enumerate(result.value.elts):
                            self.add(item, i, fn, {k: role(v) for k, v in env.items() if not k.startswith("<")})

    def _sweep_roles(
        self, lam: ast.Lambda | ast.FunctionDef, provider: Provider, sweep: list[ast.AST]
    ) -> dict[str, object]:
        """A stored lambda's parameters, as the backward pass calls it (``entry.pullback(entry.out.grad)``)."""
        params = [a.arg for a in lam.args.args]
        roles: dict[str, object] = dict.fromkeys(params)
        for scope in sweep:
            for node in ast.walk(scope):
                func = node.func if isinstance(node, ast.Call) else None
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
                if isinstance(node, ast.Call) and name in provider.links:
                    for param, arg in zip(params, node.args, strict=False):
                        if isinstance(arg, ast.Attribute) and arg.attr == "grad":
                            roles[param] = Field(-1, "grad")
                    return roles
        return roles
