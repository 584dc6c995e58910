"""Facts about the engine read from the file's syntax tree, never by running it.

Which class is graded and what its constructor needs are decided here, by trusted code that
only parses the file (the supervisor in the sandbox, the judge on the host), so student code
cannot claim another class or another signature. Standard library only.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .mutate import NotApplicable, graded_class

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
