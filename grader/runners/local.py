"""Run the harness as a plain subprocess, for machines without Docker. LESS ISOLATED.

Same contract as the Docker runner (inputs laid out the same way, same output caps, same
host wall deadline), but without a container there is no network isolation, no read-only
root, no pids or memory cgroup, and the harness can drop student code to uid 10002 only
when the grader itself runs as root. rlimits bound one process, not a process tree, and a
process that leaves our process group can outlive the run. Use it for self-checks on a
trusted machine, never for grading untrusted submissions at scale.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from grader.errors import InfraError
from grader.image import HARNESS_FLAGS, SANDBOX_DIR, SANDBOX_ENV
from grader.runners.base import PLAN_NAME, SUBMISSION_DIR, ContainerLimits, Listener, OnStdout, RawRun

FSIZE_BYTES = 8 * 1024 * 1024
NOFILE = 256
STDERR_TAIL_BYTES = 4096
KILL_GRACE_S = 10.0
READER_JOIN_S = 5.0
CHUNK = 65536


def _valid_filename(filename: str) -> bool:
    return (
        bool(filename)
        and filename not in (".", "..")
        and "/" not in filename
        and "\x00" not in filename
        and not filename.startswith(".")
    )


def _rlimits(limits: ContainerLimits) -> Callable[[], None]:
    """The preexec_fn: per-process caps standing in for the container's cgroup limits."""
    memory = limits.memory_mb * 1024 * 1024
    cpu = max(1, int(limits.wall_seconds + 0.999))

    def apply() -> None:
        # Twice the memory limit: RLIMIT_AS counts address space (interpreter, numpy, thread
        # stacks), not resident memory, so the container's number would be too tight.
        resource.setrlimit(resource.RLIMIT_AS, (2 * memory, 2 * memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE_BYTES, FSIZE_BYTES))
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))
        # Inherited by every child: a spinning process that escaped our group still dies.
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))

    return apply


def _lay_out(workdir: Path, *, plan: bytes, source: bytes, filename: str) -> None:
    """The same files and modes the container gets at /sandbox."""
    os.chmod(workdir, 0o755)  # mkdtemp makes 0700; a harness that drops to 10002 needs x
    plan_path = workdir / PLAN_NAME
    plan_path.write_bytes(plan)
    os.chmod(plan_path, 0o400)
    submission = workdir / SUBMISSION_DIR
    submission.mkdir()
    (submission / filename).write_bytes(source)
    os.chmod(submission / filename, 0o444)
    os.chmod(submission, 0o555)


# Each reader closes its own pipe when it is done. The main thread must not close a pipe
# under a reader still blocked in read(): the fd number could be reused and the reader
# would then read someone else's file.


def _read_capped(pipe: IO[bytes], into: bytearray, cap: int, over: threading.Event, listener: Listener) -> None:
    """Copy stdout up to ``cap`` bytes (each piece to ``listener`` too); set ``over`` and stop
    reading past it."""
    try:
        while chunk := os.read(pipe.fileno(), CHUNK):
            room = cap - len(into)
            kept = chunk[: max(room, 0)]
            into += kept
            listener(kept)
            if len(chunk) > room:
                over.set()
                return
    finally:
        pipe.close()


def _read_tail(pipe: IO[bytes], into: bytearray) -> None:
    try:
        while chunk := os.read(pipe.fileno(), CHUNK):
            into += chunk
            del into[:-STDERR_TAIL_BYTES]
    finally:
        pipe.close()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # the whole group is already gone


def _remove_tree(workdir: Path) -> None:
    # The submission folder is 0555: without write permission back, a non-root user
    # cannot delete what is inside it.
    for path in (workdir, workdir / SUBMISSION_DIR):
        if path.is_dir():
            os.chmod(path, 0o755)
    shutil.rmtree(workdir, ignore_errors=True)


