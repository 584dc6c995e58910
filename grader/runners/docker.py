"""Run the harness on one submission in a fresh, locked-down Docker container.

Everything inside the container is attacker-controlled (design.md, "Trust boundary"). The
host therefore only ever: writes the inputs into a fresh volume before start, reads stdout
and stderr through capped streams, enforces the wall deadline itself, and removes the
container and the volume afterwards whatever happened. ``create_container`` (in
``docker_settings``) is the one place that creates containers, so every run gets the same
hardening.

Docker and requests errors never leave this module as they are: a failure of the sandbox
is an InfraError (the student is not blamed, the batch may retry).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import select
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import docker
import docker.errors
import requests.exceptions
from docker.models.containers import Container
from docker.models.volumes import Volume
from docker.utils.socket import STDERR, STDOUT, frames_iter

from grader.errors import InfraError, SandboxUnavailable
from grader.image import LABEL, docker_client, ensure_image
from grader.runners.base import ContainerLimits, Listener, OnStdout, RawRun
from grader.runners.docker_settings import (
    HARNESS_COMMAND,
    WORKDIR,
    accepts_swappiness,
    create_container,
    run_labels,
    submission_archive,
)
from grader.runners.warm_pool import Warm, WarmPool
from sandbox.harness.execution import inputs

log = logging.getLogger(__name__)
STDERR_TAIL_BYTES = 4096
KILL_GRACE_S = 15.0  # how long a killed container may take to be reported stopped
READER_JOIN_S = 5.0

DockerFailure = (docker.errors.DockerException, requests.exceptions.RequestException)


class _Output:
    """Bytes read from the container: stdout up to the cap, the tail of stderr."""

    def __init__(self, cap: int, listener: Listener | None = None) -> None:
        self.cap = cap
        self.listener = listener or Listener(None)
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.truncated = False
        self.error: BaseException | None = None
        self.done = threading.Event()

    def feed(self, out: bytes | None, err: bytes | None) -> bool:
        """Take one chunk; False once stdout went past the cap (the run must stop)."""
        if err:
            self.stderr += err
            del self.stderr[:-STDERR_TAIL_BYTES]
        if out:
            room = self.cap - len(self.stdout)
            kept = out[: max(room, 0)]
            self.stdout += kept
            self.listener(kept)
            if len(out) > room:
                self.truncated = True
                return False
        return True


def _pump(first: Iterable[Any], reattach: Any, output: _Output, deadline: float) -> None:
    """Reader thread: copy demuxed (stdout, stderr) chunks into ``output`` until EOF or cap.

    docker-py opens attach sockets without a read timeout, so a silent container is simply
    waited for. Should a read time out anyway (a client or proxy with its own timeout), we
    attach again within the deadline (new output only): the stream was idle, so at most what
    arrived in the instant between the two is lost.
    """
    stream: Iterable[Any] = first
    try:
        while True:
            try:
                for out, err in stream:
                    if not output.feed(out, err):
                        return
                return
            except (TimeoutError, requests.exceptions.ReadTimeout):
                if time.monotonic() >= deadline:
                    return
                stream = reattach()
    except (OSError, ValueError, struct.error, *DockerFailure) as error:
        # Reported to the main thread, which turns it into an InfraError.
        output.error = error
    finally:
        output.done.set()


# docker-py's frame reader, given the type its docstring promises. Typed by assignment, not
# by a `type: ignore`, so mypy is clean with or without the docker stubs installed.
_frames_iter: Callable[[Any, bool], Iterator[tuple[int, bytes]]] = frames_iter


def _frames(sock: Any) -> Iterator[tuple[int, bytes]]:
    """(stream number, bytes) frames of a non-tty attach socket."""
    return _frames_iter(sock, False)


def _close(stream: Any) -> None:
    """Close an attach socket and everything under it (file object, socket, HTTP response).

    shutdown() first: a reader blocked in poll()/recv() on this socket wakes up only on
    shutdown, not on close() from another thread.
    """
    raw = getattr(stream, "_sock", stream)
    shutdown = getattr(raw, "shutdown", None)
    if callable(shutdown):
        with contextlib.suppress(OSError):  # not connected any more
            shutdown(socket.SHUT_RDWR)
    for part in (stream, getattr(stream, "_sock", None), getattr(stream, "_response", None)):
        close = getattr(part, "close", None)
        if callable(close):
            # Already closed underneath (http.client raises ValueError then): nothing to release.
            with contextlib.suppress(OSError, ValueError):
                close()


def _kill(container: Container) -> None:
    try:
        container.kill()
    except docker.errors.APIError as error:
        if error.status_code != 409:  # 409: it had already stopped, which is what we wanted
            raise


def _remove(container: Container | None, volume: Volume | None) -> list[str]:
    """Remove both; never raises, returns what could not be removed."""
    problems: list[str] = []
    if container is not None:
        try:
            container.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        except DockerFailure as error:
            problems.append(f"container {container.id}: {error}")
    if volume is not None:
        try:
            volume.remove(force=True)
        except docker.errors.NotFound:
            pass
        except DockerFailure as error:
            problems.append(f"volume {volume.name}: {error}")
    return problems


class DockerRunner:
    """Runs each submission in its own container built from the sandbox image."""

    name = "docker"
    isolates = True  # the harness drops student code to the student uid and reaps what it leaves

    def __init__(
        self,
        *,
        image: str | None = None,
        client: docker.DockerClient | None = None,
        command: Sequence[str] = HARNESS_COMMAND,
        labels: Mapping[str, str] | None = None,
        pool: WarmPool | None = None,
    ) -> None:
        self._client = client or docker_client()
        # Extra labels (a batch id, a test session) make one caller's runs findable among
        # others sharing the engine; ours are applied last so they cannot be overridden. The
        # owner label lets a later run remove what a killed grader (kill -9) left behind.
        self._labels = {**(labels or {}), OWNER_LABEL: owner_id()}
        self.image = image or ensure_image()
        self._command = tuple(command)  # tests of the sandbox itself swap the harness out
        self._swappiness: bool | None = None
        try:
            self.image_id = str(self._client.images.get(self.image).id)
        except docker.errors.ImageNotFound as error:
            raise SandboxUnavailable(
                f"sandbox image {self.image} is missing; build it with grader.image.ensure_image()"
            ) from error
        except DockerFailure as error:
            raise SandboxUnavailable(f"cannot look up sandbox image {self.image}: {error}") from error
        # Containers started ahead of demand (grader.runners.warm_pool), shared by the runners of
        # one process; none: every run creates and starts its own. ``warm_reserve``: how many
        # ready ones a run must leave to others (a counted job leaves one for a self-check).
        self.pool = pool
        self.warm_reserve = 0

    def start_warm(self, size: int, *, idle_seconds: float = 600.0, expect: ContainerLimits | None = None) -> WarmPool:
        """Keep ``size`` containers started and waiting; ``expect``: the limits to make them for."""
        if self.pool is None:
            self.pool = WarmPool(
                docker_client(),  # the filler's own client: it works while runs use theirs
                self.image_id,
                size=size,
                idle_seconds=idle_seconds,
                labels=self._labels,
                swappiness=self._engine_accepts_swappiness(),
            )
        if expect is not None:
            self.pool.expect(expect)
        return self.pool

    def close(self) -> None:
        """Remove the warm containers still waiting."""
        if self.pool is not None:
            self.pool.close()

    def _engine_accepts_swappiness(self) -> bool:
        if self._swappiness is None:
            self._swappiness = accepts_swappiness(self._client.info())
        return self._swappiness

    def run(
        self, *, source: bytes, filename: str, plan: bytes, limits: ContainerLimits, on_stdout: OnStdout | None = None
    ) -> RawRun:
        if not _FILENAME_OK(filename):
            raise ValueError(f"not a plain file name: {filename!r}")
        warm = None
        fits = len(plan) <= inputs.MAX_PLAN and len(source) <= inputs.MAX_SOURCE  # what a warm harness accepts
        if self.pool is not None and self.pool.image_id == self.image_id and fits:
            try:
                warm = self.pool.take(limits, reserve=self.warm_reserve)
            except DockerFailure as error:  # the pool's engine calls: a cold run says what is wrong
                log.warning("no warm sandbox (%s); grading in a fresh one", error)
        if warm is not None:
            return self._run_warm(warm, source=source, filename=filename, plan=plan, limits=limits, on_stdout=on_stdout)
        return self._run_cold(source=source, filename=filename, plan=plan, limits=limits, on_stdout=on_stdout)

    def _run_warm(
        self,
        warm: Warm,
        *,
        source: bytes,
        filename: str,
        plan: bytes,
        limits: ContainerLimits,
        on_stdout: OnStdout | None = None,
    ) -> RawRun:
        """The inputs go to a started container's harness; then it is a cold run's twin. Should
        the container fail before it took them, the run goes cold instead: never charged."""
        container = self._client.containers.prepare_model({"Id": warm.container_id})
        finished = False
        try:
            try:
                _send(warm.sock, inputs.header(plan, source, filename) + plan + source)
                early = _acknowledged(warm)
            except OSError as error:
                early, why = None, str(error)
            else:
                why = "it did not take its inputs"
            if early is None:
                log.warning("a warm sandbox failed before its run (%s); grading in a fresh one", why)
                _close(warm.sock)
                _remove(container, None)
                return self._run_cold(source=source, filename=filename, plan=plan, limits=limits, on_stdout=on_stdout)
            raw = self._execute(container, limits, warm=warm, early=early, on_stdout=on_stdout)
            finished = True
            return raw
        except DockerFailure as error:
            raise InfraError(f"docker failed while grading: {error}") from error
        finally:
            problems = _remove(container, self._client.volumes.prepare_model({"Name": warm.volume}))
            if problems and finished:
                raise InfraError("could not clean up: " + "; ".join(problems))

    def _run_cold(
        self, *, source: bytes, filename: str, plan: bytes, limits: ContainerLimits, on_stdout: OnStdout | None = None
    ) -> RawRun:
        archive = submission_archive(plan=plan, source=source, filename=filename)
        run_id = uuid.uuid4().hex
        container: Container | None = None
        volume: Volume | None = None
        finished = False
        try:
            volume = self._client.volumes.create(
                name=f"{LABEL}-{run_id}", driver="local", labels=run_labels(self._labels, run_id)
            )
            container = create_container(
                self._client,
                image=self.image_id,
                volume=str(volume.name),
                limits=limits,
                run_id=run_id,
                command=self._command,
                swappiness=self._engine_accepts_swappiness(),
                labels=self._labels,
            )
            # Into the volume, before start: the root filesystem is read-only, and no code
            # of the submission's may run before its inputs are complete.
            if not container.put_archive(WORKDIR, archive):
                raise InfraError("the engine refused the submission archive", where=container.id)
            raw = self._execute(container, limits, on_stdout=on_stdout)
            finished = True
            return raw
        except DockerFailure as error:
            raise InfraError(f"docker failed while grading: {error}") from error
        finally:
            problems = _remove(container, volume)
            if problems and finished:
                # The grade is sound, but a leak means the engine misbehaves: say so loudly.
                raise InfraError("could not clean up: " + "; ".join(problems))

    def _execute(
        self,
        container: Container,
        limits: ContainerLimits,
        *,
        warm: Warm | None = None,
        early: Sequence[tuple[bytes | None, bytes | None]] = (),
        on_stdout: OnStdout | None = None,
    ) -> RawRun:
        """Start (unless warm: started and attached already), read with caps, stop at the
        deadline, collect the final state."""
        listener = Listener(on_stdout)
        output = _Output(limits.stdout_bytes, listener)
        streams: list[Any] = []

        def attach(logs: bool) -> Iterator[Any]:
            # The raw socket, not container.attach(): its generator hides the socket, which
            # then lingers until garbage collection. We close it ourselves in finally.
            sock = self._client.api.attach_socket(
                str(container.id), params={"stdout": 1, "stderr": 1, "stream": 1, "logs": int(logs)}
            )
            streams.append(sock)
            return ((data, None) if kind == STDOUT else (None, data) for kind, data in _frames(sock))

        try:
            if warm is None:
                # Attached before start, so no output is produced before we listen.
                first = attach(True)
                container.start()
            else:
                streams.append(warm.sock)
                rest = ((data, None) if kind == STDOUT else (None, data) for kind, data in warm.frames)
                first = itertools.chain(early, rest)  # what came with the acknowledgement first
            started = time.monotonic()
            deadline = started + limits.wall_seconds
            reader = threading.Thread(
                target=_pump,
                args=(first, lambda: attach(False), output, deadline),
                name=f"{LABEL}-reader",
                daemon=True,
            )
            reader.start()
            output.done.wait(timeout=max(deadline - time.monotonic(), 0.0))

            killed = timed_out = False
            if output.truncated:
                # Stop listening first: the daemon blocks writing to a socket nobody reads,
                # and the container cannot finish exiting until its output is delivered.
                for stream in streams:
                    _close(stream)
                _kill(container)
                killed = True
            elif not output.done.is_set():
                _kill(container)
                timed_out = killed = True
            elif output.error is not None:
                raise InfraError(f"reading the sandbox output failed: {output.error}") from output.error

            # The streams ended (or we killed): now the container itself must stop.
            try:
                container.wait(timeout=KILL_GRACE_S if killed else max(deadline - time.monotonic(), 0.0) + 1.0)
            except requests.exceptions.ReadTimeout:
                if killed:
                    raise InfraError(f"the container did not stop {KILL_GRACE_S:g} s after kill") from None
                # Output closed but the processes lived on until the deadline.
                _kill(container)
                timed_out = killed = True
                try:
                    container.wait(timeout=KILL_GRACE_S)
                except requests.exceptions.ReadTimeout:
                    raise InfraError(f"the container did not stop {KILL_GRACE_S:g} s after kill") from None
            elapsed = time.monotonic() - started

            reader.join(timeout=READER_JOIN_S)
            container.reload()
            state = container.attrs.get("State") or {}
            exit_code = state.get("ExitCode")
            return RawRun(
                stdout=bytes(output.stdout),
                stdout_truncated=output.truncated,
                stderr_tail=bytes(output.stderr),
                exit_code=None if killed or not isinstance(exit_code, int) else exit_code,
                timed_out=timed_out,
                oom_killed=bool(state.get("OOMKilled", False)),
                elapsed=elapsed,
                runner=self.name,
                image=self.image_id,
            )
        finally:
            # Shuts the sockets down, which also wakes a reader blocked in recv().
            for stream in streams:
                _close(stream)
            listener.close()


OWNER_LABEL = f"{LABEL}.owner"


def _FILENAME_OK(filename: str) -> bool:
    try:
        submission_archive(plan=b"", source=b"", filename=filename)
    except ValueError:
        return False
    return True


ACK_SECONDS = 10.0  # a warm harness answers its inputs at once; one that does not is replaced


def _acknowledged(warm: Warm) -> list[tuple[bytes | None, bytes | None]] | None:
    """Read until the harness says it took its inputs; what it printed with that, or None when
    the stream ended or stayed silent first (the container failed while it waited)."""
    raw = getattr(warm.sock, "_sock", warm.sock)
    deadline = time.monotonic() + ACK_SECONDS
    early: list[tuple[bytes | None, bytes | None]] = []
    try:
        while True:
            # docker-py's frame reader waits without a limit: wait here, with one.
            ready, _, _ = select.select([raw], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            frame = next(warm.frames, None)
            if frame is None:
                return None  # the stream ended: the container is gone
            kind, data = frame
            if kind == STDERR and inputs.ACK in data:
                before, _, after = data.partition(inputs.ACK)
                rest = before + after.removeprefix(b"\n")
                return [*early, (None, rest)] if rest else early
            early.append((data, None) if kind == STDOUT else (None, data))
    except (OSError, ValueError):
        return None


def _send(sock: Any, data: bytes) -> None:
    """Write to an attach socket (docker-py hands back the socket itself or a SocketIO over it)."""
    raw = getattr(sock, "_sock", sock)
    raw.sendall(data)


def owner_id(pid: int | None = None) -> str:
    return f"{socket.gethostname()}:{os.getpid() if pid is None else pid}"


def _owner_alive(owner: str) -> bool:
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's run, or not ours to judge: leave it
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, under another user
    return True


def reap_orphans(client: docker.DockerClient | None = None) -> int:
    """Remove sandbox containers and volumes whose grader process on this host is gone (a
    grader killed with kill -9 cannot run its own cleanup); returns how many went."""
    client = client or docker_client()
    removed = 0
    try:
        for container in client.containers.list(all=True, filters={"label": [LABEL, OWNER_LABEL]}):
            if not _owner_alive(str(container.labels.get(OWNER_LABEL, ""))) and not _remove(container, None):
                removed += 1
        for volume in client.volumes.list(filters={"label": [LABEL, OWNER_LABEL]}):
            labels = volume.attrs.get("Labels") or {}
            if not _owner_alive(str(labels.get(OWNER_LABEL, ""))) and not _remove(None, volume):
                removed += 1
    except DockerFailure as error:
        raise InfraError(f"cannot list leftover sandbox containers: {error}") from error
    return removed


def reap_leftovers(client: docker.DockerClient | None = None, *, labels: Mapping[str, str] | None = None) -> int:
    """Remove every container and volume carrying our label; returns how many went.

    For tests and for recovering from a crashed run. It removes runs in progress too, so
    call it only when no grading is running on this engine, or narrow it with ``labels``
    (those given to DockerRunner) to one caller's runs.
    """
    client = client or docker_client()
    wanted = [LABEL] + [f"{key}={value}" for key, value in (labels or {}).items()]
    removed = 0
    try:
        for container in client.containers.list(all=True, filters={"label": wanted}):
            if not _remove(container, None):
                removed += 1
        for volume in client.volumes.list(filters={"label": wanted}):
            if not _remove(None, volume):
                removed += 1
    except DockerFailure as error:
        raise InfraError(f"cannot list leftover sandbox containers: {error}") from error
    return removed
