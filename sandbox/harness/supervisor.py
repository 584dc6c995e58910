"""The harness: reads the plan, runs each probe in a child of the fork server, reports records.

Trust layout inside the sandbox: the fork server (``zygote``) is started before the plan is
read, and every process that runs student code is its child, so no such process ever held
the plan, the nonce, another probe's inputs or the order of runs. This process never runs
student code: it only parses the file (to find the graded class), hands each child its one
task, checks everything the child sends against the child's record schema, and re-emits it
as ``@@AG:<nonce> <json>`` lines on stdout, the only channel the host reads.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import time
from typing import Any

from . import wire
from .execution import child, inputs
from .execution.child_records import LoadRecords, ProgramRecords
from .execution.clock import Budget
from .execution.runs import Identity, Runs
from .execution.zygote import Zygote, ZygoteGone
from .mutation.probe import MutationProbe
from .probes import facts, loader
from .shrinking import counterexample

HIDDEN_SHARE = 0.4  # at most this share of the budget is held back for the hidden probes


class Emitter:
    def __init__(self, nonce: str):
        self.prefix = f"{wire.PREFIX}{nonce} "

    def __call__(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, allow_nan=False, separators=(",", ":"))
        sys.stdout.write(self.prefix + line + "\n")
        sys.stdout.flush()


def _decode(raw: bytes) -> str:
    """Source bytes to text, honouring a coding cookie or BOM as Python itself would."""
    return importlib.util.decode_source(raw)


class Supervisor:
    def __init__(self, plan: dict[str, Any], source: str, emit: Emitter, zygote: Zygote, wall_end: float | None = None):
        self.plan = plan
        self.source = source
        self.emit = emit
        self.filename = plan["filename"]
        self.class_name = plan["class_name"]
        limits = plan["limits"]
        self.probe_seconds = float(limits["probe_seconds"])
        self.script_seconds = float(limits["script_seconds"])
        # What importing the file may take before a probe starts (a self-check allows less: a file
        # slower than that is graded with its top-level code skipped, instead of paying it per run).
        self.import_allowance = float(limits.get("import_seconds", self.script_seconds))
        self.shrink_seconds = float(limits.get("shrink_seconds", 0.0))
        self.budget_seconds = float(limits["budget_seconds"])
        self.reserve = 0.0  # charged seconds of the budget that belong to the hidden probes still to run
        student = plan.get("student") or {}
        root = os.geteuid() == 0
        who = Identity(student.get("uid") if root else None, student.get("gid") if root else None)
        # Charged seconds (CPU, or waiting on anything but a core) for the whole grading; real
        # time only as the host's last resort, reached when the machine, not the file, is slow.
        wall = float(limits.get("wall_seconds", 4 * self.budget_seconds))
        # Parts run one after another in one sandbox share its real time (the host's last resort).
        self.budget = Budget(self.budget_seconds, wall if wall_end is None else wall_end - time.monotonic())
        self.runs = Runs(
            zygote,
            who,
            budget=self.budget,
            memory_bytes=int(limits["child_memory_mb"]) * 1024 * 1024,
            output_bytes=int(limits["output_bytes"]),
        )
        self.mode = "full"
        self.engine: facts.EngineFacts = facts.EngineFacts(False)
        self.flooded = False  # importing the file printed past the output limit
        self.stalled = False  # importing the file ran past its time limit
        self.out_of_memory = False  # importing the file raised MemoryError
        self.import_seconds = 0.0  # what loading the file was charged, when it loaded
        self.to_shrink: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []  # program probes, with their records
        self.loaded = False
        self.load_charge = 0.0  # charged seconds of loading the file (every attempt)
        # Step 5's run of the file's own checks, and its charge, per mutation probe: a later part
        # in this sandbox takes it (``_take_load``) instead of running the same checks again.
        self.clean_runs: dict[str, tuple[dict[str, Any], float]] = {}

    def task(self, kind: str, **fields: Any) -> dict[str, Any]:
        """A child's task: the engine as the grader found it, and this kind's own fields only."""
        return {
            "kind": kind,
            "filename": self.filename,
            "source": self.source,
            "mode": self.mode,
            "class_name": self.engine.class_name,
            "class_line": self.engine.line,
            "class_end": self.engine.end_line,
            "fillers": list(self.engine.fillers),
            "stand_ins": list(self.plan.get("stand_ins", [])),
            **fields,
        }

    # --- loading -------------------------------------------------------------------------------------

    def _load_failed(self, failure: str, error: dict[str, Any], notices: list[str], **extra: Any) -> bool:
        record = {"t": wire.LOAD, "ok": False, "mode": "failed", "failure": failure, "error": error}
        self.emit({**record, "notices": notices, **extra})
        return False

    def _flags(self) -> dict[str, Any]:
        return {"output_limit": self.flooded, "timed_out": self.stalled, "memory_error": self.out_of_memory}

    def load(self) -> bool:
        """Find the graded class in the syntax tree, then load the file: as a whole, else with only
        its definitions when top-level code crashes or never ends."""
        try:
            tree = loader.parse(self.source, self.filename)
        except loader.LoadError as refused:
            return self._load_failed(wire.LOAD_SYNTAX, refused.record(), [])
        self.engine = facts.engine_facts(tree, self.class_name)
        if not self.engine.found:
            problem = {"type": "LoadError", "message": self.engine.problem[:300], "line": None}
            return self._load_failed(wire.LOAD_NO_ENGINE, problem, [])
        notices: list[str] = []
        if self.engine.class_name != self.class_name:
            notices.append(f"No class named {self.class_name}; graded your class {self.engine.class_name} instead.")
        for mode in ("full", "definitions"):
            self.mode = mode
            records, summary = self.runs.run(
                self.task("load"), LoadRecords(), timeout=self.import_allowance, progress_resets=False
            )
            status = summary.get("status")
            self.flooded = self.flooded or status == wire.OUTPUT_LIMIT
            self.stalled = self.stalled or status == wire.TIMEOUT
            load = records[0] if records else None
            error = (load or {}).get("error") or {}
            self.out_of_memory = self.out_of_memory or error.get("type") == "MemoryError"
            if load and load.get("ok"):
                self.import_seconds = float(summary.get("elapsed", 0.0))
                self.emit(
                    {
                        "t": wire.LOAD,
                        "ok": True,
                        "mode": mode,
                        "class_name": self.engine.class_name,
                        "extra_args": list(self.engine.extra_args),
                        "stand_ins_used": load.get("stand_ins_used", [])[:10],
                        "notices": notices + list(load.get("notices", []))[:10],
                        "output": summary.get("output", ""),
                        "import_seconds": round(self.import_seconds, 3),  # charged: every run pays it again
                        **self._flags(),
                    }
                )
                if mode == "full":
                    # A child has compiled this text: the fork server may, once for all the rest
                    # (best effort: should it fail, each child compiles as before).
                    with contextlib.suppress(ZygoteGone):
                        self.runs.zygote.precompile(self.source, self.filename)
                return True
            if load is None:
                notices.append(f"Importing the file {_stopped_words(summary, self.import_allowance)}.")
            elif error.get("type") in ("LoadError", "SyntaxError", "IndentationError", "TabError"):
                output = summary.get("output", "")
                return self._load_failed(wire.LOAD_IMPORT, error, notices, output=output, **self._flags())
            else:
                where = f" at line {error['line']}" if error.get("line") else ""
                notices.append(f"Importing the file raised {error.get('type')}{where}: {error.get('message', '')}")
            if status == wire.NOT_RUN:
                break
        message = "the engine could not be loaded even with top-level code skipped"
        return self._load_failed(wire.LOAD_IMPORT, {"type": "LoadError", "message": message, "line": None}, notices)

    # --- probes --------------------------------------------------------------------------------------

    def run_probe(self, probe: dict[str, Any]) -> dict[str, Any]:
        """An api or program probe in one child; its records are re-emitted, then its end."""
        probe_id, kind = probe["id"], probe["kind"]
        if kind == wire.API:
            task, schema, resets = self.task("api", inputs=probe.get("inputs", [])), ProgramRecords(1), False
        else:
            items = probe["programs"]
            task, schema, resets = self.task("programs", programs=items), ProgramRecords(len(items)), True
        records, summary = self.runs.run(
            task, schema, timeout=self.probe_seconds, progress_resets=resets, import_seconds=self.import_allowance
        )
        for record in records:
            self.emit({**record, "probe": probe_id})
        if kind == wire.PROGRAM and summary.get("status") == wire.OK and probe.get("shrink"):
            self.to_shrink.append((probe, records))  # after every probe: never at their expense
        ended = {k: v for k, v in summary.items() if k != "output_tail"}
        self.emit({"t": wire.PROBE_END, "probe": probe_id, **ended})
        return summary

    def _not_run(self, probe_id: str, reason: str) -> None:
        self.emit({"t": wire.PROBE_END, "probe": probe_id, "status": wire.NOT_RUN, "reason": reason})

    def run(self, after: Supervisor | None = None) -> None:
        """Load the file and run this part's probes; ``after``: the part run before it in this
        sandbox, whose load (and run of the file's own checks) this part takes as its own."""
        if after is not None:
            loaded = self._take_load(after)
        else:
            spent = self.budget.used()
            try:
                loaded = self.load()
            except ZygoteGone:
                raise
            except Exception as error:  # the grader's own parsing ran out of stack or memory
                loaded = self._load_failed(wire.LOAD_TOO_DEEP, _too_deep(error), [])
            self.loaded, self.load_charge = loaded, self.budget.used() - spent
        stalled = 0  # program probes in a row that hit their time limit
        hidden = [p for p in self.plan["probes"] if p.get("hidden")]
        # Bug injection may not eat the time the hidden probes need (they run after it): each
        # may take its limit after an import as long as the load's.
        each = self.probe_seconds + self.import_seconds
        self.reserve = min(each * len(hidden), HIDDEN_SHARE * self.budget_seconds)
        for probe in self.plan["probes"]:
            if probe.get("hidden") and probe is hidden[0]:
                # The shown probes' counterexamples too come before any hidden input.
                self._shrink()
                self.reserve = 0.0
                stalled = 0  # the hidden twins vouch for the shown checks: they get their own try
            try:
                stalled = self._run_one(probe, loaded, stalled)
            except ZygoteGone:
                raise  # the fork server died: the grader's failure, never the student's
            except Exception:
                # Any in-harness stage (facts, mutants, copies, splicing) that fails on a file
                # Python runs is that file's outcome, with a reason; never a grader failure.
                self._not_run(probe["id"], wire.REASON_TOO_DEEP)
        self._shrink()

    def _take_load(self, first: Supervisor) -> bool:
        """The same file in the same fork server loads the same way: a later part in one sandbox
        takes the first part's load, and is charged what it cost, as a part in a sandbox of its
        own would be charged its own load (so what fits in its budget is the same either way).
        The file's import is paid once per sandbox, not once per part."""
        self.mode, self.engine, self.import_seconds = first.mode, first.engine, first.import_seconds
        self.flooded, self.stalled, self.out_of_memory = first.flooded, first.stalled, first.out_of_memory
        self.loaded, self.load_charge = first.loaded, first.load_charge
        self.clean_runs = first.clean_runs
        self.budget.charge(first.load_charge)
        return first.loaded

    def _shrink(self) -> None:
        pending, self.to_shrink = self.to_shrink, []
        try:
            counterexample.find_all(self, pending)
        except ZygoteGone:
            raise
        except Exception:
            pass  # a counterexample is an illustration: without one, every point stands

    def _run_one(self, probe: dict[str, Any], loaded: bool, stalled: int) -> int:
        probe_id, kind = probe["id"], probe["kind"]
        if not loaded:
            self._not_run(probe_id, wire.REASON_LOAD_FAILED)
        elif kind == wire.PROGRAM and stalled >= wire.STALLED_PROBES:
            # An engine that hangs everywhere would spend the whole budget one probe at a
            # time; what the first probes showed is what the rest would show.
            self._not_run(probe_id, wire.REASON_REPEATED_TIMEOUTS)
        elif kind == wire.MUTATION:
            MutationProbe(self, probe).run()
        elif kind in (wire.API, wire.PROGRAM):
            summary = self.run_probe(probe)
            if kind == wire.PROGRAM:
                stalled = stalled + 1 if summary.get("status") in (wire.TIMEOUT, wire.DEADLINE) else 0
        else:
            self._not_run(probe_id, wire.REASON_UNKNOWN_KIND)
        return stalled


def _too_deep(error: Exception) -> dict[str, object]:
    return loader.LoadError(f"the grader could not read the file's structure ({type(error).__name__})").record()


def _stopped_words(summary: dict[str, Any], seconds: float) -> str:
    status = summary.get("status", "")
    return {
        wire.TIMEOUT: f"did not finish within {seconds:g} s (slow or endless top-level code: keep demos and "
        'training under `if __name__ == "__main__":`)',
        wire.DEADLINE: "ran out of time",
        wire.OUTPUT_LIMIT: "printed too much output",
        wire.BAD_RECORD: "sent the grader a malformed record",
        wire.FORGED: "wrote records the grader did not write, or ended the process itself",
        wire.OK: "ended the process with exit status 0 (sys.exit or os._exit at top level)",
        wire.EXITED: f"ended the process with exit status {summary.get('exit_code')}",
        wire.KILLED: f"was killed by {summary.get('signal')}",
    }.get(status, f"stopped ({status})")


def _preload() -> None:
    """Imports every child would pay for, paid once in the fork server (never the student's file).
    ctypes is the cleanup child's (System V objects); numpy waits until a file asks for it
    (``Zygote.preload``): it doubles what every fork costs."""
    import ast  # noqa: F401
    import ctypes  # noqa: F401
    import inspect  # noqa: F401
    import math  # noqa: F401
    import random  # noqa: F401
    import traceback  # noqa: F401

    from .execution import sealed

    sealed.prepare()  # the harness code each child copies for itself, compiled once here


# What the runners set (grader.image.SANDBOX_ENV) and what depends on it: string hashes, so set
# and dict order, and an allocator whose footprint does not move with the address layout, so a
# memory limit falls at the same point of the same program on every run (one arena: a thread
# must not reserve 64 MiB more of the limit).
EXPECTED_ENV = {"PYTHONHASHSEED": "0", "PYTHONMALLOC": "malloc", "MALLOC_ARENA_MAX": "1"}


def interpreter_problem() -> str:
    """Why this interpreter would not run a file the same way twice ("" when it would)."""
    if sys.flags.ignore_environment:
        return "started with -E or -I: PYTHONHASHSEED and PYTHONMALLOC would be ignored"
    for name, value in EXPECTED_ENV.items():
        if os.environ.get(name) != value:
            return f"{name} is not {value!r}"
    # The interpreter's own settings are PYTHON and capitals (PYTHONPATH, PYTHONSTARTUP, ...);
    # a base image's PYTHON_VERSION or PYTHON_SHA256 is a note, read by nothing.
    others = sorted(k for k in os.environ if _interpreter_setting(k) and k not in EXPECTED_ENV)
    if others:
        return f"unexpected interpreter settings in the environment: {', '.join(others)[:200]}"
    return ""


def _interpreter_setting(name: str) -> bool:
    rest = name.removeprefix("PYTHON")
    return rest != name and rest.isalpha() and rest.isupper()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="run_harness")
    parser.add_argument("--workdir", required=True)
    parser.add_argument(
        "--inputs-on-stdin",
        action="store_true",
        help="a warm sandbox: wait for the plan and the submission on standard input (execution/inputs.py)",
    )
    args = parser.parse_args(argv)
    wrong = interpreter_problem()
    if wrong:
        print(f"harness: {wrong}", file=sys.stderr)
        return 3  # started by something other than the grader's runners: never the student's fault
    # The fork server first: nothing of the plan may be in its memory, nor in any child's.
    zygote = Zygote.start(child.main, _preload, loader.precompile)
    # The harness's own syntax-tree work (facts, mutants, copies) recurses once per level of a
    # nested expression: a 600-term sum is valid Python. Raised after the fork server starts, so
    # student code keeps the interpreter's usual limit.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
    try:
        if args.inputs_on_stdin:
            try:
                inputs.receive(sys.stdin.buffer, args.workdir)
            except inputs.BadInputs as error:
                print(f"harness: {error}", file=sys.stderr)
                return 3  # the host sent something else: its failure, never the student's
            sys.stderr.buffer.write(inputs.ACK + b"\n")
            sys.stderr.flush()
        return _supervise(args.workdir, zygote)
    finally:
        zygote.close()


