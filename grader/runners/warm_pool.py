"""Warm sandboxes: containers created and started ahead of demand, each used for one run.

A warm container is made exactly as a cold one (``create_container``: the same image, limits
and hardening, a fresh volume), attached before start so nothing it prints is missed, and
started with the harness told to wait for its inputs on standard input
(``sandbox.harness.execution.inputs``): it starts its fork server, which never holds a plan, and blocks.
A run takes one, sends the plan and the submission, and from then on it is a cold run's twin:
the same caps, deadline and removal. A container that ran a student's code is removed, never
pooled again. One that died or stopped answering while it waited is removed and replaced; the
run that found it takes another, or a cold container, and is never charged for it.

A filler thread keeps ``size`` containers ready for the limits the last run asked for while
runs keep asking (within ``idle_seconds``), and removes any that waited longer than that; an
idle pool holds nothing, and the next run's ask starts it again. Docker calls are made outside
the pool's lock, and an engine that stops answering only means cold runs meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import docker
import docker.errors
import requests.exceptions
from docker.utils.socket import frames_iter

from grader.image import LABEL
from grader.runners.base import ContainerLimits
from grader.runners.docker_settings import HARNESS_COMMAND, WORKDIR, create_container, run_labels

log = logging.getLogger(__name__)
DockerFailure = (docker.errors.DockerException, requests.exceptions.RequestException)
# docker-py's frame reader, typed by assignment (as in grader.runners.docker).
_frames_iter: Callable[[Any, bool], Iterator[tuple[int, bytes]]] = frames_iter
WARM_FLAG = "--inputs-on-stdin"
WARM_COMMAND: tuple[str, ...] = (*HARNESS_COMMAND, WARM_FLAG)
assert WORKDIR in HARNESS_COMMAND  # the warm harness writes its inputs where a cold one finds them


def pool_key(limits: ContainerLimits) -> ContainerLimits:
    """What a container is made with: every limit but the wall deadline (the host enforces
    that from the moment the inputs are sent)."""
    return replace(limits, wall_seconds=0.0)


@dataclass
class Warm:
    """One started container waiting for its inputs, with the socket attached before start."""

    container_id: str
    volume: str
    sock: Any
    frames: Iterator[tuple[int, bytes]]
    key: ContainerLimits
    ready_at: float


class WarmPool:
    """Ready containers for one runner's image; thread-safe; ``close`` removes what is left."""

    def __init__(
        self,
        client: docker.DockerClient,
        image_id: str,
        *,
        size: int,
        idle_seconds: float = 600.0,
        labels: Mapping[str, str] | None = None,
        swappiness: bool = False,
    ) -> None:
        if size < 1:
            raise ValueError("a warm pool holds at least one container")
        self.client = client
        self.image_id = image_id
        self.size = size
        self.idle_seconds = idle_seconds
        self.labels = dict(labels or {})
        self.swappiness = swappiness
        self._ready: list[Warm] = []
        self._key: ContainerLimits | None = None
        self._wanted_until = 0.0  # made while someone asked within idle_seconds
        self._lock = threading.Condition()
        self._closed = False
        self.made = 0  # containers started, for tests and figures
        self.replaced = 0  # ready containers found dead or stale, removed and made again
        self._thread = threading.Thread(target=self._fill, name=f"{LABEL}-warm-pool", daemon=True)
        self._thread.start()

    # --- taking ----------------------------------------------------------------------------------------

    def expect(self, limits: ContainerLimits) -> None:
        """Start making containers for ``limits`` now (a worker knows its rubric before its first job)."""
        with self._lock:
            doomed = self._want_locked(pool_key(limits))
            self._lock.notify_all()
        self._discard_all(doomed)

    def take(self, limits: ContainerLimits, *, reserve: int = 0) -> Warm | None:
        """A ready container made for ``limits``, or None (a cold run then). ``reserve``: leave
        that many for others (a counted job leaves one for a student's self-check)."""
        key = pool_key(limits)
        while True:
            with self._lock:
                doomed = self._want_locked(key)
                warm = self._ready.pop(0) if not doomed and len(self._ready) > reserve else None
                self._lock.notify_all()  # demand, and one fewer: the filler makes another
            self._discard_all(doomed)
            if warm is None:
                return None
            if self._alive(warm):
                return warm
            self.replaced += 1
            self._discard(warm)

    def _want_locked(self, key: ContainerLimits) -> list[Warm]:
        """Demand for ``key``: containers are made for it until ``idle_seconds`` without one; those
        made for other limits go (returned, to be removed outside the lock)."""
        self._wanted_until = time.monotonic() + self.idle_seconds
        if self._key == key:
            return []
        self._key = key
        doomed, self._ready = self._ready, []
        return doomed

    def _alive(self, warm: Warm) -> bool:
        try:
            state = self.client.api.inspect_container(warm.container_id).get("State") or {}
        except DockerFailure:
            return False
        return bool(state.get("Running")) and not state.get("Restarting")

    # --- filling ---------------------------------------------------------------------------------------

    def _fill(self) -> None:
        backoff = 0.5
        while True:
            with self._lock:
                doomed = self._stale_locked()
                while not doomed and not self._closed and not self._short_locked():
                    self._lock.wait(timeout=max(1.0, self.idle_seconds / 4))
                    doomed = self._stale_locked()
                if self._closed:
                    return
                key = self._key if self._short_locked() else None
            self._discard_all(doomed)
            if key is None:
                continue
            try:
                warm = self._make(key)
            except Exception as error:  # the engine is down or refuses: cold runs meanwhile
                log.warning("could not make a warm sandbox: %s", error)
                time.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            backoff = 0.5
            with self._lock:
                keep = not self._closed and key == self._key
                if keep:
                    self._ready.append(warm)
                    self.made += 1
                    self._lock.notify_all()
            if not keep:
                self._discard(warm)

    def _short_locked(self) -> bool:
        """Fewer ready than wanted, and someone asked within ``idle_seconds``."""
        wanted = self._key is not None and time.monotonic() < self._wanted_until
        return wanted and len(self._ready) < self.size

    def _make(self, key: ContainerLimits) -> Warm:
        run_id = uuid.uuid4().hex
        volume = self.client.volumes.create(
            name=f"{LABEL}-{run_id}", driver="local", labels=run_labels(self.labels, run_id)
        )
        try:
            container = create_container(
                self.client,
                image=self.image_id,
                volume=str(volume.name),
                limits=key,
                run_id=run_id,
                command=WARM_COMMAND,
                swappiness=self.swappiness,
                labels=self.labels,
                stdin=True,
            )
        except BaseException:
            _quietly_remove(self.client, None, str(volume.name))
            raise
        try:
            sock = self.client.api.attach_socket(
                str(container.id), params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1, "logs": 1}
            )
            container.start()
        except BaseException:
            _quietly_remove(self.client, str(container.id), str(volume.name))
            raise
        return Warm(str(container.id), str(volume.name), sock, _frames_iter(sock, False), key, time.monotonic())

    def _stale_locked(self) -> list[Warm]:
        """Ready containers that waited longer than ``idle_seconds``: taken out, to be removed."""
        now = time.monotonic()
        stale = [w for w in self._ready if now - w.ready_at > self.idle_seconds]
        self._ready = [w for w in self._ready if w not in stale]
        return stale

    def _discard_all(self, doomed: list[Warm]) -> None:
        for warm in doomed:
            self._discard(warm)

    def _discard(self, warm: Warm) -> None:
        _close_socket(warm.sock)
        _quietly_remove(self.client, warm.container_id, warm.volume)

    # --- the end ---------------------------------------------------------------------------------------

    def ready(self) -> int:
        with self._lock:
            return len(self._ready)

    def wait_ready(self, count: int, timeout: float) -> bool:
        """For tests and benchmarks: until ``count`` containers wait (False at the timeout)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self._ready) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(timeout=left)
            return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            doomed, self._ready = self._ready, []
            self._lock.notify_all()
        self._discard_all(doomed)
        self._thread.join(timeout=30)


def _close_socket(sock: Any) -> None:
    from grader.runners.docker import _close

    _close(sock)


def _quietly_remove(client: docker.DockerClient, container_id: str | None, volume: str | None) -> None:
    """Remove both, never raising: a leftover is reaped later by its owner label."""
    if container_id is not None:
        try:
            client.api.remove_container(container_id, force=True, v=True)
        except DockerFailure as error:
            if not isinstance(error, docker.errors.NotFound):
                log.warning("could not remove warm sandbox %s: %s", container_id[:12], error)
    if volume is not None:
        try:
            client.api.remove_volume(volume, force=True)
        except DockerFailure as error:
            if not isinstance(error, docker.errors.NotFound):
                log.warning("could not remove warm volume %s: %s", volume, error)
