"""A probe child's record writer is on a thread student code never runs on, and no frame,
namespace or collected object student code can reach leads to it (execution/reporter.py).

Each test runs a probe child of the real fork server (locally, as this user) on a broken engine
(``backward()`` seeds the root only) whose file tries something at import, and reads what the
child reported: always the broken engine's own numbers, and what the file saw, printed."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest

from sandbox.harness import wire
from sandbox.harness.execution import child, child_records, runs, sealed
from sandbox.harness.execution.clock import Budget
from sandbox.harness.execution.zygote import Zygote
from sandbox.harness.probes import loader

ROOT = Path(__file__).resolve().parents[2]
BROKEN = (ROOT / "tests" / "adversarial" / "_twins" / "broken_root_only_assert_true.py").read_text(encoding="utf-8")
PROGRAM = {
    "leaves": {"a": 1.5, "b": -2.0},
    "steps": [["c", "mul", "a", "b"], ["d", "add", "c", "a"], ["_", "backward", "d"]],
    "record": ["graph", "schedule"],
}
HONEST_GRADS = {"a.grad": 0.0, "b.grad": 0.0, "c.grad": 0.0, "d.grad": 1.0}  # what the broken engine gives


def _task(source: str) -> dict[str, Any]:
    engine = [n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "Value"][-1]
    return {
        "kind": "programs",
        "filename": "autograd_lab.py",
        "source": source,
        "mode": "full",
        "class_name": "Value",
        "class_line": engine.lineno,
        "class_end": engine.end_lineno,
        "fillers": [],
        "stand_ins": [],
        "programs": [PROGRAM, PROGRAM],
    }


def _probe(attack: str, after: str = "") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One programs child on the broken engine with ``attack`` at its import (and ``after`` appended
    to its backward); its records and summary."""
    source = BROKEN.replace("        self.grad = 1.0\n", "        self.grad = 1.0\n" + after, 1) + "\n" + attack
    zygote = Zygote.start(child.main, None, loader.precompile)
    try:
        budget = Budget(3600.0, wall_seconds=3600.0)
        run = runs.Runs(zygote, runs.Identity(None, None), budget=budget, memory_bytes=1 << 31, output_bytes=1 << 20)
        records, summary = run.run(_task(source), child_records.ProgramRecords(2), timeout=20.0, progress_resets=True)
        run.close()
    finally:
        zygote.close()
    return records, summary


def _grads(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r["obs"].items() if k.endswith(".grad")} for r in records if r.get("phase") == wire.FINAL]


def _printed(summary: dict[str, Any], tag: str) -> Any:
    found = re.findall(rf"^{tag} (.*)$", summary["output"], re.M)
    assert found, summary["output"][-2000:]
    return json.loads(found[-1])


# What an attack reports of everything it could reach from a frame: the names in each frame, and
# whether any value there is a record writer, a task, a key or a queue. ``_say`` writes straight
# to the output (the fork server was forked from pytest, whose sys.stdout captures).
SAY = """
def _say(**seen):
    import json, os
    os.write(1, b"SEEN " + json.dumps(seen).encode() + b"\\n")
"""
WALK = (
    SAY
    + """
import json, sys

def _describe(frame):
    seen, hits = [], []
    while frame is not None:
        seen.append(frame.f_code.co_name)
        for name, value in list(frame.f_locals.items()) + list(frame.f_globals.items()):
            kind = type(value).__name__
            if callable(value) and getattr(value, "__name__", "") in ("write", "ask", "report", "_inside"):
                hits.append(name)
            elif isinstance(value, dict) and "programs" in value and "kind" in value:
                hits.append(name)
            elif isinstance(value, bytes) and len(value) == 32:
                hits.append(name)
            elif kind in ("SimpleQueue", "map"):
                hits.append(name)
        frame = frame.f_back
    return seen, hits
"""
)


