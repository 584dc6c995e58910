"""A deadline rush through the service: N students upload within a time window through the
JSON API (loopback), against the cost of a bare container measured in the same run.

It starts a private PostgreSQL cluster, the web process (gunicorn) and grading workers, enrols
the students with `grader service roster`, takes their tokens with `grader service token`, and
sends one counted upload per student, spread evenly over the window. Measured: each upload's
receipt latency (p50, p95, max), and the drain time (first upload to last grading) with one
worker process and with two (one sandbox slot each). Checked, or the run is not a
measurement: every upload receipted, every job ended exactly once (one graded run per
submission, one job per upload), none lost.

With ``--flood``, the same rush twice on two slots, once as it is and once with one more
student who, as it starts, sends ten self-checks and ten counted uploads (over two assignments) of
a file that sleeps at import (``--import-sleep`` seconds; by default until its time limit): the
other students' receipt and result times (upload to graded), with and without the flood, as
ratios measured in the same run, and how long each of the flood's self-checks held a slot.
``--flood-lanes self_check`` sends only the self-checks.

    python bench/bench_rush.py [--students 500] [--window 60] [--write BENCHMARKS.md]
    python bench/bench_rush.py --flood [--students 60] [--window 60] [--import-sleep 9] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import requests

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_throughput import bare_container  # noqa: E402
from markdown_section import write_section  # noqa: E402

from service import devdb  # noqa: E402

# The sample class without the three that run into a time or memory limit on purpose: a rush
# is about the queue, and each of those costs a full time budget.
SLOW_ON_PURPOSE = {"henry_adams", "jack_oconnor", "kate_lee"}
SAMPLES = sorted(p for p in (REPO / "submissions").glob("*/autograd_lab.py") if p.parent.name not in SLOW_ON_PURPOSE)


@dataclass(frozen=True)
class Rush:
    workers: int
    latencies: list[float]
    drain_seconds: float
    submissions: int
    results: list[float]  # upload to graded, per submission (the flood's own left out)
    flood_held: list[float]  # seconds each of the flood's finished self-checks held a slot


FLOODER = "flood0000"


def sleepy(seconds: float) -> bytes:
    """The reference engine, sleeping at import (3600 s: longer than any time limit)."""
    lines = (REPO / "reference" / "autograd_lab.py").read_text().splitlines(keepends=True)
    after = max(i for i, line in enumerate(lines) if line.startswith("from __future__")) + 1
    return "".join([*lines[:after], f"import time\ntime.sleep({seconds:g})\n", *lines[after:]]).encode()


@dataclass(frozen=True)
class Flood:
    seconds: float  # how long the file sleeps at import
    lanes: tuple[str, ...]  # self_check, submit


class Stack:
    """The private database, the web process and the environment the CLI and workers use."""

    def __init__(self, folder: Path, cluster: Path) -> None:
        self.folder = folder
        self.cluster = cluster  # its own folder: the cluster's owner (postgres) must reach it
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
        self.env.update(
            DATABASE_URL=devdb.start(cluster),
            SECRET_KEY="bench-secret-key-not-for-production",
            DJANGO_SETTINGS_MODULE="service.settings",
            QUEUE_LIMIT="100000",
            SUBMITS_PER_WINDOW="100",
        )
        self.port = devdb.free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env["SITE_ROOT"] = self.base
        self.web: subprocess.Popen[bytes] | None = None

    def run(self, *argv: str) -> str:
        done = subprocess.run(argv, env=self.env, cwd=REPO, check=True, capture_output=True, text=True)
        return done.stdout

    def start(self) -> None:
        manage = [sys.executable, "-m", "service.manage"]
        self.run(*manage, "migrate", "--noinput")
        self.run(*manage, "createcachetable")
        self.run(sys.executable, "-m", "grader", "service", "demo")  # the course and assignment a8
        # A second assignment in the demo course: a flood spreads over both.
        copy = "a = Assignment.objects.get(slug='a8'); a.pk = None; a.slug, a.title = 'a9', 'A9'; a.save()"
        self.run(*manage, "shell", "-c", f"from service.courses.models import Assignment; {copy}")
        self.web = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "service.wsgi",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "2",
                "--threads",
                "8",
                "--timeout",
                "60",
            ],  # fmt: skip
            env=self.env,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(600):
            try:
                if requests.get(f"{self.base}/status/", timeout=5).status_code == 200:
                    return
            except requests.ConnectionError:
                time.sleep(0.1)
        raise SystemExit("the web process did not start")

    def stop(self) -> None:
        if self.web is not None:
            self.web.terminate()
            self.web.wait(timeout=60)
        devdb.stop(self.cluster, mode="immediate")

    def worker(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "grader", "worker", "--concurrency", "1"],
            env=self.env,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def sql(self, query: str) -> list[list[str]]:
        with psycopg.connect(self.env["DATABASE_URL"], autocommit=True) as connection:
            return [[str(value) for value in row] for row in connection.execute(query).fetchall()]


def enrol(stack: Stack, students: int) -> dict[str, str]:
    roster = stack.folder / "roster.csv"
    names = [f"r{number:04d}" for number in range(students)] + [FLOODER]
    roster.write_text("username,email,name\n" + "".join(f"{n},{n}@example.edu,Student {n}\n" for n in names))
    stack.run(sys.executable, "-m", "grader", "service", "roster", "a8", str(roster))
    tokens = {}
    for line in stack.run(sys.executable, "-m", "grader", "service", "token", *names).splitlines():
        name, token = line.split()
        tokens[name] = token
    if sorted(tokens) != sorted(names):
        raise SystemExit("grader service token did not give one token per student")
    return tokens


def flood(stack: Stack, token: str, how: Flood) -> list[int]:
    """Ten self-checks, then ten counted uploads over two assignments, of the sleeping file (the
    lanes ``how`` names)."""
    ids = []
    body = sleepy(how.seconds)
    sends = [("self_check", "a8")] * 10 + [("submit", "a8"), ("submit", "a9")] * 5
    for kind, slug in (pair for pair in sends if pair[0] in how.lanes):
        response = requests.post(
            f"{stack.base}/api/v1/assignments/{slug}/submissions",
            headers={"Authorization": f"Token {token}"},
            data={"kind": kind},
            files={"file": ("autograd_lab.py", body)},
            timeout=120,
        )
        if response.status_code != 201:
            raise SystemExit(f"the flood: {response.status_code} {response.text[:200]}: not a valid measurement")
        ids.append(int(response.json()["id"]))
    return ids


def rush(stack: Stack, tokens: dict[str, str], window: float, workers: int, flooding: Flood | None = None) -> Rush:
    names = sorted(name for name in tokens if name != FLOODER)
    files = {name: SAMPLES[i % len(SAMPLES)].read_bytes() for i, name in enumerate(names)}
    spacing = window / len(names)
    live = "SELECT count(*) FROM fleet_gradingworker WHERE stopped_at IS NULL"
    before = int(stack.sql(live)[0][0])
    processes = [stack.worker() for _ in range(workers)]
    while int(stack.sql(live)[0][0]) < before + workers:  # registered: ready to take jobs
        if any(process.poll() is not None for process in processes):
            raise SystemExit("a worker exited before taking jobs")
        time.sleep(0.2)
    started = time.perf_counter()

    def send(index: int) -> tuple[int, float]:
        name = names[index]
        time.sleep(max(0.0, started + index * spacing - time.perf_counter()))
        sent = time.perf_counter()
        response = requests.post(
            f"{stack.base}/api/v1/assignments/a8/submissions",
            headers={"Authorization": f"Token {tokens[name]}"},
            data={"kind": "submit"},
            files={"file": ("autograd_lab.py", files[name])},
            timeout=120,
        )
        if response.status_code != 201:
            raise SystemExit(f"{name}: {response.status_code} {response.text[:200]}: not a valid measurement")
        return int(response.json()["id"]), time.perf_counter() - sent

    flood_ids: list[int] = []
    try:
        with ThreadPoolExecutor(max_workers=32) as pool:
            flooded = pool.submit(flood, stack, tokens[FLOODER], flooding) if flooding else None
            receipts = list(pool.map(send, range(len(names))))
            flood_ids = flooded.result() if flooded else []
        ids = ",".join(str(i) for i, _ in receipts)
        while True:
            pending = stack.sql(f"SELECT count(*) FROM submissions_submission WHERE id IN ({ids}) "
                                "AND state IN ('queued', 'running')")  # fmt: skip
            if pending[0][0] == "0":
                break
            time.sleep(0.5)
        drained = time.perf_counter() - started
        results = [
            float(row[0])
            for row in stack.sql(
                f"SELECT extract(epoch FROM finished_at - received_at) FROM submissions_submission WHERE id IN ({ids})"
            )
        ]
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=120)
    check_exactly_once(stack, ids, len(receipts))
    held: list[float] = []
    if flood_ids:
        check_flood_held_one_slot(stack, flood_ids)
        listed = ",".join(str(i) for i in flood_ids)
        held = [
            float(row[0])
            for row in stack.sql(
                "SELECT extract(epoch FROM r.finished_at - r.started_at) FROM submissions_gradingrun r "
                "JOIN submissions_submission s ON s.id = r.submission_id "
                f"WHERE s.id IN ({listed}) AND s.kind = 'self_check' AND r.finished_at IS NOT NULL"
            )
        ]
    return Rush(workers, [latency for _, latency in receipts], drained, len(receipts), results, held)


def check_flood_held_one_slot(stack: Stack, ids: list[int]) -> None:
    """The flood's own jobs: each ended (graded, or replaced by a later one), and never two ran at once."""
    listed = ",".join(str(i) for i in ids)
    runs = stack.sql(
        "SELECT r.started_at, coalesce(r.finished_at, now()) FROM submissions_gradingrun r "
        f"WHERE r.submission_id IN ({listed}) ORDER BY r.started_at"
    )
    overlapping = [pair for pair in zip(runs, runs[1:], strict=False) if pair[1][0] < pair[0][1]]
    if overlapping:
        raise SystemExit(f"the flood held two slots at once: {overlapping[:2]}: the queue is not fair")


