"""After a program probe: the smallest program on which the engine is still wrong.

For a probe the plan marks ``shrink``, the supervisor compares each instance's final
observations with ``shrink.exact``; from the first instance that disagrees it shrinks (see
``shrink``), running each round's candidates in one child, and reports the smallest program
with what the engine did on it. Only "wrong the same way" counts: a quantity that was wrong
(``x.grad``, ``n1.data``) is still wrong, and the operation an fd probe is about stays. The host judges nothing
from this record: it checks it again with its own reference before showing it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .. import wire
from ..execution.child_records import ProgramRecords
from . import shrink

if TYPE_CHECKING:
    from ..supervisor import Supervisor

REL, ABS = 1e-6, 1e-9  # far looser than any bug: the host re-checks with the rubric's own


class _Stop(Exception):
    """A candidate's child did not end normally (a hang, a crash): stop shrinking this probe."""


def find_all(sup: Supervisor, pending: list[tuple[dict[str, Any], list[dict[str, Any]]]]) -> None:
    """Shrink each probe's first failing instance, within the plan's ``shrink_seconds`` (for
    all of them, charged as every limit is: a busy machine shrinks as far as an idle one) and the
    grading's budget. It runs after every probe: it delays a grading, never starves it."""
    until = sup.budget.used() + sup.shrink_seconds
    for probe, records in pending:
        if sup.budget.used() >= until:
            return
        find(sup, probe, records, until)


def wrong_keys(program: dict[str, Any], obs: dict[str, Any]) -> set[str]:
    """The observed quantities that disagree with exact math (an unreadable one disagrees)."""
    try:
        want = shrink.exact(program)
    except (shrink.OutsideDomain, KeyError):
        return set()
    wrong = set()
    for key, value in want.items():
        got = obs.get(key)
        if not isinstance(got, float) or not math.isclose(got, value, rel_tol=REL, abs_tol=ABS):
            wrong.add(key)
    return wrong


def find(sup: Supervisor, probe: dict[str, Any], records: list[dict[str, Any]], until: float) -> None:
    budget = probe.get("shrink")
    if not isinstance(budget, dict):
        return
    finals = {r["program"]: r["obs"] for r in records if r.get("t") == wire.OBS and r.get("phase") == wire.FINAL}
    for index, program in enumerate(probe["programs"]):
        wrong = wrong_keys(program, finals.get(index, {})) if index in finals else set()
        if wrong:
            break
    else:
        return
    seen: dict[int, dict[str, Any]] = {}

    def first_wrong(batch: list[dict[str, Any]]) -> int | None:
        left = until - sup.budget.used()
        if left <= 0:
            raise _Stop
        task = sup.task("programs", programs=batch)
        timeout = min(sup.probe_seconds, left)
        found, summary = sup.runs.run(task, ProgramRecords(len(batch)), timeout=timeout, progress_resets=False)
        if summary.get("status") != wire.OK:
            raise _Stop
        obs = {r["program"]: r["obs"] for r in found if r.get("t") == wire.OBS and r.get("phase") == wire.FINAL}
        for i, candidate in enumerate(batch):
            if i in obs and wrong_keys(candidate, obs[i]) & wrong:  # the same quantity still wrong
                seen[id(candidate)] = obs[i]
                return i
        return None

    rounds_allowed = min(int(budget.get("rounds", 12)), 40)
    keep = [op for op in budget.get("keep", []) if isinstance(op, str)]
    best: list[dict[str, Any]] = [program]

    def kept(batch: list[dict[str, Any]]) -> int | None:
        index = first_wrong(batch)
        if index is not None:
            best[0] = batch[index]
        return index

    try:
        small, rounds = shrink.shrink(program, kept, rounds=rounds_allowed, keep=keep)
    except _Stop:
        small, rounds = best[0], -1  # as far as it got
    if small is program:
        return
    sup.emit(
        {
            "t": wire.SHRUNK,
            "probe": probe["id"],
            "program": index,
            "shrunk": {"leaves": small["leaves"], "steps": small["steps"]},
            "obs": seen[id(small)],
            "rounds": rounds,
        }
    )
