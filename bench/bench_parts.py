"""A lone grading in one part against two (the rubric's ``parts``), in one run, alternating.

Each file is graded with the shipped rubric (one part, one sandbox) and with the same rubric at
``parts: 2`` (its second part in a sandbox of its own when a core is free, as on an idle host),
turn by turn, so that machine noise falls on both; a bare container
(`docker run --rm IMAGE python3 -c pass`) is timed between them as the baseline. Measured in
this process (the CLI's own start is not in it): wall seconds per grading, median, for the
reference (a full grading and a self-check) and for the file whose checks train a small MLP
(about 3 s a run). Scores must be equal in both, or the run is not a measurement.

    python bench/bench_parts.py [--repeats 3] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

from bench_latency import bare  # noqa: E402
from markdown_section import write_section  # noqa: E402
from rubric_variants import with_limits  # noqa: E402

from grader.pipeline import grade_submission  # noqa: E402
from grader.rubric import Rubric, load_rubric  # noqa: E402
from grader.runners.docker import DockerRunner  # noqa: E402

FILES = {
    "reference, full grading": (REPO / "reference" / "autograd_lab.py", False),
    "reference, self-check": (REPO / "reference" / "autograd_lab.py", True),
    "checks that train an MLP (3 s a run), full grading": (
        REPO / "tests" / "cases" / "checks_train_mlp" / "autograd_lab.py",
        False,
    ),
}


def graded(path: Path, rubric: Rubric, runner: DockerRunner, visible_only: bool) -> tuple[float, float]:
    started = time.perf_counter()
    result = grade_submission(path, student="bench", rubric=rubric, runner=runner, visible_only=visible_only)
    return time.perf_counter() - started, result.score


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", type=Path)
    args = parser.parse_args()
    runner = DockerRunner()
    one = load_rubric()
    two = with_limits(Path(tempfile.mkdtemp()), parts=2)
    rows = []
    baseline: list[float] = []
    for label, (path, visible_only) in FILES.items():
        times: dict[int, list[float]] = {1: [], 2: []}
        scores: dict[int, set[float]] = {1: set(), 2: set()}
        for _ in range(args.repeats):
            baseline.append(bare(runner.image_id))
            for parts, rubric in ((1, one), (2, two)):
                seconds, score = graded(path, rubric, runner, visible_only)
                times[parts].append(seconds)
                scores[parts].add(score)
        if scores[1] != scores[2] or len(scores[1]) != 1:
            raise SystemExit(f"{label}: scores differ ({scores}): not a valid measurement")
        a, b = statistics.median(times[1]), statistics.median(times[2])
        rows.append((label, a, b, scores[1].pop()))
        print(f"{label}: one part {a:.2f} s, two parts {b:.2f} s ({b / a:.2f}x)", flush=True)
    base = statistics.median(baseline)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## A lone grading in one part or two (`bench/bench_parts.py`)",
        "",
        f"Measured {when} on this machine (2 cores, idle but for this run), median of {args.repeats}, "
        "each file graded in turn with the shipped rubric (`parts: 1`) and the same rubric at `parts: 2` "
        "(the second part in a sandbox of its own: a core was free), from Python (no CLI start); a bare "
        f"container took {base:.2f} s (median, timed between them). Scores equal in both, checked.",
        "",
        "| file | one part (s) | two parts (s) | two / one | one part / bare | two parts / bare |",
        "|---|---|---|---|---|---|",
    ]
    for label, a, b, _score in rows:
        lines.append(f"| {label} | {a:.2f} | {b:.2f} | {b / a:.2f}x | {a / base:.2f}x | {b / base:.2f}x |")
    block = "\n".join(lines)
    print(block)
    if args.write:
        write_section(args.write, "bench_parts", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
