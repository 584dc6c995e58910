"""The audit hook a probe child installs before it loads student code (PEP 578).

In a probe child student code runs on the main thread (and on threads of its own); what
observes the engine and writes records runs on a thread of its own (``reporter``), which no
frame of the main thread leads to. The hook is the second line, for everything a frame is not:
a hook cannot be removed once added, and it runs before the audited operation does, so from the
student's import on it refuses the ways Python code reaches another thread's frames and objects
or the process's memory:

- frames: ``sys._getframe``, ``sys._current_frames``, and the ``tb_frame``, ``gi_frame``,
  ``cr_frame`` and ``ag_frame`` attributes (a traceback or generator leads to its caller);
- the collector's lists of objects (``gc.get_objects``, ``get_referrers``, ``get_referents``);
- tracing and profiling hooks, and further audit hooks (which would see the harness's events);
- ``ctypes`` (raw memory), and opening, moving into or creating anything that resolves to
  ``/proc`` (``/proc/self/mem``, another process's memory or descriptors): judged by the
  device of what the path, or its nearest existing parent, resolves to now, so no symlink,
  ``..`` or rebound ``os.path`` function changes the answer; a path given as anything but
  ``str``, ``bytes`` or a descriptor is refused (its ``__fspath__`` could answer differently
  when the file is really opened); links are refused outright;
- starting another program (``exec``, ``posix_spawn``, ``subprocess``, ``os.system``), which
  would run without this hook.

Student code can reach this module's namespace and its builtins (they are the main thread's),
so the hook reads neither: everything it uses is bound in its closure when it is installed,
and none of it can be changed through a frame of the hook (a signal handler can run inside it).

The main thread's server reads the student's tracebacks through ``privileged``, which lifts the
frame refusals on the main thread only (whose frames lead nowhere); the reporter never needs it.
"""

from __future__ import annotations

import _thread
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


def _proc_device() -> int | None:
    try:
        return os.stat("/proc").st_dev
    except OSError:
        return None  # no /proc to reach (not Linux): nothing resolves there


def _make_hook(main: int) -> tuple[Callable[[str, tuple[Any, ...]], None], list[int]]:
    """The hook, and the counter ``privileged`` lifts frame refusals with (main thread only)."""
    lifted = [0]
    frame_attributes, refused, path_events = _FRAME_ATTRIBUTES, _REFUSED, _PATH_EVENTS
    refusal, attribute_error, value_error, os_error = Refused, AttributeError, ValueError, OSError
    get_ident, stat, proc = _thread.get_ident, os.stat, _proc_device()
    kind, subclass, size, number, text, raw = type, issubclass, len, int, str, bytes
    exact_text, decode, split = str.__str__, bytes.decode, str.rpartition
    encoding = sys.getfilesystemencoding()

    def names_proc(path: Any) -> bool:
        """The path, as the kernel would resolve it now (or its nearest existing parent, for a
        file about to be made), lies on /proc; True for a path this check cannot read."""
        given = kind(path)
        if subclass(given, number):
            return False  # an open descriptor: it was checked when it was opened
        if subclass(given, raw):
            try:
                path = decode(path, encoding, "surrogateescape")
            except value_error:
                return True
        elif subclass(given, text):
            path = exact_text(path)  # its own characters, whatever a subclass says of itself
        else:
            return True
        while True:
            try:
                return proc is not None and stat(path).st_dev == proc
            except (os_error, value_error):
                pass  # not there (yet): its parent decides
            head, sep, _ = split(path, "/")
            if not sep:
                path = "."
            elif head:
                path = head
            elif path != "/":
                path = "/"
            else:
                return False

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "builtins.id":
            return  # id() is audited, and engines call it for every node they visit
        if event == "object.__getattr__":
            if size(args) > 1 and args[1] in frame_attributes and not (lifted[0] and get_ident() == main):
                raise attribute_error(f"{args[1]} is not available while the grader observes an engine")
            return
        if event == "sys._getframe":
            # ValueError is what the standard library expects when no frame is there
            # (collections.namedtuple, typing and logging carry on without one).
            raise value_error("call frames are not available while the grader observes an engine")
        if event in refused or event.startswith("ctypes."):
            raise refusal(f"{event} is not available while the grader observes an engine")
        if event in path_events and args and names_proc(args[0]):
            raise refusal("/proc is not available while the grader observes an engine")
        if event == "os.rename" and size(args) > 1 and names_proc(args[1]):
            raise refusal("/proc is not available while the grader observes an engine")

    return hook, lifted


def install() -> Callable[[Callable[[], T]], T]:
    """Add the hook (from the main thread); returns ``privileged(call)``, which runs ``call`` with
    the frame refusals lifted for the main thread, for reading a traceback of student code."""
    hook, lifted = _make_hook(_thread.get_ident())

    def privileged(call: Callable[[], T]) -> T:
        lifted[0] += 1
        try:
            return call()
        finally:
            lifted[0] -= 1

    sys.addaudithook(hook)
    return privileged
