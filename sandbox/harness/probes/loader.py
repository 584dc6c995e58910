"""Load a submission as a module and find its engine class, forgiving the usual mess.

Real files carry demo code, plots and training loops around the engine. We grade the engine:
- the module is imported under its own name, so ``if __name__ == "__main__":`` code stays off;
- drawing-only modules that are not installed get inert stand-ins;
- if importing fails (top-level code raises, exits or never ends), the file is loaded again
  keeping only imports, definitions and constant assignments ("definitions" mode);
- an engine class that is misnamed, or wants extra constructor arguments, is still found.
Each of these is reported back as a notice.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import re
import sys
import types
from collections.abc import Callable
from typing import Any

from .. import syntax
from .standins import StandInFinder as StandInFinder  # re-exported: callers use loader.*
from .standins import install_stand_ins as install_stand_ins

MODULE_NAME = "autograd_lab"


class LoadError(Exception):
    """The submission could not be loaded; the message is for the student."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.line = line
        self.column = column  # 1-based, in characters of the line (a syntax error's offset)

    def record(self) -> dict[str, object]:
        """The failure as the wire reports it."""
        return error_record(self)


def error_record(error: LoadError) -> dict[str, object]:
    """A load failure as the wire reports it, read without the class's own methods (which student
    code could rebind in a probe child): the message is its first argument."""
    args = BaseException.__dict__["args"].__get__(error)
    message = args[0] if args and isinstance(args[0], str) else "the file could not be loaded"
    line, column = vars(error).get("line"), vars(error).get("column")
    return {"type": "LoadError", "message": message[:300], "line": line, "column": column}


# Stand-ins live in their own small module: the script bootstrap imports only that.


# Python 3.12+ only: `type X = ...` aliases and `def f[T](...)` / `class C[T]:` generics.
_NEWER_SYNTAX = re.compile(r"^(?:type\s+\w+\s*(?:\[.*\])?\s*=|(?:async\s+)?def\s+\w+\s*\[|class\s+\w+\s*\[)")


def parse(source: str, filename: str) -> ast.Module:
    try:
        return syntax.parse(source, filename=filename)
    except SyntaxError as error:
        raise _syntax_failure(error) from None
    except (ValueError, RecursionError, MemoryError) as error:
        raise LoadError(f"the file cannot be parsed: {type(error).__name__}: {error}") from None


def _syntax_failure(error: SyntaxError) -> LoadError:
    detail = error.msg or "invalid syntax"
    line = (error.text or "").strip()
    newer = ""
    if _NEWER_SYNTAX.match(line):
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        newer = f"; this looks like syntax from a newer Python than the grader's {version}"
    return LoadError(f"SyntaxError: {detail} (line {error.lineno}){newer}", error.lineno, error.offset)


def _is_definition(node: ast.stmt) -> bool:
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return True  # docstrings
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        value = node.value
        return value is not None and not any(isinstance(n, (ast.Call, ast.Await)) for n in ast.walk(value))
    if isinstance(node, ast.Try):
        return all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in node.body)
    return False


def definitions_only(tree: ast.Module) -> tuple[ast.Module, list[int]]:
    """The module without top-level statements that run demo code; returns skipped lines."""
    kept = [node for node in tree.body if _is_definition(node)]
    skipped = [node.lineno for node in tree.body if not _is_definition(node)]
    return ast.Module(body=kept, type_ignores=[]), skipped


_COMPILED: dict[tuple[str, str], types.CodeType] = {}  # set in the fork server, inherited by its children


def precompile(source: str, filename: str) -> bool:
    """Compile (never run) the whole file once, for ``load_module`` in every later child."""
    _COMPILED.clear()
    _COMPILED[(source, filename)] = compile(source, filename, "exec", dont_inherit=True)
    return True


def forget_compiled() -> None:
    """Drop the fork server's compiled copy of the file: a run of the student's checks compiles
    its own text, and must not find the file as submitted in memory to compare itself with."""
    _COMPILED.clear()


