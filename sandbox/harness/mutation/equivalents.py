"""Behaviour-identical copies of the student's engine: the `equivalent` guard's edits.

Checks that test what the engine computes must accept a copy of it that computes the same
things in different code; checks that compare the file's text with what was written fail on
it. So the copy must not be recognisable: each run makes a few edits drawn at random (sites
and forms chosen by the ``random.Random`` passed in) from several kinds, written back into
the student's own text the way the mutants are (``splice``: only edited statements are
rewritten, by ``ast.unparse``), or as pure text edits. Each kind's docstring says why it is
exact: values, gradients, ``_prev`` (as a set) and ``_op`` stay bit for bit the same.

Standard library only: this runs inside the sandbox.
"""

from __future__ import annotations

import ast
import builtins
import functools
import itertools
import keyword
import random
import warnings
from collections.abc import Callable, Iterator, Sequence

from .. import syntax
from ..probes import loader
from . import mutate, splice
from .operators import edits as op_edits
from .operators import targets as op_targets

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (*_FUNCTIONS, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Functions that can see their own local names: only edits binding no new local go there.
_INTROSPECTION = {"locals", "vars", "dir", "eval", "exec", "globals", "compile", "_getframe", "currentframe"}
_IDENTIFIER_FIELDS = ("id", "arg", "attr", "name", "asname", "module", "rest")


def _parse(text: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes in the student's strings, say
        return loader.parse(text, loader.MODULE_NAME + ".py")


class _File:
    """The current text, its tree and engine class (edits are made on a second parse).
    ``tree``: the text's parse when one was made already (to check an edit), read-only."""

    def __init__(self, text: str, class_name: str, tree: ast.Module | None = None):
        self.text = text
        self.tree = tree if tree is not None else _parse(text)
        self.checked: tuple[str, ast.Module] | None = None  # the last edit's text and its parse
        self.cls = mutate.graded_class(self.tree, class_name)

    @functools.cached_property
    def names(self) -> set[str]:
        """Every identifier in the file."""
        found: set[str] = set()
        for node in ast.walk(self.tree):
            found.update(v for f in _IDENTIFIER_FIELDS if isinstance(v := getattr(node, f, None), str))
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                found.update(node.names)
        return found

    @functools.cached_property
    def parents(self) -> dict[int, ast.AST]:
        return {id(child): node for node in ast.walk(self.cls) for child in ast.iter_child_nodes(node)}

    @functools.cached_property
    def source(self) -> splice.Source:
        return splice.Source(self.text)

    def function_of(self, node: ast.AST) -> ast.AST:
        """The innermost function or class around ``node``."""
        while not isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            node = self.parents[id(node)]
        return node

    def gaps(self) -> list[tuple[int, ast.stmt, bool]]:
        """Blank and comment-only lines between two statements of one block of the engine:
        (the line, the statement after it, whether the block is a function's)."""
        found = []
        for node in ast.walk(self.cls):
            for block in splice.blocks(node) if isinstance(node, ast.stmt) else ():
                in_function = isinstance(self.function_of(node), _FUNCTIONS)
                for before, after in itertools.pairwise(block):
                    for line in range(before.end_lineno + 1, self.source.first_line(after)):  # type: ignore[operator]
                        text = self.source.line(line).strip()
                        if (not text or text.startswith("#")) and self.source.indent(after) is not None:
                            found.append((line, after, in_function))
        return found

    def functions(self) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """The engine's methods and every function nested in them (backward closures)."""
        return [n for n in ast.walk(self.cls) if isinstance(n, _FUNCTIONS)]

    def where(self, node: ast.AST, line: int | None = None) -> str:
        """``Value.__mul__.backward_mul (line 62)`` for a node inside that closure (or after it)."""
        path, at = [], self.function_of(self.parents[id(node)] if id(node) in self.parents else node)
        while True:
            path.append(at.name)  # type: ignore[attr-defined]
            if id(at) not in self.parents:
                break
            at = self.function_of(self.parents[id(at)])
        return f"{'.'.join(reversed(path))} (line {line or getattr(node, 'lineno', '?')})"

    def fresh(self, rng: random.Random, stems: list[str]) -> str | None:
        """A name used nowhere in the file and not a builtin."""
        taken = self.names | set(dir(builtins))
        free = [s for s in dict.fromkeys(stems) if s.isidentifier() and not keyword.iskeyword(s) and s not in taken]
        return rng.choice(free) if free else None

    def spliced(self, new: ast.Module, lines: Sequence[int] | None = None) -> str | None:
        """The text with the edited tree written back (None when it cannot be spliced).
        ``lines``: every line the edit touched, so that only statements holding one are compared
        (should they not tell the whole edit, every statement is)."""
        for edited in ([lines] if lines is not None else []) + [None]:
            try:
                text, parsed = splice.splice_parsed(self.text, self.tree, new, edited=edited)
            except splice.SpliceError:
                continue
            self.checked = (text, parsed)
            return text
        return None

    def text_edited(self, edits: list[splice.Edit]) -> str | None:
        """The text with ``edits`` made, which must leave the tree exactly as it was."""
        text = splice.apply(self.text, edits)
        try:
            parsed = _parse(text)
        except loader.LoadError:
            return None
        if not splice.same(parsed, self.tree):
            return None
        self.checked = (text, parsed)
        return text


Slot = tuple[str, int | None]  # a child's field in its parent, and its index when the field is a list


def _slot(parent: ast.AST, child: ast.AST) -> Slot:
    for field, value in ast.iter_fields(parent):
        if value is child:
            return field, None
        if isinstance(value, list):
            for index, item in enumerate(value):
                if item is child:
                    return field, index
    raise KeyError(f"{type(child).__name__} is not a child of {type(parent).__name__}")


def _path(root: ast.AST, target: ast.AST) -> list[Slot]:
    """The slots from ``root`` down to ``target`` (found depth-first)."""
    for index, statement in enumerate(getattr(root, "body", [])):
        if statement is target:
            return [("body", index)]  # the engine class is nearly always a top-level statement
    stack: list[tuple[ast.AST, list[Slot]]] = [(root, [])]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        for child in ast.iter_child_nodes(node):
            stack.append((child, [*path, _slot(node, child)]))
    raise KeyError("the node is not in the tree")


def _follow(root: ast.AST, path: list[Slot]) -> ast.AST:
    node = root
    for field, index in path:
        value = getattr(node, field)
        node = value[index] if index is not None else value
    return node


def _twins(file: _File) -> tuple[ast.Module, Callable[[ast.AST], ast.AST]]:
    """A second tree of the file (parsing is cheaper than copying) and a map from the nodes of
    the engine class in ``file.tree`` to their twins: the same slots followed from the root, so
    only the nodes asked for are looked up."""
    new = _parse(file.text)
    to_class = _path(file.tree, file.cls)

    def twin(node: ast.AST) -> ast.AST:
        slots: list[Slot] = []
        while node is not file.cls:
            parent = file.parents[id(node)]
            slots.append(_slot(parent, node))
            node = parent
        return _follow(new, [*to_class, *reversed(slots)])

    return new, twin


def _sees_its_locals(scope: ast.AST) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id in _INTROSPECTION)
        or (isinstance(n, ast.Attribute) and n.attr in _INTROSPECTION)
        for n in ast.walk(scope)
    )