def _supervise(workdir: str, zygote: Zygote) -> int:
    with open(os.path.join(workdir, "plan.json"), "rb") as handle:
        plan = json.loads(handle.read())
    emit = Emitter(str(plan["nonce"]))
    # The parts this sandbox runs, one after another (a plan without any is one part).
    parts = plan.get("parts") or [{"budget_seconds": plan["limits"]["budget_seconds"], "probes": plan["probes"]}]
    path = os.path.join(workdir, "submission", plan["filename"])
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
        source = _decode(raw)
        if "\x00" in source:
            raise ValueError("the file contains NUL bytes")
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError) as error:
        failure = {"type": "UnreadableFile", "message": str(error)[:300], "line": None}
        record = {"t": wire.LOAD, "ok": False, "mode": "failed", "notices": [], "error": failure}
        # Bytes that are no Python text are the file's doing; a read that failed is not.
        for part in parts:
            emit(record if isinstance(error, OSError) else {**record, "failure": wire.LOAD_UNREADABLE})
            for probe in part["probes"]:
                ended = {"t": wire.PROBE_END, "probe": probe["id"], "status": wire.NOT_RUN}
                emit({**ended, "reason": wire.REASON_LOAD_FAILED})
            emit({"t": wire.END})
        return 0
    if "numpy" in source:  # the file may import it: every child would pay for the import
        with contextlib.suppress(ZygoteGone):
            zygote.preload("numpy")  # best effort: without it, each child imports it itself
    limits = plan["limits"]
    wall_end = time.monotonic() + float(limits.get("wall_seconds", 4 * float(limits["budget_seconds"])))
    first: Supervisor | None = None
    for part in parts:
        # Each part as a sandbox of its own would run it: its probes, its budget, charged for its
        # load. The fork server holds no plan, so one serves them all; every run is reaped.
        own = {**plan, "probes": part["probes"], "limits": {**limits, "budget_seconds": part["budget_seconds"]}}
        supervisor = Supervisor(own, source, emit, zygote, wall_end)
        try:
            supervisor.run(after=first)
        finally:
            supervisor.runs.close()
        emit({"t": wire.END})  # the end of a part: the host counts them
        first = first or supervisor
    return 0
