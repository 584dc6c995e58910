"""The harness parent: reads the plan, runs each probe in a fresh child, reports records.

Trust layout inside the sandbox: this process never imports student code. Each probe runs in
a forked child that first drops to the student uid (when started as root), so student code
can neither signal this process nor write to its output stream. Children report through a
private pipe; this process validates what they send, caps it, and re-emits it as
``@@AG:<nonce> <json>`` lines on stdout, the only channel the host reads.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import selectors
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

from . import loader, mutate, programs, scripts, wire

Write = Callable[[dict[str, Any]], None]
Task = Callable[[Write], None]

RECORD_BYTES = 256 * 1024  # one child record; larger ones are dropped
CHILD_RECORDS_BYTES = 1024 * 1024  # everything one child may send (the oracle baseline is ~200 KiB)
FLOOD_BYTES = 4 * 1024 * 1024  # student output beyond this stops the probe
TAIL_BYTES = 4096  # the end of a child's output is kept too: a traceback is printed last
LINGER_SECONDS = 0.25  # after a child exits, how long a process it left may hold its pipes


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


def _exception_record(error: BaseException, filename: str) -> dict[str, Any]:
    line = None
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    return {"type": type(error).__name__[:60], "message": str(error)[:300], "line": line}


class Supervisor:
    def __init__(self, plan: dict[str, Any], source: str, emit: Emitter):
        self.plan = plan
        self.source = source
        self.emit = emit
        self.filename = plan["filename"]
        self.class_name = plan["class_name"]
        limits = plan["limits"]
        self.probe_seconds = float(limits["probe_seconds"])
        self.script_seconds = float(limits["script_seconds"])
        self.deadline = time.monotonic() + float(limits["budget_seconds"])
        self.output_bytes = int(limits["output_bytes"])
        self.memory_bytes = int(limits["child_memory_mb"]) * 1024 * 1024
        student = plan.get("student") or {}
        self.uid: int | None = student.get("uid") if os.geteuid() == 0 else None
        self.gid: int | None = student.get("gid") if os.geteuid() == 0 else None
        self.reap = bool(student.get("reap")) and self.uid is not None
        self.mode = "full"
        self.flooded = False  # importing the file printed past the output limit
        self.stalled = False  # importing the file ran past its time limit
        self.out_of_memory = False  # importing the file raised MemoryError
        # One scratch folder per run, world-writable and sticky like /tmp; each probe gets a
        # fresh folder inside it, and the whole tree goes when the run ends.
        self.scratch = tempfile.mkdtemp(prefix="ag-run-")
        os.chmod(self.scratch, 0o1777)

    # --- child management ------------------------------------------------------------------

    def _child(self, task: Task, wfd: int, outfd: int, cpu_seconds: int, drop: bool) -> None:
        """Runs in the forked child; never returns."""
        try:
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(outfd, 1)
            os.dup2(outfd, 2)
            os.closerange(3, wfd)
            os.closerange(wfd + 1, 1024)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
            resource.setrlimit(resource.RLIMIT_AS, (self.memory_bytes, self.memory_bytes))
            if drop and self.uid is not None and self.gid is not None:
                os.setgroups([])
                os.setgid(self.gid)
                os.setuid(self.uid)
            workdir = tempfile.mkdtemp(prefix="probe-", dir=self.scratch)
            if not drop:
                os.chmod(workdir, 0o755)  # the task drops privileges itself, then reads from here
            os.chdir(workdir)
            os.environ["HOME"] = workdir
            sys.path.append(workdir)
        except BaseException:
            os._exit(71)
        channel = os.fdopen(wfd, "w", buffering=1, encoding="utf-8")

        def write(record: dict[str, Any]) -> None:
            channel.write(json.dumps(record, allow_nan=False) + "\n")
            channel.flush()

        status = 0
        try:
            task(write)
        except BaseException as error:  # SystemExit and KeyboardInterrupt included
            try:
                write({"t": wire.ERR, "stage": "running the probe", "error": _exception_record(error, self.filename)})
            except BaseException:
                status = 72
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(status)

    def run_child(
        self, task: Task, *, timeout: float, progress_resets: bool, drop: bool = True
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Fork a child for ``task``; returns its records and an end summary."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return [], {"status": wire.NOT_RUN, "reason": wire.REASON_DEADLINE}
        rfd, wfd = os.pipe()
        ofd, owfd = os.pipe()
        sys.stdout.flush()
        started = time.monotonic()
        try:
            pid = os.fork()
        except OSError as error:
            # The student's processes used up the container's process limit: theirs to answer for.
            for fd in (rfd, wfd, ofd, owfd):
                os.close(fd)
            if self.reap:
                self._reap_student_processes()
            return [], {"status": wire.NOT_RUN, "reason": wire.REASON_NO_PROCESS, "error": str(error)[:200]}
        if pid == 0:
            os.close(rfd)
            os.close(ofd)
            self._child(task, wfd, owfd, cpu_seconds=int(max(timeout, 1)) + 1, drop=drop)
        os.close(wfd)
        os.close(owfd)
        records, summary = self._collect(pid, rfd, ofd, timeout, progress_resets, started)
        summary["elapsed"] = round(time.monotonic() - started, 3)
        if self.reap and self._reap_student_processes():
            summary["lingering"] = True  # something the child started outlived it
        return records, summary

    def _collect(
        self, pid: int, rfd: int, ofd: int, timeout: float, progress_resets: bool, started: float
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        selector = selectors.DefaultSelector()
        selector.register(rfd, selectors.EVENT_READ, "records")
        selector.register(ofd, selectors.EVENT_READ, "output")
        pending = b""
        records: list[dict[str, Any]] = []
        received = 0
        output = bytearray()
        tail = b""
        output_total = 0
        killed_for = ""
        last_progress = started
        open_streams = 2
        wait_status: int | None = None
        exited_at = 0.0
        while open_streams:
            now = time.monotonic()
            if wait_status is None:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    wait_status, exited_at = status, now
            elif now - exited_at > LINGER_SECONDS:
                # The child is gone but something it started still holds the pipes open.
                killed_for = killed_for or "lingering"
                break
            limit = min(last_progress + timeout if progress_resets else started + timeout, self.deadline)
            if now >= limit:
                killed_for = wire.DEADLINE if limit == self.deadline and now >= self.deadline else wire.TIMEOUT
                break
            for key, _ in selector.select(timeout=min(0.5, limit - now)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fd)
                    open_streams -= 1
                    continue
                if key.data == "output":
                    output_total += len(chunk)
                    if len(output) < self.output_bytes:
                        output.extend(chunk[: self.output_bytes - len(output)])
                    tail = (tail + chunk)[-TAIL_BYTES:]  # where a traceback ends up
                    continue
                received += len(chunk)
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    record = self._parse_child_line(line)
                    if record is not None:
                        records.append(record)
                        last_progress = time.monotonic()
            if output_total > FLOOD_BYTES:
                killed_for = wire.OUTPUT_LIMIT
                break
            if received > CHILD_RECORDS_BYTES:
                killed_for = wire.RECORD_LIMIT
                break
        if killed_for and wait_status is None:
            self._kill(pid)
        if wait_status is None:
            _, wait_status = os.waitpid(pid, 0)
        selector.close()
        os.close(rfd)
        os.close(ofd)
        summary: dict[str, Any] = {
            "output": output.decode("utf-8", "replace"),
            "output_truncated": output_total > len(output),
            "output_bytes": output_total,
            "output_tail": tail.decode("utf-8", "replace"),
        }
        if killed_for == "lingering":
            summary["lingering"] = True  # reported; the run itself ended normally (below)
        if killed_for and killed_for != "lingering":
            summary["status"] = killed_for
        elif os.WIFSIGNALED(wait_status):
            signum = os.WTERMSIG(wait_status)
            summary["status"] = wire.KILLED
            summary["signal"] = (
                signal.Signals(signum).name if signum in signal.Signals._value2member_map_ else str(signum)
            )
        else:
            code = os.WEXITSTATUS(wait_status)
            summary["status"] = wire.OK if code == 0 else wire.EXITED
            summary["exit_code"] = code
        return records, summary

    @staticmethod
    def _parse_child_line(line: bytes) -> dict[str, Any] | None:
        if not line or len(line) > RECORD_BYTES:
            return None
        try:
            record = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            return None
        return record if isinstance(record, dict) else None

    @staticmethod
    def _kill(pid: int) -> None:
        for kill in (os.killpg, os.kill):  # the group first; the child alone if it left it
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _reap_student_processes(self) -> int:
        """Kill anything left running under the student uid (detached processes, daemons, the
        remains of a fork bomb); returns how many were found. Without forking: after a fork
        bomb no fork is possible."""
        found = 0
        for _ in range(50):
            victims = _processes_of(self.uid) if self.uid is not None else []
            if not victims:
                break
            found += len(victims)
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)
        return found

    # --- tasks (run inside children) ----------------------------------------------------------

    def _engine(self) -> tuple[type, Callable[[float], Any], dict[str, Any]]:
        finder = loader.install_stand_ins(self.plan.get("stand_ins", []))
        module, notices = loader.load_module(self.source, self.filename, self.mode)
        cls, found_notices = loader.find_engine(module, self.class_name)
        make, extra = loader.constructor(cls)
        info = {
            "class_name": cls.__name__[:60],
            "extra_args": extra,
            "notices": notices + found_notices,
            "stand_ins_used": finder.used,
        }
        return cls, make, info

    def _task_load(self, write: Write) -> None:
        try:
            cls, make, info = self._engine()
            leaf = make(1.5)
            info["leaf_data"] = programs.read_float(getattr(leaf, "data", None))
        except loader.LoadError as error:
            write(
                {
                    "t": wire.LOAD,
                    "ok": False,
                    "error": {"type": "LoadError", "message": str(error)[:300], "line": error.line},
                }
            )
            return
        except BaseException as error:
            write({"t": wire.LOAD, "ok": False, "error": _exception_record(error, self.filename)})
            return
        write({"t": wire.LOAD, "ok": True, **info})

    def _task_api(self, probe_id: str) -> Task:
        def task(write: Write) -> None:
            cls, make, _ = self._engine()
            obs = programs.run_api(cls, make)
            write({"t": wire.OBS, "probe": probe_id, "program": 0, "phase": wire.FINAL, "obs": obs})

        return task

    def _task_programs(self, probe_id: str, items: list[dict[str, Any]]) -> Task:
        def task(write: Write) -> None:
            _, make, _ = self._engine()
            for index, program in enumerate(items):

                def emit(phase: str, obs: dict[str, Any], _index: int = index) -> None:
                    write({"t": wire.OBS, "probe": probe_id, "program": _index, "phase": phase, "obs": obs})

                try:
                    obs = programs.run_program(make, program, emit)
                except programs.ProgramError as failure:
                    write(
                        {
                            "t": wire.ERR,
                            "probe": probe_id,
                            "program": index,
                            "stage": failure.stage[:200],
                            "error": _exception_record(failure.error, self.filename),
                            "obs": failure.observations,
                        }
                    )
                    continue
                emit(wire.FINAL, obs)

        return task

    def _task_script(self, probe_id: str, edit: str | None) -> Task:
        """Become ``python autograd_lab.py`` (with ``edit`` injected) in a fresh interpreter; only
        whether the edit applies, and where, is reported from here, before the exec."""

        def task(write: Write) -> None:
            try:
                text, lines = scripts.prepare(self.source, self.filename, self.class_name_found, edit)
            except mutate.NotApplicable as reason:
                write({"t": wire.SCRIPT, "probe": probe_id, "outcome": wire.NOT_APPLICABLE, "reason": str(reason)})
                return
            write({"t": wire.SCRIPT_START, "probe": probe_id, "lines": lines})
            scripts.exec_script(
                text, self.filename, self.plan.get("stand_ins", []), uid=self.uid, gid=self.gid, scratch=self.scratch
            )

        return task

    def _task_oracle(
        self, mutant: str | None, oracle: list[tuple[str, dict[str, Any]]], baseline: dict[str, Any] | None
    ) -> Task:
        """Run the grader's programs on the engine (mutated or not), loaded definitions-only so
        the student's top-level checks cannot stop a mutant from loading.

        Without a baseline every observation is sent back; with one (a mutant) the child stops
        at the first program whose observations differ and names it, which for most mutants
        is one of the first programs: the fork already holds the baseline, so nothing more
        needs to cross the pipe."""

        def task(write: Write) -> None:
            loader.install_stand_ins(self.plan.get("stand_ins", []))
            tree = loader.parse(self.source, self.filename)
            if mutant is not None:
                tree, _ = mutate.mutate(tree, mutant, self.class_name_found, in_place=True)
            module, _ = loader.load_module(self.source, self.filename, "definitions", tree=tree)
            cls, _ = loader.find_engine(module, self.class_name_found)
            make, _ = loader.constructor(cls)
            for key, program in oracle:
                try:
                    obs = programs.run_program(make, program, _ignore)
                except programs.ProgramError as failure:
                    obs = {"__error__": type(failure.error).__name__[:60]}
                if baseline is None:
                    write({"t": wire.ORACLE, "k": key, "obs": obs})
                elif not _same(baseline.get(key), obs):
                    write({"t": wire.ORACLE, "differs": key})
                    return
            if baseline is not None:
                write({"t": wire.ORACLE, "differs": None})

        return task

    def _script_outcome(self, mutant: str | None, timeout: float) -> dict[str, Any]:
        """One run of ``python autograd_lab.py`` on the (mutated) file, summarised."""
        # Not dropped in the fork: the exec'd interpreter drops to the student uid itself, since
        # the student uid may not be allowed to execute the harness's interpreter directly.
        records, summary = self.run_child(
            self._task_script("mutation", mutant), timeout=timeout, progress_resets=False, drop=False
        )
        script = next((r for r in records if r.get("t") == wire.SCRIPT), None)
        started = next((r for r in records if r.get("t") == wire.SCRIPT_START), None)
        failed = next((r for r in records if r.get("t") == wire.ERR), None)
        status = summary.get("status")
        out: dict[str, Any]
        if status == wire.NOT_RUN:
            out = {"outcome": wire.NOT_RUN, "message": "the grading time budget ran out before this run"}
        elif status in (wire.TIMEOUT, wire.DEADLINE):
            out = {
                "outcome": wire.TIMEOUT if status == wire.TIMEOUT else wire.NOT_RUN,
                "limit": round(timeout, 2),
            }
        elif status == wire.OUTPUT_LIMIT:
            mib = FLOOD_BYTES // (1024 * 1024)
            out = {"outcome": wire.FAILED, "exception": "OutputLimit", "message": f"printed more than {mib} MiB"}
        elif script is not None:
            out = {k: script[k] for k in ("outcome", "reason") if k in script}  # not applicable
        elif failed is not None:
            # The file could not even be started (unparsable, say): a failure, never a pass.
            error = failed.get("error") or {}
            out = {
                "outcome": wire.FAILED,
                "exception": str(error.get("type", "Error"))[:60],
                "message": str(error.get("message", ""))[:300],
            }
        elif started is None or status == wire.KILLED:
            how = summary.get("signal") or f"exit status {summary.get('exit_code')}"
            out = {"outcome": wire.CRASHED, "message": f"the process died ({how})"}
        else:
            tail = str(summary.get("output_tail", ""))
            out = scripts.outcome_from(summary.get("exit_code"), tail, self.filename)
        if started is not None:
            out["lines"] = [n for n in started.get("lines", []) if isinstance(n, int)][:50]
        out["elapsed"] = summary.get("elapsed", 0.0)
        if mutant is None:
            out["output"] = str(summary.get("output", ""))[:4000]
        return out

    def _oracle_baseline(self, oracle: list[tuple[str, dict[str, Any]]]) -> tuple[dict[str, Any], str, float]:
        task = self._task_oracle(None, oracle, None)
        records, summary = self.run_child(task, timeout=self.script_seconds, progress_resets=False)
        observed = {str(r.get("k")): r.get("obs") for r in records if r.get("t") == wire.ORACLE}
        status = wire.OK if len(observed) == len(oracle) else str(summary.get("status", wire.ERROR))
        return observed, status, float(summary.get("elapsed", 0.0))

    def _oracle_verdict(
        self, mutant: str, oracle: list[tuple[str, dict[str, Any]]], baseline: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        """Does the mutant behave differently from the student's engine on the grader's programs?"""
        task = self._task_oracle(mutant, oracle, baseline)
        records, summary = self.run_child(task, timeout=timeout, progress_resets=False)
        verdict = next((r for r in records if r.get("t") == wire.ORACLE and "differs" in r), None)
        if verdict is None:
            # Hanging or crashing on the grader's programs is itself a difference the checks see.
            return {"status": str(summary.get("status", wire.ERROR)), "differs": []}
        key = verdict["differs"]
        return {"status": wire.OK, "differs": [key.split(":")[0]] if isinstance(key, str) else []}

    def run_mutation(self, probe: dict[str, Any]) -> None:
        """The bug-injection probe: the student's checks against each mutant of their own file.

        First the validity gate (the unmutated file passes its own checks), then per mutant two
        children: the student's checks (do they fail?) and the grader's programs (does the
        mutant behave differently from the student's engine at all? If not, it is equivalent
        for this student and does not count). Per-mutant time limits
        scale with the clean runs, so one looping mutant cannot eat the whole budget.
        """
        probe_id = probe["id"]
        wanted = set(probe.get("oracle", []))
        oracle = [
            (f"{p['id']}:{i}", program)
            for p in self.plan["probes"]
            if p["id"] in wanted
            for i, program in enumerate(p.get("programs", []))
        ]
        clean = self._script_outcome(None, self.script_seconds)
        self.emit({"t": wire.MUTANT, "probe": probe_id, "mutant": wire.CLEAN, "script": clean})
        if clean["outcome"] != wire.PASSED:
            self.emit({"t": wire.PROBE_END, "probe": probe_id, "status": wire.OK, "reason": wire.REASON_GATE})
            return
        script_limit = min(self.script_seconds, 2.0 + 5.0 * float(clean["elapsed"]))
        # Honest checks accept a behaviour-identical copy of the file; checks that fail on it
        # test the code's text, not what it computes, and cannot earn bug-injection credit.
        same = self._script_outcome(mutate.EQUIVALENT, script_limit)
        self.emit({"t": wire.MUTANT, "probe": probe_id, "mutant": mutate.EQUIVALENT, "script": same})
        if same["outcome"] not in (wire.PASSED, wire.NOT_APPLICABLE):
            self.emit({"t": wire.PROBE_END, "probe": probe_id, "status": wire.OK, "reason": wire.REASON_GATE})
            return
        baseline, base_status, base_elapsed = self._oracle_baseline(oracle)
        oracle_limit = min(self.script_seconds, 2.0 + 5.0 * base_elapsed)
        for name in probe.get("mutants", []):
            script = self._script_outcome(name, script_limit)
            record: dict[str, Any] = {"t": wire.MUTANT, "probe": probe_id, "mutant": name, "script": script}
            if script["outcome"] not in (wire.NOT_APPLICABLE, wire.NOT_RUN) and name != mutate.FORCED_FAIL and oracle:
                if base_status == wire.OK:
                    record["oracle"] = self._oracle_verdict(name, oracle, baseline, oracle_limit)
                else:
                    record["oracle"] = {"status": wire.NO_BASELINE, "differs": []}
            self.emit(record)
        self.emit({"t": wire.PROBE_END, "probe": probe_id, "status": wire.OK})

    # --- the run --------------------------------------------------------------------------------

    def load(self) -> bool:
        notices: list[str] = []
        for mode in ("full", "definitions"):
            self.mode = mode
            records, summary = self.run_child(self._task_load, timeout=self.script_seconds, progress_resets=False)
            self.flooded = self.flooded or summary.get("status") == wire.OUTPUT_LIMIT
            self.stalled = self.stalled or summary.get("status") == wire.TIMEOUT
            load = next((r for r in records if r.get("t") == wire.LOAD), None)
            self.out_of_memory = self.out_of_memory or ((load or {}).get("error") or {}).get("type") == "MemoryError"
            if load and load.get("ok"):
                self.class_name_found = str(load.get("class_name") or self.class_name)
                self.emit(
                    {
                        **_clean_load(load),
                        "mode": mode,
                        "notices": notices + list(load.get("notices", []))[:10],
                        "output": summary.get("output", ""),
                        "output_limit": self.flooded,
                        "timed_out": self.stalled,
                        "memory_error": self.out_of_memory,
                    }
                )
                return True
            error = (load or {}).get("error") or {}
            if load is None:
                why = {
                    "timeout": f"did not finish within {self.script_seconds:g} s (top-level code that never ends?)",
                    "deadline": "ran out of time",
                    "output_limit": "printed too much output",
                    "ok": "ended the process with exit status 0 (sys.exit or os._exit at top level)",
                    "exited": f"ended the process with exit status {summary.get('exit_code')}",
                    "killed": f"was killed by {summary.get('signal')}",
                }.get(summary.get("status", ""), f"stopped ({summary.get('status')})")
                notices.append(f"Importing the file {why}.")
            elif error.get("type") == "LoadError" or error.get("type") in (
                "SyntaxError",
                "IndentationError",
                "TabError",
            ):
                self.emit(
                    {
                        "t": wire.LOAD,
                        "ok": False,
                        "mode": "failed",
                        "error": error,
                        "notices": notices,
                        "output": summary.get("output", ""),
                        "output_limit": self.flooded,
                        "timed_out": self.stalled,
                        "memory_error": self.out_of_memory,
                    }
                )
                return False
            else:
                where = f" at line {error['line']}" if error.get("line") else ""
                notices.append(f"Importing the file raised {error.get('type')}{where}: {error.get('message', '')}")
            if summary.get("status") == wire.NOT_RUN:
                break
        self.emit(
            {
                "t": wire.LOAD,
                "ok": False,
                "mode": "failed",
                "notices": notices,
                "error": {
                    "type": "LoadError",
                    "message": "the engine could not be loaded even with top-level code skipped",
                    "line": None,
                },
            }
        )
        return False

    def _not_run(self, probe_id: str, reason: str) -> None:
        self.emit({"t": wire.PROBE_END, "probe": probe_id, "status": wire.NOT_RUN, "reason": reason})

    def run(self) -> None:
        self.class_name_found = self.class_name
        loaded = self.load()
        stalled = 0  # program probes in a row that hit their time limit
        for probe in self.plan["probes"]:
            probe_id, kind = probe["id"], probe["kind"]
            if not loaded:
                self._not_run(probe_id, wire.REASON_LOAD_FAILED)
                continue
            if kind == wire.PROGRAM and stalled >= wire.STALLED_PROBES:
                # An engine that hangs everywhere would spend the whole budget one probe at a
                # time; what the first probes showed is what the rest would show.
                self._not_run(probe_id, wire.REASON_REPEATED_TIMEOUTS)
                continue
            if kind == wire.MUTATION:
                self.run_mutation(probe)
                continue
            if kind == wire.API:
                task, timeout, resets = self._task_api(probe_id), self.probe_seconds, False
            elif kind == wire.PROGRAM:
                task, timeout, resets = self._task_programs(probe_id, probe["programs"]), self.probe_seconds, True
            else:
                self._not_run(probe_id, wire.REASON_UNKNOWN_KIND)
                continue
            records, summary = self.run_child(task, timeout=timeout, progress_resets=resets)
            seen: set[tuple[Any, ...]] = set()
            for record in records:
                # One record per program and phase (the host keeps the first anyway): copies
                # from a forked-off process cannot flood the output channel.
                key = (record.get("t"), record.get("program"), record.get("phase"))
                if record.get("t") in ("obs", "err") and key not in seen:
                    seen.add(key)
                    record["probe"] = probe_id  # a child cannot speak for another probe
                    self.emit(record)
            ended = {k: v for k, v in summary.items() if k != "output_tail"}
            self.emit({"t": wire.PROBE_END, "probe": probe_id, **ended})
            if kind == wire.PROGRAM:
                stalled = stalled + 1 if summary.get("status") in (wire.TIMEOUT, wire.DEADLINE) else 0


def _clean_load(load: dict[str, Any]) -> dict[str, Any]:
    keep = ("t", "ok", "class_name", "extra_args", "stand_ins_used", "leaf_data")
    return {k: load[k] for k in keep if k in load}


def _processes_of(uid: int) -> list[int]:
    """Live (not zombie) PIDs whose real uid is ``uid``, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
            if fields["State"].split()[0] != "Z" and int(fields["Uid"].split()[0]) == uid:
                found.append(int(entry))
        except (OSError, ValueError, IndexError, KeyError):
            continue  # gone meanwhile
    return found


