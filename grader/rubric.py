"""Rubric YAML -> frozen dataclasses, strictly.

Unknown keys are rejected with a suggestion, wrong types name the file, line and key path
(``rubrics/a8_autograd_lab.yaml:14:5: sections[2].checks[0].points: expected a number``).
Downstream code never sees raw YAML.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast, get_args

import yaml

from sandbox.harness.mutation.mutate import BY_ID

from .errors import RubricError
from .results import Visibility
from .rubric_yaml import Node, get

DEFAULT_RUBRIC = Path(__file__).resolve().parent.parent / "rubrics" / "a8_autograd_lab.yaml"

ProbeKind = Literal["api", "program", "mutation", "fd_op", "random_dag"]
Compare = Literal["engine", "api", "values", "graph", "schedule", "checks_pass", "mutant_killed", "mutation_score"]
ExpectFrom = Literal["reference", "math"]
Record = Literal["graph", "schedule"]
ReluInputs = Literal["any", "alternate", "active"]
ApiInputs = Literal["fixed", "random"]
API_INPUTS: tuple[ApiInputs, ...] = get_args(ApiInputs)
PROBE_KINDS: tuple[ProbeKind, ...] = get_args(ProbeKind)
COMPARES: tuple[Compare, ...] = get_args(Compare)
MUTATION_COMPARES: tuple[Compare, ...] = ("checks_pass", "mutant_killed", "mutation_score")
EXPECT_FROM: tuple[ExpectFrom, ...] = get_args(ExpectFrom)
RECORDS: tuple[Record, ...] = get_args(Record)
FD_OPS = ("add", "sub", "mul", "div", "neg", "radd", "rsub", "rmul", "rdiv", "pow", "tanh", "relu", "exp", "log")
RELU_INPUTS: tuple[ReluInputs, ...] = get_args(ReluInputs)
DAG_OPS = ("add", "sub", "mul", "div", "tanh", "relu", "exp", "log", "square", "neg")

MUTANT_IDS = tuple(BY_ID)


@dataclass(frozen=True)
class Tolerance:
    abs: float
    rel: float

    def accepts(self, observed: float, expected: float) -> bool:
        return abs(observed - expected) <= self.abs + self.rel * abs(expected)

    def describe(self) -> str:
        if self.rel == 0:
            return f"within {self.abs:g}"
        return f"within {self.abs:g} + {self.rel:g}·|expected|"


MAX_PARTS = 4  # more parts pay more loads for cores a grading host rarely has free


@dataclass(frozen=True)
class Limits:
    """Every time limit but ``wall_seconds`` is in charged seconds: CPU time, or time spent
    waiting on anything but a core (sleeping, blocked). Time lost to other work on a busy
    machine is never charged, so a file gets the same limits on an idle machine and a busy one."""

    budget_seconds: float = 900.0  # the whole grading, charged (holds every run of 20 s checks)
    # A self-check (visible checks only) holds one of the service's grading slots while students
    # wait: its own, smaller allowance, charged the same way. What it cannot hold is not run, and
    # the feedback says why (grader/judge/status.py). Its import allowance is short too: a file
    # whose top-level code is slow is graded with that code skipped, not paying it in every run.
    self_check_seconds: float = 90.0
    self_check_import_seconds: float = 3.0
    wall_seconds: float = 1800.0  # real time, the host's last resort: past it the machine is too slow
    probe_seconds: float = 2.0
    # Checks of 3 s (the lesson's MLP) are charged about 5 s in the sandbox, and up to 2.3x that
    # when another process shares their core: 20 s leaves them room on any machine.
    script_seconds: float = 20.0
    memory_mb: int = 512
    child_memory_mb: int = 256
    cpus: float = 1.0
    pids: int = 64
    output_kb: int = 16
    stdout_kb: int = 4096
    tmpfs_mb: int = 16
    max_file_kb: int = 1024
    shrink_seconds: float = 3.0  # all counterexample shrinking of one grading, after every probe
    # A grading is dealt into this many parts (grader/parts.py), each with its share of the
    # budget: in sandboxes of their own, at once, when the host has cores free, else one after
    # another in one. The deal is the plan's, never the machine's, so the score is the same.
    parts: int = 1


@dataclass(frozen=True)
class Leaf:
    """A leaf's value: fixed, or drawn uniformly from one of ``ranges`` per instance."""

    name: str
    value: float | None
    ranges: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class Probe:
    id: str
    kind: ProbeKind
    leaves: tuple[Leaf, ...] = ()
    steps: tuple[str, ...] = ()
    record: tuple[Record, ...] = ()
    instances: int = 1
    relu_inputs: ReluInputs = "any"
    inputs: ApiInputs = "fixed"  # api probes: the harness's fixed leaves, or leaves drawn per run
    mutants: tuple[str, ...] = ()  # mutation probes: catalogue ids to run (empty: all)
    op: str | None = None
    exponent: float | None = None
    max_ops: int = 8
    ops: tuple[str, ...] = ()
    shrink: int = 0  # rounds of counterexample shrinking after a failing instance (0: none)
    # A probe the loader derives: ``core_of``'s programs, drawn exactly as they are, rewritten
    # without the features ``without`` names (grader/features.py): the same function.
    core_of: str | None = None
    without: tuple[str, ...] = ()

    @property
    def randomized(self) -> bool:
        random_leaves = any(leaf.value is None for leaf in self.leaves)
        return self.kind in ("fd_op", "random_dag") or random_leaves or self.inputs == "random"


