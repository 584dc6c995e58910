"""Print a one-time LTI Dynamic Registration URL for an LMS admin to paste into their LMS."""

from __future__ import annotations

import getpass
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ...registering import new_registration_url


class Command(BaseCommand):
    help = "Print a one-time URL an LMS admin pastes into the LMS to register the grader (LTI Dynamic Registration)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--hours", type=int, default=24, help="how long the URL stays valid (default 24)")
        parser.add_argument("--by", default="", help="who asked for it, for the record (default: this shell's user)")

    def handle(self, *args: Any, **options: Any) -> None:
        hours = options["hours"]
        if not 1 <= hours <= 24 * 14:
            self.stderr.write("--hours must be between 1 and 336")
            raise SystemExit(2)
        self.stdout.write(new_registration_url(options["by"] or f"shell:{getpass.getuser()}", hours))
