"""Running one child: a fresh scratch folder, the fork server, the limits, and what came back.

``Runs.run`` gives a child its task, watches its record pipe and its output, enforces the time
limit (only well-formed records of this child extend it), stops it when it breaks the record
schema, floods output or outlives the grading's budget, kills whatever it left behind, and
empties its scratch folder (charged, like the run). Everything it returns was checked against
the child's record schema.
Every limit is in charged seconds (``clock``): CPU time, or time spent waiting on anything but
a core, so a busy machine never makes a run time out (and a run stopped by time off the CPU,
which the machine may have caused, runs once more before it counts).
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import os
import secrets
import selectors
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Protocol

from .. import wire
from .child import TASK_HEADER
from .child_records import BadRecord, parse_line
from .clock import Budget, CpuSource, RunClock, last_pid, sandbox_cpu
from .zygote import Zygote

RECORD_BYTES = 256 * 1024  # one child record
CHILD_RECORDS_BYTES = 1024 * 1024  # everything one child may send
FLOOD_BYTES = 4 * 1024 * 1024  # student output beyond this stops the run
TAIL_BYTES = 4096  # the end of a child's output is kept too: a traceback is printed last
LINGER_SECONDS = 0.25  # after a child exits, how long a process it left may hold its pipes
POLL_SECONDS = 0.05  # how often a running child's charged time is read
WAIT_RETRIES = 1  # runs stopped by time off the CPU run once more (see Runs.run)
WAITED_SHARE = 0.75  # CPU time under this share of a limit reached: time off the CPU decided
CLEANUP_SECONDS = 5.0  # charged; emptying the most a run can leave (the tmpfs's inodes) takes far less


class Schema(Protocol):
    def accept(self, record: dict[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Identity:
    """Who student code runs as (None: as this process's user, in the local runner)."""

    uid: int | None
    gid: int | None

    @property
    def drops(self) -> bool:
        return self.uid is not None


@dataclass
class _Charge:
    seconds: float = 0.0  # what the run was charged
    by_waiting: bool = False  # a time limit reached by time off the CPU, not by CPU time


@dataclass(frozen=True)
class _Limits:
    timeout: float  # charged seconds for the run (after the import, when import_seconds is given)
    resets: bool  # every well-formed record restarts the timeout
    import_seconds: float  # 0: no import allowance; the timeout covers everything


class Runs:
    def __init__(self, zygote: Zygote, who: Identity, *, budget: Budget, memory_bytes: int, output_bytes: int):
        self.zygote = zygote
        self.who = who
        self.budget = budget
        self.memory_bytes = memory_bytes
        self.output_bytes = output_bytes
        self.scratch_root = _scratch_root(who)
        # The sandbox's own cgroup counts every process a run starts; only a sandbox has one
        # (the local runner shares the machine's, so there a child's own figures are read).
        self.cpu: CpuSource | None = sandbox_cpu() if who.drops else None
        self.last_pid = last_pid  # where run numbers come from (the PID namespace's)

    def close(self) -> None:
        shutil.rmtree(self.scratch_root, ignore_errors=True)

    def run(
        self,
        task: dict[str, Any],
        schema: Schema,
        *,
        timeout: float,
        progress_resets: bool,
        import_seconds: float = 0.0,
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """One child for ``task``: its accepted records, and how it ended. With ``import_seconds``,
        the child first imports the file within that allowance, and ``timeout`` starts when it
        says it has (a ``loaded`` record): a slow import is never charged to the probe."""
        limits = _Limits(timeout, progress_resets, import_seconds)
        for attempt in range(1 + WAIT_RETRIES):
            if self.budget.machine_late():
                return [], {"status": wire.NOT_RUN, "reason": wire.REASON_MACHINE_LATE}
            if self.budget.left() <= 0:
                return [], {"status": wire.NOT_RUN, "reason": wire.REASON_DEADLINE}
            # A schema counts what it has accepted: each attempt starts from the caller's.
            records, summary, charge = self._attempt(task, copy.deepcopy(schema), limits)
            # A limit reached by time off the CPU while the run had threads or processes of its
            # own (which may have waited for a core: the kernel keeps no such figure for a
            # thread that has ended) may be the machine's doing: the same task once more, at
            # once, before any other run, so no run sees what it would not have seen. Nothing of
            # the first stays, and only the run that counts is charged. A single process that
            # sleeps is not run again: its time off the CPU is its own. Runs set aside have a
            # small budget of their own, so no file can double the grading's real time.
            retry = summary.get("status") == wire.TIMEOUT and charge.by_waiting and attempt < WAIT_RETRIES
            if retry and self.budget.may_retry(charge.seconds):
                continue
            break
        self.budget.charge(charge.seconds)
        summary["elapsed"] = round(charge.seconds, 3)  # charged seconds, as every limit counts them
        return records, summary

    def _attempt(
        self, task: dict[str, Any], schema: Schema, limits: _Limits
    ) -> tuple[list[dict[str, Any]], dict[str, Any], _Charge]:
        scratch = self._new_scratch()
        charge = _Charge()
        try:
            records, summary = self._run_in(scratch, task, schema, limits, charge)
        except BaseException:
            self.budget.charge(charge.seconds)
            raise
        finally:
            lingering = self.reap()
            # Removing what the run left is the run's own cost, never free: charged to the budget
            # even for an attempt set aside. The tmpfs's inode count bounds what there can be.
            self.budget.charge(self._clean(scratch))
        if lingering:
            summary["lingering"] = True  # something the child started outlived it
        return records, summary, charge

    # --- one child -------------------------------------------------------------------------------

    def _run_in(
        self, scratch: str, task: dict[str, Any], schema: Schema, limits: _Limits, charge: _Charge
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        key = secrets.token_bytes(32)  # this run's only: the child's records are tagged with it
        body = {
            **task,
            "key": key.hex(),
            "scratch": scratch,
            "uid": self.who.uid,
            "gid": self.who.gid,
            # The kernel's own stop, a backstop only: twice the charged limit, so that the harness,
            # which reads the charged time as it goes, always stops the run first.
            "cpu_seconds": int(2 * (max(limits.timeout, 1) + limits.import_seconds)) + 5,
            "memory_bytes": self.memory_bytes,
        }
        task_r, task_w = os.pipe()
        rec_r, rec_w = os.pipe()
        out_r, out_w = os.pipe()
        sys.stdout.flush()
        before = self.last_pid()
        try:
            pid = self.zygote.spawn(task_r, rec_w, out_w)
        finally:
            for fd in (task_r, rec_w, out_w):
                os.close(fd)
        if pid < 0:  # the student's processes used up the sandbox's process limit: theirs to answer for
            for fd in (task_w, rec_r, out_r):
                os.close(fd)
            return [], {"status": wire.NOT_RUN, "reason": wire.REASON_NO_PROCESS}
        try:
            encoded = json.dumps(body, allow_nan=False).encode()
            with os.fdopen(task_w, "wb") as pipe:
                pipe.write(TASK_HEADER.pack(len(encoded)) + encoded)
        except BrokenPipeError:
            pass  # the child died before reading its task: its exit status says how
        channel = _Tagged(key, expects_done=task["kind"] in DONE_KINDS)
        own = 2 if task["kind"] in DONE_KINDS else 1  # a probe child has its reporter thread too
        clock = RunClock(pid, self.cpu, threads=own)
        try:
            records, summary = self._collect(pid, rec_r, out_r, schema, channel, limits, clock, charge)
        finally:
            charge.seconds = clock.spent()
        after = self.last_pid()
        # Tasks started beyond the child itself: its threads and processes (or, where the
        # numbers cannot be read or have wrapped, perhaps some).
        helpers = before is None or after is None or after - before > own or after < before
        charge.by_waiting = charge.by_waiting and helpers
        if summary.get("status") in (wire.OK, wire.EXITED) and not channel.done and channel.expects_done:
            summary["status"] = wire.FORGED  # it ended itself before the grader's last step
            summary["reason"] = "ended before the grader's own steps were done"
        if summary.get("status") == wire.FORGED:
            return [], summary  # nothing from a run that spoke for the grader is kept
        return records, summary

    def _collect(
        self,
        pid: int,
        rfd: int,
        ofd: int,
        schema: Schema,
        channel: _Tagged,
        limits: _Limits,
        clock: RunClock,
        charge: _Charge,
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        resets = limits.resets
        importing = limits.import_seconds > 0  # until the child's `loaded` record
        room = self.budget.left()  # what the whole grading has left for this child
        selector = selectors.DefaultSelector()
        selector.register(rfd, selectors.EVENT_READ, "records")
        selector.register(ofd, selectors.EVENT_READ, "output")
        selector.register(self.zygote.fileno(), selectors.EVENT_READ, "exit")
        pending = b""
        records: list[dict[str, Any]] = []
        received = 0
        output = bytearray()
        tail = b""
        output_total = 0
        stopped = ""  # why the harness stopped the child, when it did
        reason = ""
        open_streams = 2
        wait_status: int | None = None
        exited_at = 0.0
        while open_streams or wait_status is None:
            now = time.monotonic()
            if wait_status is not None and now - exited_at > LINGER_SECONDS:
                stopped = stopped or "lingering"  # something the child started still holds the pipes
                break
            if wait_status is None:  # once it has exited, its last reading stands
                used = clock.used()
                limit = limits.import_seconds if importing else limits.timeout
                if used >= limit:
                    stopped = wire.TIMEOUT
                    charge.by_waiting = clock.cpu() < WAITED_SHARE * limit
                elif clock.spent() >= room:
                    stopped = wire.DEADLINE
                elif self.budget.machine_late():
                    stopped, reason = wire.DEADLINE, wire.REASON_MACHINE_LATE
                if stopped:
                    break
            for key, _ in selector.select(timeout=POLL_SECONDS):
                if key.data == "exit":
                    clock.used()  # a last reading before the fork server reaps it
                    wait_status, exited_at = self.zygote.exit_status(), time.monotonic()
                    selector.unregister(key.fd)
                    continue
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fd)
                    open_streams -= 1
                    continue
                if key.data == "output":
                    output_total += len(chunk)
                    if len(output) < self.output_bytes:
                        output.extend(chunk[: self.output_bytes - len(output)])
                    tail = (tail + chunk)[-TAIL_BYTES:]
                    continue
                received += len(chunk)
                pending += chunk
                *lines, pending = pending.split(b"\n")
                try:
                    for line in lines:
                        record = parse_line(channel.open(line), RECORD_BYTES)
                        if record.get("t") == wire.DONE and len(record) == 1:
                            channel.done = True
                            continue
                        if record.get("t") == wire.LOADED and len(record) == 1:
                            if importing:  # the probe's own clock starts now
                                importing = False
                                clock.restart()
                            continue
                        records.append(schema.accept(record))
                        if resets:
                            clock.restart()  # only a well-formed record is progress
                except Forged as forged:
                    stopped, reason = wire.FORGED, str(forged)[:200]
                    break
                except BadRecord as bad:
                    stopped, reason = wire.BAD_RECORD, str(bad)[:200]
                    break
            if stopped:
                break
            if output_total > FLOOD_BYTES:
                stopped = wire.OUTPUT_LIMIT
                break
            if received > CHILD_RECORDS_BYTES:
                stopped = wire.RECORD_LIMIT
                break
        if wait_status is None:
            if stopped:
                _kill(pid)
            wait_status = self.zygote.exit_status()
        selector.close()
        os.close(rfd)
        os.close(ofd)
        summary: dict[str, Any] = {
            "output": output.decode("utf-8", "replace"),
            "output_truncated": output_total > len(output),
            "output_tail": tail.decode("utf-8", "replace"),
        }
        if stopped == "lingering":
            summary["lingering"] = True  # reported; the run itself ended normally (below)
        elif stopped:
            summary["status"] = stopped
            if reason:
                summary["reason"] = reason
            return records, summary
        if os.WIFSIGNALED(wait_status):
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

    # --- scratch folders and leftovers ------------------------------------------------------------

    def _new_scratch(self) -> str:
        """A folder no other run can name: a random name in a folder student code cannot list."""
        path = os.path.join(self.scratch_root, secrets.token_hex(16))
        os.mkdir(path, 0o700)
        if self.who.drops:
            os.chmod(path, 0o777)  # root-owned: the student uid writes inside, never next to it
        return path

    def _clean(self, scratch: str) -> float:
        """Empty and remove a run's scratch folder; returns the charged seconds of the cleanup child."""
        spent = _Charge()
        if self.who.drops and not _nothing_left(scratch, self.who.uid):
            # Files the student uid made inside are its own: only that uid may empty them.
            cleanup = {"kind": "cleanup", "filename": "", "source": "", "mode": "", "stand_ins": []}
            self._run_in(scratch, cleanup, _NoRecords(), _Limits(CLEANUP_SECONDS, False, 0.0), spent)
            self.reap()
        shutil.rmtree(scratch, ignore_errors=True)
        return spent.seconds

    def reap(self) -> int:
        """Kill anything left running under the student uid (detached processes, daemons, the
        remains of a fork bomb); returns how many were found. Without forking: after a fork
        bomb no fork is possible."""
        if self.who.uid is None:
            return 0
        found = 0
        for _ in range(50):
            victims = _processes_of(self.who.uid)
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


DONE_KINDS = frozenset({"load", "api", "programs"})  # the tasks that end with a done record


class Forged(Exception):
    """A line the child's own harness code did not write."""


class _Tagged:
    """The child's record lines, each ``<tag> <json>``: the tag must be the HMAC, under this
    run's key, of the record and its place in the run, and nothing may follow the done record."""

    def __init__(self, key: bytes, *, expects_done: bool) -> None:
        self.key = key
        self.expects_done = expects_done
        self.count = 0
        self.done = False

    def open(self, line: bytes) -> bytes:
        tag, _, body = line.partition(b" ")
        if self.done:
            raise Forged("a record after the run's last one")
        self.count += 1
        want = hmac.new(self.key, b"%d:" % self.count + body, hashlib.sha256).hexdigest().encode()
        if not hmac.compare_digest(tag, want):
            raise Forged(f"record {self.count} was not written by the grader's code")
        return body


class _NoRecords:
    def accept(self, record: dict[str, Any]) -> dict[str, Any]:
        raise BadRecord("a record from the cleanup step")


def _scratch_root(who: Identity) -> str:
    """Where scratch folders go: in the sandbox, /tmp becomes unlistable and unwritable for the
    student uid, so the only place student code can write is its own run's folder."""
    if who.drops and os.geteuid() == 0:
        try:
            if os.stat("/tmp").st_uid == 0:
                os.chmod("/tmp", 0o711)
        except OSError:
            pass
    root = tempfile.mkdtemp(prefix="ag-")
    os.chmod(root, 0o711 if who.drops else 0o700)
    return root


def _kill(pid: int) -> None:
    for kill in (os.killpg, os.kill):  # the group first; the child alone if it left it
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _nothing_left(scratch: str, uid: int | None) -> bool:
    """The run left no file in its folder (ours, so we may list it) and no System V object of the
    student uid: nothing for a cleanup child to remove (most probes write nothing at all)."""
    try:
        if os.listdir(scratch):
            return False
    except OSError:
        return False
    for kind in ("msg", "sem", "shm"):
        try:
            with open(f"/proc/sysvipc/{kind}", encoding="ascii") as handle:
                header, *rows = handle.read().splitlines()
        except OSError:
            return False  # cannot tell: the cleanup child looks
        names = header.split()
        if "uid" not in names or "cuid" not in names:
            return False
        columns = (names.index("uid"), names.index("cuid"))  # its owner, or who made it (ownership can be given away)
        for row in rows:
            fields = row.split()
            if any(len(fields) > c and fields[c] == str(uid) for c in columns):
                return False
    return True


def _processes_of(uid: int) -> list[int]:
    """PIDs whose real uid is ``uid``, from /proc: live ones, and zombie thread-group leaders whose
    other threads still run (a leader that exits alone shows as Z while its threads go on)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
            alive = fields["State"].split()[0] != "Z" or int(fields.get("Threads", "1").split()[0]) > 1
            if alive and int(fields["Uid"].split()[0]) == uid:
                found.append(int(entry))
        except (OSError, ValueError, IndexError, KeyError):
            continue  # gone meanwhile
    return found