@dataclass(frozen=True)
class Fallback:
    """Another probe a check is judged on when a check of some other concept fails: a section
    measures its own concept, so an operation that fails its own check is left out of the
    graphs of a section that tests something else (one fault, one penalty)."""

    probe: str
    when_failing: tuple[str, ...]
    because: str  # what the feedback says when the fallback is used ("" when derived: see ``derived``)
    # Derived from the rubric's ``features`` table rather than written: the feedback says once,
    # on the failing check that measures the feature, which checks were built without it.
    derived: bool = False


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    section: str
    points: float
    visibility: Visibility
    probe: str
    compare: Compare
    observe: tuple[str, ...]
    tolerance: str
    expect_from: ExpectFrom
    expect: Mapping[str, float]
    hint: str
    requires: tuple[str, ...]
    mutant: str | None = None  # mutant_killed: which mutant the checks must catch
    # A check whose inputs and answers are printed in the handout can be passed by knowing the
    # answers alone (hard-coded, or forged from inside the sandbox). It earns its points only
    # when the same computation on hidden random inputs (this check) passes at least once.
    vouched_by: str | None = None
    fallback: Fallback | None = None
    # Derived only: the form without every feature, ``features.APART`` ones included, tried
    # before ``fallback`` and only when a check that measures one of those fails.
    apart: Fallback | None = None

    @property
    def fallbacks(self) -> tuple[Fallback, ...]:
        """The other forms, in the order they are tried: the first whose ``when_failing`` names a
        failed check is the one judged."""
        return tuple(f for f in (self.apart, self.fallback) if f is not None)

    @property
    def depends_on(self) -> tuple[str, ...]:
        """Checks whose results must be known before this one is judged."""
        return self.requires + tuple(r for f in self.fallbacks for r in f.when_failing)


@dataclass(frozen=True)
class Section:
    tag: str
    title: str
    checks: tuple[Check, ...]

    @property
    def max_points(self) -> float:
        return sum(c.points for c in self.checks)


COUNTEREXAMPLES_SHOWN = ("never", "after_due_date", "always")
CounterexampleShown = Literal["never", "after_due_date", "always"]


