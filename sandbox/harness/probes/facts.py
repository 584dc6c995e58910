"""Facts about the engine read from the file's syntax tree, never by running it.

Which class is graded (``graded_class``, the rule the mutation operators follow too) and what
its constructor needs are decided here, by trusted code that only parses the file (the
supervisor in the sandbox, the judge on the host), so student code cannot claim another class
or another signature. Standard library only.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


class NotApplicable(Exception):
    """What was looked for is not in this file (the engine class, or a mutation operator's
    target); the message says what was missing."""


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
    binders = bindings(tree, class_name)
    if binders:
        last = binders[-1]
        if isinstance(last, ast.ClassDef) and last in tree.body:
            return last
        alias = next((s for s in tree.body if isinstance(s, ast.Assign) and last in s.targets), None)
        if alias is not None and isinstance(alias.value, ast.Name) and alias.value.id != class_name:
            named = [b for b in bindings(tree, alias.value.id) if b.lineno < alias.lineno]  # type: ignore[attr-defined]
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
        if isinstance(node, ast.ClassDef) and bindings(tree, node.name)[-1] is node:
            if best is None or score(node) >= score(best):
                best = node
    if best is None or score(best) < 3:
        raise NotApplicable(f"no class {class_name} with backward(), __add__ and __mul__")
    return best


def bindings(tree: ast.Module, name: str) -> list[ast.AST]:
    """Statements and targets binding ``name`` in module scope (function and class bodies are
    their own scopes; a function or class counts by its own name), in source order."""
    found: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.extend([child] if child.name == name else [])
                continue
            if isinstance(child, ast.AnnAssign) and child.value is None:
                continue  # `Value: type` only annotates
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                if any((a.asname or a.name.split(".")[0]) == name for a in child.names):
                    found.append(child)
            elif isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load) and child.id == name:
                found.append(child)
            elif isinstance(child, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and child.name == name:
                found.append(child)
            if not isinstance(child, (ast.Lambda, ast.comprehension)):
                visit(child)

    visit(tree)
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]


# --- what the constructor needs ----------------------------------------------------------------

# Placeholders for extra required constructor parameters, by what their name suggests.
_PLACEHOLDER_KINDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("child", "prev", "parent", "input"), "tuple"),
    (("op", "label", "name", "tag"), "str"),
)


@dataclass(frozen=True)
class EngineFacts:
    found: bool
    class_name: str = ""  # the class Python binds for the engine (the last top-level definition)
    line: int = 0  # where that class statement starts
    end_line: int = 0
    extra_args: tuple[str, ...] = ()  # required constructor parameters beyond the value
    fillers: tuple[str, ...] = ()  # "tuple", "str" or "none", one per extra argument
    problem: str = ""  # why no engine class was found


def engine_facts(tree: ast.Module, class_name: str) -> EngineFacts:
    try:
        node = graded_class(tree, class_name)
    except NotApplicable as why:
        named = any(isinstance(n, ast.ClassDef) and n.name == class_name for n in ast.walk(tree))
        if not named:
            return EngineFacts(
                False,
                problem=f"no class named {class_name} (or any class with backward(), __add__ and __mul__) was found",
            )
        return EngineFacts(False, problem=str(why))
    extra = _dataclass_required(node) if _is_dataclass(node) else _required_after_value(_init_of(tree, node))
    fillers = tuple(_filler(name) for name in extra)
    return EngineFacts(True, node.name, node.lineno, node.end_lineno or node.lineno, extra, fillers)


def _init_of(tree: ast.Module, node: ast.ClassDef) -> ast.FunctionDef | None:
    """``__init__`` of the class, else of the first base class defined at the top of the same file."""
    seen: set[str] = set()
    current: ast.ClassDef | None = node
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    while current is not None and current.name not in seen:
        seen.add(current.name)
        for item in current.body:
            if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                return item
        bases = [b.id for b in current.bases if isinstance(b, ast.Name)]
        current = next((classes[b] for b in bases if b in classes and classes[b] is not current), None)
    return None


def _is_dataclass(node: ast.ClassDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "dataclass":
            return True
    return False


def _dataclass_required(node: ast.ClassDef) -> tuple[str, ...]:
    """A dataclass's generated ``__init__``: annotated fields without a default, in order."""
    fields = [
        item.target.id
        for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is None
    ]
    return tuple(fields[1:])  # the first field takes the value


def _required_after_value(init: ast.FunctionDef | None) -> tuple[str, ...]:
    if init is None:
        return ()
    positional = [*init.args.posonlyargs, *init.args.args]
    with_defaults = len(init.args.defaults)
    required = positional[: len(positional) - with_defaults] if with_defaults else positional
    return tuple(a.arg for a in required[2:])  # self, then the value


def _filler(name: str) -> str:
    lowered = name.lower()
    for keys, kind in _PLACEHOLDER_KINDS:
        if any(k in lowered for k in keys):
            return kind
    return "none"
