"""``Program``: indexes of one module and its engine class, shared by every operator's lookups:
its functions, tables and methods, the code of the backward pass, and which code belongs to one
operation alone (see the package's docstring).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .trace import Trace
from .writes import _STOPS, BACKWARD_OPS, _accumulator, _pairs, _shallow_calls

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
        """Ids of the code regions that belong to operation ``name`` alone (see the package's docstring)."""
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