@dataclass(frozen=True)
class Rubric:
    name: str
    filename: str
    class_name: str
    handout: str
    total: float
    limits: Limits
    stand_ins: tuple[str, ...]
    tolerances: Mapping[str, Tolerance]
    probes: Mapping[str, Probe]
    sections: tuple[Section, ...]
    path: Path
    sha256: str
    # The assignment's seed: every grading of it draws the same hidden inputs (see ``assignment_seed``).
    seed: int = 0
    # Who sees a hidden check's shrunk counterexample (it shows one concrete input): nobody,
    # whoever sees the check's details (the instructor's batch feedback; students after the
    # hidden results are released), or students at once as well.
    counterexamples: CounterexampleShown = "after_due_date"
    # Feature (grader/features.py) -> the checks that measure it. When one of them fails, the
    # probes of every other check are judged in a form without that feature.
    features: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Feature -> sections whose whole subject it is: every probe of their checks keeps it, also
    # those whose own checks do not measure it (a section on accumulation reuses values throughout).
    kept_in: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def checks(self) -> tuple[Check, ...]:
        return tuple(c for s in self.sections for c in s.checks)

    def check(self, check_id: str) -> Check:
        for c in self.checks:
            if c.id == check_id:
                return c
        raise KeyError(check_id)

    def section(self, tag: str) -> Section:
        for section in self.sections:
            if section.tag == tag:
                return section
        raise KeyError(tag)


# --- the loader ---------------------------------------------------------------------------


SEED_LIMIT = 2**256  # a key: `grader rubric reseed` draws 128 bits
STRONG_SEED = 2**96  # below this, a seed is short enough to search for from one set of inputs


def assignment_seed(name: str, filename: str, given: int | None) -> int:
    """The key hidden inputs are drawn from: the rubric's ``assignment.seed``, else one derived
    from the assignment's name and file (public: ``rubric validate`` says so). It belongs to the
    assignment, not to a run, so the same file always meets the same hidden inputs and gets the
    same score."""
    if given is not None:
        return given % SEED_LIMIT
    digest = hashlib.sha256(f"{name}\0{filename}".encode()).digest()
    return int.from_bytes(digest, "big")


# libyaml's composer when PyYAML has it (as Debian's and PyPI's builds do): the same nodes and
# marks, several times faster than the pure-Python one.
_COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_rubric(path: Path | str = DEFAULT_RUBRIC) -> Rubric:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise RubricError(f"cannot read the rubric: {error.strerror}", where=str(path)) from None
    try:
        root_node = yaml.compose(raw.decode("utf-8"), Loader=_COMPOSER)
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise RubricError(f"not valid YAML: {error}", where=str(path)) from None
    if root_node is None:
        raise RubricError("the rubric is empty", where=str(path))
    root = Node(root_node, "", str(path))
    top = root.mapping(
        ("assignment", "limits", "stand_ins", "tolerances", "probes", "sections", "features"),
        required=("assignment", "probes", "sections"),
    )
    assignment = top["assignment"].mapping(
        ("name", "file", "class", "handout", "total", "seed", "counterexamples"),
        required=("name", "file", "class", "total"),
    )
    limits = _limits(top["limits"]) if "limits" in top else Limits()
    tolerances = {
        "handout": Tolerance(1e-9, 0.0),
        "single_op": Tolerance(1e-8, 1e-5),
        "composite": Tolerance(1e-6, 1e-4),
    }
    if "tolerances" in top:
        for name, node in top["tolerances"].items():
            fields = node.mapping(("abs", "rel"), required=("abs",))
            tolerances[name] = Tolerance(fields["abs"].number(0), get(fields, "rel", lambda n: n.number(0), 0.0))
    probes = {name: _probe(name, node) for name, node in top["probes"].items()}
    sections = tuple(_section(node, probes, tolerances) for node in top["sections"].sequence())
    features, kept_in = _features(top["features"]) if "features" in top else ({}, {})
    rubric = Rubric(
        name=assignment["name"].text(),
        filename=assignment["file"].text(),
        class_name=assignment["class"].text(),
        handout=get(assignment, "handout", Node.text, ""),
        total=assignment["total"].number(0),
        limits=limits,
        stand_ins=get(top, "stand_ins", Node.texts, ()),
        tolerances=tolerances,
        probes=probes,
        sections=sections,
        path=path,
        sha256=hashlib.sha256(raw).hexdigest(),
        seed=assignment_seed(
            assignment["name"].text(),
            assignment["file"].text(),
            assignment["seed"].integer(0) if "seed" in assignment else None,
        ),
        counterexamples=cast(
            CounterexampleShown,
            get(assignment, "counterexamples", lambda n: n.choice(COUNTEREXAMPLES_SHOWN), "after_due_date"),
        ),
        features=features,
        kept_in=kept_in,
    )
    _check_features(rubric, top)
    _check_fallbacks(rubric, top)
    rubric = _derive_fallbacks(rubric, top)
    _cross_check(rubric, top, root)
    return rubric


