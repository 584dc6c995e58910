"""The charged clock: CPU time, or time spent waiting on anything but a core; never the time a
busy machine gives to other work."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from sandbox.harness.execution.clock import Budget, RunClock, host_steal, process_cpu, run_delay, sandbox_cpu

SPIN = "while True: pass"
WORK = "import sys\nx = 0\nfor i in range(int(sys.argv[1])): x += i * i\n"


def _watch(process: subprocess.Popen[bytes], clock: RunClock) -> float:
    """Read the clock until the process ends (as the harness does while a child runs)."""
    while process.poll() is None:
        clock.used()
        time.sleep(0.01)
    return clock.spent()


def _watch_with_cpu(process: subprocess.Popen[bytes], clock: RunClock) -> tuple[float, float]:
    """``_watch``, also reading the process's own CPU seconds: (charged, CPU seconds)."""
    cpu = 0.0
    while process.poll() is None:
        clock.used()
        try:
            cpu = process_cpu(process.pid)
        except OSError:
            break
        time.sleep(0.01)
    return clock.spent(), cpu


@pytest.fixture
def one_core() -> Iterator[int]:
    """Pin this test's processes to one core, so that competing spinners really compete."""
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("needs sched_setaffinity")
    before = os.sched_getaffinity(0)
    core = min(before)
    os.sched_setaffinity(0, {core})
    try:
        yield core
    finally:
        os.sched_setaffinity(0, before)


def test_a_sleeping_child_is_charged_its_sleep() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.6)"])
    clock = RunClock(child.pid, None)
    charged = _watch(child, clock)
    assert charged >= 0.45, charged  # waiting on a timer is the child's own doing


def test_a_child_starved_of_its_core_is_charged_its_cpu_not_the_wait(one_core: int) -> None:
    # Four spinners share the one core with the child: it gets about a fifth of the wall time.
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(4)]
    try:
        started = time.monotonic()
        child = subprocess.Popen([sys.executable, "-c", WORK, "3000000"])
        charged, cpu = _watch_with_cpu(child, RunClock(child.pid, None))
        wall = time.monotonic() - started
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    assert wall > 2 * charged, (wall, charged)  # the wait for the core was not charged
    assert charged == pytest.approx(cpu, abs=0.1), (charged, cpu)  # the work was


# A thread that works while the main thread waits for it, and stays until the process ends (a
# thread that has ended takes its figures with it), as a probe child's reporter does.
WORK_IN_A_THREAD = """
import os, sys, threading
done = threading.Event()

def work():
    x = 0
    for i in range(int(sys.argv[1])):
        x += i * i
    done.set()
    threading.Event().wait()

threading.Thread(target=work, daemon=True).start()
done.wait()
os._exit(0)
"""


def test_a_thread_the_main_thread_waits_for_is_not_charged_its_wait_for_the_core(one_core: int) -> None:
    # A probe child's main thread sleeps while its reporter thread works: with both counted as the
    # child's own, the reporter's wait for a core is the machine's doing, as the main thread's is.
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(4)]
    try:
        started = time.monotonic()
        child = subprocess.Popen([sys.executable, "-c", WORK_IN_A_THREAD, "3000000"])
        charged, cpu = _watch_with_cpu(child, RunClock(child.pid, None, threads=2))
        wall = time.monotonic() - started
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    assert wall > 2 * charged, (wall, charged)
    assert charged == pytest.approx(cpu, abs=0.1), (charged, cpu)


def test_restart_counts_from_then_and_spent_keeps_everything() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3); time.sleep(0.3)"])
    clock = RunClock(child.pid, None)
    time.sleep(0.3)
    first = clock.used()
    clock.restart()
    assert clock.used() < first
    charged = _watch(child, clock)
    assert charged >= 0.5 and charged >= first


