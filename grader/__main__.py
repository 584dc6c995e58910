"""python -m grader: the same command line as `grader`."""

from __future__ import annotations

from .cli import main

main()
