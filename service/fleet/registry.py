"""A worker's record in the database, kept fresh by a heartbeat thread."""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass

from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone

from .models import GradingWorker

log = logging.getLogger(__name__)
HEARTBEAT_SECONDS = 10.0
_registered: list[Identity] = []  # this process's registration, while it lasts


def image_id() -> str:
    """The sandbox image this worker process grades with ("" outside a registered worker)."""
    return _registered[-1].image_id if _registered else ""


@dataclass(frozen=True)
class Identity:
    recipe: str
    image: str
    image_id: str
    lanes: tuple[str, ...]
    concurrency: int


class Registration:
    """Registers this process on entry, heartbeats every 10 s, and marks it stopped on exit."""

    def __init__(self, identity: Identity, interval: float = HEARTBEAT_SECONDS) -> None:
        self.identity = identity
        self.interval = interval
        self.worker: GradingWorker | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="worker-heartbeat", daemon=True)

    def __enter__(self) -> GradingWorker:
        self.worker = GradingWorker.objects.create(
            host=socket.gethostname()[:200],
            pid=os.getpid(),
            recipe=self.identity.recipe[:12],
            image=self.identity.image[:200],
            image_id=self.identity.image_id[:100],
            lanes=",".join(self.identity.lanes)[:200],
            concurrency=self.identity.concurrency,
        )
        _registered.append(self.identity)
        self._thread.start()
        return self.worker

    def _beat(self) -> None:
        assert self.worker is not None
        while not self._stop.wait(self.interval):
            try:
                GradingWorker.objects.filter(pk=self.worker.pk).update(last_heartbeat=timezone.now())
            except Exception as error:  # the database restarting: the next beat tries again
                log.warning("heartbeat failed: %s", error)
                connection.close()  # this thread's connection; the next beat opens a new one
        connection.close()

    def __exit__(self, *exc: object) -> None:
        if self.identity in _registered:
            _registered.remove(self.identity)
        self._stop.set()
        self._thread.join(timeout=self.interval + 5)
        if self.worker is not None:
            close_old_connections()
            try:
                GradingWorker.objects.filter(pk=self.worker.pk).update(stopped_at=timezone.now())
            except DatabaseError as error:  # the database is gone: the silence says it instead
                log.warning("could not record the stop: %s", error)