def _limits(node: Node) -> Limits:
    names = tuple(Limits.__dataclass_fields__)
    fields = node.mapping(names)
    defaults = Limits()
    values: dict[str, Any] = {}
    for name in names:
        default = getattr(defaults, name)
        if name in fields:
            values[name] = fields[name].integer(1) if isinstance(default, int) else fields[name].number(0.1)
        else:
            values[name] = default
    if values["wall_seconds"] < values["budget_seconds"]:
        where = fields.get("wall_seconds") or fields.get("budget_seconds") or node
        raise where.fail(
            f"wall_seconds ({values['wall_seconds']:g}) must be at least "
            f"budget_seconds ({values['budget_seconds']:g}): the wall clock is only the host's last resort"
        )
    # A self-check runs part of what a submission runs: never a larger allowance.
    values["self_check_seconds"] = min(values["self_check_seconds"], values["budget_seconds"])
    values["self_check_import_seconds"] = min(values["self_check_import_seconds"], values["script_seconds"])
    if values["parts"] > MAX_PARTS:
        raise fields["parts"].fail(f"parts ({values['parts']}) is at most {MAX_PARTS}")
    return Limits(**values)


def _leaf(name: str, node: Node) -> Leaf:
    if isinstance(node.node, yaml.ScalarNode):
        return Leaf(name, node.number())
    ranges = []
    items = node.sequence()
    if not items:
        raise node.fail("a leaf needs a number or at least one [low, high] range")
    if items and isinstance(items[0].node, yaml.ScalarNode):
        items = [node]  # a single [lo, hi]
    for item in items:
        bounds = item.sequence()
        if len(bounds) != 2:
            raise item.fail("a range is [low, high]")
        low, high = bounds[0].number(), bounds[1].number()
        if not low < high:
            raise item.fail("a range needs low < high")
        ranges.append((low, high))
    return Leaf(name, None, tuple(ranges))


MAX_SHRINK_ROUNDS = 40


def _probe(name: str, node: Node) -> Probe:
    fields = node.mapping(
        (
            "kind",
            "leaves",
            "steps",
            "record",
            "instances",
            "relu_inputs",
            "inputs",
            "mutants",
            "op",
            "exponent",
            "max_ops",
            "ops",
            "shrink",
        ),
        required=("kind",),
    )
    kind = cast(ProbeKind, fields["kind"].choice(PROBE_KINDS))
    leaves = tuple(_leaf(k, v) for k, v in fields["leaves"].items()) if "leaves" in fields else ()
    probe = Probe(
        id=name,
        kind=kind,
        leaves=leaves,
        steps=get(fields, "steps", Node.texts, ()),
        record=get(fields, "record", lambda n: tuple(cast(Record, r.choice(RECORDS)) for r in n.sequence()), ()),
        instances=get(fields, "instances", lambda n: n.integer(1), 1),
        relu_inputs=cast(ReluInputs, get(fields, "relu_inputs", lambda n: n.choice(RELU_INPUTS), "any")),
        inputs=cast(ApiInputs, get(fields, "inputs", lambda n: n.choice(API_INPUTS), "fixed")),
        mutants=tuple(n.choice(MUTANT_IDS) for n in fields["mutants"].sequence()) if "mutants" in fields else (),
        op=get(fields, "op", lambda n: n.choice(FD_OPS), None),
        exponent=get(fields, "exponent", Node.number, None),
        max_ops=get(fields, "max_ops", lambda n: n.integer(1), 8),
        ops=tuple(n.choice(DAG_OPS) for n in fields["ops"].sequence()) if "ops" in fields else DAG_OPS,
        shrink=get(fields, "shrink", lambda n: n.integer(0), 0),
    )
    if probe.shrink and (kind in ("api", "mutation") or probe.shrink > MAX_SHRINK_ROUNDS):
        raise fields["shrink"].fail(f"`shrink` takes 1 to {MAX_SHRINK_ROUNDS} rounds, for a program probe")
    if probe.inputs == "random" and kind != "api":
        raise fields["inputs"].fail("only an api probe takes `inputs`")
    if kind == "program" and not probe.steps:
        raise node.fail("a program probe needs steps")
    if kind == "fd_op" and probe.op is None:
        raise node.fail("an fd_op probe needs op")
    if probe.op == "pow" and probe.exponent is None:
        raise node.fail("op pow needs an exponent")
    if kind == "program":
        from .program import compile_steps  # local import: program depends on rubric types

        try:
            compile_steps([leaf.name for leaf in leaves], probe.steps)
        except ValueError as error:
            raise fields["steps"].fail(str(error)) from None
    return probe


