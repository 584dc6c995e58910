"""What runs in a child of the fork server: set up, read one task, run student code, report.

A child starts as a fork of the fork server (which never held the plan). It reads its one
task from its own pipe, takes its limits, moves into the run's fresh scratch folder, drops to
the student uid, and only then loads student code. It reports through its record pipe as
JSON lines; a script run (``python autograd_lab.py``) closes that pipe before any student
code runs, so its only outcome is its exit status and output.

A probe child (load, api, programs) hands its task, the key and the record pipe to a thread of
its own (``reporter``) before any student code runs, and its main thread, the only one of ours
that student code runs on, just serves that thread's requests (``_server``): calls on the
engine's objects, whose outcome it hands back.
"""

from __future__ import annotations

import _queue
import _signal  # type: ignore[import-not-found]  # its C functions, not signal's wrappers
import _thread
import builtins
import collections
import json
import os
import resource
import struct
import sys
import traceback
import types
from _json import encode_basestring_ascii as _ascii
from _json import make_encoder as _make_encoder
from collections.abc import Callable, Generator, Iterator
from typing import Any, NoReturn

from .. import wire
from ..probes import loader, programs, stable_hash
from . import guard, reporter
from .reporter import signed_writer as _signed_writer

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
    private.run(task_fd, record_fd, output_fd, sealed.build)
    os._exit(74)


_drain: Callable[[Iterator[None]], None] = collections.deque[None](maxlen=0).extend  # consumes in C


def run(task_fd: int, record_fd: int, output_fd: int, build: Callable[..., dict[str, Any]]) -> NoReturn:
    """The child's work, in the private copy. A script or the cleanup runs here and ends the
    process; a probe's is the reporter thread's, and this thread serves its requests until the
    reporter ends the process. The server and its queues are on this frame's value stack only:
    no name, in this frame or any other of this thread, leads to them."""
    try:
        _drain(_set_up(task_fd, record_fd, output_fd, build))
    except BaseException:
        os._exit(71)
    os._exit(75)


def _set_up(task_fd: int, record_fd: int, output_fd: int, build: Callable[..., dict[str, Any]]) -> Iterator[None]:
    """Everything before student code; returns the server of a probe's requests."""
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    keep = sorted({0, 1, 2, task_fd, record_fd})
    for low, high in zip([2, *keep[3:]], [*keep[3:], 65536], strict=True):
        os.closerange(low + 1, high)
    task = _read_task(task_fd)
    key = bytes.fromhex(task.pop("key"))
    if task["kind"] not in reporter.KINDS:
        write = _signed_writer(record_fd, key)
        _enter(task)
        stable_hash.install(frozenset({loader.MODULE_NAME, "__main__"}))
        if task["kind"] == "script":
            _run_script(task, write, record_fd)
        _run_here(task, write)  # the cleanup: no student code runs in it
    own = build(("execution.reporter",), detached=True)["execution.reporter"]  # the reporter's only
    _enter(task)
    stable_hash.install(frozenset({loader.MODULE_NAME, "__main__"}))
    _stay_on_this_core()  # before the hook: it reads /proc
    requests: _queue.SimpleQueue[Any] = _queue.SimpleQueue()
    answers: _queue.SimpleQueue[Any] = _queue.SimpleQueue()
    server = _server(task["filename"], guard.install())
    next(server)
    serving = map(answers.put, map(server.send, iter(requests.get, None)))
    calls = {**programs.PRIMITIVES, **_CALLS}
    stack = _thread.stack_size(reporter.STACK_BYTES)
    try:
        _thread.start_new_thread(own.report, (task, key, record_fd, calls, requests.put, answers.get))
    finally:
        _thread.stack_size(stack)
    return serving


