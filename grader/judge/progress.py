"""Sections judged while the sandbox still runs: what a student's page can show before the end.

The harness ends every probe with a ``probe_end`` record. A section is settled once every probe
its checks can be judged on has ended: their own probes, their fallbacks' and the probes of every
check they depend on (``requires``, ``vouched_by``, a fallback's ``when_failing``), transitively.
Its points cannot change after that, because no record still to come is read by those checks;
the section is then judged from the output so far, with the same ``judge`` as the final result.
What a settled section says in words (a misconception named from several sections, a shrunk
counterexample) is the final page's to add; only titles and points are previewed.

A run that ends as an infrastructure failure is not scored at all: its previews were the
sandbox's records, and the final result says what went wrong instead. When a section settles
says how long the probes it waited for ran; a section that waited for a hidden probe says so
(``reads_hidden``), so that a viewer who may not see hidden results yet is not shown it before
the end (the run time of a hidden probe is something student code can make depend on its
hidden inputs).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from sandbox.harness import wire

from ..plan import Plan
from ..results import CheckResult
from ..rubric import Rubric
from .expected import Expected, compute_expected
from .parse import MAX_LINE, parse_output
from .verdicts import judge


@dataclass(frozen=True)
class SettledSection:
    """One section whose checks are judged for good, in the rubric's order of sections."""

    tag: str
    checks: tuple[CheckResult, ...]
    attempt: int = 0  # the sandbox run it comes from: a retried run's sections replace the first's
    reads_hidden: bool = False  # a hidden probe is among those it waited for (see SectionWatch)


OnSection = Callable[[SettledSection], None]


def probes_read_by(rubric: Rubric, plan: Plan) -> dict[str, frozenset[str]]:
    """Per section: every probe whose records its checks' points can depend on."""
    planned = {c.id: c for c in plan.checks}
    out: dict[str, frozenset[str]] = {}
    for section in rubric.sections:
        todo = [c.id for c in section.checks if c.id in planned]
        seen: set[str] = set()
        probes: set[str] = set()
        while todo:
            check_id = todo.pop()
            if check_id in seen or check_id not in planned:
                continue
            seen.add(check_id)
            check = planned[check_id]
            probes.add(check.probe)
            probes.update(f.probe for f in check.fallbacks)
            todo.extend(check.depends_on)
            if check.vouched_by:
                todo.append(check.vouched_by)
        if seen:
            out[section.tag] = frozenset(probes)
    return out


class SectionWatch:
    """Fed the sandbox's stdout as it arrives; calls ``on_section`` once per section, as soon as
    it is settled (in the rubric's order among the sections settled by the same record)."""

    def __init__(self, rubric: Rubric, plan: Plan, *, nonce: str, on_section: OnSection, attempt: int = 0) -> None:
        self.rubric = rubric
        self.attempt = attempt
        self.plan = plan
        self.nonce = nonce
        self.on_section = on_section
        self.prefix = f"{wire.PREFIX}{nonce} ".encode()
        self.needs = probes_read_by(rubric, plan)
        self.hidden = frozenset(p.id for p in plan.probes if p.hidden)
        self.order = [s.tag for s in rubric.sections if s.tag in self.needs]
        self.stdout = bytearray()
        self.scanned = 0  # bytes of stdout already split into lines
        self.ended: set[str] = set()
        self.told: set[str] = set()  # sections already reported
        self._expected: Expected | None = None

    def feed(self, chunk: bytes) -> None:
        self.stdout.extend(chunk)
        end = self.stdout.rfind(b"\n")
        if end < self.scanned:
            return
        for line in bytes(self.stdout[self.scanned : end]).split(b"\n"):
            self._note(line)
        self.scanned = end + 1
        self._report()

    def _note(self, line: bytes) -> None:
        if not line.startswith(self.prefix) or len(line) - len(self.prefix) > MAX_LINE:
            return
        try:
            record = json.loads(line[len(self.prefix) :])
        except ValueError:
            return
        if isinstance(record, dict) and record.get("t") == wire.PROBE_END and isinstance(record.get("probe"), str):
            self.ended.add(record["probe"])

    def _report(self) -> None:
        ready = [tag for tag in self.order if tag not in self.told and self.needs[tag] <= self.ended]
        if not ready:
            return
        if self._expected is None:
            self._expected = compute_expected(self.plan, class_name=self.rubric.class_name)
        report = parse_output(bytes(self.stdout[: self.scanned]), nonce=self.nonce, plan=self.plan)
        checks = judge(self.rubric, self.plan, self._expected, report)
        for tag in ready:
            self.told.add(tag)
            mine = tuple(c for c in checks if c.section == tag)
            self.on_section(SettledSection(tag, mine, self.attempt, bool(self.needs[tag] & self.hidden)))