def _section(node: Node, probes: Mapping[str, Probe], tolerances: Mapping[str, Tolerance]) -> Section:
    fields = node.mapping(("tag", "title", "checks"), required=("tag", "title", "checks"))
    tag = fields["tag"].text()
    checks = tuple(_check(c, tag, probes, tolerances) for c in fields["checks"].sequence())
    return Section(tag=tag, title=fields["title"].text(), checks=checks)


def _check(node: Node, section: str, probes: Mapping[str, Probe], tolerances: Mapping[str, Tolerance]) -> Check:
    fields = node.mapping(
        (
            "id",
            "title",
            "points",
            "visibility",
            "probe",
            "compare",
            "observe",
            "tolerance",
            "expect_from",
            "expect",
            "hint",
            "requires",
            "mutant",
            "vouched_by",
            "fallback",
        ),
        required=("id", "title", "points", "probe", "compare"),
    )
    probe = fields["probe"].text()
    if probe not in probes:
        near = difflib.get_close_matches(probe, list(probes), n=1)
        raise fields["probe"].fail(f"no probe named '{probe}'" + (f" (did you mean '{near[0]}'?)" if near else ""))
    tolerance = get(fields, "tolerance", Node.text, "handout")
    if tolerance not in tolerances:
        raise fields["tolerance"].fail(f"no tolerance named '{tolerance}' (have: {', '.join(tolerances)})")
    expect: dict[str, float] = {}
    if "expect" in fields:
        for key, value in fields["expect"].items():
            expect[key] = value.number()
    check = Check(
        id=fields["id"].text(),
        title=fields["title"].text(),
        section=section,
        points=fields["points"].number(0),
        visibility=Visibility(get(fields, "visibility", lambda n: n.choice([v.value for v in Visibility]), "visible")),
        probe=probe,
        compare=cast(Compare, fields["compare"].choice(COMPARES)),
        observe=get(fields, "observe", Node.texts, ()),
        tolerance=tolerance,
        expect_from=cast(ExpectFrom, get(fields, "expect_from", lambda n: n.choice(EXPECT_FROM), "reference")),
        expect=expect,
        hint=get(fields, "hint", Node.text, ""),
        requires=get(fields, "requires", Node.texts, ()),
        mutant=get(fields, "mutant", lambda n: n.choice(MUTANT_IDS), None),
        vouched_by=get(fields, "vouched_by", Node.text, None),
        fallback=_fallback(fields["fallback"], probes) if "fallback" in fields else None,
    )
    compare, kind = check.compare, probes[probe].kind
    if check.fallback and probes[check.fallback.probe].kind != kind:
        raise fields["fallback"].fail(f"a fallback probe must be a {kind} probe, like the check's own")
    if (compare in MUTATION_COMPARES) != (kind == "mutation"):
        raise fields["compare"].fail(f"compare {compare} does not apply to a {kind} probe")
    if (compare == "mutant_killed") != (check.mutant is not None):
        raise node.fail("compare mutant_killed needs `mutant:` (and only it takes one)")
    return check


def _fallback(node: Node, probes: Mapping[str, Probe]) -> Fallback:
    fields = node.mapping(("probe", "when_failing", "because"), required=("probe", "when_failing", "because"))
    probe = fields["probe"].text()
    if probe not in probes:
        raise fields["probe"].fail(f"no probe named '{probe}'")
    failing = fields["when_failing"].texts()
    if not failing:
        raise fields["when_failing"].fail("name at least one check")
    return Fallback(probe, failing, fields["because"].text())


