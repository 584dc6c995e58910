"""Rubric YAML -> frozen dataclasses, strictly.

Unknown keys are rejected with a suggestion, wrong types name the file, line and key path
(``rubrics/a8_autograd_lab.yaml:14:5: sections[2].checks[0].points: expected a number``).
Downstream code never sees raw YAML.
"""

from __future__ import annotations

import difflib
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from sandbox.harness.mutate import BY_ID

from .errors import RubricError
from .results import Visibility

DEFAULT_RUBRIC = Path(__file__).resolve().parent.parent / "rubrics" / "a8_autograd_lab.yaml"

PROBE_KINDS = ("api", "program", "mutation", "fd_op", "random_dag")
COMPARES = ("engine", "api", "values", "graph", "schedule", "checks_pass", "mutant_killed", "mutation_score")
MUTATION_COMPARES = ("checks_pass", "mutant_killed", "mutation_score")
EXPECT_FROM = ("reference", "math")
RECORDS = ("graph", "schedule")
FD_OPS = ("add", "sub", "mul", "div", "neg", "radd", "rsub", "rmul", "rdiv", "pow", "tanh", "relu", "exp", "log")
RELU_INPUTS = ("any", "alternate")
DAG_OPS = ("add", "sub", "mul", "div", "tanh", "relu", "exp", "log", "square", "neg")

MUTANT_IDS = tuple(BY_ID)

T = TypeVar("T")


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


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 60.0
    probe_seconds: float = 2.0
    script_seconds: float = 10.0
    memory_mb: int = 512
    child_memory_mb: int = 256
    cpus: float = 1.0
    pids: int = 64
    output_kb: int = 16
    stdout_kb: int = 4096
    tmpfs_mb: int = 16
    max_file_kb: int = 1024


@dataclass(frozen=True)
class Leaf:
    """A leaf's value: fixed, or drawn uniformly from one of ``ranges`` per instance."""

    name: str
    value: float | None
    ranges: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class Probe:
    id: str
    kind: str
    leaves: tuple[Leaf, ...] = ()
    steps: tuple[str, ...] = ()
    record: tuple[str, ...] = ()
    instances: int = 1
    relu_inputs: str = "any"
    mutants: tuple[str, ...] = ()  # mutation probes: catalogue ids to run (empty: all)
    op: str | None = None
    exponent: float | None = None
    max_ops: int = 8
    ops: tuple[str, ...] = ()

    @property
    def randomized(self) -> bool:
        return self.kind in ("fd_op", "random_dag") or any(leaf.value is None for leaf in self.leaves)


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    section: str
    points: float
    visibility: Visibility
    probe: str
    compare: str
    observe: tuple[str, ...]
    tolerance: str
    expect_from: str
    expect: Mapping[str, float]
    hint: str
    requires: tuple[str, ...]
    mutant: str | None = None  # mutant_killed: which mutant the checks must catch
    # A check whose inputs and answers are printed in the handout can be passed by knowing the
    # answers alone (hard-coded, or forged from inside the sandbox). It earns its points only
    # when the same computation on hidden random inputs (this check) passes at least once.
    vouched_by: str | None = None


@dataclass(frozen=True)
class Section:
    tag: str
    title: str
    checks: tuple[Check, ...]

    @property
    def max_points(self) -> float:
        return sum(c.points for c in self.checks)


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


# --- YAML with positions ----------------------------------------------------------------


