"""Running one child: a fresh scratch folder, the fork server, the limits, and what came back.

``Runs.run`` gives a child its task, watches its record pipe and its output, enforces the time
limit (only well-formed records of this child extend it), stops it when it breaks the record
schema, floods output or outlives its budget, kills whatever it left behind, and empties its
scratch folder. Everything it returns was checked against the child's record schema.
"""

from __future__ import annotations

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

from . import wire
from .child_records import BadRecord, parse_line
from .zygote import Zygote

RECORD_BYTES = 256 * 1024  # one child record
CHILD_RECORDS_BYTES = 1024 * 1024  # everything one child may send
FLOOD_BYTES = 4 * 1024 * 1024  # student output beyond this stops the run
TAIL_BYTES = 4096  # the end of a child's output is kept too: a traceback is printed last
LINGER_SECONDS = 0.25  # after a child exits, how long a process it left may hold its pipes


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


class Runs:
    def __init__(self, zygote: Zygote, who: Identity, *, deadline: float, memory_bytes: int, output_bytes: int):
        self.zygote = zygote
        self.who = who
        self.deadline = deadline
        self.memory_bytes = memory_bytes
        self.output_bytes = output_bytes
        self.scratch_root = _scratch_root(who)

    def close(self) -> None:
        shutil.rmtree(self.scratch_root, ignore_errors=True)

    def run(
        self, task: dict[str, Any], schema: Schema, *, timeout: float, progress_resets: bool
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """One child for ``task``: its accepted records, and how it ended."""
        if self.deadline - time.monotonic() <= 0:
            return [], {"status": wire.NOT_RUN, "reason": wire.REASON_DEADLINE}
        scratch = self._new_scratch()
        started = time.monotonic()
        try:
            records, summary = self._run_in(scratch, task, schema, timeout, progress_resets, started)
        finally:
            lingering = self.reap()
            self._clean(scratch)
        summary["elapsed"] = round(time.monotonic() - started, 3)
        if lingering:
            summary["lingering"] = True  # something the child started outlived it
        return records, summary

    # --- one child -------------------------------------------------------------------------------

    def _run_in(
        self, scratch: str, task: dict[str, Any], schema: Schema, timeout: float, resets: bool, started: float
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        body = {
            **task,
            "scratch": scratch,
            "uid": self.who.uid,
            "gid": self.who.gid,
            "cpu_seconds": int(max(timeout, 1)) + 1,
            "memory_bytes": self.memory_bytes,
        }
        task_r, task_w = os.pipe()
        rec_r, rec_w = os.pipe()
        out_r, out_w = os.pipe()
        sys.stdout.flush()
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
            with os.fdopen(task_w, "wb") as pipe:
                pipe.write(json.dumps(body, allow_nan=False).encode())
        except BrokenPipeError:
            pass  # the child died before reading its task: its exit status says how
        return self._collect(pid, rec_r, out_r, schema, timeout, resets, started)

    def _collect(
        self, pid: int, rfd: int, ofd: int, schema: Schema, timeout: float, resets: bool, started: float
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
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
        last_progress = started
        open_streams = 2
        wait_status: int | None = None
        exited_at = 0.0
        while open_streams or wait_status is None:
            now = time.monotonic()
            if wait_status is not None and now - exited_at > LINGER_SECONDS:
                stopped = stopped or "lingering"  # something the child started still holds the pipes
                break
            limit = min(last_progress + timeout if resets else started + timeout, self.deadline)
            if now >= limit:
                stopped = wire.DEADLINE if limit == self.deadline and now >= self.deadline else wire.TIMEOUT
                break
            for key, _ in selector.select(timeout=min(0.5, limit - now)):
                if key.data == "exit":
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
                        if line:
                            records.append(schema.accept(parse_line(line, RECORD_BYTES)))
                            last_progress = time.monotonic()  # only a well-formed record is progress
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

    def _clean(self, scratch: str) -> None:
        if self.who.drops and not _nothing_left(scratch, self.who.uid):
            # Files the student uid made inside are its own: only that uid may empty them.
            cleanup = {"kind": "cleanup", "filename": "", "source": "", "mode": "", "stand_ins": []}
            self._run_in(scratch, cleanup, _NoRecords(), 5.0, False, time.monotonic())
            self.reap()
        shutil.rmtree(scratch, ignore_errors=True)

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