def test_a_signal_handler_gets_only_the_main_thread_s_frames() -> None:
    attack = (
        WALK
        + """
import os, signal
_found = []

def _handler(signum, frame):
    _found.append(_describe(frame))

signal.signal(signal.SIGUSR1, _handler)
signal.signal(signal.SIGPROF, _handler)
os.kill(os.getpid(), signal.SIGUSR1)  # at import
signal.setitimer(signal.ITIMER_PROF, 0.0005, 0.0005)  # and while the probe runs
"""
    )
    after = """        import signal as _s, sys as _sys
        _s.setitimer(_s.ITIMER_PROF, 0)
        _m = _sys.modules["autograd_lab"]
        _m._say(
            frames=sorted({n for f, _ in _m._found for n in f}),
            hits=sorted({h for _, hs in _m._found for h in hs}),
            count=len(_m._found),
        )
"""
    records, summary = _probe(attack, after)
    assert summary["status"] == wire.OK, summary
    assert _grads(records) == [HONEST_GRADS, HONEST_GRADS], records
    seen = _printed(summary, "SEEN")
    assert seen["count"] >= 1 and seen["hits"] == [], seen
    assert "_server" in seen["frames"] and "report" not in seen["frames"], seen  # the main thread's only


def test_the_collector_keeps_nothing_of_the_reporter() -> None:
    # DEBUG_SAVEALL keeps what the collector frees; finished frames among it lead up f_back. At
    # import the collector runs as usual (on the main thread's objects); once the reporter has its
    # answer no collection runs at all, so nothing it could touch is ever collected.
    attack = (
        WALK
        + """
import gc, types

def _finished_frame():
    try:
        raise ValueError
    except ValueError as error:
        trace = error.__traceback__
    loop = [trace]
    loop.append(loop)

gc.set_debug(gc.DEBUG_SAVEALL)
_finished_frame()
gc.collect()
_found = [_describe(o) for o in list(gc.garbage) if isinstance(o, types.FrameType)]
"""
    )
    after = """        import gc as _gc, sys as _sys
        _m = _sys.modules["autograd_lab"]
        _kept = len(_gc.garbage)
        _m._finished_frame()
        _collected = _gc.collect()
        _m._say(
            at_import=len(_m._found),
            hits=sorted({h for _, hs in _m._found for h in hs}),
            later=[_collected, len(_gc.garbage) - _kept],
        )
"""
    records, summary = _probe(attack, after)
    assert summary["status"] == wire.OK, summary
    assert _grads(records) == [HONEST_GRADS, HONEST_GRADS], records
    seen = _printed(summary, "SEEN")
    assert seen["at_import"] >= 1 and seen["hits"] == [], seen
    assert seen["later"] == [0, 0], seen  # no collection runs any more


def test_no_student_code_runs_on_the_reporter_thread() -> None:
    # Everything that runs code on whatever thread happens to allocate or free: a collector
    # callback put first, finalizers of cyclic garbage, weak reference callbacks, the smallest
    # threshold, and a thread that keeps putting them back while the probe runs.
    attack = (
        SAY
        + """
import gc, sys, threading, weakref
_threads = set()
_main = threading.get_ident()

def _note(*args):
    _threads.add(threading.get_ident())

class _Finalized:
    def __del__(self):
        _note()

def _litter():
    for _ in range(200):
        a = _Finalized()
        a.loop = a
        weakref.ref(a, _note)

gc.callbacks.insert(0, _note)
gc.set_debug(gc.DEBUG_SAVEALL)
gc.set_threshold(1, 1, 1)
_litter()

def _keep_at_it():
    import time
    for _ in range(2000):
        if _note not in gc.callbacks:
            gc.callbacks.insert(0, _note)
        gc.enable()
        gc.set_threshold(1, 1, 1)
        _litter()
        time.sleep(0.0005)

_spinner = threading.Thread(target=_keep_at_it, daemon=True)
_spinner.start()
sys.setswitchinterval(1e-6)
"""
    )
    after = """        import sys as _sys
        _m = _sys.modules["autograd_lab"]
        _m._litter()
        others = sorted(_m._threads - {_m._main, _m._spinner.ident})
        _m._say(others=others, ran=len(_m._threads))
"""
    records, summary = _probe(attack, after)
    assert summary["status"] == wire.OK, summary
    assert _grads(records) == [HONEST_GRADS, HONEST_GRADS], records
    seen = _printed(summary, "SEEN")
    assert seen["ran"] >= 1 and seen["others"] == [], seen