def _ignore(_phase: str, _obs: dict[str, Any]) -> None:
    return None


def _same(expected: Any, observed: Any) -> bool:
    """Two observation dicts agree: same keys, floats within a tight tolerance, the rest equal."""
    if not isinstance(expected, dict) or not isinstance(observed, dict) or expected.keys() != observed.keys():
        return bool(expected == observed)
    return all(programs.same_value(want, observed[key]) for key, want in expected.items())


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="run_harness")
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args(argv)
    with open(os.path.join(args.workdir, "plan.json"), "rb") as handle:
        plan = json.loads(handle.read())
    emit = Emitter(str(plan["nonce"]))
    path = os.path.join(args.workdir, "submission", plan["filename"])
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
        source = _decode(raw)
        if "\x00" in source:
            raise ValueError("the file contains NUL bytes")
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError) as error:
        emit(
            {
                "t": wire.LOAD,
                "ok": False,
                "mode": "failed",
                "notices": [],
                "error": {"type": "UnreadableFile", "message": str(error)[:300], "line": None},
            }
        )
        for probe in plan["probes"]:
            emit({"t": wire.PROBE_END, "probe": probe["id"], "status": wire.NOT_RUN, "reason": wire.REASON_LOAD_FAILED})
        emit({"t": wire.END})
        return 0
    supervisor = Supervisor(plan, source, emit)
    try:
        supervisor.run()
    finally:
        shutil.rmtree(supervisor.scratch, ignore_errors=True)
    emit({"t": wire.END})
    return 0