def _docstring(body: list[ast.stmt]) -> bool:
    first = body[0] if body else None
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)


def _plain_attributes(cls: ast.ClassDef) -> bool:
    """``.data`` and ``.grad`` are plain attributes: the class defines no property, descriptor
    or attribute hook that could run code when they are read or written."""
    hooks = {"data", "grad", "__getattr__", "__getattribute__", "__setattr__"}
    for node in cls.body:
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)) and node.name in hooks:
            return False
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id in hooks for t in targets):
            return False
    return True


EditKind = Callable[[_File, random.Random], "tuple[str, str] | None"]  # the new text and what was done


# --- (a) a statement that does nothing ------------------------------------------------------------

_NOTHING = ("pass", "...", "None", "0", "assert True")
_UNUSED = ("{} = None", "{} = ()", "{} = 0")


def harmless_statements(file: _File, rng: random.Random) -> tuple[str, str] | None:
    """A statement that does nothing, written into one to three blank lines between two
    statements of the engine's methods and closures: ``pass``, ``...``, ``None``, ``0``,
    ``assert True``, or a fresh local bound to ``None``, ``()`` or ``0``. (Into blank lines, so
    that no line moves: the mutants keep every line number too.)

    Exact: none of them reads or writes anything outside its own frame. Never before a
    function's first statement, so a docstring stays one; a fresh local's name is used nowhere
    in the file (it shadows nothing a later line reads), and only in functions that never look
    at their own locals (``locals()``, ``vars()``, ``dir()``, ``eval``, frames)."""
    blank = [
        (line, after) for line, after, in_function in file.gaps() if in_function and not file.source.line(line).strip()
    ]
    sites = {id(after): (line, after) for line, after in blank}  # one per gap
    if not sites:
        return None
    chosen = rng.sample(sorted(sites.values(), key=lambda v: v[0]), rng.randint(1, min(3, len(sites))))
    new, twin = _twins(file)
    edits, done = [], []
    for line, after in sorted(chosen, key=lambda v: -v[0]):  # bottom up: block indices stay valid
        scope = file.function_of(after)
        name = None if _sees_its_locals(scope) else file.fresh(rng, ["_", "_unused", "_tmp", "_scratch", "_ignored"])
        form = rng.choice([*_NOTHING, *(f.format(name) for f in _UNUSED if name)])
        start = file.source.starts[line - 1]
        edits.append(splice.Edit(start, start + len(file.source.line(line)), (file.source.indent(after) or "") + form))
        parent = file.parents[id(after)]
        block, twin_block = next(
            (b, t) for b, t in zip(splice.blocks(parent), splice.blocks(twin(parent)), strict=True) if after in b
        )
        twin_block.insert(block.index(after), syntax.parse(form).body[0])
        done.append(f"no-op `{form}` in {file.where(after, line)}")
    text = splice.apply(file.text, edits)
    try:
        return (text, "; ".join(reversed(done))) if splice.same(_parse(text), new) else None
    except loader.LoadError:
        return None


