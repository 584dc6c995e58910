"""Grade a folder of submissions, one sub-folder per student, and write every report."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import SubmissionError
from .grading import grade_submission
from .report import write_feedback_html, write_grades_csv, write_gradescope
from .results import SubmissionResult
from .rubric import Rubric
from .runners.base import Runner

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$")


@dataclass(frozen=True)
class ClassResult:
    results: tuple[SubmissionResult, ...]
    out: Path

    @property
    def infra_failures(self) -> int:
        return sum(1 for r in self.results if not r.scored)


def students_in(folder: Path) -> list[tuple[str, Path]]:
    if not folder.is_dir():
        raise SubmissionError(f"{folder} is not a folder of submissions")
    found = []
    for entry in sorted(folder.iterdir()):
        if entry.is_dir() and not entry.name.startswith("."):
            if not SAFE_NAME.match(entry.name):
                raise SubmissionError(f"student folder name {entry.name!r} is not a safe file name")
            found.append((entry.name, entry))
    if not found:
        raise SubmissionError(f"{folder} has no student folders (expected {folder}/<student>/autograd_lab.py)")
    return found


def grade_class(
    folder: Path,
    *,
    out: Path,
    rubric: Rubric,
    runner: Runner,
    seed: int,
    on_result: Callable[[SubmissionResult], None] | None = None,
) -> ClassResult:
    results = []
    out.mkdir(parents=True, exist_ok=True)
    for student, path in students_in(folder):
        result = grade_submission(path / rubric.filename, student=student, rubric=rubric, runner=runner, seed=seed)
        target = out / student
        target.mkdir(exist_ok=True)
        write_gradescope(result, target / "results.json")
        write_feedback_html(result, target / "feedback.html")
        results.append(result)
        if on_result:
            on_result(result)
    write_grades_csv(results, out / "grades.csv", [s.tag for s in rubric.sections])
    return ClassResult(tuple(results), out)
