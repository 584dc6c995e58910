"""Warm sandboxes against the real engine: started ahead, each used once, graded as a cold
container grades, replaced when they die or wait too long, and never charged to a student."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import docker
import pytest
from rubric_variants import with_limits

from grader.image import LABEL, docker_client, ensure_image
from grader.pipeline import container_limits, grade_submission
from grader.results import SubmissionResult
from grader.rubric import Rubric
from grader.runners.docker import DockerRunner

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
SESSION = {f"{LABEL}.test-session": uuid.uuid4().hex}
FILES = [
    REPO / "reference" / "autograd_lab.py",
    REPO / "tests" / "cases" / "mut_acc_add" / "autograd_lab.py",
    REPO / "tests" / "adversarial" / "esc_read_plan_json" / "autograd_lab.py",  # looks for its inputs
    REPO / "tests" / "adversarial" / "forge_pipe_fake_obs" / "autograd_lab.py",
    REPO / "tests" / "adversarial" / "exh_fork_bomb" / "autograd_lab.py",
]


@pytest.fixture(scope="module")
def client() -> docker.DockerClient:
    return docker_client()


@pytest.fixture(scope="module")
def rubric(tmp_path_factory: pytest.TempPathFactory) -> Rubric:
    # Quarter time limits: the fork bomb runs to its limit in every probe, and a warm container
    # must grade it as a cold one does at any limit (the adversarial suite grades it in cold
    # ones at a quarter of the shipped script limit too).
    return with_limits(tmp_path_factory.mktemp("rubric"), probe_seconds=0.5, script_seconds=5)


@pytest.fixture(scope="module")
def cold(client: docker.DockerClient) -> DockerRunner:
    return DockerRunner(image=ensure_image(), labels=SESSION)


@pytest.fixture
def warm(cold: DockerRunner, rubric: Rubric) -> Iterator[DockerRunner]:
    runner = DockerRunner(image=cold.image, labels=SESSION)
    pool = runner.start_warm(1, expect=container_limits(rubric))
    assert pool.wait_ready(1, timeout=60), "no warm sandbox became ready"
    try:
        yield runner
    finally:
        runner.close()


def ours(client: docker.DockerClient) -> list[str]:
    wanted = [LABEL] + [f"{k}={v}" for k, v in SESSION.items()]
    return [c.id for c in client.containers.list(all=True, filters={"label": wanted})]


def grade(path: Path, rubric: Rubric, runner: DockerRunner) -> SubmissionResult:
    return grade_submission(path, student=path.parent.name, rubric=rubric, runner=runner, seed=rubric.seed)


def same_grading(a: SubmissionResult, b: SubmissionResult) -> None:
    assert (a.status, a.score) == (b.status, b.score), (a.status_detail, b.status_detail)
    assert [(c.check_id, c.points, c.outcome) for c in a.checks] == [
        (c.check_id, c.points, c.outcome) for c in b.checks
    ]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
def test_a_warm_run_grades_as_a_cold_run_does(
    path: Path, rubric: Rubric, cold: DockerRunner, warm: DockerRunner, client: docker.DockerClient
) -> None:
    assert warm.pool is not None
    waiting = {w.container_id for w in warm.pool._ready}
    result = grade(path, rubric, warm)
    assert len(waiting - set(ours(client))) == 1  # graded in the container that was waiting
    same_grading(grade(path, rubric, cold), result)


def test_each_warm_container_runs_one_submission_and_is_removed(
    rubric: Rubric, warm: DockerRunner, client: docker.DockerClient
) -> None:
    assert warm.pool is not None
    used = []
    for _ in range(3):
        assert warm.pool.wait_ready(1, timeout=60)
        waiting = {w.container_id for w in warm.pool._ready}
        grade(FILES[0], rubric, warm)
        gone = waiting - set(ours(client))
        assert len(gone) == 1, "the run took a ready container and removed it"
        used += gone
    assert len(set(used)) == 3  # never the same container twice


def test_a_warm_container_that_died_while_waiting_is_replaced_and_nobody_is_charged(
    rubric: Rubric, cold: DockerRunner, warm: DockerRunner, client: docker.DockerClient
) -> None:
    assert warm.pool is not None
    dead = warm.pool._ready[0].container_id
    client.api.kill(dead)
    result = grade(FILES[1], rubric, warm)  # a cold container instead, or the next warm one
    same_grading(grade(FILES[1], rubric, cold), result)
    assert warm.pool.replaced == 1 and dead not in ours(client)
    assert warm.pool.wait_ready(1, timeout=60)  # and the pool fills again


def test_warm_containers_that_wait_too_long_are_removed_and_made_again_on_demand(
    rubric: Rubric, cold: DockerRunner, client: docker.DockerClient
) -> None:
    runner = DockerRunner(image=cold.image, labels=SESSION)
    pool = runner.start_warm(1, idle_seconds=2, expect=container_limits(rubric))
    try:
        assert pool.wait_ready(1, timeout=60)
        first = pool._ready[0].container_id
        deadline = time.monotonic() + 60
        while first in ours(client):
            assert time.monotonic() < deadline, "an idle warm container was never removed"
            time.sleep(0.5)
        time.sleep(3)
        assert pool.ready() == 0 and ours(client) == []  # nobody asked: an idle pool holds nothing
        assert pool.take(container_limits(rubric)) is None  # the next run goes cold, and asks
        assert pool.wait_ready(1, timeout=60) and pool._ready[0].container_id != first
    finally:
        runner.close()
    assert ours(client) == []  # closing removes what still waits


def test_a_run_with_other_limits_goes_cold_and_the_pool_follows_it(
    rubric: Rubric, cold: DockerRunner, warm: DockerRunner
) -> None:
    assert warm.pool is not None
    other = replace(container_limits(rubric), memory_mb=container_limits(rubric).memory_mb + 64)
    assert warm.pool.take(other) is None  # nothing made for these limits yet
    assert warm.pool.wait_ready(1, timeout=60)
    assert warm.pool._ready[0].key.memory_mb == other.memory_mb


def test_a_reserved_container_is_left_for_a_self_check(rubric: Rubric, warm: DockerRunner) -> None:
    assert warm.pool is not None
    limits = container_limits(rubric)
    assert warm.pool.take(limits, reserve=1) is None and warm.pool.ready() == 1
    taken = warm.pool.take(limits)
    assert taken is not None
    warm.pool._discard(taken)


def test_a_warm_container_that_never_takes_its_inputs_is_replaced_and_nobody_is_charged(
    rubric: Rubric, cold: DockerRunner, warm: DockerRunner, client: docker.DockerClient
) -> None:
    # Paused: it looks alive to the engine, takes the bytes into its socket, and never answers.
    assert warm.pool is not None
    stuck = warm.pool._ready[0].container_id
    client.api.pause(stuck)
    result = grade(FILES[0], rubric, warm)
    assert result.status.value == "graded" and result.score == result.max_score, result.status_detail
    assert stuck not in ours(client)  # removed, and the run done in a fresh container