# --- (b) commuting + and * on plain numbers -------------------------------------------------------

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)


def _plain_number(node: ast.AST) -> bool:
    """A number for sure: a numeric literal, ``name.data`` / ``name.grad``, or arithmetic on them."""
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float)
    if isinstance(node, ast.Attribute):
        return node.attr in ("data", "grad") and isinstance(node.value, ast.Name)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.USub, ast.UAdd)) and _plain_number(node.operand)
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _ARITHMETIC) and _plain_number(node.left) and _plain_number(node.right)
    return False


def swap_operands(file: _File, rng: random.Random) -> tuple[str, str] | None:
    """``a * b`` becomes ``b * a`` (or ``a + b``, ``b + a``) where both operands are plain float
    arithmetic: numeric literals and ``x.data`` / ``x.grad`` reads, combined by + - * / **.

    Exact: IEEE 754 addition and multiplication are commutative, bit for bit (the correctly
    rounded result of a+b is that of b+a, zeros' signs included), and so are int and mixed
    int/float arithmetic. Value operands are never swapped (that would reorder ``_prev``), and
    only when ``.data`` / ``.grad`` are plain attributes, so reading them in the other order
    runs no code. (NaN payloads aside: which NaN's payload survives may follow the order.)"""
    if not _plain_attributes(file.cls):
        return None
    sites = [
        n
        for n in ast.walk(file.cls)
        if isinstance(n, ast.BinOp)
        and isinstance(n.op, (ast.Add, ast.Mult))
        and _plain_number(n.left)
        and _plain_number(n.right)
        and ast.dump(n.left) != ast.dump(n.right)
    ]
    if not sites:
        return None
    site = rng.choice(sites)
    new, twin = _twins(file)
    copied = twin(site)
    assert isinstance(copied, ast.BinOp)
    copied.left, copied.right = copied.right, copied.left
    text = file.spliced(new, [site.lineno])
    symbol = "+" if isinstance(site.op, ast.Add) else "*"
    return (text, f"swapped the operands of `{symbol}` in {file.where(site)}") if text else None


# --- (c) x.grad += e and x.grad = x.grad + e --------------------------------------------------------


def _grad_starts_as_number(cls: ast.ClassDef) -> bool:
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    for node in ast.walk(init) if init else ():
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(op_targets._is_grad(t) for t in targets) and op_edits._number(node.value) is not None:
                return True
    return False


