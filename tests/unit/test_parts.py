"""A grading in parts: the deal, their records read as one run's, and where they run."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import pytest

from grader.part_runs import Cores, held_cores, joined, place, run_parts
from grader.parts import Merger, deal
from grader.plan import PlannedProbe, build_plan
from grader.rubric import Rubric, load_rubric
from grader.runners.base import ContainerLimits, RawRun
from sandbox.harness import wire

NONCE = "ab" * 16
PREFIX = f"{wire.PREFIX}{NONCE} ".encode()


def line(record: dict[str, object]) -> bytes:
    return PREFIX + json.dumps(record).encode() + b"\n"


def probe(pid: str, *, hidden: bool = False) -> PlannedProbe:
    return PlannedProbe(pid, wire.PROGRAM, hidden=hidden)


def step5(wheats: int, chaffs: int) -> PlannedProbe:
    w = tuple(f"wheat{i}" for i in range(wheats))
    return PlannedProbe("mutation", wire.MUTATION, mutants=(*w, *(f"bug{i}" for i in range(chaffs))), wheats=w)


def test_the_deal_keeps_shown_first_and_a_wheat_in_every_share() -> None:
    probes = [probe("a"), probe("b"), step5(4, 7), probe("h1", hidden=True), probe("h2", hidden=True)]
    first, second = deal(probes, 2)
    assert [p.id for p in first] == ["a", "b", "mutation", "h1"]
    assert [p.id for p in second] == ["mutation", "h2"]
    assert first[2].wheats == ("wheat0", "wheat2") and second[0].wheats == ("wheat1", "wheat3")
    assert first[2].mutants == ("wheat0", "wheat2", "bug0", "bug2", "bug4", "bug6")
    assert second[0].mutants == ("wheat1", "wheat3", "bug1", "bug3", "bug5")
    # One wheat: one share only (a part of chaffs alone would be told by where it runs).
    only = deal([probe("a"), step5(1, 5)], 3)
    assert len(only) == 1 and only[0][1].mutants == ("wheat0", *(f"bug{i}" for i in range(5)))
    assert deal(probes, 1) == (tuple(probes),)


def two_part_rubric() -> Rubric:
    rubric = load_rubric()
    return dataclasses.replace(rubric, limits=dataclasses.replace(rubric.limits, parts=2))


def test_the_shipped_plan_is_dealt_the_same_for_a_seed() -> None:
    assert len(build_plan(load_rubric(), seed=11, visible_only=False).dealt()) == 1  # the shipped rubric: one part
    rubric = two_part_rubric()
    one = build_plan(rubric, seed=11, visible_only=False).dealt()
    assert one == build_plan(rubric, seed=11, visible_only=False).dealt()
    assert len(one) == rubric.limits.parts == 2
    share = [next(p for p in part if p.kind == wire.MUTATION) for part in one]
    planned = build_plan(rubric, seed=11, visible_only=False).probe("mutation")
    assert sorted(m for s in share for m in s.mutants) == sorted(planned.mutants)


def two_parts() -> tuple[tuple[PlannedProbe, ...], ...]:
    return deal([probe("a"), step5(2, 2), probe("h", hidden=True)], 2)


def part_lines(part: int) -> list[bytes]:
    load = line({"t": wire.LOAD, "ok": True, "mode": "full", "part": part})
    ids = [f"wheat{part}", f"bug{part}"]
    lines = [load]
    if part == 0:
        lines.append(line({"t": wire.PROBE_END, "probe": "a", "status": "ok"}))
    lines.append(line({"t": wire.MUTANT, "probe": "mutation", "mutant": wire.CLEAN, "script": {"part": part}}))
    lines += [line({"t": wire.MUTANT, "probe": "mutation", "mutant": m, "script": {}}) for m in ids]
    end = {"t": wire.PROBE_END, "probe": "mutation", "status": "ok"}
    lines.append(line({**end, "reason": wire.REASON_MACHINE_LATE} if part == 1 else end))
    if part == 1:
        lines.append(line({"t": wire.PROBE_END, "probe": "h", "status": "ok"}))
    return [*lines, line({"t": wire.END})]


def records(stdout: bytes) -> list[dict[str, object]]:
    return [json.loads(x[len(PREFIX) :]) for x in stdout.split(b"\n") if x.startswith(PREFIX)]


@pytest.mark.parametrize("sandboxes", [((0, 1),), ((0,), (1,))])
def test_the_parts_read_as_one_run(sandboxes: tuple[tuple[int, ...], ...]) -> None:
    heard: list[bytes] = []
    merger = Merger(NONCE, two_parts(), sandboxes, heard.append)
    streams = [[x for part in parts for x in part_lines(part)] for parts in sandboxes]
    # The second sandbox's lines first, its end before the first part's: the end waits for both.
    for index in reversed(range(len(streams))):
        for piece in streams[index]:
            merger.feed(index, piece[:10])
            merger.feed(index, piece[10:])
        merger.close(index)
    out = records(bytes(merger.stdout))
    assert b"".join(heard) == bytes(merger.stdout)
    assert [r["part"] for r in out if r["t"] == wire.LOAD] == [0]  # the first part's load only
    assert [r["script"] for r in out if r.get("mutant") == wire.CLEAN] == [{"part": 0}]
    assert {r["mutant"] for r in out if r["t"] == wire.MUTANT} == {wire.CLEAN, "wheat0", "bug0", "wheat1", "bug1"}
    ends = [r for r in out if r["t"] == wire.PROBE_END and r["probe"] == "mutation"]
    assert len(ends) == 1 and ends[0]["reason"] == wire.REASON_MACHINE_LATE  # once, with the reason that says most
    assert [r["t"] for r in out].count(wire.END) == 1 and out[-1]["t"] == wire.END
    # Before every part has ended Step 5, no end of it is heard: a section waits for all of it.
    half = Merger(NONCE, two_parts(), ((0,), (1,)))
    for piece in part_lines(0):
        half.feed(0, piece)
    assert not [r for r in records(bytes(half.stdout)) if r.get("probe") == "mutation" and r["t"] == wire.PROBE_END]
    assert wire.END not in [r["t"] for r in records(bytes(half.stdout))]


def test_a_part_that_never_ends_leaves_the_run_incomplete() -> None:
    merger = Merger(NONCE, two_parts(), ((0,), (1,)))
    for piece in part_lines(0):
        merger.feed(0, piece)
    for piece in part_lines(1)[:-1]:
        merger.feed(1, piece)
    merger.feed(1, b"Traceback: not a record\n")
    out = bytes(merger.stdout)
    assert wire.END not in [r["t"] for r in records(out)]
    assert b"Traceback: not a record\n" in out  # kept: the judge counts what it drops


def test_placement_and_cores(tmp_path: Path) -> None:
    assert place(2, 0).sandboxes == ((0, 1),)
    assert place(2, 1).sandboxes == ((0,), (1,))
    assert place(3, 1).sandboxes == ((0, 2), (1,))
    cores = Cores(2, str(tmp_path))
    with held_cores(2, cores) as spare:
        assert spare == 1
        with held_cores(2, cores) as none:  # another grading of the host, meanwhile
            assert none == 0
    with held_cores(2, cores) as spare:
        assert spare == 1  # released
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # a folder others may write in: no core is taken from it, one part at a time
    with held_cores(2, Cores(2, str(shared))) as spare:
        assert spare == 0


class Scripted:
    """A runner that answers each sandbox with the lines of the parts its plan holds."""

    name, isolates = "scripted", False

    def __init__(self) -> None:
        self.plans: list[dict[str, object]] = []
        self.lock = threading.Lock()

    def run(self, *, source, filename, plan, limits, on_stdout=None) -> RawRun:
        body = json.loads(plan)
        with self.lock:
            self.plans.append(body)
        parts = [int(p["probes"][0]["part"]) for p in body["parts"]]
        out = b"".join(x for part in parts for x in part_lines(part))
        if on_stdout is not None:
            on_stdout(out)
        return RawRun(out, False, b"", 0, False, False, 0.1, "scripted", "img")


@pytest.mark.parametrize("free", [1, 2])
def test_run_parts_gives_one_run_wherever_the_parts_ran(tmp_path: Path, free: int) -> None:
    runner = Scripted()

    def body(parts: tuple[int, ...]) -> bytes:
        return json.dumps({"parts": [{"probes": [{"part": i}]} for i in parts]}).encode()

    heard: list[bytes] = []
    limits = ContainerLimits(10, 64, 1, 16, 1024, 1)
    raw = run_parts(
        runner, source=b"", filename="f.py", body=body, limits=limits, nonce=NONCE, parts=two_parts(),
        on_line=heard.append, cores=Cores(free, str(tmp_path)),
    )  # fmt: skip
    assert len(runner.plans) == (2 if free == 2 else 1)
    out = records(raw.stdout)
    assert [r["part"] for r in out if r["t"] == wire.LOAD] == [0] and out[-1]["t"] == wire.END
    assert sorted(heard) == sorted(raw.stdout.splitlines(keepends=True))  # as they came: in any order


def test_joined_runs_keep_every_limit_met() -> None:
    ok = RawRun(b"a\n", False, b"x", 0, False, False, 1.0, "docker", "img")
    late = RawRun(b"b\n", True, b"y", None, True, True, 2.0, "docker", "img")
    both = joined([ok, late], b"a\nb\n")
    assert (both.stdout_truncated, both.exit_code, both.timed_out, both.oom_killed, both.elapsed) == (
        True, None, True, True, 2.0,
    )  # fmt: skip
    assert joined([ok, ok], b"").exit_code == 0 and both.stderr_tail == b"xy"


def test_the_reference_scores_alike_in_one_sandbox_and_in_two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from grader import part_runs
    from grader.engines import REFERENCE
    from grader.pipeline import grade_submission
    from grader.runners.local import LocalRunner

    results = []
    for free in (0, 2):  # no core free: one sandbox runs both parts; two free: one each
        monkeypatch.setattr(part_runs, "HOST_CORES", Cores(free, str(tmp_path / f"cores{free}")))
        runner = LocalRunner()
        sandboxes: list[bytes] = []
        real = runner.run

        def counted(real=real, sandboxes=sandboxes, **kwargs: object) -> RawRun:  # type: ignore[no-untyped-def]
            raw = real(**kwargs)
            sandboxes.append(raw.stdout)
            return raw

        monkeypatch.setattr(runner, "run", counted)
        results.append(grade_submission(REFERENCE, student="ref", rubric=two_part_rubric(), runner=runner))
        assert len(sandboxes) == (1 if free == 0 else 2)
        # In one sandbox the second part takes the first part's load: the file is loaded once.
        loads = [sum(r.get("t") == wire.LOAD for r in _all_records(out)) for out in sandboxes]
        assert loads == ([1] if free == 0 else [1, 1])
    one, two = results
    assert one.score == two.score == 100
    assert [(c.check_id, c.points, c.outcome) for c in one.checks] == [
        (c.check_id, c.points, c.outcome) for c in two.checks
    ]


def _all_records(stdout: bytes) -> list[dict[str, object]]:
    out = []
    for raw in stdout.split(b"\n"):
        if raw.startswith(wire.PREFIX.encode()):
            out.append(json.loads(raw.split(b" ", 1)[1]))
    return out
