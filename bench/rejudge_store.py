"""Re-judge a graded class from its stored sandbox output with the current code, then compare.

A sandbox run is not bit-for-bit repeatable (an engine whose `_prev` is a set of objects walks
its graph in an address-dependent order), so two gradings of one class can differ for reasons
that have nothing to do with the grader's code. This script removes that noise for a change
of the judge, the pipeline or the reports: it takes BEFORE_OUT/grades.sqlite (written by
`grader grade` with the old code), judges every stored sandbox run again with the code of this
checkout (the same bytes, rubric and seed; nothing runs in a sandbox), writes AFTER_OUT through
the same exporters, and compares the two folders with `compare_results.py`.

    python bench/rejudge_store.py BEFORE_OUT AFTER_OUT

Exits 0 when every results.json, prairielearn.json and grades.csv row agree (timings and the
image id aside), 1 when anything differs or a stored run no longer matches the current plan.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from compare_results import compare_dirs  # noqa: E402

from grader.batch import export_class, with_intake_notices  # noqa: E402
from grader.errors import InfraError  # noqa: E402
from grader.intake.collect import Found  # noqa: E402
from grader.pipeline import grade_source, rejudge  # noqa: E402
from grader.results import SubmissionResult  # noqa: E402
from grader.rubric import DEFAULT_RUBRIC, load_rubric  # noqa: E402
from grader.runners.base import ContainerLimits, RawRun  # noqa: E402
from grader.store import STORE_NAME, Store  # noqa: E402


class NoSandbox:
    """A runner that refuses to run: re-judging must never need the sandbox."""

    isolates = False

    def __init__(self, name: str) -> None:
        self.name = name  # the runner the stored result names

    def run(self, *, source: bytes, filename: str, plan: bytes, limits: ContainerLimits, **_: object) -> RawRun:
        raise InfraError("re-judging tried to run the sandbox")


def rejudge_class(before: Path, after: Path, rubric_path: Path) -> list[str]:
    """Write AFTER from BEFORE's stored runs; returns the students that could not be re-judged."""
    rubric = load_rubric(rubric_path)
    problems: list[str] = []
    with Store(before / STORE_NAME) as old, Store(after / STORE_NAME) as new:
        submissions = {s.student: s for s in old.submissions()}
        for stored in old.results():
            item = submissions[stored.student]
            new.put_submission(item)
            result: SubmissionResult | None
            if stored.evidence is not None and item.source is not None:
                result = rejudge(stored.evidence, item.source, student=stored.student, rubric=rubric, seed=stored.seed)
            else:  # never ran (ungradable, infra error): judged again from the intake alone
                source = item.source if not item.problem else None
                runner = NoSandbox(stored.result.runner)
                graded = grade_source(
                    source, item.problem, student=stored.student, rubric=rubric, runner=runner, seed=stored.seed
                )
                result = graded.result
            if result is None:
                problems.append(f"{stored.student}: the stored run's plan differs from the current plan")
                continue
            found = Found(item.student, item.name, item.source, item.origin, item.notices, item.problem)
            result = with_intake_notices(result, found)
            new.put_result(
                content_sha=stored.content_sha,
                rubric_sha=rubric.sha256,
                image=stored.image,
                result=result,
                evidence=stored.evidence,
                ran=False,
            )
        export_class(new, after, rubric_name=rubric.name, section_tags=[s.tag for s in rubric.sections], canvas=False)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="a `grader grade` output folder with grades.sqlite")
    parser.add_argument("after", type=Path, help="an empty or new folder for the re-judged class")
    parser.add_argument("--rubric", type=Path, default=DEFAULT_RUBRIC)
    args = parser.parse_args(argv)
    args.after.mkdir(parents=True, exist_ok=True)
    problems = rejudge_class(args.before, args.after, args.rubric)
    for line in problems:
        print(line)
    report = compare_dirs(args.before, args.after)
    for line in report.lines:
        print(line)
    return 0 if report.same and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
