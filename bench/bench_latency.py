"""How long a student waits for feedback, against a bare container measured in the same run.

Baseline: `docker run --rm IMAGE python3 -c pass`. Each measurement alternates with it, run for
run, so both see the same machine. Measured:

- `grader check reference/autograd_lab.py` as a student runs it (a fresh CLI process, one
  cold container);
- the service's self-check, upload to the first section shown and to the whole result: a
  student's upload through the JSON API, the page followed (status polled every 20 ms) until its
  first settled section is listed and until it is graded, with one worker of one slot, once
  keeping a warm sandbox (the default) and once with none (`WARM_SANDBOXES=0`);
- the CPU the full rubric costs inside the sandbox on the reference (the harness and every
  child it forks, read with getrusage by the local runner, which runs the same harness code).

    python bench/bench_latency.py [--runs 20] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import functools
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_rush import Stack  # noqa: E402
from markdown_section import write_section  # noqa: E402

REFERENCE = REPO / "reference" / "autograd_lab.py"
GRADER = Path(sys.executable).parent / "grader"


def bare(image: str) -> float:
    started = time.perf_counter()
    subprocess.run(["docker", "run", "--rm", image, "python3", "-c", "pass"], check=True, capture_output=True)
    return time.perf_counter() - started


def check_cli() -> float:
    started = time.perf_counter()
    done = subprocess.run([str(GRADER), "check", str(REFERENCE), "--sandbox", "docker"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"grader check failed: {done.stdout[-300:]}{done.stderr[-300:]}")
    return time.perf_counter() - started


def self_check(stack: Stack, token: str, firsts: list[float] | None = None) -> float:
    """Upload to result; the time to the first section shown goes to ``firsts``."""
    started = time.perf_counter()
    first = None
    receipt = requests.post(
        f"{stack.base}/api/v1/assignments/a8/submissions",
        headers={"Authorization": f"Token {token}"},
        data={"kind": "self_check"},
        files={"file": ("autograd_lab.py", REFERENCE.read_bytes())},
        timeout=60,
    )
    if receipt.status_code != 201:
        raise SystemExit(f"upload refused: {receipt.status_code} {receipt.text[:200]}")
    url = f"{stack.base}/api/v1/submissions/{receipt.json()['id']}"
    while True:
        status = requests.get(url, headers={"Authorization": f"Token {token}"}, timeout=60).json()
        if first is None and status.get("sections"):
            first = time.perf_counter() - started
        if status["status"] not in ("queued", "running"):
            break
        time.sleep(0.02)
    if status["status"] != "graded" or status["score"] != status["max_score"]:
        raise SystemExit(f"the reference's self-check ended {status}: not a valid measurement")
    whole = time.perf_counter() - started
    if firsts is not None:
        firsts.append(whole if first is None else first)  # none seen: the result was the first
    return whole


def worker(stack: Stack, warm: int) -> subprocess.Popen[bytes]:
    live = "SELECT count(*) FROM fleet_gradingworker WHERE stopped_at IS NULL"
    before = int(stack.sql(live)[0][0])
    process = subprocess.Popen(
        [sys.executable, "-m", "grader", "worker", "--concurrency", "1", "--lanes", "self_check"],
        env={**stack.env, "WARM_SANDBOXES": str(warm)},
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while int(stack.sql(live)[0][0]) < before + 1:
        if process.poll() is not None:
            raise SystemExit("the worker exited before taking jobs")
        time.sleep(0.2)
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(timeout=120)


def alternate(runs: int, image: str, measure: object) -> tuple[list[float], list[float]]:
    ours, base = [], []
    for _ in range(runs):
        base.append(bare(image))
        ours.append(measure())  # type: ignore[operator]
        time.sleep(0.5)  # a warm pool refills between two uploads, as between two students
    return ours, base


def harness_cpu(repeats: int, *, visible_only: bool) -> float:
    from grader.pipeline import grade_submission
    from grader.rubric import load_rubric
    from grader.runners.local import LocalRunner

    rubric = load_rubric()
    seconds = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        result = grade_submission(
            REFERENCE, student="ref", rubric=rubric, runner=LocalRunner(), seed=rubric.seed, visible_only=visible_only
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if result.score != result.max_score:
            raise SystemExit("the reference did not get full marks: not a valid measurement")
        seconds.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(seconds)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--write", type=Path)
    args = parser.parse_args()
    from grader.image import ensure_image

    image = ensure_image()
    bare(image)  # the first container after a build pays for warming the engine's caches
    cli, cli_bare = alternate(args.runs, image, check_cli)
    folder = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    cluster = Path(tempfile.mkdtemp(prefix="bench-latency-pg-"))
    stack = Stack(folder, cluster)
    stack.env["SELF_CHECKS_PER_WINDOW"] = "100000"
    service: dict[int, tuple[list[float], list[float]]] = {}
    firsts: dict[int, list[float]] = {1: [], 0: []}
    try:
        stack.start()
        token = stack.run(sys.executable, "-m", "grader", "service", "token", "student1").split()[1]
        for warm in (1, 0):
            process = worker(stack, warm)
            try:
                self_check(stack, token)  # the worker's first job loads its rubric and plan
                service[warm] = alternate(args.runs, image, functools.partial(self_check, stack, token, firsts[warm]))
            finally:
                stop(process)
    finally:
        stack.stop()
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(cluster, ignore_errors=True)
    cpu_full = harness_cpu(5, visible_only=False)
    cpu_check = harness_cpu(5, visible_only=True)

    def row(label: str, pair: tuple[list[float], list[float]]) -> str:
        ours, base = statistics.median(pair[0]), statistics.median(pair[1])
        return f"| {label} | {ours:.2f} | {base:.2f} | {ours / base:.2f} |"

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## Waiting for feedback (`bench/bench_latency.py`)",
        "",
        f"Measured {stamp} on this machine (2 cores): p50 over {args.runs} runs of each, every run "
        "alternating with a bare container (`docker run --rm IMAGE python3 -c pass`); the reference "
        "solution, which passes every check.",
        "",
        "| measurement | p50 (s) | bare container p50 (s) | ratio |",
        "|---|---|---|---|",
        row("`grader check` (a fresh CLI, one cold container)", (cli, cli_bare)),
        row("service self-check, upload to the first section shown, warm sandbox", (firsts[1], service[1][1])),
        row("service self-check, upload to the whole result, warm sandbox", service[1]),
        row("service self-check, upload to the first section shown, no warm sandbox", (firsts[0], service[0][1])),
        row("service self-check, upload to the whole result, no warm sandbox", service[0]),
        "",
        f"CPU inside the sandbox (harness and every child, local runner, median of 5): full rubric "
        f"{cpu_full:.2f} s, self-check {cpu_check:.2f} s.",
    ]
    print("\n".join(lines))
    if args.write:
        write_section(args.write, "bench_latency", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
