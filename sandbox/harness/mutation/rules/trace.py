"""``Trace``: the abstract interpretation of one operation's method and the helpers it calls.

It finds which names hold the operands and the output node, the operation's own lambdas and
expressions, where the ``+=`` are and what feeds them, the tag its nodes carry, and the local
derivatives it stores in its node for the backward pass to read.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .values import (
    Code,
    Const,
    Datas,
    Each,
    Field,
    Found,
    Operand,
    Own,
    Prefix,
    Prev,
    Provider,
    Results,
    Seq,
    TableRef,
    role,
)
from .writes import _STOPS, Write, _contains, _static, accumulator_call, statement_write

if TYPE_CHECKING:
    from .program import Program


_MAX_DEPTH = 8


class Trace:
    """Abstract interpretation of one operation's method and the helpers it calls."""

    def __init__(self, program: Program, name: str):
        self.p = program
        self.name = name
        self.found: list[Found] = []
        self.tags: list[object] = []
        self.stack: list[int] = []
        self.private: set[int] = set()
        self.calls: dict[int, tuple[Code, tuple[object, ...], ast.Call]] = {}  # own lambdas called, by call
        self.providers: list[Provider] = []  # own local derivatives handed on, to be read back later
        self.data_names: set[str] = set()  # names passed as a new node's data (its output value)
        self.made = False  # the operation builds its node itself (it is a primitive)
        self.statement_call: ast.Expr | None = None  # the expression statement being evaluated

    def run(self, *, full: bool = True) -> None:
        p = self.p
        method = p.method_node(self.name)
        factory = p.factory_call(self.name)
        # The tag first (without privacy), then again with the private code known.
        for phase in (0, 1) if full else (0,):
            self.found, self.tags, self.calls, self.providers, self.made = [], [], {}, [], False
            if phase == 1:
                tag = self.tag()
                self.private = p.private(self.name, tag.value if isinstance(tag, Const) else None)
            if method is not None:
                args: list[object] = [Operand(i) for i in range(len(method.args.args))]
                self.invoke(Code(method, {}, True), args, {})
            elif factory is not None:
                made = self.eval(factory, {}, True)
                if isinstance(made, Code):  # the method the factory made: this operation's own code
                    params = len(made.fn.args.args)
                    self.invoke(Code(made.fn, made.env, True, made.bound), [Operand(i) for i in range(params)], {})

    def tag(self) -> object:
        return self.tags[0] if self.tags else None

    # --- calls ---

    def invoke(self, code: Code, args: list[object], kwargs: dict[str, object]) -> object:
        fn = code.fn
        if id(fn) in self.stack or len(self.stack) >= _MAX_DEPTH:
            return None
        env = dict(code.env)
        params = [a.arg for a in fn.args.args]
        given = [*code.bound, *args]
        for i, param in enumerate(params):
            env[param] = given[i] if i < len(given) else None
            value = env[param]
            if isinstance(value, Code) and value.own and isinstance(value.fn, ast.Lambda) and not code.own:
                self.providers.append(Provider("code", {param}, code=value))
        if fn.args.vararg is not None:
            env[fn.args.vararg.arg] = Seq(tuple(given[len(params) :]))
        for param, value in kwargs.items():
            env[param] = value
        for a in fn.args.kwonlyargs:
            env.setdefault(a.arg, None)
        own = code.own or id(fn) in self.private
        self.stack.append(id(fn))
        try:
            if isinstance(fn, ast.Lambda):
                return self.eval(fn.body, env, own)
            self.block(fn.body, env, own)
            return env.get("<return>")
        finally:
            self.stack.pop()

    def block(self, body: list[ast.stmt], env: dict[str, object], own: bool) -> None:
        for stmt in body:
            self.statement(stmt, env, own)

    def statement(self, stmt: ast.stmt, env: dict[str, object], own: bool) -> None:
        plain = statement_write(stmt)
        if plain is not None:
            self.found.append(Found(Write(stmt, plain[0], plain[1]), env, own))
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            code = Code(stmt, env, own)  # type: ignore[arg-type]
            env[stmt.name] = code
            self.invoke(code, [], {})  # a closure: its body is part of the rule
            return
        if isinstance(stmt, ast.ClassDef):
            return
        if isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value, env, own)
            for target in stmt.targets:
                self.bind(target, value, stmt.value, env)
            self._post_construction(stmt, env)
            return
        if isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.bind(stmt.target, self.eval(stmt.value, env, own), stmt.value, env)
            return
        if isinstance(stmt, ast.AugAssign):
            self.eval(stmt.value, env, own)
            return
        if isinstance(stmt, ast.Return):
            if stmt.value is not None:
                env["<return>"] = self.eval(stmt.value, env, own)
            return
        if isinstance(stmt, ast.Expr):
            self.statement_call = stmt
            self.eval(stmt.value, env, own)
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            source = self.eval(stmt.iter, env, own)
            self.bind_loop(stmt.target, stmt.iter, source, env)
        for node in ast.iter_child_nodes(stmt):
            if isinstance(node, ast.expr) and not (isinstance(stmt, (ast.For, ast.AsyncFor)) and node is stmt.iter):
                self.eval(node, env, own)
        for block in _blocks(stmt):
            self.block(block, env, own)

    def _post_construction(self, stmt: ast.Assign, env: dict[str, object]) -> None:
        """``node._op = op`` after ``node = Value(data)``: the tag."""
        for target in stmt.targets:
            if isinstance(target, ast.Attribute) and target.attr == "_op" and isinstance(target.value, ast.Name):
                if env.get(target.value.id) == Operand(-1):
                    self.tags.append(self.eval(stmt.value, env, False))

    def bind(self, target: ast.expr, value: object, source: ast.expr, env: dict[str, object]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, item in enumerate(target.elts):
                if isinstance(value, Seq) and i < len(value.items):
                    part: object = value.items[i]
                elif isinstance(value, Prev):
                    part = Operand(i)
                elif isinstance(value, Datas):
                    part = Field(i, "data")
                elif isinstance(value, Results):
                    part = Each(value)
                else:
                    part = None
                sub = source.elts[i] if isinstance(source, (ast.Tuple, ast.List)) and i < len(source.elts) else source
                self.bind(item, part, sub, env)

    def bind_loop(self, target: ast.expr, iterable: ast.expr, source: object, env: dict[str, object]) -> None:
        """``for x, d in zip(xs, partials)``: each name holds one item of its sequence at a time."""
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Name)
            and iterable.func.id == "zip"
            and isinstance(target, ast.Tuple)
            and len(target.elts) == len(iterable.args)
        ):
            for item, arg in zip(target.elts, iterable.args, strict=True):
                if isinstance(item, ast.Name):
                    env[item.id] = Each(env.get(arg.id) if isinstance(arg, ast.Name) else None)
            return
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                env[sub.id] = Each(source)

    # --- expressions ---

    def eval(self, node: ast.expr, env: dict[str, object], own: bool) -> object:  # noqa: C901
        p = self.p
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in p.functions:
                fn = p.functions[node.id]
                return Code(fn, {}, id(fn) in self.private)
            if node.id in p.tables:
                return TableRef(node.id)
            return None
        if isinstance(node, ast.Constant):
            return Const(node.value, own)
        if isinstance(node, ast.JoinedStr):
            first = node.values[0] if node.values else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value:
                return Prefix(first.value)
            return None
        if isinstance(node, ast.Lambda):
            code = Code(node, env, own)
            inner = dict(env)
            for a in node.args.args:
                inner[a.arg] = None
            self.eval(node.body, inner, own)  # what it calls belongs to the rule too
            return code
        if isinstance(node, ast.Attribute):
            base = self.eval(node.value, env, own)
            base = role(base)
            if isinstance(base, Operand) and node.attr in ("data", "grad"):
                return Field(base.index, node.attr)
            if base == Operand(-1) and node.attr == "_prev":
                return Prev()
            if node.attr in p.methods and (
                isinstance(base, Operand) or (isinstance(node.value, ast.Name) and node.value.id == p.cls.name)
            ):
                fn = p.methods[node.attr]
                if fn.name in _STOPS:
                    return None
                bound: tuple[object, ...] = (base,) if isinstance(base, Operand) and not _static(fn) else ()
                return Code(fn, {}, id(fn) in self.private, bound)
            return Own(node) if own else None
        if isinstance(node, ast.Subscript):
            base = self.eval(node.value, env, own)
            key = self.eval(node.slice, env, own)
            if isinstance(base, TableRef) and isinstance(key, Const):
                table = p.tables[base.name]
                for k, v in zip(table.keys, table.values, strict=True):
                    if isinstance(k, ast.Constant) and k.value == key.value:
                        return self.eval(v, {}, key.own)
                return None
            if isinstance(key, Const) and isinstance(key.value, int):
                if isinstance(base, Seq) and -len(base.items) <= key.value < len(base.items):
                    return base.items[key.value]
                if isinstance(base, Prev):
                    return Operand(key.value)
                if isinstance(base, Datas):
                    return Field(key.value, "data")
            return Own(node) if own else None
        if isinstance(node, (ast.Tuple, ast.List)):
            return Seq(tuple(self.eval(e, env, own) for e in node.elts))
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            for gen in node.generators:
                self.eval(gen.iter, env, own)
            if (
                len(node.generators) == 1
                and isinstance(node.elt, ast.Attribute)
                and node.elt.attr == "data"
                and isinstance(node.elt.value, ast.Name)
                and isinstance(node.generators[0].target, ast.Name)
                and node.elt.value.id == node.generators[0].target.id
            ):
                return Datas()
            return Own(node) if own else None
        if isinstance(node, ast.IfExp):
            self.eval(node.test, env, own)
            body, orelse = self.eval(node.body, env, own), self.eval(node.orelse, env, own)
            for value in (body, orelse):
                if isinstance(value, Operand) and value.index >= 0:
                    return value  # `other if isinstance(other, Value) else Value(other)`
            return Own(node) if own else None
        if isinstance(node, ast.Call):
            return self.call(node, env, own)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.eval(child, env, own)
        return Own(node) if own else None

    def call(self, node: ast.Call, env: dict[str, object], own: bool) -> object:
        p = self.p
        func = node.func
        args: list[object] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                value = self.eval(a.value, env, own)
                args.extend(value.items if isinstance(value, Seq) else [None])
            else:
                args.append(self._arg(a, env, own))
        kwargs = {k.arg: self._arg(k.value, env, own) for k in node.keywords if k.arg is not None}
        holder = self.statement_call
        write = accumulator_call(p, node, holder if holder is not None and holder.value is node else None)
        if write is not None:
            self.found.append(Found(write, env, own))
            return None
        if isinstance(func, ast.Name) and (func.id == p.cls.name or func.id in p.subclasses):
            return self.construct(node, func.id, args, kwargs, env, own)
        if (
            isinstance(func, ast.Name)
            and func.id == "partial"
            or (isinstance(func, ast.Attribute) and func.attr == "partial")
        ):
            if args and isinstance(args[0], Code):
                target = args[0]
                self.invoke(target, args[1:], kwargs)  # what the partial will run
                return Code(target.fn, target.env, target.own, (*target.bound, *args[1:]))
            return None
        callee = self.eval(func, env, own)
        if isinstance(callee, Code):
            result = self.invoke(callee, args, kwargs)
            if own and isinstance(result, Code) and _contains(callee.fn, result.fn):
                result = Code(result.fn, result.env, True, result.bound)  # a function made for this operation
            if callee.own and isinstance(callee.fn, ast.Lambda) and not isinstance(result, (Code, Operand)):
                self.calls[id(node)] = (callee, tuple(args), node)
                return Results(callee, tuple(args))
            return result
        if len(node.args) == 1 and isinstance(args[0], Operand) and args[0].index >= 0:
            return args[0]  # a coercion: `_wrap(other)`, `Value._lift(other)`
        return Own(node) if own else None

    def _arg(self, node: ast.expr, env: dict[str, object], own: bool) -> object:
        value = self.eval(node, env, own)
        if isinstance(value, (Operand, Code, Seq, Datas, Prev, TableRef, Results, Each, Const, Prefix)):
            return value
        if own:
            return Own(node, role(value))  # the operation's own expression (`out.data`, `1 - t**2`)
        return value

    def construct(
        self,
        node: ast.Call,
        cls: str,
        args: list[object],
        kwargs: dict[str, object],
        env: dict[str, object],
        own: bool,
    ) -> object:
        """A new node: the output (a constructor called with one argument only wraps a number)."""
        p = self.p
        if cls not in p.subclasses and not self._has_children(node):
            return Operand(-1) if not (args and isinstance(args[0], Operand)) else args[0]
        self.made = True
        if own:
            self._handed_on(node, cls, args, kwargs, env)
        if cls in p.subclasses:
            for item in p.subclasses[cls].body:
                if (
                    isinstance(item, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "_op" for t in item.targets)
                    and isinstance(item.value, ast.Constant)
                ):
                    self.tags.append(Const(item.value.value, True))
        elif p.op_slot is not None:
            position, name = p.op_slot
            value = args[position] if position < len(args) else kwargs.get(name)
            if value is not None:
                self.tags.append(value)
        return Operand(-1)

    def _has_children(self, node: ast.Call) -> bool:
        """Does this constructor call make a node with parents (not a leaf wrapping a number)?"""
        slot = next(
            (i for i, name in enumerate(self.p.init_params) if "_prev" in self.p.init_attrs.get(name, ())), None
        )
        if slot is None:
            return len(node.args) + len(node.keywords) > 1
        name = self.p.init_params[slot]
        given = (
            node.args[slot] if slot < len(node.args) else next((k.value for k in node.keywords if k.arg == name), None)
        )
        if any(isinstance(a, ast.Starred) for a in node.args[: slot + 1]):
            return True
        return given is not None and not (isinstance(given, (ast.Tuple, ast.List)) and not given.elts)

    def _handed_on(
        self, node: ast.Call, cls: str, args: list[object], kwargs: dict[str, object], env: dict[str, object]
    ) -> None:
        """What the operation stores in its new node for the backward pass to read: a lambda,
        ``(operand, local derivative)`` pairs, or the node's own class (a subclass with a method
        returning the local derivatives)."""
        p = self.p
        if cls in p.subclasses:
            sub = p.subclasses[cls]
            names = {f.name for f in sub.body if isinstance(f, ast.FunctionDef) and f.name != "__init__"}
            self.providers.append(Provider("subclass", names, cls=sub))
            return
        given: list[tuple[str, ast.expr, object]] = []
        for i, arg in enumerate(node.args):
            if i < len(p.init_params) and not isinstance(arg, ast.Starred):
                given.append((p.init_params[i], arg, args[i] if i < len(args) else None))
        given += [(k.arg, k.value, kwargs.get(k.arg)) for k in node.keywords if k.arg is not None]
        for position, (param, arg, value) in enumerate(given):
            links = {param, *p.init_attrs.get(param, set())}
            if position == 0 and isinstance(arg, ast.Name):
                self.data_names.add(arg.id)
            if isinstance(value, Code) and value.own and isinstance(value.fn, ast.Lambda):
                self.providers.append(Provider("code", links, code=value))
            pairs = _operand_pairs(arg, env)
            if pairs:
                self.providers.append(Provider("pairs", links, pairs=pairs))


def _operand_pairs(arg: ast.expr, env: dict[str, object]) -> list[tuple[int, ast.expr]]:
    """``((self, d1), (other, d2))``: (operand index, derivative) for each pair."""
    if not isinstance(arg, (ast.Tuple, ast.List)) or not arg.elts:
        return []
    found = []
    for item in arg.elts:
        if not (isinstance(item, ast.Tuple) and len(item.elts) == 2 and isinstance(item.elts[0], ast.Name)):
            return []
        operand = role(env.get(item.elts[0].id))
        if not (isinstance(operand, Operand) and operand.index >= 0):
            return []
        found.append((operand.index, item.elts[1]))
    return found


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    found = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            found.append(value)
    for handler in getattr(stmt, "handlers", []):
        found.append(handler.body)
    return found
