"""Where an operation's backward rule lives, followed from the operation's method.

An operation's rule is the code that runs, in the backward pass, for the nodes the operation
makes. It is found by following the method: the closures and lambdas it defines; the helper
methods and module-level functions it calls, names (in a lambda, ``functools.partial``, a
function object handed on) or delegates to; the entry of a dispatch table keyed by the
operation's tag (its ``_op``). Code that belongs to this operation alone is *private*: every
reference to it, in the engine's code, lies in the method, in other private code, in a table
entry keyed by the operation's tag, or in a single-operation function the method delegates to
with its operands (``def __mul__(self, o): return mul(self, o)``). A bug goes straight into
private code.

Code several operations share (a ``_binary`` helper, a generic ``_chain(x, out, local)``, an
``_acc(node, g)`` accumulator) is edited only for this operation. Its *partials* (the local
derivatives it passes in: lambdas, expressions, entries of a table keyed by its tag) are its
own, and edited where they are written. A bug in the shared accumulation itself is *guarded*:
the edit applies only when the node's tag is the operation's (``out._op == '*'``), so every
other operation keeps its rule; when another operation's nodes could carry the same tag, no
guard is built and the bug does not apply. Where the backward pass itself applies every
node's local derivatives (``parent.grad += local * node.grad``), the partials are what the
operation stored in its node for that pass to read: ``(operand, derivative)`` pairs, a lambda
returning them, a pullback of the upstream gradient, or a method of the node's own subclass.
All of this is found by a small abstract interpretation of the method and the helpers it
calls (``Trace``): which names hold the operands, the output node, the operation's own lambdas
and expressions, where the ``+=`` are and what feeds them.

Standard library only: this runs inside the sandbox.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

# Operations with a backward rule of their own (the catalogue's ACC, CHAIN and LOC targets).
BACKWARD_OPS = ("__add__", "__mul__", "__pow__", "relu", "tanh", "exp", "log")
# Operations whose nodes must not share a backward operation's tag (the guard tells them apart).
OTHER_OPS = ("__sub__", "__truediv__", "__neg__", "__rsub__", "__rtruediv__")
# Methods that are operations or the sweep: following calls stops there (using another
# operation is composition, not sharing its rule).
_STOPS = frozenset(
    {*BACKWARD_OPS, *OTHER_OPS, "__radd__", "__rmul__", "__rpow__", "backward", "__init__", "__iadd__", "__imul__"}
)
_MAX_DEPTH = 8


def is_grad(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def _load(node: ast.expr) -> ast.expr:
    clone = copy.deepcopy(node)
    for sub in ast.walk(clone):
        if hasattr(sub, "ctx"):
            sub.ctx = ast.Load()
    return clone


def statement_write(node: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """(target, increment) of ``x.grad += v``, ``x.grad = x.grad + v`` or ``x.grad = v + x.grad``."""
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and isinstance(node.target, ast.Attribute):
        if node.target.attr == "grad":
            return node.target.value, node.value
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and is_grad(node.targets[0])
        and isinstance(node.value, ast.BinOp)
        and isinstance(node.value.op, ast.Add)
    ):
        target = ast.dump(_load(node.targets[0]))
        if ast.dump(node.value.left) == target:
            return node.targets[0].value, node.value.right  # type: ignore[attr-defined]
        if ast.dump(node.value.right) == target:
            return node.targets[0].value, node.value.left  # type: ignore[attr-defined]
    return None


@dataclass(eq=False)
class Write:
    """One accumulation into a node's gradient: a statement, or a call of an accumulator
    function (``Value._acc(x, v)``, whose body is ``node.grad += g``)."""

    anchor: ast.AST  # the statement, or the call when it is not a statement of its own
    target: ast.expr  # x in x.grad
    value: ast.expr  # what is added
    guard: ast.expr | None = None  # shared code: true exactly for this operation's nodes

    @property
    def is_call(self) -> bool:
        return isinstance(self.anchor, ast.Call) or (
            isinstance(self.anchor, ast.Expr) and isinstance(self.anchor.value, ast.Call)
        )

    @property
    def call(self) -> ast.Call:
        node = self.anchor.value if isinstance(self.anchor, ast.Expr) else self.anchor
        assert isinstance(node, ast.Call)
        return node


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


# --- the engine's code -------------------------------------------------------------------------------


class Program:
    """Indexes of one module and its engine class, shared by every operator's lookups."""

    def __init__(self, tree: ast.Module, cls: ast.ClassDef):
        self.tree, self.cls = tree, cls
        self.functions: dict[str, ast.FunctionDef] = {}
        self.tables: dict[str, ast.Dict] = {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self.functions[node.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Name):
                        self.tables[target.id] = node.value
        self.methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
        self.attributes: dict[str, ast.expr] = {}  # class-level `name = value`
        for node in cls.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.attributes[node.targets[0].id] = node.value
                if isinstance(node.value, ast.Dict):
                    self.tables.setdefault(node.targets[0].id, node.value)
        self.subclasses = {
            c.name: c
            for c in tree.body
            if isinstance(c, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == cls.name for b in c.bases)
        }
        self._parent: dict[int, ast.AST] | None = None
        self._engine: list[ast.AST] | None = None
        self.accumulators = {n.name: slots for n in self._callables() if (slots := _accumulator(n)) is not None}
        self.op_slot = self._op_slot()
        self.init_params, self.init_attrs = self._init_storage()
        self.ordered_prev = self._ordered_prev()
        self._private: dict[str, set[int]] = {}
        self._sweep: list[ast.AST] | None = None
        self._loads: dict[str, list[ast.AST]] | None = None
        self._attribute_loads: dict[str, list[ast.AST]] = {}
        self._traces: dict[str, Trace] = {}
        self._references: dict[tuple[str, bool], list[ast.AST]] = {}
        self._chains: dict[int, set[int]] = {}

    def trace(self, name: str, *, full: bool = True) -> Trace:
        """Operation ``name``'s method, interpreted (once per program). Without ``full``, the
        code it reaches is not sorted into its own and shared (enough for its tag)."""
        key = f"{name}|{full}"
        if key not in self._traces:
            found = Trace(self, name)
            found.run(full=full)
            self._traces[key] = found
        return self._traces[key]

    def _init_storage(self) -> tuple[list[str], dict[str, set[str]]]:
        """The constructor's parameters (after self), and the attributes each is stored in."""
        init = self.methods.get("__init__")
        if init is None or not init.args.args:
            return [], {}
        me = init.args.args[0].arg
        params = [a.arg for a in init.args.args[1:]]
        stored: dict[str, set[str]] = {}
        for node in ast.walk(init):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target, value in _pairs(targets, node.value):
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == me
                    ):
                        for name in ast.walk(value):
                            if isinstance(name, ast.Name) and name.id in params:
                                stored.setdefault(name.id, set()).add(target.attr)
        return params, stored

    def _ordered_prev(self) -> bool:
        """``self._prev`` keeps the operands in order (a tuple or a list), so ``_prev[i]`` is operand i."""
        init = self.methods.get("__init__")
        for node in ast.walk(init) if init is not None else []:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target, value in _pairs(targets, node.value):
                    if isinstance(target, ast.Attribute) and target.attr == "_prev":
                        return isinstance(value, (ast.Tuple, ast.List)) or (
                            isinstance(value, ast.Call)
                            and isinstance(value.func, ast.Name)
                            and value.func.id in ("tuple", "list")
                        )
        return False

    def sweep(self) -> list[ast.AST]:
        """backward() and what it calls, transitively: helper methods (on any node) and
        module-level functions (a topological sort, a module-level ``backward(root)``)."""
        if self._sweep is not None:
            return self._sweep
        method = self.method_node("backward")
        found: list[ast.AST] = [] if method is None else [method]
        queue = list(found)
        while queue:
            scope = queue.pop(0)
            for node in ast.walk(scope):
                if not isinstance(node, ast.Call):
                    continue
                target: ast.AST | None = None
                if isinstance(node.func, ast.Name):
                    target = self.functions.get(node.func.id)
                elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                    name = node.func.attr
                    if name in self.methods and name not in BACKWARD_OPS and not name.startswith("__"):
                        target = self.methods[name]
                if target is not None and all(target is not f for f in found):
                    found.append(target)
                    queue.append(target)
        self._sweep = found
        return found

    def _callables(self) -> Iterator[ast.FunctionDef]:
        yield from self.functions.values()
        yield from self.methods.values()

    @property
    def parent(self) -> dict[int, ast.AST]:
        """Each node's parent, in the code an operator may look at: the class, its subclasses,
        the module-level functions and tables (the file's checks are never walked)."""
        if self._parent is None:
            self._parent = {}
            roots: list[ast.AST] = [self.cls, *self.subclasses.values(), *self.functions.values()]
            roots += list(self.tables.values())
            for root in roots:
                for node in ast.walk(root):
                    for child in ast.iter_child_nodes(node):
                        self._parent[id(child)] = node
        return self._parent

    @property
    def engine(self) -> list[ast.AST]:
        if self._engine is None:
            self._engine = self._engine_code()
        return self._engine

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        parent = self.parent
        while id(node) in parent:
            node = parent[id(node)]
            yield node

    def _engine_code(self) -> list[ast.AST]:
        """The class, its subclasses, and the module functions and tables they reach: code the
        engine runs (the file's own checks are not part of it)."""
        found: list[ast.AST] = [self.cls, *self.subclasses.values()]
        names: set[str] = set()
        queue = list(found)
        while queue:
            node = queue.pop()
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in names:
                    target: ast.AST | None = self.functions.get(sub.id) or self.tables.get(sub.id)
                    if target is not None:
                        names.add(sub.id)
                        found.append(target)
                        queue.append(target)
        return found

    def references(self, name: str, *, method: bool) -> list[ast.AST]:
        """Loads of ``name`` in the engine's code (``x.name`` too for a method), outside its own body."""
        if self._loads is None:
            self._loads, self._attribute_loads = {}, {}
            for region in self.engine:  # one walk, keeping each load's ancestors
                stack: list[tuple[ast.AST, frozenset[int]]] = [(region, frozenset())]
                while stack:
                    sub, above = stack.pop()
                    if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                        self._loads.setdefault(sub.id, []).append(sub)
                        self._chains[id(sub)] = set(above)
                    elif isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Load):
                        self._attribute_loads.setdefault(sub.attr, []).append(sub)
                        self._chains[id(sub)] = set(above)
                    inner = above | {id(sub)}
                    stack += [(child, inner) for child in ast.iter_child_nodes(sub)]
        key = (name, method)
        if key not in self._references:
            own = self.methods.get(name) if method else self.functions.get(name)
            found = [*self._loads.get(name, []), *(self._attribute_loads.get(name, []) if method else [])]
            self._references[key] = [r for r in found if own is None or id(own) not in self.chain(r)]
        return self._references[key]

    def chain(self, node: ast.AST) -> set[int]:
        """Ids of ``node``'s ancestors (kept: privacy asks about the same references again and again)."""
        if id(node) not in self._chains:
            self._chains[id(node)] = {id(a) for a in self.ancestors(node)}
        return self._chains[id(node)]

    def _op_slot(self) -> tuple[int, str] | None:
        """(position after self, name) of the constructor parameter stored as ``self._op``."""
        init = self.methods.get("__init__")
        if init is None:
            return None
        params = [a.arg for a in init.args.args[1:]]
        for node in ast.walk(init):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target, item in _pairs(targets, node.value):
                    if (
                        isinstance(target, ast.Attribute)
                        and target.attr == "_op"
                        and isinstance(item, ast.Name)
                        and item.id in params
                    ):
                        return params.index(item.id), item.id
        return None

    # --- resolving an operation's method ---

    def method_node(self, name: str) -> ast.FunctionDef | ast.Lambda | None:
        found = self.methods.get(name)
        if found is not None:
            return found
        value = self.attributes.get(name)
        return value if isinstance(value, ast.Lambda) else None

    def factory_call(self, name: str) -> ast.Call | None:
        """``__mul__ = _binary("*", f, df)``: the class-level call that makes the method."""
        value = self.attributes.get(name)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in self.functions:
            return value
        return None

    # --- private code ---

    def private(self, name: str, tag: object) -> set[int]:
        """Ids of the code regions that belong to operation ``name`` alone (see the module's docstring)."""
        key = f"{name}|{tag!r}"
        if key in self._private:
            return self._private[key]
        method = self.method_node(name)
        factory = self.factory_call(name)
        regions: set[int] = set()
        roots: list[ast.AST] = []
        if method is not None:
            roots.append(method)
            params = {a.arg for a in method.args.args}
            for call in _shallow_calls(method):
                callee = self._callee(call)
                if (
                    callee is not None
                    and call.args
                    and all(isinstance(a, ast.Name) and a.id in params for a in call.args)
                    and not call.keywords
                ):
                    roots.append(callee)  # a single-operation function it hands its operands to
        if factory is not None:
            roots.append(factory)
        if isinstance(tag, str):
            for table in self.tables.values():
                for k, v in zip(table.keys, table.values, strict=True):
                    if isinstance(k, ast.Constant) and k.value == tag:
                        roots.append(v)
        regions.update(id(r) for r in roots)
        changed = True
        candidates = [*self.functions.values(), *self.methods.values()]
        while changed:
            changed = False
            for fn in candidates:
                is_method = self.methods.get(fn.name) is fn
                if id(fn) in regions or (is_method and fn.name in _STOPS):
                    continue
                refs = self.references(fn.name, method=is_method)
                if refs and all(self._inside(r, regions) for r in refs):
                    regions.add(id(fn))
                    changed = True
        self._private[key] = regions
        return regions

    def _inside(self, node: ast.AST, regions: set[int]) -> bool:
        return id(node) in regions or not regions.isdisjoint(self.chain(node))

    def _callee(self, call: ast.Call) -> ast.FunctionDef | None:
        func = call.func
        if isinstance(func, ast.Name):
            return self.functions.get(func.id)
        if isinstance(func, ast.Attribute):
            found = self.methods.get(func.attr)
            return None if found is None or found.name in _STOPS else found
        return None


