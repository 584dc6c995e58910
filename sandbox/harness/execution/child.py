"""What runs in a child of the fork server: set up, read one task, run student code, report.

A child starts as a fork of the fork server (which never held the plan). It reads its one
task from its own pipe, takes its limits, moves into the run's fresh scratch folder, drops to
the student uid, and only then loads student code. It reports through its record pipe as
JSON lines; a script run (``python autograd_lab.py``) closes that pipe before any student
code runs, so its only outcome is its exit status and output.
"""

from __future__ import annotations

import builtins
import json
import os
import resource
import struct
import sys
import traceback
import types
from _hashlib import hmac_digest as _hmac_digest
from _json import encode_basestring_ascii as _ascii
from _json import make_encoder as _make_encoder
from collections.abc import Callable
from os import write as _os_write
from typing import Any, NoReturn

from .. import wire
from ..probes import loader, programs, stable_hash
from . import guard

MAX_TASK = 16 * 1024 * 1024
TASK_HEADER = struct.Struct("!Q")  # the task's length in bytes, before the task
Write = Callable[[dict[str, Any]], None]
_FILLERS: dict[str, Any] = {"tuple": (), "str": "", "none": None}


def main(task_fd: int, record_fd: int, output_fd: int) -> NoReturn:
    """Entry point in the forked child; never returns. Everything after this runs in private
    copies of the harness modules (``sealed``), which student code has no name for."""
    from . import sealed  # not among the copies: only this entry point builds them

    try:
        private = sealed.build()["execution.child"]
    except BaseException:
        os._exit(73)
    private.run(task_fd, record_fd, output_fd)
    os._exit(74)


def run(task_fd: int, record_fd: int, output_fd: int) -> NoReturn:
    """The child's work, in the private copy: set up, read the task, run it, report."""
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        keep = sorted({0, 1, 2, task_fd, record_fd})
        for low, high in zip([2, *keep[3:]], [*keep[3:], 65536], strict=True):
            os.closerange(low + 1, high)
        task = _read_task(task_fd)
        write = _signed_writer(record_fd, bytes.fromhex(task.pop("key")))
        _enter(task)
        stable_hash.install(frozenset({loader.MODULE_NAME, "__main__"}))
        if task["kind"] == "script":
            _run_script(task, write, record_fd)
        if task["kind"] != "cleanup":  # the cleanup child runs no student code
            _GUARD.append(guard.install())
    except BaseException:
        os._exit(71)
    status = 0
    try:
        TASKS[task["kind"]](task, write)
    except BaseException as error:  # SystemExit and KeyboardInterrupt included
        try:
            write({"t": wire.ERR, "stage": "running the probe", "error": exception_record(error, task["filename"])})
        except BaseException:
            status = 72
    try:
        write({"t": wire.DONE})  # the last record: without it, the run did not end as the grader's
    except BaseException:
        status = 72
    _flush()
    os._exit(status)


_GUARD: list[Callable[[Callable[[], Any]], Any]] = []  # the hook's privileged(), once installed


def _refuse(value: object) -> object:
    raise TypeError(f"a {type(value).__name__} in a record")


def _signed_writer(fd: int, key: bytes) -> Write:
    """Records as ``<tag> <json>`` lines; the tag is an HMAC of the record and its place in the
    run under a key that only the task carried. Everything it calls was bound before student
    code ran (the C JSON encoder, HMAC and write), and the key lives only in this closure."""
    encode = _make_encoder(None, _refuse, _ascii, None, ":", ",", False, False, False)
    sent = [0]

    def write(record: dict[str, Any]) -> None:
        body = "".join(encode(record, 0)).encode()
        sent[0] += 1
        tag = _hmac_digest(key, b"%d:" % sent[0] + body, "sha256").hex().encode()
        data = tag + b" " + body + b"\n"
        while data:
            data = data[_os_write(fd, data) :]

    return write


def _read_task(fd: int) -> dict[str, Any]:
    """The task, announced by its length and read into one buffer of exactly that size: however
    the pipe hands it over (whole, or a few bytes at a time on a busy machine), the child makes
    the same allocations, so student code meets the same free memory on every run."""
    try:
        (size,) = TASK_HEADER.unpack(_read_exactly(fd, bytearray(TASK_HEADER.size)))
        if size > MAX_TASK:
            raise ValueError("task too large")
        body = _read_exactly(fd, bytearray(size))
    finally:
        os.close(fd)
    task: dict[str, Any] = json.loads(body)
    return task


def _read_exactly(fd: int, into: bytearray) -> bytearray:
    view, done = memoryview(into), 0
    while done < len(into):
        got = os.readv(fd, [view[done:]])
        if not got:
            raise ValueError("task cut short")
        done += got
    view.release()
    return into