class _Node:
    """A YAML value with its path and position, for error messages."""

    def __init__(self, node: yaml.Node, path: str, source: str):
        self.node, self.path, self.source = node, path, source

    def where(self) -> str:
        mark = self.node.start_mark
        return f"{self.source}:{mark.line + 1}:{mark.column + 1}: {self.path or '<top>'}"

    def fail(self, message: str) -> RubricError:
        return RubricError(message, where=self.where())

    def child(self, node: yaml.Node, suffix: str) -> _Node:
        joined = f"{self.path}.{suffix}" if self.path and not suffix.startswith("[") else f"{self.path}{suffix}"
        return _Node(node, joined, self.source)

    def mapping(self, allowed: Sequence[str], required: Sequence[str] = ()) -> dict[str, _Node]:
        if not isinstance(self.node, yaml.MappingNode):
            raise self.fail("expected a mapping")
        out: dict[str, _Node] = {}
        for key_node, value_node in self.node.value:
            key = key_node.value
            if key not in allowed:
                near = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else f" (allowed: {', '.join(allowed)})"
                raise _Node(key_node, f"{self.path}.{key}" if self.path else str(key), self.source).fail(
                    f"unknown key '{key}'{hint}"
                )
            if key in out:
                raise self.child(key_node, key).fail("duplicate key")
            out[key] = self.child(value_node, key)
        missing = [k for k in required if k not in out]
        if missing:
            raise self.fail(f"missing required key(s): {', '.join(missing)}")
        return out

    def items(self) -> list[tuple[str, _Node]]:
        if not isinstance(self.node, yaml.MappingNode):
            raise self.fail("expected a mapping")
        return [(k.value, self.child(v, str(k.value))) for k, v in self.node.value]

    def sequence(self) -> list[_Node]:
        if not isinstance(self.node, yaml.SequenceNode):
            raise self.fail("expected a list")
        return [self.child(v, f"[{i}]") for i, v in enumerate(self.node.value)]

    def scalar(self) -> Any:
        if not isinstance(self.node, yaml.ScalarNode):
            raise self.fail("expected a single value")
        return yaml.safe_load(yaml.serialize(self.node))

    def text(self) -> str:
        value = self.scalar()
        if not isinstance(value, str):
            raise self.fail(f"expected text, got {value!r}")
        return value

    def number(self, minimum: float | None = None) -> float:
        value = self.scalar()
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"expected a number, got {value!r}")
        if not math.isfinite(value):
            raise self.fail(f"expected a finite number, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.fail(f"must be at least {minimum:g}, got {value!r}")
        return float(value)

    def integer(self, minimum: int = 0) -> int:
        value = self.scalar()
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(f"expected a whole number >= {minimum}, got {value!r}")
        return value

    def choice(self, options: Sequence[str]) -> str:
        value = self.text()
        if value not in options:
            raise self.fail(f"'{value}' is not one of: {', '.join(options)}")
        return value

    def texts(self) -> tuple[str, ...]:
        return tuple(n.text() for n in self.sequence())


def _get(fields: dict[str, _Node], key: str, read: Callable[[_Node], T], default: T) -> T:
    return read(fields[key]) if key in fields else default


# --- the loader ---------------------------------------------------------------------------


def load_rubric(path: Path | str = DEFAULT_RUBRIC) -> Rubric:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise RubricError(f"cannot read the rubric: {error.strerror}", where=str(path)) from None
    try:
        root_node = yaml.compose(raw.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise RubricError(f"not valid YAML: {error}", where=str(path)) from None
    if root_node is None:
        raise RubricError("the rubric is empty", where=str(path))
    root = _Node(root_node, "", str(path))
    top = root.mapping(
        ("assignment", "limits", "stand_ins", "tolerances", "probes", "sections"),
        required=("assignment", "probes", "sections"),
    )
    assignment = top["assignment"].mapping(
        ("name", "file", "class", "handout", "total"), required=("name", "file", "class", "total")
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
            tolerances[name] = Tolerance(fields["abs"].number(0), _get(fields, "rel", lambda n: n.number(0), 0.0))
    probes = {name: _probe(name, node) for name, node in top["probes"].items()}
    sections = tuple(_section(node, probes, tolerances) for node in top["sections"].sequence())
    rubric = Rubric(
        name=assignment["name"].text(),
        filename=assignment["file"].text(),
        class_name=assignment["class"].text(),
        handout=_get(assignment, "handout", _Node.text, ""),
        total=assignment["total"].number(0),
        limits=limits,
        stand_ins=_get(top, "stand_ins", _Node.texts, ()),
        tolerances=tolerances,
        probes=probes,
        sections=sections,
        path=path,
        sha256=hashlib.sha256(raw).hexdigest(),
    )
    _cross_check(rubric, top, root)
    return rubric


def _limits(node: _Node) -> Limits:
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
    return Limits(**values)


def _leaf(name: str, node: _Node) -> Leaf:
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


def _probe(name: str, node: _Node) -> Probe:
    fields = node.mapping(
        (
            "kind",
            "leaves",
            "steps",
            "record",
            "instances",
            "relu_inputs",
            "mutants",
            "op",
            "exponent",
            "max_ops",
            "ops",
        ),
        required=("kind",),
    )
    kind = fields["kind"].choice(PROBE_KINDS)
    leaves = tuple(_leaf(k, v) for k, v in fields["leaves"].items()) if "leaves" in fields else ()
    probe = Probe(
        id=name,
        kind=kind,
        leaves=leaves,
        steps=_get(fields, "steps", _Node.texts, ()),
        record=tuple(n.choice(RECORDS) for n in fields["record"].sequence()) if "record" in fields else (),
        instances=_get(fields, "instances", lambda n: n.integer(1), 1),
        relu_inputs=_get(fields, "relu_inputs", lambda n: n.choice(RELU_INPUTS), "any"),
        mutants=tuple(n.choice(MUTANT_IDS) for n in fields["mutants"].sequence()) if "mutants" in fields else (),
        op=_get(fields, "op", lambda n: n.choice(FD_OPS), None),
        exponent=_get(fields, "exponent", _Node.number, None),
        max_ops=_get(fields, "max_ops", lambda n: n.integer(1), 8),
        ops=tuple(n.choice(DAG_OPS) for n in fields["ops"].sequence()) if "ops" in fields else DAG_OPS,
    )
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


def _section(node: _Node, probes: Mapping[str, Probe], tolerances: Mapping[str, Tolerance]) -> Section:
    fields = node.mapping(("tag", "title", "checks"), required=("tag", "title", "checks"))
    tag = fields["tag"].text()
    checks = tuple(_check(c, tag, probes, tolerances) for c in fields["checks"].sequence())
    return Section(tag=tag, title=fields["title"].text(), checks=checks)


def _check(node: _Node, section: str, probes: Mapping[str, Probe], tolerances: Mapping[str, Tolerance]) -> Check:
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
        ),
        required=("id", "title", "points", "probe", "compare"),
    )
    probe = fields["probe"].text()
    if probe not in probes:
        near = difflib.get_close_matches(probe, list(probes), n=1)
        raise fields["probe"].fail(f"no probe named '{probe}'" + (f" (did you mean '{near[0]}'?)" if near else ""))
    tolerance = _get(fields, "tolerance", _Node.text, "handout")
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
        visibility=Visibility(_get(fields, "visibility", lambda n: n.choice([v.value for v in Visibility]), "visible")),
        probe=probe,
        compare=fields["compare"].choice(COMPARES),
        observe=_get(fields, "observe", _Node.texts, ()),
        tolerance=tolerance,
        expect_from=_get(fields, "expect_from", lambda n: n.choice(EXPECT_FROM), "reference"),
        expect=expect,
        hint=_get(fields, "hint", _Node.text, ""),
        requires=_get(fields, "requires", _Node.texts, ()),
        mutant=_get(fields, "mutant", lambda n: n.choice(MUTANT_IDS), None),
        vouched_by=_get(fields, "vouched_by", _Node.text, None),
    )
    compare, kind = check.compare, probes[probe].kind
    if (compare in MUTATION_COMPARES) != (kind == "mutation"):
        raise fields["compare"].fail(f"compare {compare} does not apply to a {kind} probe")
    if (compare == "mutant_killed") != (check.mutant is not None):
        raise node.fail("compare mutant_killed needs `mutant:` (and only it takes one)")
    return check


def _cross_check(rubric: Rubric, top: dict[str, _Node], root: _Node) -> None:
    ids = [c.id for c in rubric.checks]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise top["sections"].fail(f"duplicate check id(s): {', '.join(duplicates)}")
    by_id = {c.id: c for c in rubric.checks}
    for check in rubric.checks:
        for needed in check.requires:
            if needed not in ids:
                raise top["sections"].fail(f"check {check.id} requires unknown check '{needed}'")
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
    total = sum(c.points for c in rubric.checks)
    if abs(total - rubric.total) > 1e-9:
        raise top["assignment"].fail(f"total is {rubric.total:g} but the checks add up to {total:g}")
