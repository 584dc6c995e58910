"""What mutation analysis adds to grading one submission, as a ratio measured in one run.

Three rubric variants grade the same submissions in the same sandbox, interleaved so that
machine noise falls on all of them alike:

- ``rest``: the shipped rubric without its bug_injection section (no mutation probe at all);
- ``step5``: the bug_injection section with only the Step-5 and forced-fail mutants;
- ``full``: the shipped rubric (Step 5, forced-fail and the whole catalogue).

Reported: the median wall time per submission for each variant, and the added cost of the
mutation probe as a ratio to the rest of the grading. Usage:

    python bench/bench_mutation.py [--sandbox docker|local] [--repeats 3] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from markdown_section import write_section  # noqa: E402

from grader.cli import make_runner  # noqa: E402
from grader.pipeline import grade_submission  # noqa: E402
from grader.rubric import DEFAULT_RUBRIC, Rubric, load_rubric  # noqa: E402

# Students whose grading is dominated by something else (a syntax error, an endless loop)
# would only dilute the comparison.
SKIP = {"frank_zhou", "henry_adams"}


def variant(name: str, folder: Path) -> Rubric:
    data = yaml.safe_load(DEFAULT_RUBRIC.read_text(encoding="utf-8"))
    if name == "rest":
        section = next(s for s in data["sections"] if s["tag"] == "bug_injection")
        data["sections"].remove(section)
        data["assignment"]["total"] -= sum(c["points"] for c in section["checks"])
        del data["probes"]["mutation"]
    elif name == "step5":
        data["probes"]["mutation"]["mutants"] = ["acc_mul"]
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return load_rubric(path)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sandbox", default="docker", choices=("docker", "local"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", type=Path, help="replace this benchmark's section of a Markdown file")
    args = parser.parse_args()

    runner = make_runner(args.sandbox)
    files = sorted(p for p in (REPO / "submissions").glob("*/autograd_lab.py") if p.parent.name not in SKIP)
    times: dict[str, list[float]] = {"rest": [], "step5": [], "full": []}
    with tempfile.TemporaryDirectory() as tmp:
        rubrics = {name: variant(name, Path(tmp)) for name in times}
        for _ in range(args.repeats):
            for path in files:
                for name, rubric in rubrics.items():  # interleaved: noise hits every variant alike
                    started = time.perf_counter()
                    result = grade_submission(path, student=path.parent.name, rubric=rubric, runner=runner, seed=7)
                    times[name].append(time.perf_counter() - started)
                    if result.status.value == "infra_error":
                        print(f"infra error on {path.parent.name}: {result.status_detail}", file=sys.stderr)
                        return 1
    median = {name: statistics.median(values) for name, values in times.items()}
    rest = median["rest"]
    rows = [
        "| variant | median s / submission | ratio to `rest` |",
        "|---|---|---|",
        *(f"| {name} | {median[name]:.2f} | {median[name] / rest:.2f} |" for name in times),
    ]
    added = (median["full"] - rest) / rest
    catalogue = (median["full"] - median["step5"]) / rest
    summary = (
        f"Mutation analysis adds **{added:.2f}x** the rest of the grading per submission "
        f"(the catalogue beyond Step 5 alone: {catalogue:.2f}x)."
    )
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## Mutation analysis cost (`bench/bench_mutation.py`)",
        "",
        f"Measured {stamp}, {args.sandbox} sandbox, {len(files)} sample submissions x {args.repeats} "
        "repeats, variants interleaved. `rest` = the rubric without the bug_injection section; "
        "`step5` = Step-5 and forced-fail mutants only; `full` = the shipped rubric (whole catalogue).",
        "",
        *rows,
        "",
        summary,
    ]
    print("\n".join(lines))
    if args.write:
        write_section(args.write, "bench_mutation", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