def _mapped_now() -> int:
    """Bytes of address space this process has mapped now (``/proc/self/statm``). The fork
    server's footprint varies by a page or an allocator block from one start to the next (address
    layout is randomised), so the memory limit is counted from here: student code gets the same
    room on every run. Without ``/proc``, nothing is subtracted (the limit is then absolute)."""
    try:
        fd = os.open("/proc/self/statm", os.O_RDONLY)
    except OSError:
        return 0
    try:
        pages = int(os.read(fd, 200).split()[0])
    finally:
        os.close(fd)
    return pages * resource.getpagesize()


def _enter(task: dict[str, Any]) -> None:
    """Limits, the scratch folder, and the student uid, in that order."""
    cpu = int(task["cpu_seconds"])
    memory = int(task["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    room = _mapped_now() + memory  # the run's own allowance, over what the harness has mapped
    resource.setrlimit(resource.RLIMIT_AS, (room, room))
    if hasattr(resource, "RLIMIT_MSGQUEUE"):
        resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))  # no POSIX queue outlives a run
    scratch = task["scratch"]
    os.chdir(scratch)
    os.environ["HOME"] = os.environ["TMPDIR"] = scratch
    uid, gid = task.get("uid"), task.get("gid")
    if uid is not None and gid is not None:
        os.setgroups([])
        os.setgid(int(gid))
        os.setuid(int(uid))
    if scratch not in sys.path:
        sys.path.append(scratch)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def _last_line_in(trace: types.TracebackType | None, filename: str) -> int | None:
    line = None
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == filename:
            line = trace.tb_lineno
        trace = trace.tb_next
    return line


def exception_record(error: BaseException, filename: str) -> dict[str, Any]:
    column = None
    trace = error.__traceback__
    if _GUARD:  # frames are refused to student code; the harness reads its own traceback
        line = _GUARD[0](lambda: _last_line_in(trace, filename))
    else:
        line = _last_line_in(trace, filename)
    if isinstance(error, SyntaxError) and error.filename == filename:
        # Raised compiling the file ('return' outside a function, say): it names its own place.
        line, column = error.lineno, error.offset
        return {"type": type(error).__name__[:60], "message": str(error.msg)[:300], "line": line, "column": column}
    return {"type": type(error).__name__[:60], "message": str(error)[:300], "line": line}


# --- the engine, loaded the way the task says ------------------------------------------------------


Engine = tuple[type, Callable[[float], Any], list[str], list[str]]  # class, leaf factory, notices, stand-ins used


def _engine(task: dict[str, Any]) -> Engine:
    """The graded class (the one the supervisor found in the syntax tree) and a leaf factory; no
    class of the harness's own, since student code can rebind any class's attributes."""
    finder = loader.install_stand_ins(task.get("stand_ins", []))
    module, notices = loader.load_module(task["source"], task["filename"], task["mode"])
    cls = loader.graded_engine(module, task["class_name"], int(task["class_line"]), int(task["class_end"]))
    fillers = tuple(_FILLERS.get(kind) for kind in task.get("fillers", []))

    def make(value: float) -> Any:
        return cls(value, *fillers)

    return cls, make, notices, list(finder.used)


def _task_load(task: dict[str, Any], write: Write) -> None:
    try:
        _, make, notices, used = _engine(task)
        leaf_data = programs.read_float(getattr(make(1.5), "data", None))
    except loader.LoadError as error:
        write({"t": wire.LOAD, "ok": False, "error": loader.error_record(error)})
        return
    except BaseException as error:
        write({"t": wire.LOAD, "ok": False, "error": exception_record(error, task["filename"])})
        return
    write({"t": wire.LOAD, "ok": True, "notices": notices[:10], "stand_ins_used": used[:10], "leaf_data": leaf_data})


def _task_api(task: dict[str, Any], write: Write) -> None:
    cls, make, _, _ = _engine(task)
    write({"t": wire.LOADED})  # the import is not the probe's: its clock starts here
    obs = programs.run_api(cls, make, *task.get("inputs", []))
    write({"t": wire.OBS, "program": 0, "phase": wire.FINAL, "obs": obs})


def _task_programs(task: dict[str, Any], write: Write) -> None:
    make = _engine(task)[1]
    write({"t": wire.LOADED})
    for index, program in enumerate(task["programs"]):

        def emit(phase: str, obs: dict[str, Any], _index: int = index) -> None:
            write({"t": wire.OBS, "program": _index, "phase": phase, "obs": obs})

        obs, failure = programs.observe(make, program, emit)
        if failure is not None:
            stage, error = failure
            record = {"t": wire.ERR, "program": index, "stage": stage[:200], "obs": obs}
            write({**record, "error": exception_record(error, task["filename"])})
            continue
        emit(wire.FINAL, obs)