class LocalRunner:
    """Runs the harness with the host's Python, in a temporary folder, under rlimits."""

    name = "local"
    isolates = False  # no container: the harness cannot switch users or reap by uid here
    warning = (
        "local runner: submissions run as plain processes on this machine, with no container: "
        "no network isolation, no read-only filesystem, no memory or process-count cgroup. "
        "Use it only for self-checks on code you trust; grade classes with the docker runner."
    )

    def __init__(self, *, harness: Path | None = None, python: str | None = None) -> None:
        self.harness = harness or SANDBOX_DIR / "run_harness.py"
        self.python = python or sys.executable

    def run(
        self, *, source: bytes, filename: str, plan: bytes, limits: ContainerLimits, on_stdout: OnStdout | None = None
    ) -> RawRun:
        if not _valid_filename(filename):
            raise ValueError(f"not a plain file name: {filename!r}")
        workdir = Path(tempfile.mkdtemp(prefix="autograd-grader-"))
        process: subprocess.Popen[bytes] | None = None
        readers: list[threading.Thread] = []
        listener = Listener(on_stdout)
        try:
            _lay_out(workdir, plan=plan, source=source, filename=filename)
            # The harness's scratch folders (and anything the file writes to a temporary folder)
            # go inside this run's folder, removed with it: nothing of a run is left in /tmp.
            scratch = workdir / "tmp"
            scratch.mkdir(mode=0o700)
            env = {**SANDBOX_ENV, "PATH": "/usr/local/bin:/usr/bin:/bin", "TMPDIR": str(scratch)}
            started = time.monotonic()
            try:
                process = subprocess.Popen(
                    [self.python, *HARNESS_FLAGS, str(self.harness), "--workdir", str(workdir)],
                    cwd=workdir,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    close_fds=True,
                    start_new_session=True,  # its own process group, so one killpg gets all
                    # Runs between fork and exec, so the limits are in place before the first
                    # instruction of the harness. It only calls setrlimit (no locks, no imports),
                    # which keeps it safe when other threads (parallel runs) exist.
                    preexec_fn=_rlimits(limits),  # noqa: PLW1509
                )
            except OSError as error:
                raise InfraError(f"cannot start the harness with {self.python}: {error}") from error
            if process.stdout is None or process.stderr is None:
                raise InfraError("the harness started without output pipes")

            stdout, stderr = bytearray(), bytearray()
            over = threading.Event()
            readers += [
                threading.Thread(
                    target=_read_capped,
                    args=(process.stdout, stdout, limits.stdout_bytes, over, listener),
                    daemon=True,
                ),
                threading.Thread(target=_read_tail, args=(process.stderr, stderr), daemon=True),
            ]
            for reader in readers:
                reader.start()

            deadline = started + limits.wall_seconds
            timed_out = False
            # Poll so that the stdout cap is acted on as soon as it is hit, not at exit.
            while process.poll() is None and not over.is_set():
                if time.monotonic() >= deadline:
                    timed_out = True
                    break
                over.wait(timeout=min(0.05, max(deadline - time.monotonic(), 0.0)))
            killed = timed_out or over.is_set()
            # Always: the harness may have left children behind in its group.
            _kill_group(process)
            try:
                process.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired as error:
                raise InfraError(f"the harness did not stop {KILL_GRACE_S:g} s after SIGKILL") from error
            elapsed = time.monotonic() - started
            # A process that left our group may still hold the pipes open; do not wait on it
            # for long (its reader keeps going, as a daemon thread, until it lets go).
            joined_by = time.monotonic() + READER_JOIN_S
            for reader in readers:
                reader.join(timeout=max(joined_by - time.monotonic(), 0.0))

            code = process.returncode
            return RawRun(
                stdout=bytes(stdout),
                stdout_truncated=over.is_set(),
                stderr_tail=bytes(stderr),
                # Death by signal N is -N here but 128+N from a container: report it the
                # container's way so the two runners read the same downstream.
                exit_code=None if killed else (128 - code if code < 0 else code),
                timed_out=timed_out,
                oom_killed=False,  # no cgroup, so no OOM-kill to observe
                elapsed=elapsed,
                runner=self.name,
                image=self.python,
            )
        finally:
            if process is not None and process.poll() is None:
                _kill_group(process)
                process.wait()
            if process is not None and not any(reader.is_alive() for reader in readers):
                for pipe in (process.stdout, process.stderr):
                    if pipe is not None:
                        pipe.close()  # readers never started (or are done): ours to close
            _remove_tree(workdir)
            listener.close()
