"""``grader similarity OUT``: reads the class store, writes the report and the class page's section."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from result_builders import make_check, make_submission
from similarity_disguise import disguise
from test_similarity import STARTER, independent

from grader.cli import cli
from grader.store import STORE_NAME, Store, StoredSubmission


def stored(student: str, text: str | None, problem: str = "") -> StoredSubmission:
    data = None if text is None else text.encode()
    sha = hashlib.sha256(data or b"").hexdigest()
    return StoredSubmission(student, student, sha, data, "folder", (), problem)


def a_class(out: Path) -> None:
    """A graded class as the store holds it (the scores do not matter here, the files do)."""
    engines = independent()
    files: dict[str, str | None] = {**engines, "zed_copy": disguise(engines["hana_ito"], 5), "nobody": None}
    with Store(out / STORE_NAME) as store:
        for name, text in files.items():
            item = stored(name, text, "" if text else "no autograd_lab.py in the folder")
            store.put_submission(item)
            result = make_submission([make_check("c1", "S1")], {"S1": "Section"}, student=name)
            store.put_result(
                content_sha=item.content_sha, rubric_sha="r", image="i", result=result, evidence=None, ran=True
            )


def test_the_command_writes_the_report_and_the_class_page_says_so(tmp_path: Path) -> None:
    a_class(tmp_path)
    outcome = CliRunner().invoke(cli, ["similarity", str(tmp_path), "--base", str(STARTER)])
    assert outcome.exit_code == 0, outcome.output
    assert "1 pairs at 0.5 or more" in outcome.output and "not compared: nobody" in outcome.output
    rows = json.loads((tmp_path / "similarity.json").read_text())["pairs"]
    assert {rows[0]["a"], rows[0]["b"]} == {"hana_ito", "zed_copy"}
    page = (tmp_path / "similarity.html").read_text()
    assert "starter_helpers.py" in page and "nobody: no autograd_lab.py in the folder" in page
    index = (tmp_path / "index.html").read_text()
    assert 'href="similarity.html"' in index and "hana_ito and zed_copy" in index
    assert "Submissions have changed" not in index


def test_a_changed_submission_marks_the_section_stale(tmp_path: Path) -> None:
    a_class(tmp_path)
    assert CliRunner().invoke(cli, ["similarity", str(tmp_path)]).exit_code == 0
    with Store(tmp_path / STORE_NAME) as store:
        store.put_submission(stored("zed_copy", "print('started over')\n"))
    assert CliRunner().invoke(cli, ["export", str(tmp_path)]).exit_code == 0
    assert "Submissions have changed since this report was made" in (tmp_path / "index.html").read_text()


def test_without_a_store_or_with_a_bad_base_it_says_why(tmp_path: Path) -> None:
    outcome = CliRunner().invoke(cli, ["similarity", str(tmp_path)])
    assert outcome.exit_code != 0 and "grade a class into" in outcome.output
    a_class(tmp_path)
    huge = tmp_path / "huge.py"
    huge.write_bytes(b"x = 1\n" * 200_000)
    done = subprocess.run(
        [sys.executable, "-m", "grader", "similarity", str(tmp_path), "--base", str(huge)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 5 and "at most 1000000 bytes" in done.stderr, done.stderr
    assert not (tmp_path / "similarity.json").exists()


def test_a_class_page_made_before_any_report_says_how_to_make_one(tmp_path: Path) -> None:
    a_class(tmp_path)
    assert CliRunner().invoke(cli, ["export", str(tmp_path)]).exit_code == 0
    assert f"grader similarity {tmp_path}" in (tmp_path / "index.html").read_text()


def test_a_threshold_that_is_not_a_number_is_refused(tmp_path: Path) -> None:
    a_class(tmp_path)
    outcome = CliRunner().invoke(cli, ["similarity", str(tmp_path), "--threshold", "nan"])
    assert outcome.exit_code == 2 and "must be a number from 0 to 1" in outcome.output
    assert not (tmp_path / "similarity.json").exists()