def grad_write_form(file: _File, rng: random.Random) -> tuple[str, str] | None:
    """One backward rule's ``x.grad += e`` becomes ``x.grad = x.grad + e``, or the reverse.

    Exact: ``__init__`` starts ``grad`` as a number and the class defines no ``grad`` property
    or attribute hook, so ``grad`` holds an immutable number with no ``__iadd__``: ``+=``
    computes ``x.grad.__add__(e)`` (or ``e.__radd__``) and stores it, exactly what the
    assignment does, in the same order (``x``, then ``x.grad``, then ``e``). ``x`` is a plain
    name, read twice by the assignment with nothing in ``e`` able to rebind it (no walrus,
    yield or await)."""
    if not (_plain_attributes(file.cls) and _grad_starts_as_number(file.cls)):
        return None
    sites = []
    for found in op_targets.grad_writes(file.cls):
        increment = op_targets.increment(found)
        if op_targets.target_owner(found) is None or any(
            isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(increment)
        ):
            continue
        if isinstance(found, ast.AugAssign) or op_targets._grad_on_left(found):  # type: ignore[arg-type]
            sites.append(found)
    if not sites:
        return None
    site = rng.choice(sites)
    new, twin = _twins(file)
    write = twin(site)
    swapped: ast.stmt
    if isinstance(write, ast.AugAssign):
        value = ast.BinOp(left=op_targets._as_load(write.target), op=ast.Add(), right=write.value)
        swapped = ast.copy_location(ast.Assign(targets=[write.target], value=value), write)
        how = "grad write `x.grad += ...` spelled `x.grad = x.grad + ...`"
    else:
        assert isinstance(write, ast.Assign) and isinstance(write.value, ast.BinOp)
        target = write.targets[0]
        assert isinstance(target, ast.Attribute)
        swapped = ast.copy_location(ast.AugAssign(target=target, op=ast.Add(), value=write.value.right), write)
        how = "grad write `x.grad = x.grad + ...` spelled `x.grad += ...`"
    splice.replace(new, {id(write): swapped})
    text = file.spliced(new, [site.lineno])
    return (text, f"{how} in {file.where(site)}") if text else None


# --- (d) redundant parentheses ----------------------------------------------------------------------


def parenthesize(file: _File, rng: random.Random) -> tuple[str, str] | None:
    """Parentheses around the right-hand side of one assignment or return in the engine.

    Exact: a text-only edit; the file parses to the same tree (checked), so it compiles to the
    same code."""
    src = splice.Source(file.text)
    sites = [
        n
        for n in ast.walk(file.cls)
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)) and n.value is not None
    ]
    rng.shuffle(sites)
    for site in sites[:5]:
        assert site.value is not None
        start, end = src.start(site.value), src.end(site.value)
        text = file.text_edited([splice.Edit(start, start, "("), splice.Edit(end, end, ")")])
        if text:
            return text, f"parentheses around the value in {file.where(site)}"
    return None


# --- (e) renaming a local variable ------------------------------------------------------------------


