"""Compare two `grader grade` output folders: prove a change of the grader's code changes no score or feedback.

Grade the same class with the same --seed before and after the change, then

    python bench/compare_results.py BEFORE_DIR AFTER_DIR

compares every students/<id>/results.json and students/<id>/prairielearn.json and the class grades.csv.
Only fields that measure time or name the environment are ignored (IGNORED below, each with its reason);
everything else, scores, statuses, messages, hints, test order, must be identical. Prints one line per
differing student and file with the JSON paths of the first differences, then `N students compared, M differ`.
Exits 1 when anything differs or a student is missing on one side, 0 when the folders agree, 2 on bad usage.
Compare two runs of the unchanged code first: what differs there is the grader's own run-to-run noise.
Standard library only, so it runs with any Python 3.11 whatever state the grader is in.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STUDENTS_DIR = "students"
STUDENT_FILES = ("results.json", "prairielearn.json")
GRADES_CSV = "grades.csv"
MAX_PATHS = 3  # differences shown per file; the rest are counted
MAX_VALUE = 60  # characters of a differing value shown

# JSON paths (keys from the file's root) that may differ between two runs of the same grader on the same class.
# Keep this minimal: a field that carries a grade or feedback must never be here.
IGNORED: dict[str, dict[tuple[str, ...], str]] = {
    "results.json": {
        # Wall-clock seconds of the run, rounded: depends on machine load, not on the submission.
        ("execution_time",): "timing",
        # Docker id ("sha256:...") of the sandbox image ("" when no container ran): names the environment, and
        # changes whenever a commit touches sandbox/ (the image is rebuilt) even if the behaviour is identical.
        ("extra_data", "image"): "environment identity",
    },
    "prairielearn.json": {},
}
# grades.csv has no timing or environment column: every cell is compared.


@dataclass
class Report:
    """The outcome of a comparison: printable lines, and what differed."""

    lines: list[str] = field(default_factory=list)
    students: int = 0
    differing: set[str] = field(default_factory=set)
    class_level: bool = False  # grades.csv header or row order differs, or a file is unreadable

    @property
    def same(self) -> bool:
        return not self.differing and not self.class_level


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 3] + "..."


def _string_diff(before: str, after: str) -> str:
    """The two strings around their first differing character."""
    pairs = enumerate(zip(before, after, strict=False))
    start = next((i for i, (a, b) in pairs if a != b), min(len(before), len(after)))
    lo = max(0, start - 15)
    prefix = "..." if lo else ""
    return f"{prefix}{_short(before[lo:])} != {prefix}{_short(after[lo:])}"


def _path_text(path: Sequence[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(root)"


def json_differences(
    before: Any, after: Any, ignored: dict[tuple[str, ...], str] | None = None, path: tuple[str | int, ...] = ()
) -> list[str]:
    """Every difference between two JSON values, as `path: before != after`, in document order."""
    ignored = ignored or {}
    where = _path_text(path)
    if isinstance(before, dict) and isinstance(after, dict):
        found: list[str] = []
        for key in [*before, *(k for k in after if k not in before)]:
            if (*path, key) in ignored:
                continue
            if key not in after:
                found.append(f"{_path_text((*path, key))}: only in BEFORE")
            elif key not in before:
                found.append(f"{_path_text((*path, key))}: only in AFTER")
            else:
                found += json_differences(before[key], after[key], ignored, (*path, key))
        return found
    if isinstance(before, list) and isinstance(after, list):
        found = []
        if len(before) != len(after):
            found.append(f"{where}: length {len(before)} != {len(after)}")
        for index, (old, new) in enumerate(zip(before, after, strict=False)):
            found += json_differences(old, new, ignored, (*path, index))
        return found
    # bool is an int in Python: `True == 1` must still count as a difference.
    if type(before) is not type(after) or before != after:
        if isinstance(before, str) and isinstance(after, str):
            return [f"{where}: {_string_diff(before, after)}"]
        return [f"{where}: {_short(before)} != {_short(after)}"]
    return []


def _load_json(path: Path) -> tuple[Any, str]:
    """(data, "") or (None, why it cannot be read)."""
    try:
        return json.loads(path.read_text(encoding="utf-8")), ""
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        return None, f"unreadable ({error})"


def _summary(differences: list[str]) -> str:
    shown = "; ".join(differences[:MAX_PATHS])
    more = len(differences) - MAX_PATHS
    return shown + (f" (+{more} more)" if more > 0 else "")


def compare_student_file(before: Path, after: Path, name: str) -> list[str]:
    """Differences in one student's file; a file present on one side only is one difference."""
    if not before.is_file() and not after.is_file():
        return []  # e.g. no prairielearn.json on either side for an infrastructure failure
    if not before.is_file() or not after.is_file():
        return [f"only in {'AFTER' if after.is_file() else 'BEFORE'}"]
    old, old_error = _load_json(before)
    new, new_error = _load_json(after)
    if old_error or new_error:
        return [f"BEFORE {old_error or 'ok'}, AFTER {new_error or 'ok'}"]
    return json_differences(old, new, IGNORED.get(name, {}))


