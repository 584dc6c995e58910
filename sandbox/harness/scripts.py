"""Run the submission as a script (``python autograd_lab.py``), optionally with an AST edit.

This is how the student's own checks are exercised: the file runs as ``__main__`` with its
imports of drawing modules stood in for, and ``import autograd_lab`` inside it returns the
same (possibly edited) code rather than the untouched file.
"""

from __future__ import annotations

import sys
import traceback
import types
from typing import Any

from . import loader, mutate


def _line_in_file(tb: Any, filename: str) -> int | None:
    line = None
    for frame in traceback.extract_tb(tb):
        if frame.filename == filename:
            line = frame.lineno
    return line


def run_script(source: str, filename: str, class_name: str, edit: str | None) -> dict[str, Any]:
    """Execute the file; returns an outcome record (``passed``/``failed``/``not_applicable``)."""
    tree = loader.parse(source, filename)
    record: dict[str, Any] = {"edit": edit}
    if edit:
        try:
            tree, lines = mutate.mutate(tree, edit, class_name, in_place=True)
        except mutate.NotApplicable as reason:
            return {"outcome": "not_applicable", "reason": str(reason), "edit": edit}
        record["edited_lines"] = lines
    code = compile(tree, filename, "exec")
    sys.meta_path.insert(0, loader.SourceFinder(code, filename))
    sys.argv = [filename]
    module = types.ModuleType("__main__")
    module.__file__ = filename
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    except SystemExit as stop:
        code_value = stop.code
        if code_value in (None, 0):
            record.update(outcome="passed", detail="exited with status 0 (sys.exit)")
        else:
            record.update(outcome="failed", exception="SystemExit", message=str(code_value)[:300])
        return record
    except BaseException as error:  # the student's checks failing is an outcome, not a crash
        record.update(
            outcome="failed",
            exception=type(error).__name__[:60],
            message=str(error)[:300],
            line=_line_in_file(error.__traceback__, filename),
        )
        return record
    record["outcome"] = "passed"
    return record
