"""The reporter: the one thread of a probe child that observes the engine and writes records.

Student code runs on the child's main thread (and on threads it starts). The task, the key its
records are tagged with, the record writer and the observing code (``programs.observe`` and
``run_api``) live here instead, on a thread started before any student code, running private
copies of this module and of ``programs`` and ``wire`` that only this thread holds (their
classes' methods lead to an empty namespace). So no frame student code can get hold of, by any
route (a signal handler's argument, a frame the collector kept in ``gc.garbage``, ``f_back``),
leads to anything here:

- every step that touches an engine object is a request: the main thread makes the call
  (``child._server``) and hands back what it returned, as an object held here unexamined, as
  JSON text, or as the summary of what it raised. Student code there can change what an answer
  says (as the engine's own methods can), never what is asked, recorded or sent;
- signal handlers and pending calls run on the main thread only, and this thread blocks signals;
- from the first answer on, this thread runs inside a callback of the garbage collector that
  never returns (``_entry``): while one collection is under way none can start, on any thread,
  so no collection ever runs student finalizers (or ``gc.callbacks``) here, and nothing more is
  kept in ``gc.garbage``. The import before it runs with the collector as usual; this thread is
  then waiting in a C call and runs nothing;
- it never lets go of an object student code made or could reach (``keep``): a finalizer runs
  on the thread that drops the last reference;
- it calls no method of a class student code can change: only functions of its own copies and
  the C functions of the standard library (JSON, HMAC, ``os.write``).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # its C functions, not signal's wrappers
import collections
import functools
import gc
import json
import operator
import os
import time
from _hashlib import hmac_digest as _hmac_digest
from _json import encode_basestring_ascii as _ascii
from _json import make_encoder as _make_encoder
from _json import make_scanner as _make_scanner
from collections.abc import Callable
from typing import Any, NoReturn, cast

from .. import wire
from ..probes import programs

Write = Callable[[dict[str, Any]], None]
ANSWERED, FAILED = "answered", "failed"  # the first item of every answer
ENTRY_ATTEMPTS = 50  # tries to enter the collector's callback while another thread holds it
ENTRY_PAUSE = 0.01
STACK_BYTES = 512 * 1024  # this thread's stack comes out of the student's memory allowance
SPEC_KEYS = ("source", "filename", "mode", "class_name", "class_line", "class_end", "fillers", "stand_ins")
_FAILURE = object()  # marks the exception ``ask`` raises for a call that raised


def _refuse(value: object) -> object:
    raise TypeError("a value of an unexpected type in a record")


def signed_writer(fd: int, key: bytes) -> Write:
    """Records as ``<tag> <json>`` lines; the tag is an HMAC of the record and its place in the
    run under a key that only the task carried. Everything it calls is a C function bound before
    student code ran, and the key lives only in this closure."""
    encode = _make_encoder(None, _refuse, _ascii, None, ":", ",", False, False, False)
    digest, write_fd = _hmac_digest, os.write
    sent = [0]

    def write(record: dict[str, Any]) -> None:
        body = "".join(encode(record, 0)).encode()
        sent[0] += 1
        tag = digest(key, b"%d:" % sent[0] + body, "sha256").hex().encode()
        data = tag + b" " + body + b"\n"
        while data:
            data = data[write_fd(fd, data) :]

    return write


def report(
    task: dict[str, Any],
    key: bytes,
    record_fd: int,
    calls: dict[str, Callable[..., Any]],
    put: Callable[[Any], None],
    get: Callable[[], Any],
) -> NoReturn:
    """The thread's whole life; it ends the process. ``calls``: the main thread's functions that
    requests name (held here, never called here); ``put``/``get``: the two queues."""
    try:
        _signal.pthread_sigmask(_signal.SIG_BLOCK, _signal.valid_signals())
        keep: list[Any] = []  # every object an answer held: none is ever freed on this thread
        scan = _make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
        write = signed_writer(record_fd, key)
        ask, opened = _conversation(calls, put, get, keep.append, scan)
        first: list[Any] = [None]
        work = functools.partial(_inside, task, write, ask, opened, first)
        attempts = iter([_entry(gc.callbacks, work) for _ in range(ENTRY_ATTEMPTS)])
        sink: Callable[[Any], None] = collections.deque(maxlen=0).extend
        spec = {name: task[name] for name in SPEC_KEYS if name in task}
        put((programs.PAIR, calls["load_engine"], (spec,)))
        first[0] = get()  # the import runs now, on the main thread
        # Nothing from here to the callback allocates an object the collector tracks (so no
        # collection can start on this thread) or drops one that student code made.
        for attempt in attempts:
            sink(attempt)  # returns only when another thread's collection was under way
            time.sleep(ENTRY_PAUSE)
    finally:
        os._exit(76)


def _entry(callbacks: list[Any], work: Callable[..., NoReturn]) -> Any:
    """One attempt to run ``work`` inside a collection: made before student code runs, consumed
    in C without returning to bytecode. The collector's callbacks are set aside (whatever
    student code put there would otherwise run first, on this thread) and only ``work`` is left."""
    saved: list[Any] = []
    steps: tuple[Callable[[], Any], ...] = (
        functools.partial(saved.extend, callbacks),
        callbacks.clear,
        functools.partial(callbacks.append, functools.partial(work, callbacks, saved)),
        gc.collect,
    )
    return map(cast(Callable[[Callable[[], Any]], Any], operator.call), steps)


def _conversation(
    calls: dict[str, Callable[..., Any]],
    put: Callable[[Any], None],
    get: Callable[[], Any],
    keep: Callable[[Any], None],
    scan: Callable[[str, int], tuple[Any, int]],
) -> tuple[programs.Ask, Callable[[Any, str], Any]]:
    def opened(answer: Any, kind: str) -> Any:
        keep(answer)
        # The main thread's server built it, but student code can rebind what the server calls:
        # nothing in an answer is used here but an exact str and JSON decoded here.
        if type(answer) is not tuple or len(answer) != 3:
            raise TypeError("an answer of the wrong shape")
        status, text, held = answer
        if type(status) is not str or (text is not None and type(text) is not str):
            raise TypeError("an answer of the wrong shape")
        value: Any = scan(text, 0)[0] if text is not None else None
        if status == FAILED:  # the call raised: ``value`` summarises it, ``held`` is what it raised
            raise (RuntimeError if value["exception"] else BaseException)(_FAILURE, value, held)
        if kind == programs.NODE:
            return held
        if kind == programs.PAIR:
            return held, value
        if kind == programs.PARTIAL:  # the read that raised is recorded as a failure, never raised here
            failure = value["failure"]
            raised = None if failure is None else RuntimeError(_FAILURE, failure, held)
            return value["values"], raised
        return value

    def ask(kind: str, primitive: str, *args: Any) -> Any:
        request = (kind, calls[primitive], args)
        keep(request)
        put(request)
        return opened(get(), kind)

    return ask, opened


def _inside(
    task: dict[str, Any],
    write: Write,
    ask: programs.Ask,
    opened: Callable[[Any, str], Any],
    first: list[Any],
    callbacks: list[Any],
    saved: list[Any],
    phase: str,
    info: dict[str, Any],
) -> NoReturn:
    """The collector's callback, on this thread: the rest of the run. Never returns."""
    callbacks.clear()
    callbacks.extend(saved)  # student code finds its callbacks as it left them (none runs again)
    status = 0
    try:
        _TASKS[task["kind"]](task, ask, write, functools.partial(opened, first[0], programs.PAIR))
    except BaseException as error:  # SystemExit and KeyboardInterrupt included
        try:
            write({"t": wire.ERR, "stage": "running the probe", "error": error_record(error)})
        except BaseException:
            status = 72
    try:
        ask(programs.PLAIN, "flush")  # the student's buffered output, on the main thread
    except BaseException:
        pass
    try:
        write({"t": wire.DONE})  # the last record: without it, the run did not end as the grader's
    except BaseException:
        status = 72
    os._exit(status)


