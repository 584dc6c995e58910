"""The adversarial suite: every hostile submission in tests/adversarial/, graded in one batch in
the real Docker sandbox together with a correct canary.

Each case's expected.yaml says what its engine earns without the attack (max_score), the
status it must get and a message specific to what it did. The test asserts: no hostile
submission scores more than its engine earns; the canary, graded alongside, scores 100; every
message is there; and nothing is left on the host (containers, volumes, files, processes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import docker
import pytest
import yaml

from grader.batch import grade_class
from grader.results import SubmissionResult
from grader.rubric import load_rubric
from grader.runners.docker import OWNER_LABEL, DockerRunner, owner_id

pytestmark = pytest.mark.docker

SUITE = Path(__file__).resolve().parents[1] / "adversarial"
CASES = sorted(p.name for p in SUITE.iterdir() if (p / "expected.yaml").is_file()) if SUITE.is_dir() else []
REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "autograd_lab.py"
CANARY = "zz_canary"
# Files an escaping submission would leave on the host: the suite's escape cases aim at these.
HOST_MARKERS = (Path("/tmp/pwned"), Path("/tmp/results.json"), Path("/autograder/results/results.json"))


def feedback_text(result: SubmissionResult) -> str:
    parts = [result.status_detail, result.load.error, *result.load.notices]
    for check in result.checks:
        parts += [check.message, *check.notes, check.output, *(c.observed for c in check.comparisons)]
    return "\n".join(parts)


def _generate(kind: str, target: Path) -> None:
    if kind == "ten_megabytes":
        body = REFERENCE.read_text(encoding="utf-8")
        padding = "# " + "x" * 98 + "\n"
        target.write_text(body + padding * (10 * 1024 * 1024 // len(padding)), encoding="utf-8")
    else:
        raise AssertionError(f"unknown generator {kind!r}")


def _student_processes() -> list[str]:
    found = subprocess.run(["ps", "-eo", "uid,pid,args"], capture_output=True, text=True, check=True).stdout
    return [line for line in found.splitlines()[1:] if line.split()[0] == "10002"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SubmissionResult]:
    assert len(CASES) >= 50, f"the suite has {len(CASES)} cases"
    source = tmp_path_factory.mktemp("hostile")
    for name in CASES:
        shutil.copytree(SUITE / name, source / name, ignore=shutil.ignore_patterns("expected.yaml"))
        kind = yaml.safe_load((SUITE / name / "expected.yaml").read_text(encoding="utf-8")).get("generate")
        if kind:
            _generate(kind, source / name / "autograd_lab.py")
    (source / CANARY).mkdir()
    shutil.copy(REFERENCE, source / CANARY / "autograd_lab.py")
    for marker in HOST_MARKERS:
        assert not marker.exists(), f"{marker} exists before the suite runs"
    image = DockerRunner().image
    outcome = grade_class(
        source,
        out=tmp_path_factory.mktemp("out"),
        rubric=load_rubric(),
        runner=DockerRunner(image=image),
        runner_factory=lambda: DockerRunner(image=image),
        jobs=2,
        seed=20261130,
    )
    return {r.student: r for r in outcome.results}


def test_the_canary_graded_alongside_scores_full_marks(graded: dict[str, SubmissionResult]) -> None:
    canary = graded[CANARY]
    assert (canary.score, canary.status.value) == (100.0, "graded"), [c.check_id for c in canary.checks if not c.passed]


@pytest.mark.parametrize("name", CASES)
def test_hostile_submission(name: str, graded: dict[str, SubmissionResult]) -> None:
    expected = yaml.safe_load((SUITE / name / "expected.yaml").read_text(encoding="utf-8"))
    result = graded[name]
    assert result.status.value != "infra_error", f"the grader failed: {result.status_detail}"
    assert result.status.value == expected["status"], result.status_detail
    assert result.score <= float(expected["max_score"]) + 0.011, "scored more than its engine earns"
    assert result.score >= float(expected.get("min_score", 0.0)) - 0.011
    text = feedback_text(result)
    assert expected["message"] in text, f"missing {expected['message']!r} in:\n{text[:3000]}"


def test_nothing_is_left_on_the_host(graded: dict[str, SubmissionResult]) -> None:
    client = docker.from_env()
    mine = f"{OWNER_LABEL}={owner_id()}"  # other graders may share the engine
    assert client.containers.list(all=True, filters={"label": mine}) == []
    assert client.volumes.list(filters={"label": mine}) == []
    for marker in HOST_MARKERS:
        assert not marker.exists(), f"a submission wrote {marker} on the host"
    assert _student_processes() == []
    assert not [p for p in os.listdir("/tmp") if p.startswith("ag-run-")]
