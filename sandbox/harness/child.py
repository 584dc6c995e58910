"""What runs in a child of the fork server: set up, read one task, run student code, report.

A child starts as a fork of the fork server (which never held the plan). It reads its one
task from its own pipe, takes its limits, moves into the run's fresh scratch folder, drops to
the student uid, and only then loads student code. It reports through its record pipe as
JSON lines; a script run (``python autograd_lab.py``) closes that pipe before any student
code runs, so its only outcome is its exit status and output.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import traceback
import types
from collections.abc import Callable
from typing import Any, NoReturn

from . import loader, programs, stable_hash, wire

MAX_TASK = 16 * 1024 * 1024
Write = Callable[[dict[str, Any]], None]
_FILLERS: dict[str, Any] = {"tuple": (), "str": "", "none": None}


def main(task_fd: int, record_fd: int, output_fd: int) -> NoReturn:
    """Entry point in the forked child; never returns."""
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
        _enter(task)
        stable_hash.install(frozenset({loader.MODULE_NAME, "__main__"}))
    except BaseException:
        os._exit(71)
    if task["kind"] == "script":
        _run_script(task, record_fd)
    channel = os.fdopen(record_fd, "w", buffering=1, encoding="utf-8")

    def write(record: dict[str, Any]) -> None:
        channel.write(json.dumps(record, allow_nan=False) + "\n")
        channel.flush()

    status = 0
    try:
        TASKS[task["kind"]](task, write)
    except BaseException as error:  # SystemExit and KeyboardInterrupt included
        try:
            write({"t": wire.ERR, "stage": "running the probe", "error": exception_record(error, task["filename"])})
        except BaseException:
            status = 72
    _flush()
    os._exit(status)


def _read_task(fd: int) -> dict[str, Any]:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_TASK:
            raise ValueError("task too large")
        chunks.append(chunk)
    os.close(fd)
    task: dict[str, Any] = json.loads(b"".join(chunks))
    return task


def _enter(task: dict[str, Any]) -> None:
    """Limits, the scratch folder, and the student uid, in that order."""
    cpu = int(task["cpu_seconds"])
    memory = int(task["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
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


def exception_record(error: BaseException, filename: str) -> dict[str, Any]:
    line = column = None
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    if isinstance(error, SyntaxError) and error.filename == filename:
        # Raised compiling the file ('return' outside a function, say): it names its own place.
        line, column = error.lineno, error.offset
        return {"type": type(error).__name__[:60], "message": str(error.msg)[:300], "line": line, "column": column}
    return {"type": type(error).__name__[:60], "message": str(error)[:300], "line": line}


# --- the engine, loaded the way the task says ------------------------------------------------------


class Engine:
    """The graded class (the one the supervisor found in the syntax tree) and a leaf factory."""

    def __init__(self, task: dict[str, Any]) -> None:
        finder = loader.install_stand_ins(task.get("stand_ins", []))
        module, self.notices = loader.load_module(task["source"], task["filename"], task["mode"])
        self.cls = loader.graded_engine(module, task["class_name"], int(task["class_line"]), int(task["class_end"]))
        self.fillers = tuple(_FILLERS.get(kind) for kind in task.get("fillers", []))
        self.stand_ins_used = list(finder.used)

    def make(self, value: float) -> Any:
        return self.cls(value, *self.fillers)


def _task_load(task: dict[str, Any], write: Write) -> None:
    try:
        found = Engine(task)
        leaf = found.make(1.5)
        leaf_data = programs.read_float(getattr(leaf, "data", None))
    except loader.LoadError as error:
        write({"t": wire.LOAD, "ok": False, "error": error.record()})
        return
    except BaseException as error:
        write({"t": wire.LOAD, "ok": False, "error": exception_record(error, task["filename"])})
        return
    used = found.stand_ins_used[:10]
    write({"t": wire.LOAD, "ok": True, "notices": found.notices[:10], "stand_ins_used": used, "leaf_data": leaf_data})


def _task_api(task: dict[str, Any], write: Write) -> None:
    found = Engine(task)
    obs = programs.run_api(found.cls, found.make, *task.get("inputs", []))
    write({"t": wire.OBS, "program": 0, "phase": wire.FINAL, "obs": obs})


def _task_programs(task: dict[str, Any], write: Write) -> None:
    make = Engine(task).make
    for index, program in enumerate(task["programs"]):

        def emit(phase: str, obs: dict[str, Any], _index: int = index) -> None:
            write({"t": wire.OBS, "program": _index, "phase": phase, "obs": obs})

        try:
            obs = programs.run_program(make, program, emit)
        except programs.ProgramError as failure:
            write(
                {
                    "t": wire.ERR,
                    "program": index,
                    "stage": failure.stage[:200],
                    "error": exception_record(failure.error, task["filename"]),
                    "obs": failure.observations,
                }
            )
            continue
        emit(wire.FINAL, obs)


def _task_cleanup(task: dict[str, Any], write: Write) -> None:
    """As the student uid: empty the run's scratch folder and remove the uid's System V objects."""
    _empty(task["scratch"])
    _remove_ipc_objects()


def _empty(folder: str) -> None:
    """Remove everything inside ``folder``; as their owner, open every folder (chmod) before
    listing it, so that no unlistable folder keeps files (or a count of inodes) for a later run."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            _quietly(os.chmod, entry.path, 0o700)
            _empty(entry.path)
            _quietly(os.rmdir, entry.path)
        else:
            _quietly(os.unlink, entry.path)


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


def _run_script(task: dict[str, Any], record_fd: int) -> NoReturn:
    """``python autograd_lab.py`` in this process: the file is written to the scratch folder and
    runs as ``__main__``; the exit status follows the interpreter's rules. The record pipe says
    only that student code is about to run, then closes: nothing may speak for the grader."""
    name = task["filename"]
    status = 1
    try:
        with open(name, "w", encoding="utf-8") as handle:
            handle.write(task["text"])
        loader.install_stand_ins(task.get("stand_ins", []))
        os.write(record_fd, (json.dumps({"t": wire.STARTED}) + "\n").encode())
        os.close(record_fd)
        code = compile(task["text"], name, "exec")
        main_module = types.ModuleType("__main__")
        main_module.__file__ = name
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
            threading._shutdown()  # type: ignore[attr-defined]
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
