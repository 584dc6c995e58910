"""AST edits of the student's own code, applied inside the sandbox.

Only the lab's Step-5 bug lives here for now: every ``+=`` into a ``.grad`` inside
``__mul__``'s backward becomes ``=``, the exact edit the handout asks students to try.
"""

from __future__ import annotations

import ast

STEP5 = "mul_backward_assign"


class NotApplicable(Exception):
    """The edit has nothing to apply to in this file; the message says what was missing."""


def _find_method(tree: ast.Module, class_name: str, method: str) -> ast.FunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    return item
    return None


def _grad_augassigns(scope: ast.AST) -> list[ast.AugAssign]:
    return [
        n
        for n in ast.walk(scope)
        if isinstance(n, ast.AugAssign)
        and isinstance(n.op, ast.Add)
        and isinstance(n.target, ast.Attribute)
        and n.target.attr == "grad"
    ]


class _ToAssign(ast.NodeTransformer):
    def __init__(self, targets: list[ast.AugAssign]):
        self.ids = {id(t) for t in targets}

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        if id(node) not in self.ids:
            return node
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)


def apply(tree: ast.Module, mutation: str, class_name: str) -> tuple[ast.Module, list[int]]:
    """Return the mutated tree and the lines edited; raises NotApplicable."""
    if mutation != STEP5:
        raise NotApplicable(f"unknown edit {mutation!r}")
    method = _find_method(tree, class_name, "__mul__")
    if method is None:
        raise NotApplicable(f"class {class_name} has no __mul__ method to edit")
    # The backward rule is a nested function (or lambda body) defined inside __mul__.
    nested = [n for n in ast.walk(method) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not method]
    targets = [a for scope in nested for a in _grad_augassigns(scope)]
    if not targets:
        raise NotApplicable("__mul__ has no backward function containing `<x>.grad += ...`")
    lines = sorted({t.lineno for t in targets})
    mutated = ast.fix_missing_locations(_ToAssign(targets).visit(tree))
    return mutated, lines