def _task_cleanup(task: dict[str, Any], write: Write) -> None:
    """As the student uid: empty the run's scratch folder and remove the uid's System V objects."""
    _empty(task["scratch"])
    _remove_ipc_objects()


def _empty(folder: str) -> None:
    """Remove everything inside ``folder``, as the owner of what is in it. A loop, not recursion,
    entering each folder by name from its parent: no depth of nesting (past the recursion limit,
    past PATH_MAX) keeps files or a count of inodes for a later run. An empty folder is removed
    at once (one call: a run may leave thousands); any other is opened (chmod) before it is
    listed, so no unlistable folder keeps its files."""
    try:
        os.chdir(folder)
        stack = [("", _listing())]  # (name in its parent, entries still to remove)
    except OSError:
        return
    while stack:
        name, left = stack[-1]
        if left:
            entry, is_dir = left.pop()
            if not is_dir:
                _quietly(os.unlink, entry)
            elif not _removed(entry) and _entered(entry):
                try:
                    stack.append((entry, _listing()))
                except OSError:
                    stack.append((entry, []))  # cannot be listed: left as it is
            continue
        stack.pop()
        if stack:  # back in its parent, where it can now be removed
            try:
                os.chdir("..")
            except OSError:
                return
            _quietly(os.rmdir, name)


def _listing() -> list[tuple[str, bool]]:
    with os.scandir(".") as entries:
        return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]


def _removed(name: str) -> bool:
    try:
        os.rmdir(name)
    except OSError:
        return False
    return True


def _entered(name: str) -> bool:
    """Into folder ``name`` (never through a symlink)."""
    _quietly(os.chmod, name, 0o700)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        os.fchdir(fd)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _remove_ipc_objects() -> None:
    """System V queues, semaphore sets and shared memory of this uid must not carry anything from
    one run to the next; as their owner this process may remove them."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return
    uid = os.getuid()
    for kind in ("msg", "sem", "shm"):
        try:
            with open(f"/proc/sysvipc/{kind}", encoding="ascii") as handle:
                header, *rows = handle.read().splitlines()
        except OSError:
            continue
        names = header.split()
        if "uid" not in names or len(names) < 2:
            continue
        owners = [names.index(n) for n in ("uid", "cuid") if n in names]  # a creator may give it away
        for row in rows:
            fields = row.split()
            if len(fields) != len(names) or all(int(fields[c]) != uid for c in owners):
                continue
            ident = int(fields[1])
            if kind == "sem":
                libc.semctl(ident, 0, 0)  # IPC_RMID
            else:
                getattr(libc, f"{kind}ctl")(ident, 0, None)  # IPC_RMID


def _quietly(call: Callable[..., object], *args: Any) -> None:
    try:
        call(*args)
    except OSError:
        pass


def _run_script(task: dict[str, Any], write: Write, record_fd: int) -> NoReturn:
    """``python autograd_lab.py`` in this process: the file is written to the scratch folder and
    runs as ``__main__``; the exit status follows the interpreter's rules. The record pipe says
    only that student code is about to run, then closes: nothing may speak for the grader.
    With one of the grader's engines in place of the student's class (``disk``: the file as
    submitted), the scratch folder holds the student's own text: no engine's source is on disk
    for the checks to read back."""
    name = task["filename"]
    status = 1
    try:
        with open(name, "w", encoding="utf-8") as handle:
            handle.write(task.get("disk", task["text"]))
        loader.install_stand_ins(task.get("stand_ins", []))
        loader.forget_compiled()
        write({"t": wire.STARTED})
        os.close(record_fd)
        code = compile(task["text"], name, "exec")
        main_module = types.ModuleType("__main__")
        main_module.__file__ = name
        main_module.__dict__["__builtins__"] = builtins  # the real ones, never the harness copy's
        sys.modules["__main__"] = main_module
        sys.argv = [name]
        sys.path[0:0] = [os.getcwd()]
        del task
        status = _exec_main(code, main_module)
        _shut_down()
    except BaseException:
        traceback.print_exc()
    _flush()
    os._exit(status)


def _exec_main(code: types.CodeType, module: types.ModuleType) -> int:
    try:
        exec(code, module.__dict__)
    except SystemExit as stop:
        return _exit_code(stop.code)
    except BaseException as error:
        traceback.print_exception(type(error), error, error.__traceback__.tb_next if error.__traceback__ else None)
        return 1
    return 0


def _shut_down() -> None:
    """What the interpreter does before it exits: wait for threads, then run atexit handlers."""
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    import atexit

    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


TASKS: dict[str, Callable[[dict[str, Any], Write], None]] = {
    "load": _task_load,
    "api": _task_api,
    "programs": _task_programs,
    "cleanup": _task_cleanup,
}
