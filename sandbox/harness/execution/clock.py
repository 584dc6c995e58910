"""Time as the grader counts it: the time a run *used*, never the time a busy machine took.

A run is charged the larger of two figures, both counted by the kernel:

- its CPU time: on the sandbox's cgroup when this process has one of its own (every process
  the run started counts, threads and grandchildren included), else its process and the
  children it waited for (the local runner);
- its wall time minus the time its main thread spent ready to run but waiting for a core
  (``run_delay`` in ``/proc/<pid>/schedstat``): time spent sleeping, blocked or waiting for
  another process is charged; time lost to other work on the machine is not.

So a limit means the same on an idle machine and on a saturated one: a CPU-bound check that
takes 3 s idle is charged about 3 s while other processes hold every core, and a file that
sleeps is charged its sleep.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

CpuSource = Callable[[], float]  # CPU seconds used so far by whatever is being counted
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_V2 = "/sys/fs/cgroup"
_V1 = "/sys/fs/cgroup/cpuacct"


def _read(path: str) -> str:
    with open(path, encoding="ascii") as handle:
        return handle.read()


def _lists_self(procs: str) -> bool:
    try:
        return str(os.getpid()) in _read(procs).split()
    except OSError:
        return False


def sandbox_cpu() -> CpuSource | None:
    """The CPU time of this sandbox's own cgroup, when this process sits in one of its own
    (a container's): cgroup v2's ``cpu.stat``, or v1's ``cpuacct.usage``. None elsewhere (the
    local runner shares its cgroup with the rest of the machine)."""
    if os.path.exists(f"{_V2}/cpu.stat") and _lists_self(f"{_V2}/cgroup.procs"):

        def v2() -> float:
            for line in _read(f"{_V2}/cpu.stat").splitlines():
                name, _, value = line.partition(" ")
                if name == "usage_usec":
                    return int(value) / 1e6
            raise OSError("cpu.stat has no usage_usec")

        source: CpuSource = v2
    elif os.path.exists(f"{_V1}/cpuacct.usage") and _lists_self(f"{_V1}/cgroup.procs"):

        def v1() -> float:
            return int(_read(f"{_V1}/cpuacct.usage")) / 1e9

        source = v1
    else:
        return None
    try:
        source()
    except (OSError, ValueError):
        return None
    return source


def process_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` (every thread) and of the children it has waited for."""
    fields = _read(f"/proc/{pid}/stat").rpartition(")")[2].split()
    # After the command: state, ppid, ... utime is field 14 of the whole line, 12 here (0-based 11).
    return sum(int(v) for v in fields[11:15]) / _TICK


def run_delay(pid: int) -> float:
    """Seconds ``pid``'s main thread has spent ready to run but waiting for a core."""
    return int(_read(f"/proc/{pid}/schedstat").split()[1]) / 1e9


def own_cpu() -> float:
    times = os.times()
    return times.user + times.system


@dataclass
class _Sample:
    wall: float
    cpu: float
    delay: float


class RunClock:
    """The charged time of one child, from when it was started (or last ``restart``).

    ``sandbox``: the sandbox's cgroup CPU source, when there is one; otherwise the child's own
    process figures are read. Readings are taken when asked; once the child has gone, what can
    no longer be read keeps its last value (``used`` never goes down)."""

    def __init__(self, pid: int, sandbox: CpuSource | None) -> None:
        self.pid = pid
        self.sandbox = sandbox
        self.last = _Sample(time.monotonic(), 0.0, 0.0)
        self.last = self._sample()
        self.origin = self.last
        self.total = 0.0  # charged before the last restart

    def _sample(self) -> _Sample:
        now = time.monotonic()
        try:
            delay = run_delay(self.pid)
        except (OSError, ValueError, IndexError):
            delay = self.last.delay  # the child has gone (or is going)
        try:
            cpu = self.sandbox() if self.sandbox is not None else process_cpu(self.pid)
        except (OSError, ValueError, IndexError):
            return _Sample(self.last.wall, self.last.cpu, self.last.delay)  # nothing new can be read
        return _Sample(now, cpu, delay)

    @staticmethod
    def _between(start: _Sample, end: _Sample) -> float:
        waited = (end.wall - start.wall) - max(0.0, end.delay - start.delay)
        return max(end.cpu - start.cpu, waited, 0.0)

    def used(self) -> float:
        """Charged seconds since the last restart, read now."""
        self.last = self._sample()
        return self._between(self.origin, self.last)

    def restart(self) -> None:
        """Count from now on (the child's import is done, or it made progress)."""
        self.total += self.used()
        self.origin = self.last

    def spent(self) -> float:
        """Everything this child was charged, across restarts, as of the last reading."""
        return self.total + self._between(self.origin, self.last)


class Budget:
    """The grading's own time, in charged seconds: every child's charge, plus this process's
    CPU (parsing, making mutants). Past ``wall_seconds`` of real time the machine, not the
    submission, is too slow: ``machine_late`` says so, and nothing more is run."""

    def __init__(self, seconds: float, wall_seconds: float) -> None:
        self.seconds = seconds
        self.children = 0.0
        self.own_start = own_cpu()
        self.wall_end = time.monotonic() + wall_seconds

    def used(self) -> float:
        return self.children + (own_cpu() - self.own_start)

    def left(self) -> float:
        return self.seconds - self.used()

    def charge(self, seconds: float) -> None:
        self.children += seconds

    def machine_late(self) -> bool:
        return time.monotonic() >= self.wall_end
