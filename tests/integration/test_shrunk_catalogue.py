"""Shrinking never costs a point, even when the engine hangs while being shrunk (the same file
graded with and without it). tests/integration/test_cases.py shows every caught catalogue bug a
counterexample of at most four operations, and grades a bug of each family with and without
shrinking."""

from __future__ import annotations

from pathlib import Path

import pytest
from rubric_variants import SHRINK, with_limits

from grader.pipeline import grade_submission
from grader.results import SubmissionResult
from grader.rubric import DEFAULT_RUBRIC, Rubric
from grader.runners.local import LocalRunner
from sandbox.harness.mutation.mutate import mutate_text

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "autograd_lab.py"


def _grade(path: Path, rubric: Rubric) -> SubmissionResult:
    return grade_submission(path, student="mutant", rubric=rubric, runner=LocalRunner(), seed=rubric.seed)


@pytest.mark.slow  # two gradings of an engine that hangs (half a minute)
def test_an_engine_that_hangs_while_being_shrunk_loses_no_point(tmp_path: Path) -> None:
    # The `=` bug in __mul__, and an endless loop whenever a leaf of 1.0 is made: shrinking's
    # first candidates hang. They run after every probe, within shrink_seconds, and stop there.
    # Quarter time limits: every program that makes a leaf of 1.0 runs to its limit, so a grading
    # costs about its limits; the property holds at any length.
    quick = {"probe_seconds": 0.5, "script_seconds": 5}
    text = Path(DEFAULT_RUBRIC).read_text(encoding="utf-8")
    shipped = with_limits(tmp_path / "shrink", **quick)
    plain = with_limits(tmp_path / "no_shrink", text.replace(SHRINK, ""), **quick)
    assert shipped.limits.probe_seconds == 0.5 and not any(p.shrink for p in plain.probes.values())
    source = REFERENCE.read_text(encoding="utf-8")
    text, _ = mutate_text(source, "acc_mul", shipped.class_name)
    marker = "def __init__(self, data"
    assert text.count(marker) == 1
    head, tail = text.split(marker)
    signature, body = tail.split(":\n", 1)
    hang = "        if data == 1.0 and type(data) is float:\n            while True:\n                pass\n"
    path = tmp_path / "autograd_lab.py"
    path.write_text(head + marker + signature + ":\n" + hang + body, encoding="utf-8")
    with_shrinking, without = _grade(path, shipped), _grade(path, plain)
    assert with_shrinking.status is without.status and with_shrinking.score == without.score > 0
    assert [(c.check_id, c.outcome, c.points) for c in with_shrinking.checks] == [
        (c.check_id, c.outcome, c.points) for c in without.checks
    ]
    # How long it took is not compared: shrinking's limit is charged time inside the sandbox
    # (tests/unit/test_clock.py, test_shrink.py), and wall time depends on the machine's load.
