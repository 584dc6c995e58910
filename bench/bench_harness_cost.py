"""The cost of this checkout's sandbox harness against an earlier revision's, as a ratio in one run.

Checks out ``--before`` (a git revision) into a temporary worktree, builds its sandbox image, and
grades the same submissions with both trees in Docker, alternating tree by tree so that machine
noise falls on both alike. Each grading runs in its own interpreter with ``PYTHONPATH`` set to
its tree, so each tree grades with its own harness, plan and judge. Reported: the median wall
time per submission for each tree and the ratio current / before, over ordinary submissions,
and apart for files whose honest checks are slow (``SLOW``: there a tree that cuts runs to fit a
budget is cheaper, and wrong). Usage:

    python bench/bench_harness_cost.py --before REV [--repeats 3] [--slow] [--write BENCHMARKS.md]
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
SLOW = (
    "tests/cases/checks_train_mlp/autograd_lab.py",  # checks that train an MLP, about 3 s a run
    "tests/cases/demo_at_import/autograd_lab.py",  # a 0.7 s demo at import, paid by every probe
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
    parser.add_argument("--slow", action="store_true", help="also grade the slow-check files (minutes each)")
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
    files = SUBMISSIONS + (SLOW if options.slow else ())
    seconds: dict[str, dict[str, list[float]]] = {name: {f: [] for f in files} for name in trees}
    scores: dict[str, dict[str, float]] = {name: {} for name in trees}
    for _ in range(options.repeats):
        for submission in files:
            for name, tree in trees.items():
                facts = json.loads(run(tree, ["-c", GRADE_ONE, str(REPO / submission)]).splitlines()[-1])
                seconds[name][submission].append(facts["seconds"])
                scores[name][submission] = facts["score"]
    p50 = {name: statistics.median([v for f in SUBMISSIONS for v in seconds[name][f]]) for name in trees}
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
    if options.slow:
        lines += [
            "",
            "Files whose honest checks are slow, each on its own:",
            "",
            "| file | before p50 | current p50 | ratio | score before / current |",
            "|---|---|---|---|---|",
        ]
        for submission in SLOW:
            old, new = (statistics.median(seconds[name][submission]) for name in ("before", "current"))
            lines.append(
                f"| {Path(submission).parent.name} | {old:.1f} s | {new:.1f} s | {new / old:.2f} | "
                f"{scores['before'][submission]:g} / {scores['current'][submission]:g} |"
            )
    print("\n".join(lines))
    if options.write:
        write_section(options.write, "harness-cost", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