def _stay_on_this_core() -> None:
    """Keep this process on the core it runs on now (its threads, and those it starts): the two
    threads take turns, and a request that wakes the other thread on another core wakes that
    core too, often idle and asleep. The 74 probe children of the reference's plan took 1.41 to
    1.57 s on an idle machine with the threads free to move, 0.86 to 1.13 s kept on one core
    (0.67 to 0.82 s with the writer on the main thread)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as handle:
            core = int(handle.read().rpartition(")")[2].split()[36])  # field 39: the last core it ran on
        os.sched_setaffinity(0, {core})
    except (OSError, ValueError, IndexError, AttributeError):
        pass  # not Linux: the threads go where the scheduler puts them


def _run_here(task: dict[str, Any], write: Write) -> NoReturn:
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


def _refuse(value: object) -> object:
    raise TypeError(f"a {type(value).__name__} in an answer")


def _server(filename: str, privileged: Callable[[Callable[[], Any]], Any]) -> Generator[Any, Any, None]:
    """The main thread's side of a probe: each request of the reporter, called, and what it
    returned (an object, held there unexamined, or JSON text) or raised handed back. Student
    code runs only inside these calls. Signals are held while it waits, so a handler runs inside
    a call, where what it raises is that call's outcome."""
    encode = _make_encoder(None, _refuse, _ascii, None, ":", ",", False, False, False)
    hold, everything, restore = _signal.SIG_BLOCK, _signal.valid_signals(), _signal.SIG_SETMASK
    answer: Any = None
    while True:
        try:
            mask = _signal.pthread_sigmask(hold, everything)
            kind, call, args = yield answer
            _signal.pthread_sigmask(restore, mask)
            result = call(*args)
            if kind == programs.NODE:
                answer = (reporter.ANSWERED, None, result)
            elif kind == programs.PLAIN:
                answer = (reporter.ANSWERED, "".join(encode(result, 0)), None)
            elif kind == programs.PAIR:
                answer = (reporter.ANSWERED, "".join(encode(result[1], 0)), result[0])
            else:  # PARTIAL: what was read, and what the read after it raised
                values, raised = result
                failure = None if raised is None else _failure(encode, raised, filename, privileged)
                answer = (reporter.ANSWERED, "".join(encode({"values": values, "failure": failure}, 0)), raised)
        except BaseException as error:
            answer = (reporter.FAILED, "".join(encode(_failure(encode, error, filename, privileged), 0)), error)


def _failure(encode: Callable[..., Any], error: BaseException, filename: str, privileged: Any) -> dict[str, Any]:
    """What a call raised, as the reporter records it (readable as JSON whatever it is)."""
    summary: dict[str, Any] = {"exception": issubclass(type(error), Exception)}
    try:
        summary["record"] = exception_record(error, filename, privileged)
        if isinstance(error, loader.LoadError):
            summary["load"] = loader.error_record(error)
        encode(summary, 0)
    except BaseException:
        summary["record"] = {"type": "?", "message": "an exception the grader could not read", "line": None}
        summary.pop("load", None)
    return summary


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


def exception_record(error: BaseException, filename: str, privileged: Any = None) -> dict[str, Any]:
    column = None
    trace = error.__traceback__
    if privileged is not None:  # frames are refused to student code; the server reads this one
        line = privileged(lambda: _last_line_in(trace, filename))
    else:
        line = _last_line_in(trace, filename)
    if isinstance(error, SyntaxError) and error.filename == filename:
        # Raised compiling the file ('return' outside a function, say): it names its own place.
        line, column = error.lineno, error.offset
        return {"type": type(error).__name__[:60], "message": str(error.msg)[:300], "line": line, "column": column}
    return {"type": type(error).__name__[:60], "message": str(error)[:300], "line": line}


# --- the engine, loaded the way the task says (calls the reporter's requests name) ---------------


Engine = tuple[type, Callable[[float], Any]]  # the graded class, and a leaf factory


def _load_engine(spec: dict[str, Any]) -> tuple[Engine, dict[str, Any]]:
    """The graded class (the one the supervisor found in the syntax tree) and a leaf factory; no
    class of the harness's own, since student code can rebind any class's attributes."""
    finder = loader.install_stand_ins(spec.get("stand_ins", []))
    module, notices = loader.load_module(spec["source"], spec["filename"], spec["mode"])
    cls = loader.graded_engine(module, spec["class_name"], int(spec["class_line"]), int(spec["class_end"]))
    fillers = tuple(_FILLERS.get(kind) for kind in spec.get("fillers", []))

    def make(value: float) -> Any:
        return cls(value, *fillers)

    return (cls, make), {"notices": notices[:10], "stand_ins_used": list(finder.used)[:10]}


def _engine_part(engine: Engine, index: int) -> Any:
    return engine[index]


def _leaf_data(engine: Engine) -> programs.Observation:
    return programs.read_float(getattr(engine[1](1.5), "data", None))


_CALLS: dict[str, Callable[..., Any]] = {
    "load_engine": _load_engine,
    "engine_part": _engine_part,
    "leaf_data": _leaf_data,
    "flush": lambda: _flush(),
}


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
    "cleanup": _task_cleanup,
}