def _cross_check(rubric: Rubric, top: dict[str, Node], root: Node) -> None:
    ids = [c.id for c in rubric.checks]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise top["sections"].fail(f"duplicate check id(s): {', '.join(duplicates)}")
    by_id = {c.id: c for c in rubric.checks}
    for check in rubric.checks:
        for needed in check.depends_on:
            if needed not in ids:
                raise top["sections"].fail(f"check {check.id} depends on unknown check '{needed}'")
        if check.vouched_by is not None:
            twin = by_id.get(check.vouched_by)
            if twin is None or not rubric.probes[twin.probe].randomized or twin.visibility is Visibility.VISIBLE:
                raise top["sections"].fail(
                    f"check {check.id} is vouched_by '{check.vouched_by}': that must be a hidden check on random inputs"
                )
            if rubric.probes[twin.probe].steps != rubric.probes[check.probe].steps:
                raise top["sections"].fail(
                    f"check {check.id} is vouched_by '{twin.id}', whose probe runs different steps; a twin must "
                    "compute the same thing on other inputs"
                )
    _no_cycles(rubric, top)
    total = sum(c.points for c in rubric.checks)
    if abs(total - rubric.total) > 1e-9:
        raise top["assignment"].fail(f"total is {rubric.total:g} but the checks add up to {total:g}")


def _no_cycles(rubric: Rubric, top: dict[str, Node]) -> None:
    """``requires`` and fallbacks order the judging: they must not go round in a circle."""
    depends = {c.id: c.depends_on for c in rubric.checks}
    state: dict[str, int] = {}  # 1: being visited, 2: done

    def visit(check_id: str, path: tuple[str, ...]) -> None:
        if state.get(check_id) == 2:
            return
        if state.get(check_id) == 1:
            raise top["sections"].fail("checks depend on each other in a circle: " + " -> ".join((*path, check_id)))
        state[check_id] = 1
        for needed in depends[check_id]:
            visit(needed, (*path, check_id))
        state[check_id] = 2

    for check_id in depends:
        visit(check_id, ())


# --- what probes rely on, and their forms without it ------------------------------------------


CORE_SUFFIX = "~core"  # a derived probe's id: the original's id and this


def _features(node: Node) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """Feature -> the checks that measure it, and feature -> the sections that keep it."""
    from .features import FEATURES  # local import: features has no rubric types, plan does

    out: dict[str, tuple[str, ...]] = {}
    kept: dict[str, tuple[str, ...]] = {}
    for name, entry in node.items():
        if name not in FEATURES:
            near = difflib.get_close_matches(name, FEATURES, n=1)
            raise entry.fail(f"no feature named '{name}'" + (f" (did you mean '{near[0]}'?)" if near else ""))
        fields = entry.mapping(("measured_by", "kept_in"), required=("measured_by",))
        measuring = fields["measured_by"].texts()
        if not measuring:
            raise fields["measured_by"].fail("name at least one check")
        out[name] = measuring
        if "kept_in" in fields:
            kept[name] = fields["kept_in"].texts()
    return out, kept


def _check_features(rubric: Rubric, top: dict[str, Node]) -> None:
    """Each feature is measured by known checks, worth points, that are not themselves judged
    on a derived form (they would measure nothing)."""
    by_id = {c.id: c for c in rubric.checks}
    for feature, measuring in rubric.features.items():
        for check_id in measuring:
            check = by_id.get(check_id)
            if check is None:
                raise top["features"].fail(f"feature {feature} is measured by unknown check '{check_id}'")
            if check.compare not in ("api", "values"):
                raise top["features"].fail(
                    f"feature {feature}: check {check_id} compares {check.compare}, which measures no operation"
                )
        if not any(by_id[c].points > 0 for c in measuring):
            raise top["features"].fail(f"feature {feature}: no check that measures it is worth points")
    tags = {s.tag for s in rubric.sections}
    for feature, sections in rubric.kept_in.items():
        unknown = [t for t in sections if t not in tags]
        if unknown:
            raise top["features"].fail(f"feature {feature} is kept_in unknown section '{unknown[0]}'")


