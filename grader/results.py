"""The one result model. Every output format (terminal, HTML, results.json, CSV) reads it."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace


class Status(enum.Enum):
    """How grading of one submission ended. Ordered by precedence: the worst wins."""

    GRADED = "graded"
    # The file does not load (it is no Python text, does not parse, or importing it never gives
    # the engine class): nothing could be graded, so a person should look. A resource limit hit
    # while loading names the cause better, hence the lower rank.
    NOT_LOADABLE = "not_loadable"
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
class Counterexample:
    """The smallest program found on which the engine is still wrong, checked on the host
    against the reference: the program as a student would type it, and every quantity the
    check compares, expected next to observed."""

    program: str
    operations: int
    comparisons: tuple[Comparison, ...]
    # Of a hidden check: shown with its details ("after_due_date"), or to students at once ("always").
    shown: str = "after_due_date"
    figure: GraphFigure | None = None  # the small program's graph, as the engine built it
    # The engine's own numbers are left out: a hidden probe is shrunk after hidden inputs entered
    # the sandbox, and counters every run shares (PIDs, inode numbers) can carry one into what
    # the engine returns. Each row then holds the right answer with `observed` empty, and `ok`
    # is False on one row only: the quantity named as the one the engine gets wrong. No figure.
    withheld: bool = False

    def without_engine_numbers(self) -> Counterexample:
        """The program, the right answers and the first quantity the engine gets wrong: what a
        hidden check's counterexample may show (nothing the engine produced but the program's shape).
        Idempotent: a withheld one comes back equal, whatever its rows hold."""
        named = next((row.quantity for row in self.comparisons if not row.ok), "")
        rows = tuple(Comparison(row.quantity, row.expected, "", row.quantity != named) for row in self.comparisons)
        return replace(self, comparisons=rows, figure=None, withheld=True)

    @property
    def wrong(self) -> tuple[Comparison, ...]:
        """The rows a short report gives: the wrong ones (a withheld one's: the one named), else all."""
        return tuple(row for row in self.comparisons if not row.ok) or self.comparisons


@dataclass(frozen=True)
class FdRow:
    """One finite-difference comparison: the engine's gradient beside a centered difference."""

    operation: str  # e.g. "log(exp(x))"
    point: str  # e.g. "x = 1.5"
    quantity: str  # the gradient compared, e.g. "x.grad"
    analytic: str
    numeric: str
    rel_error: str  # |analytic - numeric| / max(1e-8, |analytic| + |numeric|), as the handout defines it
    ok: bool


@dataclass(frozen=True)
class FigureNode:
    """One node of a drawn graph: what the student's engine holds beside what it should hold."""

    name: str
    op: str  # the operation that made it ("*", "+", "relu", ...); "" for a leaf
    formula: str  # e.g. "a * b"; "" for a leaf
    observed_op: str  # the engine's _op label ("" when not recorded)
    op_ok: bool | None  # None: not recorded
    data: str
    data_expected: str
    data_ok: bool | None  # None: not observed
    grad: str
    grad_expected: str
    grad_ok: bool | None
    visits: tuple[int, ...] = ()  # 1-based positions of this node's _backward in backward()'s order
    parents_note: str = ""  # how the engine's _prev differs from the node's real inputs
    lost: str = ""  # what happened to this node's gradient, when its paths explain it


@dataclass(frozen=True)
class FigureEdge:
    """An input edge (source feeds target); the gradient flows back along it."""

    source: str
    target: str
    slot: int  # operand position: x * x has two edges from x
    contribution: str  # what this edge should add to source.grad
    state: str  # ok | lost | twice (counted twice) | missing (not in _prev) | extra (in _prev, not an input)


@dataclass(frozen=True)
class GraphFigure:
    """A graph a check built, as the student's engine built it: drawn in the HTML feedback."""

    figure_id: str  # "<probe>#<instance>"
    title: str
    root: str
    nodes: tuple[FigureNode, ...]
    edges: tuple[FigureEdge, ...]
    order: tuple[str, ...]  # backward()'s order of _backward calls; empty when not recorded
    summary: str  # one sentence: what is wrong in the picture (or that nothing is)

    def node(self, name: str) -> FigureNode:
        return next(n for n in self.nodes if n.name == name)


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
    figure: str = ""  # figure_id of the graph this check built (visible program checks only)
    fd_rows: tuple[FdRow, ...] = ()  # finite-difference comparisons (visible checks only)
    finite_difference: bool = False  # compared against centered differences (shown in the section's table)
    counterexample: Counterexample | None = None  # failing checks on random programs, once shrunk and verified

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
    excerpt: str = ""  # the file's lines around that line, a caret under the spot when known


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
    figures: tuple[GraphFigure, ...] = ()  # graphs the checks refer to by figure_id

    def figure(self, figure_id: str) -> GraphFigure | None:
        return next((f for f in self.figures if f.figure_id == figure_id), None)

    @property
    def scored(self) -> bool:
        """An infrastructure failure produces no score at all."""
        return self.status.is_students

    def section(self, tag: str) -> SectionResult:
        for section in self.sections:
            if section.tag == tag:
                return section
        raise KeyError(tag)
