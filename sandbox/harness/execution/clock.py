"""Time as the grader counts it: the time a run *used*, never the time a busy machine took.

A run is charged the larger of two figures, both counted by the kernel:

- its CPU time: on the sandbox's cgroup when this process has one of its own (every process
  the run started counts, threads and grandchildren included), else its process and the
  children it waited for (the local runner);
- its wall time minus the time its main thread (and a probe child's reporter thread, which
  works while the main thread waits for it) spent ready to run but waiting for a core
  (``run_delay`` in ``/proc/<pid>/task/<tid>/schedstat``) and minus the time the host took from this
  machine's cores (a virtual machine's ``steal`` in ``/proc/stat``, on the cores the sandbox
  may use): time spent sleeping, blocked or waiting for another process is charged; time lost
  to other work on the machine, or on the host under it, is not.

So a limit means the same on an idle machine and on a saturated one: a CPU-bound check that
takes 3 s idle is charged about 3 s while other processes hold every core, and a file that
sleeps is charged its sleep. (The kernel's CPU figures already leave stolen time out; the wall
figure does not, so without the second subtraction a CPU-bound run on a busy host would be
charged the host's other guests.)
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

CpuSource = Callable[[], float]  # CPU seconds used so far by whatever is being counted
StealSource = Callable[[], dict[int, float]]  # seconds the host has taken from each core so far
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
RETRY_SHARE = 0.1  # of a grading's budget, for runs that run again
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


def run_delay(pid: int, threads: int = 1) -> float:
    """Seconds ``pid``'s main thread, and the next ``threads - 1`` threads it started (in order:
    the first is a probe child's reporter, started before any student code), have spent ready to
    run but waiting for a core."""
    if threads == 1:
        return int(_read(f"/proc/{pid}/schedstat").split()[1]) / 1e9
    tids = sorted(int(tid) for tid in os.listdir(f"/proc/{pid}/task"))
    own = [pid, *[tid for tid in tids if tid > pid][: threads - 1]]
    return sum(int(_read(f"/proc/{pid}/task/{tid}/schedstat").split()[1]) for tid in own) / 1e9


@functools.cache  # read at every poll; the cores a sandbox may use do not change under it
def _cores() -> frozenset[int]:
    try:
        return frozenset(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return frozenset()


def host_steal(cores: frozenset[int] | None = None) -> dict[int, float]:
    """Seconds the host has taken from each of ``cores`` (default: the ones this process may
    run on), from ``/proc/stat``'s ``steal`` column; empty where there is none to read."""
    wanted = _cores() if cores is None else cores
    stolen: dict[int, float] = {}
    try:
        lines = _read("/proc/stat").splitlines()
    except OSError:
        return stolen
    for line in lines:
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu" or len(fields) < 8:
            continue
        try:
            core = int(name[3:])
            if not wanted or core in wanted:
                stolen[core] = int(fields[7]) / _TICK
        except ValueError:
            continue
    return stolen


def last_pid() -> int | None:
    """The last process or thread number handed out in this PID namespace (``/proc/loadavg``):
    how many tasks a run started is the difference across it. None where it cannot be read."""
    try:
        return int(_read("/proc/loadavg").split()[4])
    except (OSError, ValueError, IndexError):
        return None


def own_cpu() -> float:
    times = os.times()
    return times.user + times.system


@dataclass
class _Sample:
    wall: float
    cpu: float
    delay: float
    steal: dict[int, float]


class RunClock:
    """The charged time of one child, from when it was started (or last ``restart``).

    ``sandbox``: the sandbox's cgroup CPU source, when there is one; otherwise the child's own
    process figures are read. Readings are taken when asked; once the child has gone, what can
    no longer be read keeps its last value (``used`` never goes down)."""

    def __init__(self, pid: int, sandbox: CpuSource | None, steal: StealSource = host_steal, threads: int = 1) -> None:
        self.pid = pid
        self.sandbox = sandbox
        self.steal = steal
        self.threads = threads  # the child's own threads whose waits for a core are not charged
        self.last = _Sample(time.monotonic(), 0.0, 0.0, {})
        self.last = self._sample()
        self.origin = self.last
        self.total = 0.0  # charged before the last restart

    def _sample(self) -> _Sample:
        now = time.monotonic()
        try:
            delay = run_delay(self.pid, self.threads)
        except (OSError, ValueError, IndexError):
            delay = self.last.delay  # the child has gone (or is going)
        try:
            cpu = self.sandbox() if self.sandbox is not None else process_cpu(self.pid)
        except (OSError, ValueError, IndexError):
            return self.last  # nothing new can be read
        return _Sample(now, cpu, delay, self.steal())

    @staticmethod
    def _stolen(start: _Sample, end: _Sample) -> float:
        # The run's threads may have been on any of the cores: the most taken from one of them
        # is what the run may have lost (never more than it could, so a sleeper still pays).
        return max((end.steal[core] - start.steal.get(core, end.steal[core]) for core in end.steal), default=0.0)

    @classmethod
    def _parts(cls, start: _Sample, end: _Sample) -> tuple[float, float]:
        """CPU seconds, and seconds spent off a core for the run's own reasons."""
        off_core = max(0.0, end.delay - start.delay) + max(0.0, cls._stolen(start, end))
        return max(end.cpu - start.cpu, 0.0), max((end.wall - start.wall) - off_core, 0.0)

    @classmethod
    def _between(cls, start: _Sample, end: _Sample) -> float:
        return max(cls._parts(start, end))

    def cpu(self) -> float:
        """CPU seconds since the last restart, as of the last reading: short of a limit that the
        charge reached, time off the CPU made up the rest (perhaps the machine's doing)."""
        return self._parts(self.origin, self.last)[0]

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
        self.retried = 0.0  # charged seconds of runs that ran again (Runs.run): not in ``used``
        self.own_start = own_cpu()
        self.wall_end = time.monotonic() + wall_seconds

    def used(self) -> float:
        return self.children + (own_cpu() - self.own_start)

    def left(self) -> float:
        return self.seconds - self.used()

    def charge(self, seconds: float) -> None:
        self.children += seconds

    def may_retry(self, seconds: float) -> bool:
        """Whether a run of ``seconds`` may be set aside and run again: runs set aside take at
        most a tenth of the budget, so real time stays near the budget whatever a file does."""
        if self.retried + seconds > RETRY_SHARE * self.seconds:
            return False
        self.retried += seconds
        return True

    def machine_late(self) -> bool:
        return time.monotonic() >= self.wall_end