def _own(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``scope``'s body that belong to its own scope (nested scopes not entered)."""
    stack = list(getattr(scope, "body", []))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _binders(scope: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Every name bound anywhere under ``scope`` (nested scopes included), with its binder."""
    for node in ast.walk(scope):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            yield node.id, node
        elif isinstance(node, (*_FUNCTIONS, ast.ClassDef, ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
            yield node.name or "", node
        elif isinstance(node, ast.arg):
            yield node.arg, node
        elif isinstance(node, ast.alias):
            yield (node.asname or node.name).split(".")[0], node
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            yield from ((n, node) for n in node.names)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest, node


def rename_local(file: _File, rng: random.Random) -> tuple[str, str] | None:
    """One local variable of one method or closure renamed, everywhere it is used (closures
    nested in it included), to a name used nowhere in the file.

    Exact: local names are invisible to callers. Only names whose every binding is a plain
    assignment in that function's own scope are renamed: never a parameter, a nested def,
    an import, a ``global`` / ``nonlocal`` name, or a name a nested scope rebinds; never an
    attribute; never a name inside an f-string (``f"{x=}"`` prints it), a dunder (name
    mangling), or a local of a function that can see its own locals (``locals()``...)."""
    options = []
    for scope in file.functions():
        if _sees_its_locals(scope):
            continue
        own = {id(n) for n in _own(scope)}
        in_fstrings = {
            n.id
            for j in ast.walk(scope)
            if isinstance(j, ast.JoinedStr)
            for n in ast.walk(j)
            if isinstance(n, ast.Name)
        }
        binders: dict[str, list[ast.AST]] = {}
        for name, binder in _binders(scope):
            binders.setdefault(name, []).append(binder)
        for name, found in binders.items():
            if (
                name not in in_fstrings
                and not name.startswith("__")
                and all(isinstance(b, ast.Name) and id(b) in own for b in found)
            ):
                options.append((scope, name))
    if not options:
        return None
    scope, old = rng.choice(options)
    stems = [f"{old}_", f"{old}2", f"_{old}", f"{old}_v", "tmp", "val", "res", "acc", "cur", "item", "result", "aux"]
    fresh = file.fresh(rng, stems)
    if fresh is None:
        return None
    new, twin = _twins(file)
    for node in ast.walk(twin(scope)):
        if isinstance(node, ast.Name) and node.id == old:
            node.id = fresh
    text = file.spliced(new, range(scope.lineno, (scope.end_lineno or scope.lineno) + 1))
    return (text, f"local `{old}` renamed `{fresh}` in {file.where(scope.body[0], scope.lineno)}") if text else None


# --- (f) a blank line or a comment line ------------------------------------------------------------


def blank_or_comment(file: _File, rng: random.Random) -> tuple[str, str] | None:
    """A blank line between two statements of the engine becomes a comment line, or a
    comment-only line there becomes blank (in place: no line moves).

    Exact: a text-only edit; the file parses to the same tree (checked)."""
    sites = file.gaps()
    if not sites:
        return None
    line, after, _ = rng.choice(sites)
    if file.source.line(line).strip():
        new_line, what = "", "a comment line blanked"
    else:
        comment = rng.choice(["#", "# ---", "# helpers", "# see the handout", "# " + "-" * rng.randint(8, 60)])
        new_line, what = (file.source.indent(after) or "") + comment, f"comment `{comment}` on a blank line"
    start = file.source.starts[line - 1]
    text = file.text_edited([splice.Edit(start, start + len(file.source.line(line)), new_line)])
    return (text, f"{what} in {file.where(after, line)}") if text else None


# Rewritten statements, as a mutant's are; and edits no mutant makes, so that neither kind alone
# tells a copy from a mutant. Every copy gets at least one of the first kind when one applies.
STATEMENT_EDITS: tuple[EditKind, ...] = (swap_operands, grad_write_form, rename_local)
OTHER_EDITS: tuple[EditKind, ...] = (harmless_statements, parenthesize, blank_or_comment)
EDITS: tuple[EditKind, ...] = (*STATEMENT_EDITS, *OTHER_EDITS)


def equivalent_text(source: str, class_name: str, rng: random.Random, *, edits: int = 3) -> tuple[str, list[str]]:
    """A behaviour-identical copy of ``source`` and a short description of each edit made (for
    the grader's logs, never shown to the student): ``edits`` edits of the kinds above, at sites
    and in forms drawn from ``rng``: first one statement rewrite, then kinds in a random order,
    each kind once before any repeats. Like a mutant, the copy has the original's line count and
    line numbers. Raises mutate.NotApplicable when the engine class is not found or no edit
    applies (and loader.LoadError when ``source`` does not parse)."""
    file = _File(source, class_name)
    applied: list[str] = []
    used: set[EditKind] = set()

    def attempt(kind: EditKind) -> bool:
        nonlocal file
        result = kind(file, rng)
        if result is None:
            return False
        checked = file.checked
        file = _File(result[0], class_name, checked[1] if checked is not None and checked[0] == result[0] else None)
        applied.append(result[1])
        used.add(kind)
        return True

    first = list(STATEMENT_EDITS)
    rng.shuffle(first)
    next((kind for kind in first if attempt(kind)), None)
    rest = list(EDITS)
    rng.shuffle(rest)
    for repeat in range(edits):
        progress = False
        for kind in rest:
            if len(applied) < edits and (repeat or kind not in used):
                progress = attempt(kind) or progress
        if not progress or len(applied) >= edits:
            break
    if not applied:
        raise mutate.NotApplicable("no behaviour-preserving edit applies to the engine class")
    return file.text, applied
