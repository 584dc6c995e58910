"""Run the submission as a script (``python autograd_lab.py``), optionally with one injected bug.

The file runs in a *fresh interpreter* (``execv``), not inside the harness process: nothing of
the harness (its frames, its variables, which bug is injected, its private record pipe) is
reachable from student code, so checks cannot learn they are running against a mutant except
by what the code itself does. The file on disk is the file that runs: for a mutant, the
mutated source is written out, so comparing the running code with the file finds nothing.
The outcome is the interpreter's exit status: 0 is a pass, anything else a failure.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from . import loader, mutate, wire

# Runs in the new interpreter, started as the harness's user (root in the container): it drops
# to the student uid first, then copies the file into a folder of the student's own (the
# folder it was written to belongs to the harness), and only then runs any student code.
# Drawing modules get inert stand-ins, as during every other probe.
BOOTSTRAP = """
import os, sys, types
root, name, uid, gid, scratch, *stand_ins = sys.argv[1:]
if uid:
    os.setgroups([])
    os.setgid(int(gid))
    os.setuid(int(uid))
    with open(name, "rb") as handle:
        text = handle.read()
    work = os.path.join(scratch, "script-%d" % os.getpid())
    os.mkdir(work, 0o700)
    os.chdir(work)
    with open(name, "wb") as handle:
        handle.write(text)
    os.environ["HOME"] = work
sys.path.insert(0, root)
from sandbox.harness.standins import install_stand_ins
install_stand_ins(stand_ins)
del install_stand_ins, root, uid, gid, scratch, stand_ins
sys.path[0] = "."
sys.argv = [name]
with open(name, "rb") as handle:
    code = compile(handle.read(), name, "exec")
main = types.ModuleType("__main__")
main.__file__ = name
sys.modules["__main__"] = main
exec(code, main.__dict__)
"""


def prepare(source: str, filename: str, class_name: str, edit: str | None) -> tuple[str, list[int]]:
    """The text to run and the lines edited; raises NotApplicable (or LoadError) first."""
    if edit is None:
        return source, []
    tree, lines = mutate.mutate(loader.parse(source, filename), edit, class_name, in_place=True)
    return ast.unparse(tree) + "\n", lines


def exec_script(
    text: str, filename: str, stand_ins: Sequence[str], *, uid: int | None, gid: int | None, scratch: str
) -> NoReturn:
    """Write ``text`` as ``filename`` in the working directory and become ``python filename``,
    as ``uid``:``gid`` when given (the bootstrap switches before any student code runs)."""
    with open(filename, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(filename, 0o644)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(loader.__file__))))
    ids = ["" if uid is None else str(uid), "" if gid is None else str(gid)]
    sys.stdout.flush()
    sys.stderr.flush()
    argv = [sys.executable, "-I", "-B", "-c", BOOTSTRAP, root, filename, *ids, scratch, *stand_ins]
    os.execv(sys.executable, argv)


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
