"""The student's file with one of the grader's engines in place of the graded class.

Step 5 judges the student's checks on the grader's engines (correct ones, and ones with a
known bug), never on the student's own: the engine's text (imports and a class named
``Value``) goes where the graded class statement was, decorators included, renamed to the
student's class name. Every engine of one grading is padded to the same number of lines, so
the checks below the class sit at the same lines whichever engine runs.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from .. import syntax


class NoGate(Exception):
    """An engine could not be put in place of the student's class."""


def renamed(engine: str, class_name: str) -> str:
    """``engine`` with its class ``Value`` (and every use of the name) called ``class_name``.
    The host writes every engine as ``ast.unparse`` does, so one for a class already named
    ``Value`` is used as it is: no parse per engine and grading for most files."""
    if class_name == "Value":
        return engine.rstrip("\n") + "\n"
    try:
        tree = syntax.parse(engine, filename="<engine>")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise NoGate(f"the grader's engine could not be read ({type(error).__name__})") from error
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Value":
            node.name = class_name
        elif isinstance(node, ast.Name) and node.id == "Value":
            node.id = class_name
    return ast.unparse(tree) + "\n"


def spliced_all(
    source: str, filename: str, class_name: str, class_line: int, engines: Mapping[str, str]
) -> dict[str, str]:
    """The file with each engine in place of the class at ``class_line``, all the same length."""
    try:
        tree = syntax.parse(source, filename=filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise NoGate(f"the file could not be read again ({type(error).__name__})") from error
    graded = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.lineno == class_line), None)
    if graded is None or graded.end_lineno is None:
        raise NoGate("the graded class statement was not found")
    first = min([graded.lineno, *(d.lineno for d in graded.decorator_list)])
    lines = source.splitlines(keepends=True)
    before, after = "".join(lines[: first - 1]), "".join(lines[graded.end_lineno :])
    if before and not before.endswith("\n"):
        before += "\n"
    texts = {name: renamed(text, class_name) for name, text in engines.items()}
    height = max((t.count("\n") for t in texts.values()), default=0)
    out = {name: before + text + "\n" * (height - text.count("\n")) + after for name, text in texts.items()}
    # Every engine compiles on its own, so one spliced file that compiles shows the splice does.
    try:
        compile(next(iter(out.values()), ""), filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise NoGate(f"the file with the grader's engine does not compile ({type(error).__name__})") from error
    return out


def shift(spliced: str, source: str) -> int:
    """How many lines longer the spliced file is than the submitted one."""
    return spliced.count("\n") - source.count("\n")