def _student_ids(root: Path) -> set[str]:
    folder = root / STUDENTS_DIR
    return {p.name for p in folder.iterdir() if p.is_dir()} if folder.is_dir() else set()


def _read_csv(path: Path) -> tuple[list[str], list[dict[str, str]], str]:
    """(header, rows, "") or ([], [], why it cannot be read)."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            return list(reader.fieldnames or []), rows, ""
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        return [], [], f"unreadable ({error})"


def compare_grades_csv(before: Path, after: Path, report: Report) -> dict[str, list[str]]:
    """Per-student differences in grades.csv (keyed by the student column); class-level ones go in the report."""
    old_header, old_rows, old_error = _read_csv(before)
    new_header, new_rows, new_error = _read_csv(after)
    if old_error or new_error:
        report.class_level = True
        report.lines.append(f"{GRADES_CSV}: BEFORE {old_error or 'ok'}, AFTER {new_error or 'ok'}")
        return {}
    if old_header != new_header:
        report.class_level = True
        report.lines.append(f"{GRADES_CSV}: header {_short(old_header)} != {_short(new_header)}")
    old_by = {row.get("student", ""): row for row in old_rows}
    new_by = {row.get("student", ""): row for row in new_rows}
    if len(old_by) != len(old_rows) or len(new_by) != len(new_rows):
        report.class_level = True
        report.lines.append(f"{GRADES_CSV}: a student has more than one row")
    differences: dict[str, list[str]] = {}
    for student in sorted(old_by.keys() | new_by.keys()):
        if student not in new_by or student not in old_by:
            differences[student] = [f"row only in {'BEFORE' if student in old_by else 'AFTER'}"]
            continue
        found = json_differences(old_by[student], new_by[student])
        if found:
            differences[student] = found
    common = old_by.keys() & new_by.keys()
    if [r.get("student") for r in old_rows if r.get("student") in common] != [
        r.get("student") for r in new_rows if r.get("student") in common
    ]:
        report.class_level = True
        report.lines.append(f"{GRADES_CSV}: rows are in a different order")
    return differences


def compare_dirs(before: Path, after: Path) -> Report:
    """Compare two output folders; the report lists every difference not in IGNORED."""
    report = Report()
    old_ids, new_ids = _student_ids(before), _student_ids(after)
    csv_differences: dict[str, list[str]] = {}
    old_csv, new_csv = before / GRADES_CSV, after / GRADES_CSV
    if old_csv.is_file() and new_csv.is_file():
        csv_differences = compare_grades_csv(old_csv, new_csv, report)
    elif old_csv.is_file() or new_csv.is_file():
        report.class_level = True
        report.lines.append(f"{GRADES_CSV}: only in {'BEFORE' if old_csv.is_file() else 'AFTER'}")
    students = sorted(old_ids | new_ids | csv_differences.keys())
    report.students = len(students)
    for student in students:
        if student not in old_ids or student not in new_ids:
            report.differing.add(student)
            side = "BEFORE" if student in old_ids else "AFTER" if student in new_ids else "neither folder"
            report.lines.append(f"{student}: student only in {side}")
        else:
            for name in STUDENT_FILES:
                old_file = before / STUDENTS_DIR / student / name
                new_file = after / STUDENTS_DIR / student / name
                found = compare_student_file(old_file, new_file, name)
                if found:
                    report.differing.add(student)
                    report.lines.append(f"{student}/{name}: {_summary(found)}")
        if student in csv_differences:
            report.differing.add(student)
            report.lines.append(f"{student}/{GRADES_CSV}: {_summary(csv_differences[student])}")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("before", type=Path, metavar="BEFORE_DIR", help="output folder of the old code")
    parser.add_argument("after", type=Path, metavar="AFTER_DIR", help="output folder of the new code")
    args = parser.parse_args(argv)
    for folder in (args.before, args.after):
        if not (folder / STUDENTS_DIR).is_dir() and not (folder / GRADES_CSV).is_file():
            parser.error(f"{folder} is not a `grader grade` output folder (no {STUDENTS_DIR}/ and no {GRADES_CSV})")
    report = compare_dirs(args.before, args.after)
    for line in report.lines:
        print(line)
    print(f"{report.students} students compared, {len(report.differing)} differ")
    return 0 if report.same else 1


if __name__ == "__main__":
    sys.exit(main())
