"""The student's file with a correct engine in place of theirs: are their checks checks?

When the student's checks fail on their own file, they may have caught a real bug, and injected
bugs then count where the checks stop somewhere else. Checks that always fail (at a line drawn
from a hash of the values, say) would stop somewhere else on every mutant. So catching needs one
more run: the same file with the grader's correct class (the plan's ``reference``) spliced over
the graded class statement, decorators included. Honest checks pass on it; checks that fail on
a correct engine earn nothing in catching mode (``grader.judge.bug_injection``).
"""

from __future__ import annotations

import ast

from .. import syntax


class NoGate(Exception):
    """The correct class could not be put in place of the student's."""


def with_reference(source: str, filename: str, class_name: str, class_line: int, reference: str) -> str:
    """``source`` with the top-level class statement at ``class_line`` replaced by ``reference``
    (a class named ``Value`` and the imports it needs), renamed to ``class_name``."""
    try:
        tree = syntax.parse(source, filename=filename)
        ours = syntax.parse(reference, filename="<reference>")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise NoGate(f"the file could not be read again ({type(error).__name__})") from error
    graded = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.lineno == class_line), None)
    if graded is None or graded.end_lineno is None:
        raise NoGate("the graded class statement was not found")
    first = min([graded.lineno, *(d.lineno for d in graded.decorator_list)])
    for node in ast.walk(ours):
        if isinstance(node, ast.ClassDef) and node.name == "Value":
            node.name = class_name
        elif isinstance(node, ast.Name) and node.id == "Value":
            node.id = class_name
    lines = source.splitlines(keepends=True)
    replacement = ast.unparse(ours) + "\n"
    text = "".join(lines[: first - 1]) + replacement + "".join(lines[graded.end_lineno :])
    try:
        compile(text, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise NoGate(f"the file with the grader's class does not compile ({type(error).__name__})") from error
    return text
