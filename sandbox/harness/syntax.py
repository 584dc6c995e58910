"""``ast.parse`` made safe to call from several threads at once.

CPython 3.11 keeps the depth counter of its AST object builder in interpreter-wide state:
two threads parsing at once (the batch grader's, the service's) can interleave there when
a garbage collection runs Python code mid-build, and one of them fails with "SystemError:
AST constructor recursion depth mismatch". One lock per process serialises the build; it is
short (milliseconds per file) and the sandbox's single-threaded children never contend.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.Module:
    with _LOCK:
        tree = ast.parse(source, filename=filename, mode=mode)
    assert isinstance(tree, ast.Module)
    return tree
