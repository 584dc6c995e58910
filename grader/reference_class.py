"""The reference's engine class as the sandbox may run it: the class and the imports it needs.

Bug injection's catching mode (the student's checks fail on their own engine) asks one more
question: do the same checks pass with a correct engine in place of the student's class? The
harness splices this text over the graded class statement (``sandbox/harness/mutation/gate.py``).
It is code, never an expected value or an input: the run it goes into holds no input, shows
no output, and comes after every run whose output a student sees.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from sandbox.harness import syntax

REFERENCE = Path(__file__).resolve().parents[1] / "reference" / "autograd_lab.py"
ENGINE = "Value"


class _NoAnnotations(ast.NodeTransformer):
    """Annotations name typing helpers the student's file may not import: drop them all."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.returns = None
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg):
            if arg is not None:
                arg.annotation = None
        self.generic_visit(node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt:
        if node.value is None:
            return ast.Pass()
        return ast.Assign([node.target], node.value)


@functools.lru_cache(maxsize=4)
def _text(path: str, mtime_ns: int) -> str:
    tree = syntax.parse(Path(path).read_text(encoding="utf-8"), filename=path)
    engine = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == ENGINE)
    engine = _NoAnnotations().visit(engine)
    used = {n.id for n in ast.walk(engine) if isinstance(n, ast.Name)}
    imports = [
        n
        for n in tree.body
        if isinstance(n, ast.Import) and any((a.asname or a.name).split(".")[0] in used for a in n.names)
    ]
    module = ast.Module(body=[*imports, engine], type_ignores=[])
    return ast.unparse(ast.fix_missing_locations(module))


def correct_class(path: Path = REFERENCE) -> str:
    """The reference's ``Value`` class without annotations, after the plain imports it uses."""
    return _text(str(path), path.stat().st_mtime_ns)