def _contains(outer: ast.AST, node: ast.AST) -> bool:
    return any(n is node for n in ast.walk(outer))


def _pairs(targets: Sequence[ast.expr], value: ast.expr) -> Iterator[tuple[ast.expr, ast.expr]]:
    """(target, value) pairs of an assignment, tuple unpacking included."""
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
            if len(target.elts) == len(value.elts):
                yield from zip(target.elts, value.elts, strict=True)
        else:
            yield target, value


def _shallow_calls(fn: ast.AST) -> Iterator[ast.Call]:
    """Calls in ``fn``'s own body (a lambda's body included), not in functions nested in it."""
    body: list[ast.AST] = [fn.body] if isinstance(fn, ast.Lambda) else list(getattr(fn, "body", []))
    stack = body
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.append(child)


def _accumulator(fn: ast.FunctionDef) -> tuple[int, int] | None:
    """(target, increment) parameter positions when ``fn``'s body is one ``p.grad += q``."""
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1:
        return None
    found = statement_write(body[0])
    if found is None:
        return None
    target, value = found
    params = [a.arg for a in fn.args.args]
    if isinstance(target, ast.Name) and isinstance(value, ast.Name) and {target.id, value.id} <= set(params):
        if target.id != value.id:
            return params.index(target.id), params.index(value.id)
    return None


