"""What a finished ``python autograd_lab.py`` run says about the student's own checks.

The run itself happens in a child of the fork server (``child._run_script``); its outcome is
the interpreter's exit status and the end of its output: 0 is a pass, anything else a
failure, with the exception and line shown when the output names them.
"""

from __future__ import annotations

import re
from typing import Any

from .. import wire

MAX_FRAMES = 40
MAX_STOP = 300

_EXCEPTION = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning))(?::\s?(?P<message>.*))?$"
)


def outcome_from(exit_code: int | None, output: str, filename: str) -> dict[str, Any]:
    """What a finished run says about the checks: passed, or failed with the exception shown."""
    if exit_code == 0:
        return {"outcome": wire.PASSED}
    record: dict[str, Any] = {"outcome": wire.FAILED, "exception": f"exit status {exit_code}", "message": ""}
    lines = output.rstrip().splitlines()
    for text in reversed(lines[-40:]):
        match = _EXCEPTION.match(text.strip())
        if match:
            record.update(exception=match["type"].rsplit(".", 1)[-1][:60], message=(match["message"] or "")[:300])
            break
    where = re.findall(rf'File "(?:\./)?{re.escape(filename)}", line (\d+)', output)
    if where:
        record["line"] = int(where[-1])
    return record


def stop_point(output: str, filename: str, record: dict[str, Any], class_lines: tuple[int, int], shift: int) -> str:
    """Where a failing run of the checks stopped, in the lines of the file as submitted: every
    traceback frame outside the graded class, outermost first. Never the exception's name or
    message: checks choose those freely (a name drawn from a hash of the values would make
    every change of behaviour look like a new stop). A copy of
    the file differs from it only inside the class (``shift`` lines longer), so frames in the
    checks map back to the same lines; frames inside the class are left out (an edit there
    moves them). Empty when the output names no frame of the file."""
    start, end = class_lines
    mapped: list[str] = []
    for found in re.findall(rf'File "(?:\./)?{re.escape(filename)}", line (\d+)', output)[-MAX_FRAMES:]:
        line = int(found)
        if line < start:
            mapped.append(str(line))
        elif line > end + shift:
            mapped.append(str(line - shift))
    if not mapped:
        return ""
    return f"{filename}:{','.join(mapped)}"[:MAX_STOP]
