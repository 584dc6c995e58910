"""What shrinking counterexamples adds to grading one submission, as a ratio measured in one run.

The shipped rubric (every random probe has ``shrink:``) and the same rubric with shrinking
turned off grade the same submissions in the same sandbox, interleaved so that machine noise
falls on both alike. The sample: the class under ``submissions/`` and the single-bug engines
under ``tests/cases`` (most of which fail a hidden random check, so they shrink). A correct
engine pays nothing but the comparison with exact math; a wrong one pays the search.

    python bench/bench_shrink.py [--sandbox docker|local] [--repeats 3] [--write BENCHMARKS.md]
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

from markdown_section import write_section  # noqa: E402

from grader.cli import make_runner  # noqa: E402
from grader.pipeline import grade_submission  # noqa: E402
from grader.rubric import DEFAULT_RUBRIC, load_rubric  # noqa: E402

SKIP = {"frank_zhou", "henry_adams", "syntax_error"}  # dominated by something else (an endless loop, no load)
SHRINK_LINE = "    shrink: 12\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sandbox", default="docker", choices=("docker", "local"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", type=Path, help="replace this benchmark's section of a Markdown file")
    args = parser.parse_args()

    runner = make_runner(args.sandbox)
    found = [*(REPO / "submissions").glob("*/autograd_lab.py"), *(REPO / "tests" / "cases").glob("*/autograd_lab.py")]
    files = sorted(p for p in found if p.parent.name not in SKIP)
    text = DEFAULT_RUBRIC.read_text(encoding="utf-8")
    if SHRINK_LINE not in text:
        raise SystemExit("the shipped rubric shrinks nothing: not a valid measurement")
    times: dict[str, list[float]] = {"without": [], "with": []}
    shrunk = 0
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "no_shrink.yaml"
        plain.write_text(text.replace(SHRINK_LINE, ""), encoding="utf-8")
        rubrics = {"without": load_rubric(plain), "with": load_rubric()}
        for repeat in range(args.repeats):
            for path in files:
                for name, rubric in rubrics.items():
                    started = time.perf_counter()
                    result = grade_submission(path, student=path.parent.name, rubric=rubric, runner=runner, seed=7)
                    times[name].append(time.perf_counter() - started)
                    if result.status.value == "infra_error":
                        print(f"infra error on {path.parent.name}: {result.status_detail}", file=sys.stderr)
                        return 1
                    if name == "with" and repeat == 0:
                        shrunk += any(c.counterexample is not None for c in result.checks)
    median = {name: statistics.median(values) for name, values in times.items()}
    total = {name: sum(values) for name, values in times.items()}
    ratio = median["with"] / median["without"]
    overall = total["with"] / total["without"]
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## Counterexample shrinking cost (`bench/bench_shrink.py`)",
        "",
        f"Measured {stamp}, {args.sandbox} sandbox, {len(files)} submissions ({shrunk} of them shown a "
        f"shrunk counterexample) x {args.repeats} repeats, the two rubrics interleaved.",
        "",
        "| rubric | median s / submission | total s |",
        "|---|---|---|",
        *(f"| {name} shrinking | {median[name]:.2f} | {total[name]:.1f} |" for name in times),
        "",
        f"Grading with shrinking takes **{ratio:.2f}x** the time without it per submission (median), "
        f"{overall:.2f}x over the whole sample.",
    ]
    print("\n".join(lines))
    if args.write:
        write_section(args.write, "bench_shrink", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