def writes_in(program: Program, scope: ast.AST) -> list[Write]:
    """Every accumulation in ``scope``: ``x.grad += v`` statements and accumulator calls, in source order."""
    found: list[Write] = []
    statements = {id(n.value): n for n in ast.walk(scope) if isinstance(n, ast.Expr)}
    for node in ast.walk(scope):
        plain = statement_write(node)
        if plain is not None:
            found.append(Write(node, plain[0], plain[1]))
        elif isinstance(node, ast.Call):
            write = accumulator_call(program, node, statements.get(id(node)))
            if write is not None:
                found.append(write)
    return sorted(found, key=lambda w: (getattr(w.anchor, "lineno", 0), getattr(w.anchor, "col_offset", 0)))


def accumulator_call(program: Program, call: ast.Call, statement: ast.stmt | None = None) -> Write | None:
    """``acc(x, v)`` as a write (``statement``: the expression statement it is, if it is one)."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if name is None or name not in program.accumulators or call.keywords:
        return None
    fn = program.methods.get(name) if isinstance(func, ast.Attribute) else program.functions.get(name)
    if fn is None:
        return None
    args: list[ast.expr] = list(call.args)
    if isinstance(func, ast.Attribute) and fn is program.methods.get(name) and not _static(fn):
        receiver = func.value
        if not (isinstance(receiver, ast.Name) and receiver.id == program.cls.name):
            args = [receiver, *args]  # a bound call: the receiver is the first parameter
    if any(isinstance(a, ast.Starred) for a in args):
        return None
    target, value = program.accumulators[name]
    if max(target, value) >= len(args):
        return None
    return Write(statement if statement is not None else call, args[target], args[value])


def _static(fn: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


# --- abstract values ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operand:
    index: int  # 0 the receiver, 1 the other operand, -1 the output node


@dataclass(frozen=True)
class Field:
    of: int  # an Operand index
    attr: str  # "data" or "grad"


@dataclass(frozen=True)
class Const:
    value: object
    own: bool  # written in the operation's own code


@dataclass(frozen=True)
class Prefix:
    text: str  # an f-string's constant start (`f"**{k}"`)


@dataclass(frozen=True, eq=False)
class Code:
    fn: ast.Lambda | ast.FunctionDef
    env: dict[str, object]
    own: bool
    bound: tuple[object, ...] = ()  # leading arguments (a bound receiver, functools.partial)


@dataclass(frozen=True)
class Seq:
    items: tuple[object, ...]


@dataclass(frozen=True)
class Datas:
    """The operands' data, in order (``[x.data for x in xs]``)."""