def _compile_text(source: str, filename: str) -> types.CodeType:
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as error:
        raise _syntax_failure(error) from None
    except (ValueError, RecursionError, MemoryError) as error:
        raise LoadError(f"the file cannot be compiled: {type(error).__name__}: {error}") from None


def load_module(
    source: str, filename: str, mode: str, tree: ast.Module | None = None
) -> tuple[types.ModuleType, list[str]]:
    """Execute the submission as module ``autograd_lab``; ``mode`` is "full" or "definitions"."""
    notices: list[str] = []
    code = _COMPILED.get((source, filename)) if mode != "definitions" and tree is None else None
    if code is None and tree is None and mode != "definitions":
        # Python's own way: compiled from the text, never through AST objects, whose builder
        # has a lower depth limit than the compiler (a 600-term sum is valid Python).
        code = _compile_text(source, filename)
    tree = tree if tree is not None or code is not None else parse(source, filename)
    module = types.ModuleType(MODULE_NAME)
    module.__file__ = filename
    module.__dict__["__builtins__"] = builtins  # the real ones: a harness copy's stay private
    sys.modules[MODULE_NAME] = module
    if mode != "definitions":
        exec(code if code is not None else compile(tree, filename, "exec"), module.__dict__)  # type: ignore[arg-type]
        return module, notices
    assert tree is not None
    kept, skipped = definitions_only(tree)
    failed: list[str] = []
    # One statement at a time: a kept statement that still fails (an import of a missing
    # package, an assignment naming demo objects) is skipped rather than sinking the engine.
    for node in kept.body:
        try:
            exec(compile(ast.Module(body=[node], type_ignores=[]), filename, "exec"), module.__dict__)
        except Exception as error:
            failed.append(f"line {node.lineno} ({type(error).__name__})")
    if skipped:
        shown = ", ".join(str(n) for n in skipped[:8]) + (" ..." if len(skipped) > 8 else "")
        notices.append(f"Top-level code outside definitions was skipped (lines {shown}).")
    if failed:
        notices.append("These top-level statements failed and were skipped: " + ", ".join(failed[:8]) + ".")
    return module, notices


# --- finding the engine class and how to build a leaf ----------------------------------------


def graded_engine(module: types.ModuleType, class_name: str, line: int, end_line: int) -> type:
    """The class the grader grades: ``class_name`` as the module binds it, and it must be the
    class statement the grader found at lines ``line``-``end_line`` of the file (not a class
    made some other way, and not an earlier definition of the same name)."""
    bound = module.__dict__.get(class_name)
    if not isinstance(bound, type):
        raise LoadError(f"after loading the file, {class_name} is not a class", line)
    filename = getattr(module, "__file__", None)
    lines = [
        code.co_firstlineno
        for item in vars(bound).values()
        for code in [getattr(getattr(item, "__func__", item), "__code__", None)]
        if code is not None and code.co_filename == filename
    ]
    if not any(line <= first <= end_line for first in lines):
        raise LoadError(
            f"{class_name} is not the class statement at line {line}: the engine must be the last "
            f"`class {class_name}` defined at the top level of the file",
            line,
        )
    return bound


_PLACEHOLDERS: tuple[tuple[tuple[str, ...], Any], ...] = (
    (("child", "prev", "parent", "input"), ()),
    (("op", "label", "name", "tag"), ""),
)


def constructor(cls: type) -> tuple[Callable[[float], Any], list[str]]:
    """A one-argument leaf factory; extra required parameters get neutral placeholders."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return cls, []
    params = list(signature.parameters.values())
    required = [
        p
        for p in params[1:]
        if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if not params or not required:
        return cls, []
    fillers: list[Any] = []
    for p in required:
        lowered = p.name.lower()
        filler: Any = None
        for keys, value in _PLACEHOLDERS:
            if any(k in lowered for k in keys):
                filler = value
                break
        fillers.append(filler)

    def make(value: float) -> Any:
        return cls(value, *fillers)

    return make, [p.name for p in required]