def test_an_answer_student_code_rewrote_runs_nothing_on_the_reporter() -> None:
    # The server's namespace is the main thread's: student code can rebind what it builds answers
    # with. The reporter reads exact str and its own JSON only; an answer of another shape is a
    # failure of that probe, never a call into student code there.
    attack = """
import os, signal, threading, types
_main = threading.get_ident()

class _Status(str):
    def __eq__(self, other):
        if threading.get_ident() != _main:
            os._exit(99)  # it ran on the reporter's thread
        return str.__eq__(self, other)
    __hash__ = str.__hash__

def _rebind(signum, frame):
    while frame is not None:
        if "_server" in frame.f_globals:
            frame.f_globals["reporter"] = types.SimpleNamespace(
                ANSWERED=_Status("answered"), FAILED=_Status("failed"), KINDS=frozenset(), STACK_BYTES=0
            )
            return
        frame = frame.f_back

signal.signal(signal.SIGUSR1, _rebind)
os.kill(os.getpid(), signal.SIGUSR1)
"""
    zygote = Zygote.start(child.main, None, loader.precompile)
    try:
        budget = Budget(3600.0, wall_seconds=3600.0)
        run = runs.Runs(zygote, runs.Identity(None, None), budget=budget, memory_bytes=1 << 31, output_bytes=1 << 20)
        task = _task(BROKEN + "\n" + attack)
        records, summary = run.run(task, child_records.ProgramRecords(2), timeout=20.0, progress_resets=True)
        run.close()
    finally:
        zygote.close()
    assert summary["status"] == wire.BAD_RECORD, summary  # the reporter said so: an error outside every program
    assert "TypeError" in summary.get("reason", ""), summary
    assert records == []


def test_the_reporter_s_own_copies_lead_nowhere() -> None:
    # object.__subclasses__() reaches every class: a method of one of the reporter's copies must
    # not hand out a namespace that holds one of their functions (and so the module).
    own = sealed.build(("execution.reporter",), detached=True)
    assert set(own) == {"wire", "probes.programs", "execution.reporter"}
    for module in own.values():
        for cls in [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__]:
            for member in vars(cls).values():
                for function in (getattr(member, "fget", None), getattr(member, "__func__", None), member):
                    namespace = getattr(function, "__globals__", None)
                    if namespace is not None:
                        assert set(namespace) == {"__builtins__"}, (cls, function)
    # The main thread's copies are another set: what student code rebinds there is not the reporter's.
    main = sealed.build()
    assert main["probes.programs"] is not own["probes.programs"]
    assert main["execution.reporter"].report is not own["execution.reporter"].report


def test_a_probe_child_stays_on_one_core() -> None:
    # Its two threads take turns; a hand-off between cores wakes an idle core (twice as slow).
    records, summary = _probe(SAY + "import os\n_say(cores=sorted(os.sched_getaffinity(0)))\n")
    assert summary["status"] == wire.OK, summary
    assert len(_printed(summary, "SEEN")["cores"]) == 1


@pytest.mark.parametrize("kind", ["load", "api"])
def test_the_other_probe_kinds_report_as_before(kind: str) -> None:
    source = (ROOT / "reference" / "autograd_lab.py").read_text(encoding="utf-8")
    task = {**_task(source), "kind": kind}
    schema = child_records.LoadRecords() if kind == "load" else child_records.ProgramRecords(1)
    zygote = Zygote.start(child.main, None, loader.precompile)
    try:
        budget = Budget(3600.0, wall_seconds=3600.0)
        run = runs.Runs(zygote, runs.Identity(None, None), budget=budget, memory_bytes=1 << 31, output_bytes=1 << 20)
        records, summary = run.run(task, schema, timeout=20.0, progress_resets=True)
        run.close()
    finally:
        zygote.close()
    assert summary["status"] == wire.OK, summary
    if kind == "load":
        assert records == [{"t": "load", "ok": True, "notices": [], "stand_ins_used": [], "leaf_data": 1.5}]
    else:
        obs = records[0]["obs"]
        assert obs["construct"] == "ok" and obs["op.tanh.status"] == "ok" and obs["method.backward"] is True