@dataclass(frozen=True)
class Prev:
    """The output node's parents (``out._prev``)."""


@dataclass(frozen=True, eq=False)
class Own:
    node: ast.expr  # an expression of the operation's own code
    value: object = None  # what it holds, when known (a Field)


def role(value: object) -> object:
    """What a value holds, through an Own wrapper."""
    return value.value if isinstance(value, Own) else value


@dataclass(frozen=True, eq=False)
class Each:
    of: object  # a loop variable: one item at a time


@dataclass(frozen=True, eq=False)
class Results:
    code: Code  # what an operation's own lambda returns, called with these arguments
    args: tuple[object, ...]


@dataclass(frozen=True)
class TableRef:
    name: str


@dataclass(eq=False)
class Found:
    write: Write
    env: dict[str, object]
    own: bool


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


@dataclass(eq=False)
class Provider:
    """Local derivatives the operation hands on, read back through one of ``links``."""

    kind: str  # "code" (a lambda), "pairs" ((operand, derivative) pairs), "subclass"
    links: set[str]  # parameter or attribute names it travels by
    code: Code | None = None
    pairs: list[tuple[int, ast.expr]] = field(default_factory=list)
    cls: ast.ClassDef | None = None


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


# --- an operation's rule ------------------------------------------------------------------------------


def builds_node(program: Program, name: str) -> bool:
    """Does operation ``name`` make its node itself (with a backward rule of its own), rather
    than through other operations (``self + (-other)``)?"""
    return program.trace(name, full=False).made


def find_rule(program: Program, name: str) -> Rule:
    """Where operation ``name``'s backward rule is (see the module's docstring)."""
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
