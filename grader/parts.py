"""A grading dealt into parts: which probes each part runs, and their records read as one run's.

A part is a share of the plan that a sandbox runs with a share of the budget: the shown probes,
a share of the student's checks on the grader's engines (Step 5) and the hidden probes, each in
the plan's order. Parts run in sandboxes of their own, at once, when the host has cores free,
or one after another in one sandbox when it has not (``grader.part_runs``). The deal is made
from the plan alone, so what runs, and the budget it runs in, never depends on the machine:
the same file gets the same score with one core or eight.

The deal keeps what one sandbox keeps:

- no part runs a hidden probe before its shown runs: the plan puts the shown probes, then
  Step 5 (whose output is shown), then the hidden probes, and each part keeps that order; the
  shown probes all go to the first part, the hidden ones are dealt in turn;
- every share of Step 5 holds at least one of the grader's correct engines (wheats) among its
  buggy ones (chaffs), in an order the harness draws: a run cannot tell from where it runs
  (which part, how many runs came before) that it runs a buggy engine.

``Merger`` turns the parts' output into one run's: the first part's load record, one clean run
of the student's checks, one end for a probe shared by several parts (once each has ended it:
a section is never settled on half of Step 5), and the end once every part has ended.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sandbox.harness import wire

if TYPE_CHECKING:  # the plan deals itself (grader.plan imports this module)
    from .plan import PlannedProbe

Part = tuple["PlannedProbe", ...]
MAX_RECORD = 1 << 20  # a longer line is not a record the merger reads (the parser drops it too)


def deal(probes: Sequence[PlannedProbe], count: int) -> tuple[Part, ...]:
    """``probes`` (in the plan's order) dealt into at most ``count`` non-empty parts."""
    if count <= 1:
        return (tuple(probes),)
    parts: list[list[PlannedProbe]] = [[] for _ in range(count)]
    hidden = 0
    for probe in probes:
        if probe.kind == wire.MUTATION:
            for index, share in enumerate(_shares(probe, count)):
                parts[index].append(share)
        elif probe.hidden:
            parts[hidden % count].append(probe)  # after that part's shown runs: the plan's order
            hidden += 1
        else:
            parts[0].append(probe)
    return tuple(tuple(part) for part in parts if part)


def _shares(probe: PlannedProbe, count: int) -> list[PlannedProbe]:
    """Step 5 in shares, each with its wheats (dealt in turn) and its chaffs (dealt in turn, in
    the plan's order: the one the budget takes them in)."""
    wheats = probe.wheats
    shares = max(1, min(count, len(wheats)))
    chaffs = [m for m in probe.mutants if m not in wheats]
    out = []
    for index in range(shares):
        mine = wheats[index::shares]
        out.append(replace(probe, mutants=(*mine, *chaffs[index::shares]), wheats=mine))
    return out


def part_budget(total: float, parts: int) -> float:
    """Each part's share of the grading's charged seconds: all of them add up to the grading's."""
    return total / max(parts, 1)


@dataclass
class _Stream:
    parts: tuple[int, ...]  # the parts this sandbox runs, in order
    at: int = 0  # which of them its lines belong to now (its end records count them)
    pending: bytes = b""


class Merger:
    """Lines of several sandboxes (each running one or more parts in order) as one run's lines.

    ``feed`` may be called from several threads; every merged line goes to ``on_line`` (the
    section previews) and into ``stdout`` (the run's whole output, as the judge reads it)."""

    def __init__(
        self,
        nonce: str,
        parts: Sequence[Part],
        streams: Sequence[Sequence[int]],
        on_line: Callable[[bytes], None] | None = None,
    ) -> None:
        self.prefix = f"{wire.PREFIX}{nonce} ".encode()
        self.streams = [_Stream(tuple(s)) for s in streams]
        self.on_line = on_line
        self.stdout = bytearray()
        self.count = len(parts)
        self.ended: set[int] = set()
        holders: dict[str, list[int]] = {}
        for index, part in enumerate(parts):
            for probe in part:
                holders.setdefault(probe.id, []).append(index)
        self.holders = {probe_id: set(where) for probe_id, where in holders.items()}
        self.probe_ends: dict[str, dict[int, dict[str, object]]] = {}
        self._lock = threading.Lock()

    def feed(self, stream: int, chunk: bytes) -> None:
        with self._lock:
            state = self.streams[stream]
            *lines, state.pending = (state.pending + chunk).split(b"\n")
            for line in lines:
                self._line(state, line)

    def close(self, stream: int) -> None:
        """The sandbox's output has ended: a last line without a newline is still a line."""
        with self._lock:
            state = self.streams[stream]
            if state.pending:
                line, state.pending = state.pending, b""
                self._line(state, line)

    def _line(self, state: _Stream, line: bytes) -> None:
        record = self._record(line)
        if record is None or state.at >= len(state.parts):
            self._out(line)  # not a record (the judge drops it, and counts it): never lost here
            return
        part = state.parts[state.at]
        kind, probe = record.get("t"), record.get("probe")
        if kind == wire.END:
            state.at += 1
            self.ended.add(part)
            if len(self.ended) == self.count:
                self._out(line)
        elif kind == wire.LOAD:
            if part == 0:
                self._out(line)
        elif not isinstance(probe, str) or len(self.holders.get(probe, ())) < 2:
            self._out(line)
        elif kind == wire.MUTANT and record.get("mutant") == wire.CLEAN:
            if part == min(self.holders[probe]):
                self._out(line)  # the file's own run: every part ran it, the first one's is shown
        elif kind == wire.PROBE_END:
            ends = self.probe_ends.setdefault(probe, {})
            ends.setdefault(part, record)
            if set(ends) == self.holders[probe]:
                self._out(self.prefix + _joined_end(probe, [ends[i] for i in sorted(ends)]))
        else:
            self._out(line)

    def _record(self, line: bytes) -> dict[str, object] | None:
        if not line.startswith(self.prefix) or len(line) > MAX_RECORD:
            return None
        try:
            record = json.loads(line[len(self.prefix) :])
        except (ValueError, RecursionError):
            return None
        return record if isinstance(record, dict) else None

    def _out(self, line: bytes) -> None:
        piece = line + b"\n"
        self.stdout.extend(piece)
        if self.on_line is not None:
            self.on_line(piece)


def _joined_end(probe: str, ends: list[dict[str, object]]) -> bytes:
    """One end for a probe that several parts ran: the first part's, with the reason that says
    most (the machine was late, over any other)."""
    joined = dict(ends[0])
    reasons = [str(e.get("reason")) for e in ends if e.get("reason")]
    if wire.REASON_MACHINE_LATE in reasons:
        joined["reason"] = wire.REASON_MACHINE_LATE
    elif reasons and not joined.get("reason"):
        joined["reason"] = reasons[0]
    joined["probe"] = probe
    return json.dumps(joined, allow_nan=False, separators=(",", ":")).encode()
