"""What makes the same file meet the same limits on every run: the interpreter the runners start
(fixed string hashing, the C allocator), a task read the same way however the pipe delivers
it, and a memory limit counted from what the harness itself has mapped."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from grader.image import HARNESS_FLAGS, SANDBOX_ENV
from sandbox.harness import supervisor
from sandbox.harness.execution import child

REPO = Path(__file__).resolve().parents[2]
PROBE = (
    f"import sys; sys.path.insert(0, {str(REPO)!r}); "
    "from sandbox.harness.supervisor import interpreter_problem; print(interpreter_problem())"
)


def _problem(flags: tuple[str, ...], env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, *flags, "-c", PROBE], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


def test_the_runners_start_the_interpreter_the_harness_expects() -> None:
    assert supervisor.EXPECTED_ENV.items() <= SANDBOX_ENV.items()
    assert not {"-I", "-E"} & set(HARNESS_FLAGS)
    assert _problem(HARNESS_FLAGS, dict(SANDBOX_ENV)) == ""
    # What python:3.11-slim adds to every container's environment is nothing the interpreter reads.
    assert _problem(HARNESS_FLAGS, {**SANDBOX_ENV, "PYTHON_VERSION": "3.11.9", "PYTHON_SHA256": "0" * 64}) == ""


@pytest.mark.parametrize(
    ("flags", "change", "words"),
    [
        (("-I",), {}, "-E or -I"),
        ((), {"PYTHONMALLOC": None}, "PYTHONMALLOC"),
        ((), {"MALLOC_ARENA_MAX": "8"}, "MALLOC_ARENA_MAX"),
        ((), {"PYTHONHASHSEED": "random"}, "PYTHONHASHSEED"),
        ((), {"PYTHONPATH": "/tmp"}, "PYTHONPATH"),
    ],
)
def test_any_other_interpreter_is_refused_with_the_reason(
    flags: tuple[str, ...], change: dict[str, str | None], words: str
) -> None:
    env = {k: v for k, v in {**SANDBOX_ENV, **change}.items() if v is not None}
    assert words in _problem((*HARNESS_FLAGS, *flags), env)


def test_a_task_trickled_a_byte_at_a_time_reads_as_the_same_task() -> None:
    body = b'{"kind": "api", "source": "' + b"x" * 70_000 + b'"}'
    read_end, write_end = os.pipe()

    def trickle() -> None:
        data = child.TASK_HEADER.pack(len(body)) + body
        for i in range(0, len(data), 997):
            os.write(write_end, data[i : i + 997])
        os.close(write_end)

    writer = threading.Thread(target=trickle)
    writer.start()
    task = child._read_task(read_end)
    writer.join()
    assert task == {"kind": "api", "source": "x" * 70_000}


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (child.TASK_HEADER.pack(child.MAX_TASK + 1), "too large"),
        (child.TASK_HEADER.pack(10) + b"{}", "cut short"),
        (b"\x00\x00", "cut short"),
    ],
)
def test_a_task_of_the_wrong_size_is_refused(data: bytes, words: str) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, data)
    os.close(write_end)
    with pytest.raises(ValueError, match=words):
        child._read_task(read_end)
    with pytest.raises(OSError):
        os.close(read_end)  # closed by the reader, refused or not


def test_the_memory_limit_is_counted_from_what_is_mapped_now() -> None:
    status = Path("/proc/self/status").read_text()
    size_kb = int(next(line for line in status.splitlines() if line.startswith("VmSize:")).split()[1])
    mapped = child._mapped_now()
    # The same quantity the kernel reports, give or take what reading it allocated.
    assert abs(mapped // 1024 - size_kb) < 4096