def test_a_child_that_has_gone_keeps_its_last_reading() -> None:
    child = subprocess.Popen([sys.executable, "-c", WORK, "300000"])
    clock = RunClock(child.pid, None)
    charged = _watch(child, clock)
    time.sleep(0.2)
    assert clock.used() == pytest.approx(charged) and clock.spent() == pytest.approx(charged)


def test_run_delay_and_cpu_read_this_process() -> None:
    assert run_delay(os.getpid()) >= 0.0
    assert process_cpu(os.getpid()) > 0.0


def test_the_sandbox_clock_is_only_a_cgroup_of_this_process_own() -> None:
    source = sandbox_cpu()
    if source is not None:  # in a container of its own: it counts, and only grows
        first = source()
        sum(i * i for i in range(200000))
        assert source() >= first


def test_the_budget_adds_every_charge_and_its_own_cpu() -> None:
    budget = Budget(10.0, wall_seconds=60.0)
    budget.charge(3.0)
    budget.charge(2.5)
    assert 5.5 <= budget.used() < 6.0 and budget.left() == pytest.approx(10.0 - budget.used())
    assert not budget.machine_late()
    assert Budget(10.0, wall_seconds=0.0).machine_late()


class _Host:
    """A stand-in for a virtual machine's steal counters: seconds taken from core 0."""

    def __init__(self) -> None:
        self.taken = 0.0

    def __call__(self) -> dict[int, float]:
        return {0: self.taken, 1: 0.0}


def _held_off_its_core(host: _Host, *, reported: bool) -> tuple[float, float]:
    """A CPU-bound child kept off every core for 0.6 s in the middle of its run (stopped, as the
    host stops a virtual core it gives to another guest); ``reported``: the host says so in its
    steal counter, as a virtual machine's kernel does. Returns (charged, CPU seconds)."""
    child = subprocess.Popen([sys.executable, "-c", WORK, "4000000"])
    clock = RunClock(child.pid, None, steal=host)
    time.sleep(0.1)
    clock.used()
    os.kill(child.pid, signal.SIGSTOP)
    started = time.monotonic()
    time.sleep(0.6)
    if reported:
        host.taken += time.monotonic() - started
    os.kill(child.pid, signal.SIGCONT)
    return _watch_with_cpu(child, clock)


def test_time_the_host_took_from_the_cores_is_not_charged() -> None:
    charged, cpu = _held_off_its_core(_Host(), reported=True)
    assert charged == pytest.approx(cpu, abs=0.15), (charged, cpu)


def test_time_off_the_core_the_host_does_not_account_for_is_charged() -> None:
    # The same run without the steal report: the 0.6 s count, so the test above can fail.
    charged, cpu = _held_off_its_core(_Host(), reported=False)
    assert charged >= cpu + 0.45, (charged, cpu)


def test_steal_counters_are_read_for_the_cores_this_process_may_use() -> None:
    stolen = host_steal()
    if os.path.exists("/proc/stat"):
        assert set(stolen) <= set(os.sched_getaffinity(0)) and stolen
        assert all(seconds >= 0.0 for seconds in stolen.values())
    assert host_steal(frozenset({10**6})) == {}  # a core the machine does not have


def test_the_clock_tells_cpu_time_from_time_off_the_cpu() -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    sleeping = RunClock(sleeper.pid, None)
    charged = _watch(sleeper, sleeping)
    worker = subprocess.Popen([sys.executable, "-c", WORK, "2000000"])
    working = RunClock(worker.pid, None)
    worked = _watch(worker, working)
    assert sleeping.cpu() < 0.3 < 0.45 <= charged, (sleeping.cpu(), charged)
    assert working.cpu() == pytest.approx(worked, abs=0.1), (working.cpu(), worked)


def test_runs_set_aside_have_a_tenth_of_the_budget() -> None:
    budget = Budget(10.0, wall_seconds=60.0)
    assert budget.may_retry(0.6) and budget.may_retry(0.4)
    assert not budget.may_retry(0.1)  # a file that sleeps everywhere stops being run twice
    assert budget.retried == pytest.approx(1.0) and budget.children == 0.0