def check_exactly_once(stack: Stack, ids: str, expected: int) -> None:
    """0 lost, 0 duplicated, or the figures are not published."""
    runs = stack.sql(
        f"SELECT s.id, s.state, count(r.id) FILTER (WHERE r.outcome NOT IN ('infra_error', '')) "
        f"FROM submissions_submission s LEFT JOIN submissions_gradingrun r ON r.submission_id = s.id "
        f"WHERE s.id IN ({ids}) GROUP BY s.id, s.state"
    )
    if len(runs) != expected:
        raise SystemExit(f"{expected - len(runs)} receipted submission(s) lost")
    wrong = [row for row in runs if row[1] in ("queued", "running", "infra_error") or row[2] != "1"]
    if wrong:
        raise SystemExit(f"not graded exactly once: {wrong[:5]}")
    jobs = stack.sql(
        "SELECT count(*), count(DISTINCT (args->>'submission_id')) FROM procrastinate_jobs "
        f"WHERE task_name = 'grade_submission' AND (args->>'submission_id')::int IN ({ids})"
    )
    if jobs[0] != [str(expected), str(expected)]:
        raise SystemExit(f"jobs per submission are not one each: {jobs[0]} for {expected}")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=500)
    parser.add_argument("--window", type=float, default=60.0, help="seconds over which the uploads are sent")
    parser.add_argument("--write", type=Path, help="write the figures into this Markdown file")
    parser.add_argument("--flood", action="store_true", help="two slots, without and with a flooding student")
    parser.add_argument("--import-sleep", type=float, default=3600.0, help="how long the flood's file sleeps at import")
    parser.add_argument("--flood-lanes", default="self_check,submit", help="what the flood sends: self_check,submit")
    args = parser.parse_args()
    if args.flood:
        return main_flood(args)
    from grader.image import ensure_image

    image = ensure_image()
    folder = Path(tempfile.mkdtemp(prefix="bench-rush-"))
    cluster = Path(tempfile.mkdtemp(prefix="bench-rush-pg-"))
    stack = Stack(folder, cluster)
    try:
        stack.start()
        tokens = enrol(stack, args.students)
        before = bare_container(image, 5)
        results = [rush(stack, tokens, args.window, workers) for workers in (1, 2)]
        bare = statistics.median([before, bare_container(image, 5)])
    finally:
        stack.stop()
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(cluster, ignore_errors=True)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## Deadline rush through the service (`bench/bench_rush.py`)",
        "",
        f"Measured {when} on this machine ({os.cpu_count()} cores): {args.students} students enrolled with "
        f"`grader service roster`, tokens from `grader service token`, one counted upload each through the JSON "
        f"API over {args.window:g} s (loopback), full rubric. Every upload was receipted and every job ended "
        "graded exactly once (checked: 0 lost, 0 duplicated). Baseline: a bare container "
        "(`docker run --rm IMAGE python3 -c pass`), median of 5 runs before and 5 after.",
        "",
        "| workers (1 slot each) | receipt p50 (s) | p95 (s) | max (s) | drain (s) | submissions/s "
        "| s per submission / bare container |",
        "|---|---|---|---|---|---|---|",
    ]
    for result in results:
        rate = result.submissions / result.drain_seconds
        lines.append(
            f"| {result.workers} | {percentile(result.latencies, 0.5):.3f} | {percentile(result.latencies, 0.95):.3f} "
            f"| {max(result.latencies):.3f} | {result.drain_seconds:.1f} | {rate:.2f} | {1 / rate / bare:.2f} |"
        )
    one, two = results
    lines += [
        "",
        f"Bare container: {bare:.2f} s. Two workers drain the rush {one.drain_seconds / two.drain_seconds:.2f}x "
        "as fast as one.",
    ]
    print("\n".join(lines))
    if args.write:
        write_section(args.write, "bench_rush", lines)
    return 0


