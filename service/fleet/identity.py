"""What a job must be graded with, and the queues that carry it.

Every job names the sandbox recipe (``grader.image.recipe_digest``: the harness and the
Dockerfile of the release that received it) and the SHA-256 of the rubric file. Its queue is
``<lane>.<recipe>``, and a worker listens only to its own recipe's queues: a host running
another release, or still on an old image, takes none of these jobs, so nothing is graded
with another sandbox. A worker also checks the rubric before grading."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from grader.image import SANDBOX_DIR, recipe_digest

from ..submissions.queue import Lane


@functools.lru_cache(maxsize=1)
def current_recipe() -> str:
    """This release's sandbox recipe (read once: a release does not change under a process)."""
    return recipe_digest(SANDBOX_DIR)


def queue_for(lane: Lane | str, recipe: str | None = None) -> str:
    name = lane.value if isinstance(lane, Lane) else lane
    return f"{name}.{recipe or current_recipe()}"


@functools.lru_cache(maxsize=32)
def _file_sha256(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def rubric_sha256(path: Path) -> str:
    stat = path.stat()
    return _file_sha256(str(path), stat.st_mtime_ns, stat.st_size)
