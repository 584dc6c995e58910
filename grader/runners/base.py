"""What every runner takes and returns: a submission and a probe plan in, raw bytes out.

A runner executes the in-container harness (``sandbox/harness``) against one submission.
It does not interpret what the harness printed: ``grader.judge.parse`` does that, on the
host, treating every byte as untrusted.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

# Where the harness expects its inputs inside the sandbox working directory.
PLAN_NAME = "plan.json"
SUBMISSION_DIR = "submission"


@dataclass(frozen=True)
class ContainerLimits:
    """What the sandbox enforces around one submission's run, from the rubric's limits."""

    wall_seconds: float
    memory_mb: int
    cpus: float
    pids: int
    stdout_bytes: int
    tmpfs_mb: int


@dataclass(frozen=True)
class RawRun:
    """What came back from one sandbox run, before any parsing."""

    stdout: bytes
    stdout_truncated: bool  # the host cap was hit and the run was stopped
    stderr_tail: bytes  # last bytes of stderr, for grader diagnostics only
    exit_code: int | None  # None when the run was killed by the host
    timed_out: bool  # the host wall deadline fired
    oom_killed: bool  # the kernel OOM killer acted inside the sandbox
    elapsed: float  # seconds, wall clock, as seen by the host
    runner: str  # "docker" or "local"
    image: str  # image id (docker) or interpreter path (local)


@dataclass(frozen=True)
class Evidence:
    """What the sandbox returned for one submission, kept so that a rubric change that does not
    change the plan (points, titles, hints, tolerances) is re-judged without running again."""

    raw: RawRun
    nonce: str
    plan_digest: str


OnStdout = Callable[[bytes], None]
LISTENER_JOIN_S = 2.0  # what a run's end waits for its listener (a preview) at most
log = logging.getLogger(__name__)


class Listener:
    """``on_stdout`` as a runner calls it: each piece is queued for a thread of the listener's
    own, so that a slow listener (judging, a database write) never holds up the reading of the
    sandbox's output. A failure in it is logged once and it is not called again; the grading goes
    on (what it shows is a preview, never the result). ``close`` lets the thread finish the
    pieces already queued, waiting for it at most ``LISTENER_JOIN_S``: a listener slower than that
    finishes on its own, after the run's result."""

    def __init__(self, on_stdout: OnStdout | None) -> None:
        self.on_stdout = on_stdout
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def __call__(self, chunk: bytes) -> None:
        if self.on_stdout is None or not chunk:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._drain, name="stdout-listener", daemon=True)
            self._thread.start()
        self._queue.put(bytes(chunk))

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=LISTENER_JOIN_S)

    def _drain(self) -> None:
        while (chunk := self._queue.get()) is not None:
            if self.on_stdout is None:
                continue  # failed once: the rest is read and dropped
            try:
                self.on_stdout(chunk)
            except Exception:
                log.exception("a listener to the sandbox's output failed; the grading goes on without it")
                self.on_stdout = None


class Runner(Protocol):
    name: str
    isolates: bool  # runs student code as the student uid and kills what it leaves (containers)

    def run(
        self, *, source: bytes, filename: str, plan: bytes, limits: ContainerLimits, on_stdout: OnStdout | None = None
    ) -> RawRun:
        """Run the harness on one submission. Raises InfraError when the sandbox itself fails.
        ``on_stdout`` is given each piece of stdout as it arrives (a failure in it is logged, never
        the grading's); the RawRun still carries the whole of it."""
        ...
