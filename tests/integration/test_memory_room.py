"""Every run of student code gets the same memory to use: the same file meets the memory limit at
the same point in every child and every grading, two sandboxes at a time or one.

The file below reports, as the result of `*`, how many KiB it can still map (a binary search
over anonymous mappings). Before the limit was counted from what the harness had mapped, and
before the sandbox used the C allocator, that number moved by a whole allocator arena (1 MiB)
from one grading to the next, and a file that fills memory 16 MB at a time lost a different
check each time."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader.batch import grade_class
from grader.rubric import load_rubric
from grader.runners.docker import DockerRunner

pytestmark = pytest.mark.docker

ROOM_PROBE = """
import mmap


def _room_kib():
    low, high = 0, 1 << 22
    while low < high:
        middle = (low + high + 1) // 2
        try:
            mmap.mmap(-1, middle * 1024).close()
            low = middle
        except (MemoryError, OSError):
            high = middle - 1
    return low


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(_children)
        self._op = _op
        self._backward = lambda: None

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data + other.data, (self, other), "+")

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(_room_kib(), (self, other), "*")

    def backward(self):
        pass
"""
COPIES = 4


def test_each_child_of_each_grading_has_the_same_room(tmp_path: Path) -> None:
    rubric = load_rubric()
    for n in range(COPIES):
        folder = tmp_path / "class" / f"student_{n}"
        folder.mkdir(parents=True)
        (folder / rubric.filename).write_text(ROOM_PROBE, encoding="utf-8")
    outcome = grade_class(tmp_path / "class", out=tmp_path / "out", rubric=rubric, runner=DockerRunner(), jobs=2)
    assert len(outcome.results) == COPIES
    seen: dict[str, set[int]] = {}
    for result in outcome.results:
        for check in result.checks:
            for comparison in check.comparisons:
                for number in re.findall(r"\b\d{5,7}\b", str(comparison.observed)):
                    seen.setdefault(result.student, set()).add(int(number))
    assert set(seen) == {f"student_{n}" for n in range(COPIES)}, "every grading reached the probe"
    # api, part 1 and reuse probes each ran `*` in children of their own (sums of it too): the
    # same numbers in every grading, and the smallest is the room the rubric gives, less only
    # what the harness maps after the limit is set.
    assert all(numbers == seen["student_0"] for numbers in seen.values()), seen
    allowed = rubric.limits.child_memory_mb * 1024
    assert allowed - 1024 <= min(seen["student_0"]) <= allowed, (seen["student_0"], allowed)
