"""What the sandbox reported, as typed records: one frozen dataclass per record kind.

The types only; ``grader.judge.parse`` builds them from the sandbox's untrusted output, and
``grader.judge.expected`` builds them from the trusted reference, so both sides of every
comparison hold the same types. Nothing downstream of the parser reads a raw dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sandbox.harness.wire import EndStatus, LoadFailure, ScriptOutcome


@dataclass(frozen=True)
class Unreadable:
    """A value that is not a finite float: ``nonfinite`` (nan, inf, -inf, overflow), ``bad``
    (the type found instead, e.g. ``str``), or ``unread``: a field the grader could not read
    (an engine that keeps its inputs under another name than ``_prev``)."""

    kind: Literal["nonfinite", "bad", "unread"]
    text: str


# One observed quantity: a number, a flag, a label, a list of node names, or an unreadable value.
Observed = float | bool | str | tuple[str, ...] | Unreadable
Observations = Mapping[str, Observed]


@dataclass(frozen=True)
class ErrorInfo:
    """An exception as the harness summarised it."""

    type: str
    message: str = ""
    line: int | None = None
    column: int | None = None


@dataclass(frozen=True)
class LoadRecord:
    """How loading the submission went (the first ``load`` record)."""

    ok: bool
    mode: str = ""
    class_name: str = ""
    extra_args: tuple[str, ...] = ()
    stand_ins_used: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    error: ErrorInfo | None = None
    failure: LoadFailure | None = None  # why it did not load (None when it did, or the harness did not say)
    output: str = ""
    output_limit: bool = False
    timed_out: bool = False
    memory_error: bool = False
    import_seconds: float = 0.0  # what loading the file was charged (every run of student code pays it)


@dataclass(frozen=True)
class ProgramError:
    """A graph program raised: where (``stage``), what, and what was observed before it."""

    stage: str
    error: ErrorInfo | None
    observations: Observations


@dataclass(frozen=True)
class ProbeEnd:
    """How a probe's process ended."""

    status: EndStatus
    reason: str = ""
    signal: str = ""
    exit_code: int | None = None
    output: str = ""
    output_truncated: bool = False
    lingering: bool = False
    elapsed: float = 0.0


@dataclass(frozen=True)
class ScriptRun:
    """One run of ``python autograd_lab.py`` (the student's own checks) on a (mutated) file."""

    outcome: ScriptOutcome
    exception: str = ""
    message: str = ""
    line: int | None = None
    reason: str = ""
    lines: tuple[int, ...] = ()
    elapsed: float = 0.0
    limit: float = 0.0
    output: str = ""
    # Where a failing run stopped (file and frames in the checks, in the submitted file's
    # lines): a run on a copy that stops elsewhere saw something the unmodified file did not.
    stop: str = ""


@dataclass(frozen=True)
class MutantRecord:
    script: ScriptRun | None = None


@dataclass(frozen=True)
class ShrunkRecord:
    """What the sandbox says is a smaller program on which the engine is still wrong: a program
    of the right shape (checked by the parser), not yet believed (``grader.judge.counterexample``)."""

    program: int  # the failing instance it started from
    leaves: Mapping[str, float]
    steps: tuple[tuple[Any, ...], ...]
    observations: Observations


@dataclass(frozen=True)
class ProbeRecords:
    """Everything one probe reported, by program index (mutation probes: by mutant name)."""

    forward: Mapping[int, Observations] = field(default_factory=dict)
    final: Mapping[int, Observations] = field(default_factory=dict)
    errors: Mapping[int, ProgramError] = field(default_factory=dict)
    mutants: Mapping[str, MutantRecord] = field(default_factory=dict)
    end: ProbeEnd | None = None
    shrunk: ShrunkRecord | None = None

    def observations(self, index: int) -> Observations:
        """Best observations for one program: final, else partial ones from an error or forward."""
        if index in self.final:
            return self.final[index]
        if index in self.errors:
            return self.errors[index].observations
        return self.forward.get(index, {})

    def script(self, mutant: str) -> ScriptRun | None:
        record = self.mutants.get(mutant)
        return record.script if record else None


NO_RECORDS = ProbeRecords()


@dataclass(frozen=True)
class SandboxReport:
    """The whole run: the load record, each probe's records, and how much was rejected."""

    load: LoadRecord | None
    probes: Mapping[str, ProbeRecords]
    complete: bool  # the harness reached its end marker
    dropped: int = 0  # lines or records that failed validation
    duplicates: int = 0  # records that repeated one already received

    def probe(self, probe_id: str) -> ProbeRecords:
        return self.probes.get(probe_id, NO_RECORDS)

    @property
    def loaded(self) -> bool:
        return self.load is not None and self.load.ok
