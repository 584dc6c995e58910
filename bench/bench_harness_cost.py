"""The cost of this checkout's sandbox harness against an earlier revision's, as a ratio in one run.

Checks out ``--before`` (a git revision) into a temporary worktree, builds its sandbox image, and
grades the same submissions with both trees in Docker, alternating tree by tree so that machine
noise falls on both alike. Each grading runs in its own interpreter with ``PYTHONPATH`` set to
its tree, so each tree grades with its own harness, plan and judge. Reported: the median wall
time per submission for each tree, and the ratio current / before. Usage:

    python bench/bench_harness_cost.py --before REV [--repeats 3] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from markdown_section import write_section  # noqa: E402

SUBMISSIONS = (
    "reference/autograd_lab.py",
    "tests/cases/mut_acc_mul/autograd_lab.py",
    "submissions/pat_garcia/autograd_lab.py",
)

# Runs inside the interpreter of one tree: grade one file with the full rubric, print the facts.
GRADE_ONE = """
import json, sys, time
from pathlib import Path
from grader.pipeline import grade_submission
from grader.rubric import load_rubric
from grader.runners.docker import DockerRunner
started = time.monotonic()
result = grade_submission(Path(sys.argv[1]), student="bench", rubric=load_rubric(), runner=DockerRunner(), seed=7)
print(json.dumps({"seconds": time.monotonic() - started, "score": result.score, "status": result.status.value}))
"""


def run(tree: Path, args: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", required=True, help="the git revision to compare with")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", type=Path)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        before = Path(scratch) / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(before), options.before], cwd=REPO, check=True)
        try:
            return measure(before, options)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=REPO, check=False)


def measure(before: Path, options: argparse.Namespace) -> int:
    trees = {"before": before, "current": REPO}
    for tree in trees.values():
        run(tree, ["-c", "from grader.image import ensure_image; print(ensure_image())"])
    seconds: dict[str, list[float]] = {name: [] for name in trees}
    scores: dict[str, dict[str, float]] = {name: {} for name in trees}
    for _ in range(options.repeats):
        for submission in SUBMISSIONS:
            for name, tree in trees.items():
                facts = json.loads(run(tree, ["-c", GRADE_ONE, str(REPO / submission)]).splitlines()[-1])
                seconds[name].append(facts["seconds"])
                scores[name][submission] = facts["score"]
    p50 = {name: statistics.median(values) for name, values in seconds.items()}
    ratio = p50["current"] / p50["before"]
    lines = [
        "## Sandbox harness cost (`bench/bench_harness_cost.py`)",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d} on this machine ({os.cpu_count()} cores), Docker, full rubric, "
        f"{len(SUBMISSIONS)} submissions x {options.repeats} repeats per tree, trees alternated.",
        "",
        "| harness | p50 wall per submission | ratio |",
        "|---|---|---|",
        f"| before (`{options.before}`) | {p50['before']:.2f} s | 1.00 |",
        f"| current | {p50['current']:.2f} s | {ratio:.2f} |",
        "",
        "Scores per submission (before / current): "
        + "; ".join(f"{Path(s).parent.name} {scores['before'][s]:g} / {scores['current'][s]:g}" for s in SUBMISSIONS),
    ]
    print("\n".join(lines))
    if options.write:
        write_section(options.write, "harness-cost", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