def _summary(error: BaseException) -> dict[str, Any] | None:
    """What the main thread said of an exception a call raised; None for this thread's own."""
    args = error.args
    if (type(error) is RuntimeError or type(error) is BaseException) and len(args) == 3 and args[0] is _FAILURE:
        summary: dict[str, Any] = args[1]
        return summary
    return None


def error_record(error: BaseException) -> dict[str, Any]:
    summary = _summary(error)
    if summary is not None:
        record: dict[str, Any] = summary["record"]
        return record
    return {"type": type(error).__name__[:60], "message": str(error)[:300], "line": None}


def _task_load(task: dict[str, Any], ask: programs.Ask, write: Write, loaded: Callable[[], Any]) -> None:
    try:
        engine, facts = loaded()
        leaf_data = ask(programs.PLAIN, "leaf_data", engine)
    except BaseException as error:
        summary = _summary(error)
        failure = summary.get("load") if summary is not None else None
        write({"t": wire.LOAD, "ok": False, "error": failure or error_record(error)})
        return
    notices, used = facts["notices"], facts["stand_ins_used"]
    write({"t": wire.LOAD, "ok": True, "notices": notices, "stand_ins_used": used, "leaf_data": leaf_data})


def _task_api(task: dict[str, Any], ask: programs.Ask, write: Write, loaded: Callable[[], Any]) -> None:
    engine = loaded()[0]
    write({"t": wire.LOADED})  # the import is not the probe's: its clock starts here
    cls, make = ask(programs.NODE, "engine_part", engine, 0), ask(programs.NODE, "engine_part", engine, 1)
    inputs = dict(zip(("x", "y", "c", "k"), task.get("inputs", []), strict=False))
    obs = programs.run_api(cls, make, ask=ask, **inputs)
    write({"t": wire.OBS, "program": 0, "phase": wire.FINAL, "obs": obs})


def _task_programs(task: dict[str, Any], ask: programs.Ask, write: Write, loaded: Callable[[], Any]) -> None:
    engine = loaded()[0]
    write({"t": wire.LOADED})
    make = ask(programs.NODE, "engine_part", engine, 1)
    for index, program in enumerate(task["programs"]):

        def emit(phase: str, obs: dict[str, Any], _index: int = index) -> None:
            write({"t": wire.OBS, "program": _index, "phase": phase, "obs": obs})

        obs, failure = programs.observe(make, program, emit, ask)
        if failure is not None:
            stage, error = failure
            record = {"t": wire.ERR, "program": index, "stage": stage[:200], "obs": obs}
            write({**record, "error": error_record(error)})
            continue
        emit(wire.FINAL, obs)


_TASKS: dict[str, Callable[[dict[str, Any], programs.Ask, Write, Callable[[], Any]], None]] = {
    "load": _task_load,
    "api": _task_api,
    "programs": _task_programs,
}
KINDS = frozenset(_TASKS)  # the tasks a reporter runs; every other kind runs on the main thread
