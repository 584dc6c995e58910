"""The one result model. Every output format (terminal, HTML, results.json, CSV) reads it."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Status(enum.Enum):
    """How grading of one submission ended. Ordered by precedence: the worst wins."""

    GRADED = "graded"
    TIMEOUT = "timeout"
    OOM = "oom"
    OUTPUT_LIMIT = "output_limit"
    UNGRADABLE = "ungradable"
    INFRA_ERROR = "infra_error"

    @property
    def rank(self) -> int:
        return list(Status).index(self)

    @property
    def is_students(self) -> bool:
        """True when the outcome is the submission's doing; an infra error never is."""
        return self is not Status.INFRA_ERROR


class Outcome(enum.Enum):
    """Verdict of one check."""

    PASSED = "passed"
    PARTIAL = "partial"  # some instances of a multi-instance check passed
    FAILED = "failed"
    ERROR = "error"  # the submission raised while the check ran
    TIMEOUT = "timeout"  # the probe behind the check hit its deadline
    NOT_RUN = "not_run"  # deadline reached, load failed, or not applicable


class Visibility(enum.Enum):
    VISIBLE = "visible"
    HIDDEN = "hidden"
    AFTER_DUE_DATE = "after_due_date"


@dataclass(frozen=True)
class Comparison:
    """One observed quantity next to what was expected. Shown only for visible checks."""

    quantity: str  # e.g. "a.grad" or "n1._prev"
    expected: str
    observed: str
    ok: bool


@dataclass(frozen=True)
class CheckResult:
    check_id: str
    title: str
    section: str  # section tag: api, part1_trace, ...
    visibility: Visibility
    points: float
    max_points: float
    outcome: Outcome
    built: str  # what the check built, in words (never hidden inputs)
    message: str  # what went wrong, or a short confirmation
    hint: str  # what to reread or try; empty when passed
    comparisons: tuple[Comparison, ...] = ()
    misconception: str = ""  # plain-words diagnosis when one is recognised
    output: str = ""  # the student's own printed output, capped (visible checks only)
    instances_passed: int = 0
    instances_total: int = 0
    notes: tuple[str, ...] = ()  # further lines under the message (surviving bug classes, ...)

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASSED


@dataclass(frozen=True)
class Diagnosis:
    """A misconception recognised from the pattern of wrong observations (or, failing that, what differs)."""

    operator: str  # catalogue mutant whose fingerprint matched; "" when none did
    family: str  # ACC, CHAIN, LOC, TOPO, SEED, FWD ("" when none matched)
    misconception: str  # plain words
    handout: str  # where the handout explains it
    evidence: str  # one observed quantity that shows it (never a hidden input)
    share: float  # share of the fingerprint the submission reproduces
    checks: tuple[str, ...]  # failing checks it explains


@dataclass(frozen=True)
class SectionResult:
    tag: str
    title: str
    points: float
    max_points: float


@dataclass(frozen=True)
class LoadReport:
    """How the submission's file was loaded, and everything unusual about it."""

    ok: bool
    mode: str  # "full", "definitions" (top-level code skipped) or "failed"
    class_name: str  # the engine class actually graded ("" when none was found)
    notices: tuple[str, ...] = ()  # shown to the student: stand-ins, skipped code, renamed class
    error: str = ""  # why loading failed, with the line when known


@dataclass(frozen=True)
class SubmissionResult:
    student: str
    filename: str
    status: Status
    score: float
    max_score: float
    sections: tuple[SectionResult, ...]
    checks: tuple[CheckResult, ...]
    load: LoadReport
    status_detail: str  # one sentence: why the status is what it is
    rubric_name: str
    rubric_sha: str
    seed: int
    runner: str  # "docker" or "local"
    image: str
    execution_time: float
    visible_only: bool = False  # self-check mode: hidden checks were not run
    hidden_not_run: int = 0
    diagnoses: tuple[Diagnosis, ...] = ()
    step5_note: str = ""  # what the Step-5 comment at the top of the file says, in one line
    review: tuple[str, ...] = ()  # reasons a person should look at this submission

    @property
    def scored(self) -> bool:
        """An infrastructure failure produces no score at all."""
        return self.status.is_students

    def section(self, tag: str) -> SectionResult:
        for section in self.sections:
            if section.tag == tag:
                return section
        raise KeyError(tag)
