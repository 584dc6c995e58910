"""Running a grading's parts (``grader.parts``): at once when the host has cores free.

Each sandbox has one CPU. The first part always runs; every other part runs in a sandbox of its
own, at the same time, when one of the host's cores is free, and otherwise after the first part
in the first sandbox. Which cores are free is known across every grading process of the host
(a batch's jobs, the service's worker slots, a self-check next to them): a sandbox that runs
holds a lock on one core's file (``fcntl.flock``, released by the kernel if the process dies).

Either way each part runs the same probes with the same share of the budget, and every run is
charged its own time: how the parts were placed changes how long the grading takes, never
what it finds.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .parts import Merger, Part
from .runners.base import ContainerLimits, RawRun, Runner

STDERR_TAIL = 4096


def usable_cores() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


class Cores:
    """The host's cores as lock files: ``take`` holds a free one, or says there is none."""

    def __init__(self, count: int | None = None, folder: str | None = None) -> None:
        self.count = usable_cores() if count is None else count
        self.folder = folder or os.path.join(tempfile.gettempdir(), f"autograd-grader-cores-{os.geteuid()}")

    def take(self) -> int | None:
        """A file descriptor holding one free core, or None when every core is held."""
        try:
            os.makedirs(self.folder, mode=0o700, exist_ok=True)
            found = os.lstat(self.folder)
        except OSError:
            return None  # cannot tell: run one part at a time
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o022:
            return None  # a folder someone else made (or may write in) decides nothing here
        for core in range(self.count):
            try:
                path = os.path.join(self.folder, f"core{core}")
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            except OSError:
                return None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except OSError:
                os.close(fd)
        return None

    @staticmethod
    def give(fd: int | None) -> None:
        if fd is not None:
            os.close(fd)  # closing releases the lock


HOST_CORES = Cores()


@dataclass(frozen=True)
class Placement:
    """Which parts each sandbox runs, in order: the first sandbox's list always starts with 0."""

    sandboxes: tuple[tuple[int, ...], ...]


def place(count: int, spare: int) -> Placement:
    """``count`` parts with ``spare`` cores free beside the first part's: the first parts that
    find a core run on their own; the rest follow the first part in its sandbox."""
    alone = list(range(1, min(count, spare + 1)))
    first = (0, *(i for i in range(1, count) if i not in alone))
    return Placement((first, *((i,) for i in alone)))


@contextlib.contextmanager
def held_cores(count: int, cores: Cores) -> Iterator[int]:
    """Holds the first part's core when one is free, and up to ``count - 1`` more; yields how
    many more it holds."""
    fds: list[int] = []
    try:
        while len(fds) < count and (fd := cores.take()) is not None:
            fds.append(fd)
        yield max(len(fds) - 1, 0)
    finally:
        for fd in fds:
            cores.give(fd)


Body = Callable[[tuple[int, ...]], bytes]  # the plan for a sandbox that runs these parts


def run_parts(
    runner: Runner,
    *,
    source: bytes,
    filename: str,
    body: Body,
    limits: ContainerLimits,
    nonce: str,
    parts: tuple[Part, ...],
    on_line: Callable[[bytes], None] | None = None,
    cores: Cores | None = None,
) -> RawRun:
    """Run every part, placed as the host's free cores allow (``cores``: the host's, unless
    given); one raw run of them all."""
    with held_cores(len(parts), cores or HOST_CORES) as spare:
        placement = place(len(parts), spare)
        live = Merger(nonce, parts, placement.sandboxes, on_line) if on_line is not None else None
        results: list[RawRun | BaseException | None] = [None] * len(placement.sandboxes)

        def one(index: int) -> None:
            feed = (lambda chunk: live.feed(index, chunk)) if live is not None else None
            try:
                plan = body(placement.sandboxes[index])
                results[index] = runner.run(source=source, filename=filename, plan=plan, limits=limits, on_stdout=feed)
            except BaseException as error:  # re-raised in the caller's thread, below
                results[index] = error

        threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(1, len(placement.sandboxes))]
        for thread in threads:
            thread.start()
        one(0)
        for thread in threads:
            thread.join()
    for result in results:
        if isinstance(result, BaseException):
            raise result
    raws = [r for r in results if isinstance(r, RawRun)]
    merger = Merger(nonce, parts, placement.sandboxes)
    for index, raw in enumerate(raws):
        merger.feed(index, raw.stdout)
        merger.close(index)
    return joined(raws, bytes(merger.stdout))


def joined(raws: list[RawRun], stdout: bytes) -> RawRun:
    """Several sandboxes' runs as one: any limit one of them met, the latest of their ends."""
    first = raws[0]
    codes = [r.exit_code for r in raws]
    exit_code = next((c for c in codes if c != 0), 0) if None not in codes else None
    return RawRun(
        stdout=stdout,
        stdout_truncated=any(r.stdout_truncated for r in raws),
        stderr_tail=b"".join(r.stderr_tail for r in raws)[-STDERR_TAIL:],
        exit_code=exit_code,
        timed_out=any(r.timed_out for r in raws),
        oom_killed=any(r.oom_killed for r in raws),
        elapsed=max(r.elapsed for r in raws),
        runner=first.runner,
        image=first.image,
    )
