"""Where the time of one grading goes, host and sandbox, for the reference solution.

Host side, timed in this process: starting the CLI (its imports, in a fresh interpreter),
reading the rubric, building the plan, the sandbox run as the host sees it, judging, and
rendering the feedback page. Sandbox side: the same harness run by the local runner from a
wrapper that times its parts (every child by kind, putting the grader's engines in place of the
class, the rest of the supervisor) without changing what runs. Docker's own share is the
cold run's wall time less the harness's. Median of ``--repeats`` runs.

    python bench/profile_grading.py [--repeats 5] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from markdown_section import write_section  # noqa: E402

from grader.judge.run import judge_run  # noqa: E402
from grader.pipeline import Job, container_limits, grade_submission  # noqa: E402
from grader.report.html import render_feedback_html  # noqa: E402
from grader.rubric import load_rubric  # noqa: E402
from grader.runners.docker import DockerRunner  # noqa: E402
from grader.runners.local import LocalRunner  # noqa: E402

REFERENCE = REPO / "reference" / "autograd_lab.py"

WRAPPER = textwrap.dedent(
    """
    import json, sys, time
    sys.path.insert(0, {repo!r})
    from sandbox.harness import supervisor
    from sandbox.harness.execution import runs
    from sandbox.harness.mutation import gate
    spent = {{}}
    def timed(name, call):
        def wrapper(*args, **kwargs):
            started = time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - started
        return wrapper
    original = runs.Runs.run
    def run(self, task, schema, **kw):
        started = time.monotonic()
        try:
            return original(self, task, schema, **kw)
        finally:
            key = "children: " + task.get("kind", "?")
            spent[key] = spent.get(key, 0.0) + time.monotonic() - started
            spent[key + " (count)"] = spent.get(key + " (count)", 0) + 1
            fastest = key + " (fastest one)"
            spent[fastest] = min(spent.get(fastest, float("inf")), time.monotonic() - started)
    runs.Runs.run = run
    gate.spliced_all = timed("putting the grader's engines in place of the class", gate.spliced_all)
    started = time.monotonic()
    code = supervisor.main(sys.argv[1:])
    spent["harness total"] = time.monotonic() - started
    with open({out!r}, "a") as log:
        log.write(json.dumps(spent) + "\\n")
    sys.exit(code)
    """
)


def harness_parts(repeats: int, folder: Path) -> dict[str, float]:
    out = folder / "parts.jsonl"
    wrapper = folder / "run_harness.py"
    wrapper.write_text(WRAPPER.format(repo=str(REPO), out=str(out)))
    rubric = load_rubric()
    for _ in range(repeats):
        grade_submission(REFERENCE, student="ref", rubric=rubric, runner=LocalRunner(harness=wrapper), seed=rubric.seed)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    keys = sorted({k for row in rows for k in row})
    return {k: statistics.median(row.get(k, 0.0) for row in rows) for k in keys}


def host_parts(repeats: int) -> dict[str, float]:
    times: dict[str, list[float]] = collections.defaultdict(list)
    runner = DockerRunner()
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import grader.cli"], check=True)
        times["starting the CLI (imports, fresh interpreter)"].append(time.perf_counter() - started)
        started = time.perf_counter()
        rubric = load_rubric()
        times["reading the rubric"].append(time.perf_counter() - started)
        started = time.perf_counter()
        job = Job("ref", rubric, rubric.seed, False)
        plan = job.plan
        times["building the plan"].append(time.perf_counter() - started)
        source = REFERENCE.read_bytes()
        nonce = "0" * 32
        body = plan.to_bytes(rubric, nonce=nonce, isolate=True)
        started = time.perf_counter()
        raw = runner.run(source=source, filename=rubric.filename, plan=body, limits=container_limits(rubric))
        times["the cold Docker run, as the host sees it"].append(time.perf_counter() - started)
        times["  of which the harness inside"].append(raw.elapsed)
        started = time.perf_counter()
        judged = judge_run(rubric, plan, raw, nonce=nonce, source=source)
        times["judging (expected values cached after the first)"].append(time.perf_counter() - started)
        result = grade_submission(REFERENCE, student="ref", rubric=rubric, runner=LocalRunner(), seed=rubric.seed)
        started = time.perf_counter()
        render_feedback_html(result)
        times["rendering the feedback page"].append(time.perf_counter() - started)
        if not judged.checks:
            raise SystemExit("nothing was judged: not a valid measurement")
    return {k: statistics.median(v) for k, v in times.items()}


def _floor(sandbox: dict[str, float]) -> str:
    """What the sandbox's runs cost with no text written at all and every run as fast as the
    fastest of its kind: a lower bound for this design (one child per run of the student's
    checks, each with its own compile of its file, and one per probe)."""
    kinds = sorted({k.removesuffix(" (count)") for k in sandbox if k.endswith(" (count)")})
    parts = {k: sandbox[k + " (count)"] * sandbox[k + " (fastest one)"] for k in kinds}
    scripts = parts.get("children: script", 0.0)
    return (
        f"Floor: the same children, each as fast as the fastest of its kind and with no text "
        f"written, would take {sum(parts.values()):.2f} s ({scripts:.2f} s of it the "
        f"{sandbox.get('children: script (count)', 0):.0f} runs of the student's checks)."
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", type=Path)
    args = parser.parse_args()
    host = host_parts(args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        sandbox = harness_parts(args.repeats, Path(tmp))
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## Where one grading's time goes (`bench/profile_grading.py`)",
        "",
        f"Measured {stamp} on this machine (2 cores), the reference solution, full rubric, median of "
        f"{args.repeats}. Host parts are wall seconds in the grading process; sandbox parts are the "
        "harness's own (children: wall seconds per kind, with how many; texts and copies: CPU seconds "
        "of the supervisor), run by the local runner so that each part can be timed.",
        "",
        "| host part | seconds |",
        "|---|---|",
        *(f"| {name} | {seconds:.3f} |" for name, seconds in host.items()),
        "",
        "| sandbox part | seconds (or count) |",
        "|---|---|",
        *(
            f"| {name} | {value:.3f} |" if "count" not in name else f"| {name} | {value:.0f} |"
            for name, value in sandbox.items()
        ),
    ]
    docker_share = host["the cold Docker run, as the host sees it"] - host["  of which the harness inside"]
    lines += ["", f"Docker's own share of a cold run (create, start, stop, remove): {docker_share:.2f} s."]
    lines += ["", _floor(sandbox)]
    print("\n".join(lines))
    if args.write:
        write_section(args.write, "profile_grading", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
