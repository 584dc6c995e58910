"""The clock is never evidence against a student: files whose honest checks take time get the
same points on a machine whose every core is busy as on an idle one.

Two files of ``tests/cases``, each made a third as long (tests/short_cases.py): checks that
train a small MLP (about 1 s per run of the checks, and bug injection runs them once per engine)
and a demo at the top of the file (about 0.25 s, paid again by every probe's import). The two are
graded at the same time, while a container of busy processes (two per core) competes with the
sandboxes for every core; each grading must give the points the case's expected.yaml records for
an idle machine. (tests/integration/test_cases.py grades the same two beside the other cases,
and checks that a file gets the same points check by check in two runs.)
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import docker
import pytest
import yaml
from docker.models.containers import Container
from short_cases import CASES, SHORTER, short_text

from grader.image import ensure_image
from grader.pipeline import grade_submission
from grader.results import SubmissionResult
from grader.rubric import load_rubric
from grader.runners.docker import DockerRunner

pytestmark = [pytest.mark.docker, pytest.mark.slow]

NAMES = tuple(SHORTER)
CORES = os.cpu_count() or 2
SPIN = "while True: pass"
SATURATOR = "autograd-grader-test-saturator"


def _used_seconds(container: Container) -> float:
    """CPU seconds the container's processes have used, as Docker's cgroup counts them."""
    stats = cast(dict[str, Any], container.stats(stream=False))
    return float(stats["cpu_stats"]["cpu_usage"]["total_usage"]) / 1e9


@pytest.fixture
def busy_machine() -> Iterator[Container]:
    """Every core held busy for as long as the test runs, by processes that compete with the
    sandboxes on equal terms (a container of their own)."""
    client = docker.from_env()
    container = client.containers.run(
        ensure_image(),
        ["sh", "-c", " & ".join([f"python3 -c '{SPIN}'"] * (2 * CORES)) + " & wait"],
        name=f"{SATURATOR}-{os.getpid()}",
        detach=True,
        network_mode="none",
        remove=True,
    )
    try:
        time.sleep(1.0)
        yield container
    finally:
        container.kill()


def shorter(name: str, folder: Path) -> Path:
    path = folder / name / "autograd_lab.py"
    path.parent.mkdir()
    path.write_text(short_text(name), encoding="utf-8")
    return path


def test_honest_slow_checks_score_the_same_while_every_core_is_busy(busy_machine: Container, tmp_path: Path) -> None:
    rubric = load_rubric()
    runner = DockerRunner()
    expected = {name: yaml.safe_load((CASES / name / "expected.yaml").read_text()) for name in NAMES}
    files = {name: shorter(name, tmp_path) for name in NAMES}

    def grade(name: str) -> SubmissionResult:
        return grade_submission(files[name], student=name, rubric=rubric, runner=runner)

    started = time.monotonic()
    before = _used_seconds(busy_machine)
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(grade, NAMES))
    took = time.monotonic() - started
    spun = _used_seconds(busy_machine) - before
    # The premise: the busy processes kept running throughout (at least a quarter of a core), while
    # the sandboxes wanted every core too (two gradings at a time, one core each).
    assert spun >= 0.25 * took, (spun, took)

    assert [r.student for r in results] == list(NAMES)
    for name, result in zip(NAMES, results, strict=True):
        assert result.status.value == expected[name]["status"], result.status_detail
        got = {s.tag: s.points for s in result.sections}
        assert got == pytest.approx(expected[name]["sections"], abs=0.011), (name, got)
