"""Data-driven end-to-end cases, graded in the real Docker sandbox.

Each ``tests/cases/<name>/`` holds an ``autograd_lab.py`` and ``expected.yaml``: the points per
section, the status, and the checks that must not pass. The reference is one of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grader.grading import grade_submission
from grader.results import SubmissionResult
from grader.rubric import load_rubric
from grader.runners.docker import DockerRunner

pytestmark = pytest.mark.docker

CASES = Path(__file__).resolve().parents[1] / "cases"
SEED = 20261130
NAMES = sorted(p.name for p in CASES.iterdir() if (p / "expected.yaml").is_file())


@pytest.fixture(scope="module")
def runner() -> DockerRunner:
    return DockerRunner()


def test_there_are_enough_cases() -> None:
    assert len(NAMES) >= 12
    assert "reference" in NAMES


@pytest.mark.parametrize("name", NAMES)
def test_case(name: str, runner: DockerRunner) -> None:
    expected = yaml.safe_load((CASES / name / "expected.yaml").read_text())
    result: SubmissionResult = grade_submission(
        CASES / name / "autograd_lab.py", student=name, rubric=load_rubric(), runner=runner, seed=SEED
    )
    assert result.runner == "docker"
    assert result.status.value == expected["status"], result.status_detail
    got = {s.tag: s.points for s in result.sections}
    assert got == pytest.approx(expected["sections"], abs=0.011), got
    failing = sorted(c.check_id for c in result.checks if not c.passed)
    assert failing == sorted(expected["failing"])
    if "load_error_contains" in expected:
        assert expected["load_error_contains"] in result.load.error
    for check in result.checks:
        if not check.passed and check.visibility.value == "visible":
            assert check.message and check.message != "Passed."