def main_flood(args: argparse.Namespace) -> int:
    from grader.image import ensure_image

    ensure_image()
    folder = Path(tempfile.mkdtemp(prefix="bench-rush-"))
    cluster = Path(tempfile.mkdtemp(prefix="bench-rush-pg-"))
    stack = Stack(folder, cluster)
    try:
        stack.start()
        tokens = enrol(stack, args.students)
        quiet = rush(stack, tokens, args.window, 2)
        how = Flood(args.import_sleep, tuple(args.flood_lanes.split(",")))
        flooded = rush(stack, tokens, args.window, 2, flooding=how)
    finally:
        stack.stop()
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(cluster, ignore_errors=True)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    sent = " and ".join(
        {"self_check": "ten self-checks", "submit": "ten counted uploads (two assignments)"}[lane] for lane in how.lanes
    )
    slept = "until its time limit" if args.import_sleep >= 3600 else f"{args.import_sleep:g} s"
    options = ""
    if args.import_sleep < 3600:
        options = f" --import-sleep {args.import_sleep:g} --flood-lanes {args.flood_lanes}"
    lines = [
        f"## A deadline rush with a flooding student (`bench/bench_rush.py --flood{options}`)",
        "",
        f"Measured {when} on this machine ({os.cpu_count()} cores), two workers of one slot each: "
        f"{args.students} students, one counted upload each through the JSON API over {args.window:g} s "
        "(loopback), full rubric; the same rush again while one more student sends, as it starts, "
        f"{sent} of a file that sleeps {slept} at import. Figures for the other students only; every "
        "one of their uploads graded exactly once, and the flood never held two slots at once (checked).",
        "",
        "| rush | receipt p50 (s) | receipt p95 (s) | result p50 (s) | result p95 (s) | drain (s) |",
        "|---|---|---|---|---|---|",
    ]
    for name, result in (("without the flood", quiet), ("with the flood", flooded)):
        lines.append(
            f"| {name} | {percentile(result.latencies, 0.5):.3f} | {percentile(result.latencies, 0.95):.3f} "
            f"| {percentile(result.results, 0.5):.1f} | {percentile(result.results, 0.95):.1f} "
            f"| {result.drain_seconds:.1f} |"
        )
    ratio = percentile(flooded.results, 0.5) / percentile(quiet.results, 0.5)
    ratio95 = percentile(flooded.results, 0.95) / percentile(quiet.results, 0.95)
    held = flooded.flood_held
    holding = (
        f"each of its self-checks that finished held a slot {statistics.median(held):.1f} s (median of "
        f"{len(held)}, longest {max(held):.1f} s)"
        if held
        else "none of its self-checks finished within the rush"
    )
    lines += [
        "",
        f"With the flood, the others' results come {ratio:.2f}x (p50) and {ratio95:.2f}x (p95) as late as "
        f"without it. The flood holds one slot of two at most; {holding}. None of the others waits behind "
        "the flood's queue (its latest job per assignment and lane waits behind everyone's first, the rest "
        "are replaced).",
    ]
    print("\n".join(lines))
    if args.write:
        # A flood of a file that sleeps a while (not until its limit) is a figure of its own.
        write_section(args.write, "bench_rush_flood" if args.import_sleep >= 3600 else "bench_rush_flood_import", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
