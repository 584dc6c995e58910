"""Whole-class grading in the real Docker sandbox: scale, kill -9 and resume, LMS archives."""

from __future__ import annotations

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import docker
import pytest
import yaml

from grader.batch import grade_class
from grader.report.view import format_number
from grader.rubric import load_rubric
from grader.runners.docker import OWNER_LABEL, DockerRunner

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from synth_class import build  # noqa: E402

pytestmark = pytest.mark.docker
SUBMISSIONS = REPO / "submissions"
GRADER = [sys.executable, "-c", "from grader.cli import main; main()"]


def rows(out: Path) -> list[dict[str, str]]:
    with (out / "grades.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def stored(out: Path) -> dict[str, tuple[float, int]]:
    """student -> (graded_at, runs), read while a grader may be writing (WAL allows it)."""
    with sqlite3.connect(f"file:{out / 'grades.sqlite'}?mode=ro", uri=True) as db:
        return {s: (at, runs) for s, at, runs in db.execute("SELECT student, graded_at, runs FROM results")}


# Large enough for both workers to interleave many results and for a real spread of scores (with
# seed 4: one file that does not parse, 13 correct engines, the rest with one or two bugs); the
# throughput of larger classes is measured by bench/bench_throughput.py, not asserted here.
CLASS_SIZE = 40


@pytest.mark.slow  # a class of 40 in Docker
def test_a_synthetic_class_grades_in_parallel_and_every_export_agrees(tmp_path: Path) -> None:
    source = tmp_path / "class"
    build(source, students=CLASS_SIZE, seed=4)
    out = tmp_path / "out"
    image = DockerRunner().image
    outcome = grade_class(
        source,
        out=out,
        rubric=load_rubric(),
        runner=DockerRunner(image=image),
        runner_factory=lambda: DockerRunner(image=image),
        jobs=2,
        seed=11,
    )
    assert outcome.ran == CLASS_SIZE and outcome.infra_failures == 0
    table = rows(out)
    students = [r["student"] for r in table]
    assert len(students) == CLASS_SIZE and len(set(students)) == CLASS_SIZE
    assert {r.student for r in outcome.results} == set(students)
    index = (out / "index.html").read_text(encoding="utf-8")
    for row in table:
        folder = out / "students" / row["student"]
        gradescope = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        assert gradescope["score"] == pytest.approx(float(row["total"]))
        prairielearn = json.loads((folder / "prairielearn.json").read_text(encoding="utf-8"))
        if prairielearn["gradable"]:
            assert prairielearn["score"] * 100 == pytest.approx(float(row["total"]), abs=1e-3)
        else:
            assert row["status"] in ("not_loadable", "ungradable") and float(row["total"]) == 0
        assert f'href="students/{row["student"]}/feedback.html"' in index
        markdown = (folder / "feedback.md").read_text(encoding="utf-8").replace("\\", "")  # unescape "76\.5"
        assert f"{format_number(float(row['total']))} / 100" in markdown
    # The class report counts every student once.
    assert f"<dt>Submissions</dt><dd>{CLASS_SIZE}</dd>" in index
    assert f"Statistics cover the {CLASS_SIZE} scored submissions" in index
    # The spread of a real class: full marks, partial credit, zeros.
    totals = sorted(float(r["total"]) for r in table)
    assert totals[0] == 0 and totals[-1] == 100 and 0 < totals[CLASS_SIZE // 2] < 100


@pytest.mark.slow  # a class graded, killed and graded again
def test_kill_9_mid_batch_then_the_same_command_finishes_without_regrading(tmp_path: Path) -> None:
    source = tmp_path / "class"
    build(source, students=16, seed=9)
    out = tmp_path / "out"
    command = [*GRADER, "grade", str(source), "--out", str(out), "--jobs", "2", "--sandbox", "docker", "--seed", "3"]
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 240
    before: dict[str, tuple[float, int]] = {}
    while time.monotonic() < deadline and len(before) < 5:
        time.sleep(0.2)
        if (out / "grades.sqlite").exists():
            try:
                before = stored(out)
            except sqlite3.OperationalError:
                continue  # the schema is being created
    assert first.poll() is None, "the batch finished before it could be killed"
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    before = stored(out)  # whatever committed up to the kill itself
    assert 5 <= len(before) < 16
    killed = str(first.pid)

    second = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout + second.stderr
    after = stored(out)
    assert sorted(after) == sorted(p.name for p in source.iterdir())  # nobody missing
    for student, (graded_at, runs) in before.items():
        assert after[student] == (graded_at, runs), f"{student} was graded again"
    assert all(runs == 1 for _, runs in after.values())  # nobody graded twice
    table = rows(out)
    assert len(table) == 16 and len({r["student"] for r in table}) == 16  # nobody duplicated
    assert f"{16 - len(before)} to run in the sandbox, {len(before)} answered from the store" in second.stdout
    # What the killed grader left running is gone.
    client = docker.from_env()
    leftovers = client.containers.list(all=True, filters={"label": f"{OWNER_LABEL}"})
    assert not [c for c in leftovers if c.labels.get(OWNER_LABEL, "").endswith(f":{killed}")]


def _gradescope_zip(path: Path) -> None:
    metadata = {
        "submission_101": {":submitters": [{":name": "Alice Nguyen", ":sid": "A1001", ":email": "a@x.edu"}]},
        "submission_102": {":submitters": [{":name": "Bob Okafor", ":sid": "B1002", ":email": "b@x.edu"}]},
        "submission_103": {":submitters": [{":name": "Frank Zhou", ":sid": "F1003", ":email": "f@x.edu"}]},
    }
    sources = {"submission_101": "alice_nguyen", "submission_102": "bob_okafor", "submission_103": "frank_zhou"}
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("assignment_42_export/submission_metadata.yml", yaml.safe_dump(metadata))
        for folder, student in sources.items():
            text = (SUBMISSIONS / student / "autograd_lab.py").read_bytes()
            archive.writestr(f"assignment_42_export/{folder}/autograd_lab.py", text)


def _canvas_zip(path: Path) -> None:
    files = {
        "nguyenalice_2001_9001_autograd_lab.py": "alice_nguyen",
        "okaforbob_LATE_2002_9002_autograd_lab-1.py": "bob_okafor",
        "zhoufrank_2003_9003_Autograd_Lab.py": "frank_zhou",
    }
    with zipfile.ZipFile(path, "w") as archive:
        for name, student in files.items():
            archive.writestr(name, (SUBMISSIONS / student / "autograd_lab.py").read_bytes())


@pytest.mark.parametrize(
    ("maker", "ids", "kind"),
    [(_gradescope_zip, ["A1001", "B1002", "F1003"], "gradescope"), (_canvas_zip, ["2001", "2002", "2003"], "canvas")],
)
def test_lms_archives_are_graded_under_the_right_student_ids(maker, ids: list[str], kind: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    archive = tmp_path / "download.zip"
    maker(archive)
    out = tmp_path / "out"
    outcome = grade_class(archive, out=out, rubric=load_rubric(), runner=DockerRunner(), jobs=2, seed=5)
    assert outcome.kind == kind
    by_id = {r.student: r for r in outcome.results}
    assert sorted(by_id) == ids
    # alice (100), bob (< 100), frank (a syntax error: 0) land on their own ids.
    assert by_id[ids[0]].score == 100 and 0 < by_id[ids[1]].score < 100 and by_id[ids[2]].score == 0
    assert sorted(r["student"] for r in rows(out)) == ids
    if kind == "canvas":
        with (out / "canvas_grades.csv").open(newline="", encoding="utf-8") as handle:
            canvas = list(csv.DictReader(handle))
        assert [r["ID"] for r in canvas] == ids
        assert any("late" in n.lower() for n in by_id["2002"].load.notices)
        assert any("Autograd_Lab.py" in n for n in by_id["2003"].load.notices)