def _check_fallbacks(rubric: Rubric, top: dict[str, Node]) -> None:
    """A written fallback must compute the same function as the check's own probe: the same
    leaves, drawn alike, and steps that give every node the original names the same value and
    gradient. A check that falls back measures the same thing in another form, never less."""
    import random

    from .features import same_function
    from .program import compile_steps

    for check in rubric.checks:
        if check.fallback is None or check.fallback.derived:
            continue
        own, other = rubric.probes[check.probe], rubric.probes[check.fallback.probe]
        where = f"check {check.id}: fallback {other.id}"
        if own.kind != "program":
            raise top["sections"].fail(
                f"{where}: a {own.kind} probe's programs are drawn, so no written probe can be shown to compute "
                "the same function; declare what they rely on under `features:` and the form without it is derived"
            )
        if own.leaves != other.leaves or own.instances != other.instances:
            raise top["sections"].fail(f"{where}: a fallback has the check's probe's leaves and instance count")
        names = [leaf.name for leaf in own.leaves]
        mine, theirs = compile_steps(names, own.steps), compile_steps(names, other.steps)
        rng = random.Random(0)
        for _ in range(4):
            leaves = {
                leaf.name: leaf.value if leaf.value is not None else rng.uniform(*rng.choice(leaf.ranges))
                for leaf in own.leaves
            }
            why = same_function({"leaves": leaves, "steps": mine}, {"leaves": leaves, "steps": theirs})
            if why:
                raise top["sections"].fail(f"{where} does not compute the same function: {why}")


def _derive_fallbacks(rubric: Rubric, top: dict[str, Node]) -> Rubric:
    """For every check whose probe relies on a feature another check measures: a fallback to
    the probe's form without the features it does not measure itself, used when a check that
    measures one of them fails. ``features.APART`` ones are taken out only when a check that
    measures them fails: a second form, without them as well, tried first."""
    if not rubric.features:
        return rubric
    from .features import APART  # local imports: features and plan depend on rubric types
    from .plan import probe_features

    by_id = {c.id: c for c in rubric.checks}
    sections_of: dict[str, set[str]] = {}  # probe -> the sections of the checks that use it
    for c in rubric.checks:
        sections_of.setdefault(c.probe, set()).add(c.section)
    probes = dict(rubric.probes)
    sections = []
    for section in rubric.sections:
        checks = []
        for check in section.checks:
            probe = rubric.probes[check.probe]
            if check.fallback is not None or probe.kind not in ("program", "fd_op", "random_dag"):
                checks.append(check)
                continue
            # A feature measured by a check of this very probe is the probe's subject: kept; so is
            # one that is the subject of a whole section this probe's checks belong to.
            owned = {
                f for f, measuring in rubric.features.items() if any(by_id[m].probe == probe.id for m in measuring)
            } | {f for f, tags in rubric.kept_in.items() if sections_of[probe.id] & set(tags)}
            used = sorted(probe_features(probe) & set(rubric.features) - owned)
            together = [f for f in used if f not in APART]
            # The form without the features taken out together, when a check of theirs fails;
            # then the form without every one, when a check of an apart feature fails.
            forms = ((together, together), (used, [f for f in used if f in APART]))
            fallbacks: list[Fallback] = []
            for without, measured in forms:
                failing = tuple(
                    dict.fromkeys(m for f in measured for m in rubric.features[f] if by_id[m].probe != probe.id)
                )
                if not without or not failing:
                    continue
                core = probe.id + ("~tree" if fallbacks else "") + CORE_SUFFIX
                if core in rubric.probes:
                    raise top["probes"].fail(f"probe {core}: names ending in {CORE_SUFFIX} are the derived forms'")
                probes[core] = replace(probe, id=core, core_of=probe.id, without=tuple(without))
                fallbacks.append(Fallback(core, failing, "", derived=True))
            if not fallbacks:
                checks.append(check)
                continue
            apart = fallbacks[1] if len(fallbacks) > 1 else None
            checks.append(replace(check, fallback=fallbacks[0], apart=apart))
        sections.append(replace(section, checks=tuple(checks)))
    return replace(rubric, probes=probes, sections=tuple(sections))
