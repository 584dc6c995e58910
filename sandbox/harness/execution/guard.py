"""The audit hook a probe child installs before it loads student code (PEP 578).

The process that runs student code also runs the harness code that observes it and the writer
that reports what it saw. A hook cannot be removed once added, and every hook runs before the
audited operation does, so from the student's import on, this one refuses the ways Python code
reaches another function's frames and objects or the process's memory:

- frames: ``sys._getframe``, ``sys._current_frames``, and the ``tb_frame``, ``gi_frame``,
  ``cr_frame`` and ``ag_frame`` attributes (a traceback or generator leads to its caller);
- the collector's lists of objects (``gc.get_objects``, ``get_referrers``, ``get_referents``);
- tracing and profiling hooks, and further audit hooks (which would see the harness's events);
- ``ctypes`` (raw memory), and opening, linking to or moving into anything under ``/proc``
  (``/proc/self/mem``, another process's memory or descriptors);
- starting another program (``exec``, ``posix_spawn``, ``subprocess``, ``os.system``), which
  would run without this hook.

Classes are not covered (Python audits no change to a class's attributes), so the harness code
that runs after student code (``sealed``) calls no method of a class of its own.

The harness's own tracebacks are read through ``privileged``, which lifts the refusals for the
duration of one call that runs no student code. What the hook leaves open is written down in
docs/security.md.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
_REFUSED = frozenset(
    {
        "sys._current_frames",
        "sys._current_exceptions",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "os.forkpty",
        "pty.spawn",
        "subprocess.Popen",
        "os.symlink",
        "os.link",
    }
)
_PATH_EVENTS = frozenset({"open", "os.chdir", "os.rename", "os.chroot", "os.mkfifo", "os.mknod"})


class Refused(PermissionError):
    """An operation the grader does not allow while it observes an engine."""


def _names_proc(path: Any) -> bool:
    """The path, resolved as the kernel would resolve it now, lies under /proc."""
    if isinstance(path, int):
        return False  # an open descriptor: it was checked when it was opened
    try:
        text = os.fsdecode(os.fspath(path))
    except (TypeError, ValueError):
        return True  # a path this check cannot read is refused rather than guessed at
    resolved = os.path.realpath(text)
    return resolved == "/proc" or resolved.startswith("/proc/")  # no symlink can be made to fool this


def install() -> Callable[[Callable[[], T]], T]:
    """Add the hook; returns ``privileged(call)``, which runs ``call`` with the refusals lifted."""
    lifted = [0]  # a closure cell: no name in any module leads to it

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "builtins.id" or lifted[0]:
            return  # id() is audited, and engines call it for every node they visit
        if event == "object.__getattr__":
            if len(args) > 1 and args[1] in _FRAME_ATTRIBUTES:
                raise AttributeError(f"{args[1]} is not available while the grader observes an engine")
            return
        if event == "sys._getframe":
            # ValueError is what the standard library expects when no frame is there
            # (collections.namedtuple, typing and logging carry on without one).
            raise ValueError("call frames are not available while the grader observes an engine")
        if event in _REFUSED or event.startswith("ctypes."):
            raise Refused(f"{event} is not available while the grader observes an engine")
        if event in _PATH_EVENTS and args and _names_proc(args[0]):
            raise Refused("/proc is not available while the grader observes an engine")
        if event == "os.rename" and len(args) > 1 and _names_proc(args[1]):
            raise Refused("/proc is not available while the grader observes an engine")

    def privileged(call: Callable[[], T]) -> T:
        lifted[0] += 1
        try:
            return call()
        finally:
            lifted[0] -= 1

    sys.addaudithook(hook)
    return privileged
