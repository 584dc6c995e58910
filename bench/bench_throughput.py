"""Class-grading throughput, against the cost of a bare container measured in the same run.

Baseline: `docker run --rm IMAGE python3 -c pass` (the floor any one-container-per-submission
grader pays). Measured: a synthetic class (bench/synth_class.py) graded with `grade_class`
at --jobs 1 and --jobs 2 (without and with warm sandboxes), store and reports included.
Reported as submissions/s and as the ratio of seconds per submission to one bare container.

    python bench/bench_throughput.py [--students 40] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from markdown_section import write_section  # noqa: E402
from synth_class import build  # noqa: E402

from grader.batch import grade_class  # noqa: E402
from grader.rubric import load_rubric  # noqa: E402
from grader.runners.docker import DockerRunner  # noqa: E402


def bare_container(image: str, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(["docker", "run", "--rm", image, "python3", "-c", "pass"], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def batch(source: Path, jobs: int, image: str, warm: int = 0) -> float:
    """A class graded as `grader grade --jobs JOBS --warm WARM` grades it (the pool's start counted)."""
    from grader.pipeline import container_limits

    rubric = load_rubric()
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        first = DockerRunner(image=image)
        if warm:
            first.start_warm(warm, expect=container_limits(rubric))
        try:
            outcome = grade_class(
                source,
                out=Path(out),
                rubric=rubric,
                runner=first,
                runner_factory=lambda: DockerRunner(image=image, pool=first.pool),
                jobs=jobs,
                seed=7,
            )
        finally:
            first.close()
        seconds = time.perf_counter() - started
    if outcome.infra_failures:
        raise SystemExit(f"{outcome.infra_failures} infrastructure failures: not a valid measurement")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the two --jobs 2 variants")
    parser.add_argument("--write", type=Path)
    args = parser.parse_args()
    image = DockerRunner().image
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp), students=args.students, seed=3)
        bare_before = bare_container(image, 5)
        one = batch(Path(tmp), 1, image)
        # The two --jobs 2 variants alternate, round after round: this machine's speed drifts.
        twos, warms = [], []
        for _ in range(args.rounds):
            twos.append(batch(Path(tmp), 2, image))
            warms.append(batch(Path(tmp), 2, image, warm=2))
        two, warm = statistics.median(twos), statistics.median(warms)
        bare_after = bare_container(image, 5)
    bare = statistics.median([bare_before, bare_after])
    n = args.students
    rows = [
        "| measurement | seconds | submissions/s | s per submission / bare container |",
        "|---|---|---|---|",
        f"| bare container (`docker run --rm IMAGE python3 -c pass`, median) | {bare:.2f} | | 1.00 |",
        f"| class of {n}, --jobs 1 | {one:.1f} | {n / one:.2f} | {one / n / bare:.2f} |",
        f"| class of {n}, --jobs 2 --warm 0 (median of {args.rounds}; "
        f"{min(twos):.1f}-{max(twos):.1f}) | {two:.1f} | {n / two:.2f} | {two / n / bare:.2f} |",
        f"| class of {n}, --jobs 2 --warm 2 (median of {args.rounds}; "
        f"{min(warms):.1f}-{max(warms):.1f}) | {warm:.1f} | {n / warm:.2f} | {warm / n / bare:.2f} |",
    ]
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## Class throughput (`bench/bench_throughput.py`)",
        "",
        f"Measured {stamp} on this machine (2 cores), synthetic class (bench/synth_class.py, seed 3), "
        "full rubric including mutation analysis, store and reports included; the bare-container "
        "baseline is the median of 5 runs before and 5 after the batches.",
        "",
        *rows,
        "",
        f"--jobs 2 grades {one / two:.2f}x as fast as --jobs 1; one submission costs "
        f"{two / n / bare:.2f} bare containers of wall time at --jobs 2 without warm sandboxes, "
        f"{warm / n / bare:.2f} with them.",
    ]
    print("\n".join(lines))
    if args.write:
        write_section(args.write, "bench_throughput", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
