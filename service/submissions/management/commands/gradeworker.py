"""A grading worker: removes the sandboxes a killed worker on this host left, then takes jobs
from the queue (procrastinate's worker) until SIGTERM, finishing the job in hand first."""

from __future__ import annotations

import os
from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from ...queue import LANES

MAINTENANCE = "maintenance"


class Command(BaseCommand):
    help = "Run a grading worker (lanes: self_check, submit, regrade, and the maintenance jobs)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--queues", default=",".join((*LANES, MAINTENANCE)), help="comma-separated lanes")
        parser.add_argument("--concurrency", type=int, default=max(1, (os.cpu_count() or 2) // 2))

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.GRADER_SANDBOX == "docker":
            from grader.runners.docker import reap_orphans

            removed = reap_orphans()
            if removed:
                self.stderr.write(f"Removed {removed} sandbox container(s)/volume(s) left by a killed grader.")
        call_command(
            "procrastinate",
            "worker",
            "--queues",
            options["queues"],
            "--concurrency",
            str(options["concurrency"]),
        )
