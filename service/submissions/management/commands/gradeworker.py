"""A grading worker: makes sure this host has the sandbox image (building it if needed),
removes the sandboxes a killed worker on this host left, registers itself (host, image,
lanes, heartbeat), then takes jobs from the queue (procrastinate's worker) until SIGTERM,
finishing the jobs in hand first."""

from __future__ import annotations

import logging
import os
import time
from argparse import ArgumentParser
from typing import Any

import psycopg
from django.conf import settings
from django.db import DatabaseError, connection, connections
from procrastinate.exceptions import ConnectorException
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from ....fleet.identity import current_recipe, queue_for
from ....fleet.registry import Identity, Registration
from ....lti.passback import LMS_QUEUE
from ... import grading
from ...queue import LANES

MAINTENANCE = "maintenance"
LMS = LMS_QUEUE  # grades sent to LMS gradebooks: no sandbox, so no recipe in its queue's name
PLAIN = (MAINTENANCE, LMS)


class _LostDatabase(logging.Handler):
    """procrastinate's worker stops itself, without raising, when its connection to the
    database fails; that stop must not be taken for a SIGTERM."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.said = ""

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "action", "") == "side_task_failed":
            self.said = str(getattr(record, "exception", "") or record.getMessage()).strip() or "database error"


def _wait_for_database(pause: float = 2.0) -> None:
    """Until the database answers (SIGTERM meanwhile ends the process: no job is in hand)."""
    while True:
        connections.close_all()
        try:
            connection.ensure_connection()
            return
        except DatabaseError:
            time.sleep(pause)


def default_concurrency() -> int:
    """One sandbox per core: a grading keeps one core busy."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


class Command(BaseCommand):
    help = "Run a grading worker (lanes: self_check, submit, regrade, the LMS grade passback, and the maintenance jobs)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--queues", default=",".join((*LANES, *PLAIN)), help="comma-separated lanes")
        parser.add_argument("--concurrency", type=int, default=default_concurrency())

    def handle(self, *args: Any, **options: Any) -> None:
        queues = tuple(q for q in options["queues"].split(",") if q)
        unknown = set(queues) - {*LANES, *PLAIN}
        if unknown or not queues:
            raise CommandError(f"unknown lane(s) {sorted(unknown)}; lanes are {', '.join((*LANES, *PLAIN))}")
        concurrency = options["concurrency"]
        if not 1 <= concurrency <= 64:
            raise CommandError("--concurrency must be between 1 and 64")
        image, image_id = self._image()
        self._warm(concurrency)
        recipe = current_recipe()
        # A lane's queue carries the recipe: this worker takes only jobs its own sandbox may grade.
        listened = [name if name in PLAIN else queue_for(name, recipe) for name in queues]
        identity = Identity(recipe, image, image_id, queues, concurrency)
        try:
            self._take_jobs(identity, listened, concurrency)
        finally:
            grading.stop_warm_pool()  # the warm sandboxes nobody took are removed

    def _take_jobs(self, identity: Identity, listened: list[str], concurrency: int) -> None:
        while True:
            lost = _LostDatabase()
            procrastinate_log = logging.getLogger("procrastinate")
            procrastinate_log.addHandler(lost)
            try:
                with Registration(identity):
                    call_command(
                        "procrastinate", "worker", "--queues", ",".join(listened), "--concurrency", str(concurrency)
                    )
            except (ConnectorException, DatabaseError, psycopg.Error) as error:
                lost.said = str(error).strip()
            finally:
                procrastinate_log.removeHandler(lost)
            if not lost.said:
                return  # stopped by SIGTERM or Ctrl-C, the jobs in hand finished
            # The database restarted or the network dropped: the jobs in hand are retried (this
            # worker's old registration stops heartbeating), and it comes back with the database.
            self.stderr.write(f"Lost the database ({lost.said}); waiting for it to come back.")
            _wait_for_database()


    def _warm(self, concurrency: int) -> None:
        """Sandboxes started ahead of the jobs: one per slot unless WARM_SANDBOXES says otherwise,
        made for the limits of the newest assignment's rubric."""
        size = concurrency if settings.WARM_SANDBOXES < 0 else settings.WARM_SANDBOXES
        if settings.GRADER_SANDBOX != "docker" or size == 0:
            return
        from grader.errors import GraderError
        from grader.pipeline import container_limits
        from grader.rubric import load_rubric

        from ....courses.models import Assignment

        try:
            newest = Assignment.objects.order_by("-due_at").first()
            rubric = newest.rubric() if newest is not None else load_rubric()
        except (GraderError, OSError, DatabaseError):  # the database not up yet: the shipped rubric's limits
            rubric = load_rubric()
        grading.start_warm_pool(size, idle_seconds=settings.WARM_IDLE_SECONDS, expect=container_limits(rubric))
        self.stderr.write(f"Keeping {size} sandbox(es) warm.")

    def _image(self) -> tuple[str, str]:
        if settings.GRADER_SANDBOX != "docker":
            return "", ""
        import docker
        import requests

        from grader.docker_engine import docker_client
        from grader.errors import GraderError
        from grader.image import ensure_image
        from grader.runners.docker import reap_orphans

        try:
            tag = ensure_image(log=lambda line: self.stderr.write(line))
            image_id = str(docker_client().images.get(tag).id)
        except (GraderError, docker.errors.DockerException, requests.exceptions.RequestException) as error:
            raise CommandError(f"this host cannot grade: {error}") from error
        removed = reap_orphans()
        if removed:
            self.stderr.write(f"Removed {removed} sandbox container(s)/volume(s) left by a killed grader.")
        return tag, image_id
