"""Rubric + seed -> the probe plan: concrete inputs only, never an expected value.

Random inputs are drawn where bugs show: stratified points per operation (away from the
values where bugs hide: 0, +-1, a = b, kinks), a non-unit upstream gradient, an
accumulation harness, and random DAGs whose every node is shared. The seed is a key (128
bits when drawn): each probe instance's inputs come from its own ``random.Random`` seeded with
HMAC-SHA256(key, probe id and instance), so a key reproduces a plan exactly on any machine, and
the inputs of one check, however many a student learns, say nothing about another's or the key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sandbox.harness import wire
from sandbox.harness.mutation.mutate import CATALOGUE

from .engines import engine_texts, wheats
from .errors import GraderError
from .features import FEATURES, removable, same_function, without
from .parts import Part, deal, part_budget
from .program import Program, compile_steps, evaluate, relu_inputs
from .results import Visibility
from .rubric import Check, Limits, Probe, Rubric

# Strata per operation: every sign and magnitude region, never at 0, +-1 or a kink.
GENERAL = ((-3.0, -1.25), (-0.8, -0.2), (0.2, 0.8), (1.25, 3.0))
DIVISOR = ((-3.0, -1.25), (-0.8, -0.5), (0.5, 0.8), (1.25, 3.0))
POSITIVE = ((0.2, 0.8), (1.25, 4.0))
SMOOTH = ((-2.5, -1.0), (-1.0, -0.2), (0.2, 1.0), (1.0, 2.5))
RELU = ((-3.0, -1.0), (-1.0, -0.1), (0.1, 1.0), (1.0, 3.0))
UPSTREAM = 1.7
CONSTANT = 0.7

# op -> (template with x [and y], strata for x, strata for y)
FD_TEMPLATES: Mapping[str, tuple[str, tuple[tuple[float, float], ...], tuple[tuple[float, float], ...]]] = {
    "add": ("o = x + y", GENERAL, GENERAL),
    "sub": ("o = x - y", GENERAL, GENERAL),
    "mul": ("o = x * y", GENERAL, GENERAL),
    "div": ("o = x / y", GENERAL, DIVISOR),
    "neg": ("o = -x", GENERAL, ()),
    "radd": (f"o = {CONSTANT} + x", GENERAL, ()),
    "rsub": (f"o = {CONSTANT} - x", GENERAL, ()),
    "rmul": (f"o = {CONSTANT} * x", GENERAL, ()),
    "rdiv": (f"o = {CONSTANT} / x", DIVISOR, ()),
    "tanh": ("o = tanh(x)", SMOOTH, ()),
    "relu": ("o = relu(x)", RELU, ()),
    "exp": ("o = exp(x)", SMOOTH, ()),
    "log": ("o = log(x)", POSITIVE, ()),
}


@dataclass(frozen=True)
class PlannedProbe:
    id: str
    kind: wire.ProbeKind
    programs: tuple[Program, ...] = ()
    mutants: tuple[str, ...] = ()  # mutation probes: mutants to run, in order
    api_inputs: tuple[float, float, float, float] | None = None  # api probes: drawn x, y, c, k (None: fixed)
    shrink: int = 0  # program probes: rounds of counterexample shrinking (0: none)
    keep: tuple[str, ...] = ()  # operations a shrunk program must still have (an fd probe's own)
    hidden: bool = False  # no visible check reads it: nothing it observes is shown before release
    # Mutation probes: ``mutants`` names the grader's engines the student's checks run on,
    # wheats first; their texts are disguised with ``engine_key`` (the assignment's key) only
    # when the plan is written for the sandbox. The host alone knows which engine is which.
    wheats: tuple[str, ...] = ()
    engine_key: bytes = field(default=b"", repr=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind}
        if self.hidden:
            out["hidden"] = True
        if self.api_inputs is not None:
            out["inputs"] = list(self.api_inputs)
        if self.kind == wire.PROGRAM:
            out["programs"] = list(self.programs)
            if self.shrink:
                out["shrink"] = {"rounds": self.shrink, "keep": list(self.keep)}
        if self.kind == wire.MUTATION:
            texts = engine_texts(self.mutants, self.engine_key)
            out["engines"] = [{"id": name, "text": texts[name]} for name in self.mutants]
            out["wheats"] = list(self.wheats)
        return out


@dataclass(frozen=True)
class Plan:
    seed: int
    probes: tuple[PlannedProbe, ...]
    checks: tuple[Check, ...]
    visible_only: bool = False  # a self-check: its own time allowance (Limits.self_check_seconds)
    # The probes dealt into the parts sandboxes run (grader.parts); () before the deal: one part.
    parts: tuple[Part, ...] = ()

    def budget_seconds(self, limits: Limits) -> float:
        return limits.self_check_seconds if self.visible_only else limits.budget_seconds

    def import_seconds(self, limits: Limits) -> float:
        return limits.self_check_import_seconds if self.visible_only else limits.script_seconds

    def probe(self, probe_id: str) -> PlannedProbe:
        for probe in self.probes:
            if probe.id == probe_id:
                return probe
        raise KeyError(probe_id)

    def dealt(self) -> tuple[Part, ...]:
        return self.parts or (self.probes,)

    def to_bytes(self, rubric: Rubric, *, nonce: str, isolate: bool, parts: Sequence[int] | None = None) -> bytes:
        """The plan as the harness reads it; ``isolate``: run student code as the student uid and
        kill what it leaves behind (the Docker sandbox; the local runner cannot switch users).
        ``parts``: which of the parts this sandbox runs, one after another (default: all)."""
        limits = rubric.limits
        dealt = self.dealt()
        share = part_budget(self.budget_seconds(limits), len(dealt))
        chosen = range(len(dealt)) if parts is None else parts
        body = {
            "nonce": nonce,
            "filename": rubric.filename,
            "class_name": rubric.class_name,
            "stand_ins": list(rubric.stand_ins),
            "limits": {
                "probe_seconds": limits.probe_seconds,
                "script_seconds": limits.script_seconds,
                "import_seconds": self.import_seconds(limits),
                "budget_seconds": self.budget_seconds(limits),
                # The harness stops a little before the host kills the sandbox, so partial
                # results are reported rather than lost.
                "wall_seconds": max(1.0, limits.wall_seconds - 8.0),
                "output_bytes": limits.output_kb * 1024,
                "child_memory_mb": limits.child_memory_mb,
                "shrink_seconds": limits.shrink_seconds,
            },
            "student": {"uid": wire.STUDENT_UID, "gid": wire.STUDENT_UID, "reap": True} if isolate else {},
            "parts": [{"budget_seconds": share, "probes": [p.to_json() for p in dealt[i]]} for i in chosen],
        }
        return json.dumps(body, allow_nan=False).encode()


SEED_BITS = 128


def new_seed() -> int:
    return secrets.randbits(SEED_BITS)


def seed_label(seed: int) -> str:
    """What may be printed of a seed where it is not secret-safe: a fingerprint, never the key."""
    return hashlib.sha256(_key(seed)).hexdigest()[:12]


def build_plan(rubric: Rubric, *, seed: int, visible_only: bool) -> Plan:
    checks = tuple(c for c in rubric.checks if not visible_only or c.visibility is Visibility.VISIBLE)
    needed: list[str] = []
    for check in checks:
        for probe_id in (check.probe, *(f.probe for f in check.fallbacks)):
            if probe_id not in needed:
                needed.append(probe_id)
    shown = {
        p for c in checks if c.visibility is Visibility.VISIBLE for p in (c.probe, *(f.probe for f in c.fallbacks))
    }
    expanded = [replace(_expand_named(rubric, name, seed), hidden=name not in shown) for name in needed]
    # Every run whose output a student may see comes before the first run that holds a hidden
    # input: a hidden run can move counters every process shares (PIDs, inode numbers), and no
    # shown run may read them after. So: shown probes, then bug injection (the student's checks,
    # whose output is shown), then the hidden probes.
    probes = [p for p in expanded if p.kind != wire.MUTATION and not p.hidden]
    for probe in (p for p in expanded if p.kind == wire.MUTATION):
        named = [c.mutant for c in checks if c.probe == probe.id and c.mutant]
        wanted = [m for m in rubric.probes[probe.id].mutants or tuple(op.id for op in CATALOGUE) if m not in named]
        # The checks' own mutants first, then the rest in an order the key decides: when a
        # grading's budget cannot hold every run, which bugs are tried is the seed's choice.
        _rng(seed, probe.id).shuffle(wanted)
        bugs = tuple(dict.fromkeys([*named, *wanted]))
        ids = tuple(w.id for w in wheats())
        probes.append(PlannedProbe(probe.id, wire.MUTATION, mutants=(*ids, *bugs), wheats=ids, engine_key=_key(seed)))
    probes += [p for p in expanded if p.kind != wire.MUTATION and p.hidden]
    parts = deal(probes, rubric.limits.parts)
    return Plan(seed=seed, probes=tuple(probes), checks=checks, visible_only=visible_only, parts=parts)


def _key(seed: int) -> bytes:
    return seed.to_bytes(max(16, (seed.bit_length() + 7) // 8), "big")


def _rng(seed: int, probe_id: str, instance: int = 0) -> random.Random:
    """One instance's generator. A keyed hash, so the Mersenne Twister state a student could
    rebuild from enough outputs is this instance's alone; bytes seeds are stable everywhere."""
    message = f"{probe_id}\0{instance}".encode()
    return random.Random(hmac.new(_key(seed), message, hashlib.sha256).digest())


def _expand_named(rubric: Rubric, name: str, seed: int) -> PlannedProbe:
    probe = rubric.probes[name]
    if probe.core_of is None:
        return _expand(probe, seed)
    # The original's programs, drawn from the original's own key (so its hidden inputs are the
    # ones it always had), each rewritten without the features and proved the same function.
    base = _expand(rubric.probes[probe.core_of], seed)
    programs = []
    for program in base.programs:
        rewritten = without(program, probe.without)  # type: ignore[arg-type]
        why = same_function(program, rewritten)
        if why:
            raise GraderError(f"probe {probe.id} does not compute what {probe.core_of} does: {why}")
        programs.append(rewritten)
    return replace(base, id=probe.id, programs=tuple(programs))


def probe_features(probe: Probe) -> frozenset[str]:
    """The features (grader/features.py) a probe's programs rely on that a rewrite can remove,
    whatever its inputs: the structure of a probe's programs does not depend on the draws."""
    if probe.kind == "program":
        steps = compile_steps([leaf.name for leaf in probe.leaves], probe.steps)
        return removable({"leaves": dict.fromkeys((leaf.name for leaf in probe.leaves), 0.0), "steps": steps}, FEATURES)
    if probe.kind == "fd_op":
        found: set[str] = set()
        for program in _fd_programs(probe, random.Random(0), 0):
            found |= removable(program, FEATURES)
        return frozenset(found)
    if probe.kind == "random_dag":
        # Every graph weighs its nodes by plain numbers (0.5 + 0.25k, the upstream 1.7), and
        # their nodes are drawn from the same few leaves: a value used twice is the rule.
        return frozenset({"number", "reuse"}.union(*(DAG_OP_FEATURES.get(op, ()) for op in probe.ops)))
    return frozenset()


# What each random-graph operation adds to the plain-number weights (see ``_random_dag``).
DAG_OP_FEATURES: Mapping[str, tuple[str, ...]] = {
    "sub": ("sub",),
    "neg": ("neg",),
    "div": ("div",),  # a / (b*b + 0.5)
    "square": ("float_exponent",),  # a ** 2, an integral exponent
}


def _expand(probe: Probe, seed: int) -> PlannedProbe:
    rng = _rng(seed, probe.id)
    if probe.kind == "api":
        inputs = (
            _draw(rng, POSITIVE, rng.randrange(2)),  # x: log needs x > 0
            _draw(rng, DIVISOR, rng.randrange(4)),  # y: x / y
            _draw(rng, GENERAL, rng.randrange(4)),  # c: x + c, c - x
            _draw(rng, DIVISOR, rng.randrange(4)),  # k: x * k, k / x
        )
        return PlannedProbe(probe.id, wire.API, api_inputs=inputs if probe.inputs == "random" else None)
    if probe.kind == "mutation":
        return PlannedProbe(probe.id, wire.MUTATION)
    if probe.kind == "program":
        steps = compile_steps([leaf.name for leaf in probe.leaves], probe.steps)
        programs = tuple(_instance(probe, steps, _rng(seed, probe.id, i), i) for i in range(probe.instances))
    elif probe.kind == "fd_op":
        programs = tuple(p for i in range(probe.instances) for p in _fd_programs(probe, _rng(seed, probe.id, i), i))
        # The operation under test is each program's first step: a counterexample keeps it.
        keep = tuple(dict.fromkeys(p["steps"][0][1] for p in programs))
        return PlannedProbe(probe.id, wire.PROGRAM, programs, shrink=probe.shrink, keep=keep)
    else:
        programs = tuple(_random_dag(_rng(seed, probe.id, i), probe.max_ops, probe.ops) for i in range(probe.instances))
    return PlannedProbe(probe.id, wire.PROGRAM, programs, shrink=probe.shrink)


def _draw(rng: random.Random, ranges: Sequence[tuple[float, float]], index: int) -> float:
    low, high = ranges[index % len(ranges)]
    return round(rng.uniform(low, high), 6)


def _before_sgd(program: Program) -> Program:
    """The part of a program float math can check: an SGD step needs the engine's gradients."""
    steps = program["steps"]
    cut = next((i for i, step in enumerate(steps) if step[1] == "sgd"), len(steps))
    return {**program, "steps": steps[:cut]}


def _safe(program: Program, *, want_relu_positive: bool | None) -> bool:
    program = _before_sgd(program)
    try:
        values = evaluate(program)
    except (ValueError, OverflowError, ZeroDivisionError):
        return False
    if any(abs(v) > 1e4 for v in values.values()):
        return False
    inputs = relu_inputs(program, values)
    if any(abs(u) < 0.05 for u in inputs):
        return False  # never probe a relu near its kink
    if want_relu_positive is not None and any((u > 0) != want_relu_positive for u in inputs):
        return False
    return True


def _instance(probe: Probe, steps: list[Any], rng: random.Random, index: int) -> Program:
    record = list(probe.record)
    want = {"any": None, "alternate": index % 2 == 0, "active": True}[probe.relu_inputs]
    for _ in range(2000):
        leaves = {
            leaf.name: leaf.value
            if leaf.value is not None
            else _draw(rng, leaf.ranges, rng.randrange(len(leaf.ranges)))
            for leaf in probe.leaves
        }
        program = {"leaves": leaves, "steps": steps, "record": record}
        if all(leaf.value is not None for leaf in probe.leaves) or _safe(program, want_relu_positive=want):
            return program
    raise ValueError(f"probe {probe.id}: no safe random instance found")


def _fd_programs(probe: Probe, rng: random.Random, index: int) -> list[Program]:
    """Two harnesses per point: scaled upstream, and accumulation into the inputs."""
    if probe.op == "pow":
        k = float(probe.exponent or 2.0)
        template = f"o = x ** {k!r}"
        xs: tuple[tuple[float, float], ...] = GENERAL if k == int(k) and k > 0 else POSITIVE
        ys: tuple[tuple[float, float], ...] = ()
    else:
        template, xs, ys = FD_TEMPLATES[str(probe.op)]
    leaves = {"x": _draw(rng, xs, index)}
    if ys:
        # Region of y shifts by one every round of x regions: all y regions within R
        # instances, all (x, y) region pairs within R*R.
        region = index + index // len(xs)
        leaves["y"] = _draw(rng, ys, region)
        while abs(leaves["x"] - leaves["y"]) < 0.05:  # a = b hides operand-swap bugs
            leaves["y"] = _draw(rng, ys, region)
    names = list(leaves)
    scaled = [template, f"L = o * {UPSTREAM}", "backward(L)"]
    if ys:
        accumulated = [template, "t = o * x", "L = t * y", "backward(L)"]
    else:
        accumulated = [template, "L = o * x", "backward(L)"]
    return [
        {"leaves": dict(leaves), "steps": compile_steps(names, scaled), "record": []},
        {"leaves": dict(leaves), "steps": compile_steps(names, accumulated), "record": []},
    ]


def _random_dag(rng: random.Random, max_ops: int, ops: Sequence[str]) -> Program:
    """Random program over 3 leaves; every node also feeds the output, so no path is ever unused."""
    for _ in range(2000):
        leaves = {}
        for name in ("p", "q", "r"):
            value = 0.0
            while abs(value) < 0.1:
                value = round(rng.uniform(-2.0, 2.0), 6)
            leaves[name] = value
        names = list(leaves)
        steps: list[str] = []
        count = 0
        for k in range(rng.randint(2, max_ops)):
            op = rng.choice(list(ops))
            a, b = rng.choice(names), rng.choice(names)
            node = f"v{k}"
            if op in ("add", "sub", "mul"):
                symbol = {"add": "+", "sub": "-", "mul": "*"}[op]
                steps.append(f"{node} = {a} {symbol} {b}")
            elif op == "div":  # a / (b*b + 0.5): a divisor safely away from 0
                steps += [f"{node}s = {b} * {b}", f"{node}d = {node}s + 0.5", f"{node} = {a} / {node}d"]
            elif op == "square":
                steps.append(f"{node} = {a} ** 2")
            elif op == "neg":
                steps.append(f"{node} = -{a}")
            else:
                steps.append(f"{node} = {op}({a})")
            names.append(node)
            count = k + 1
        total = f"v{count - 1}"
        for k in range(count - 1):
            steps += [f"w{k} = v{k} * {0.5 + 0.25 * k}", f"s{k} = {total} + w{k}"]
            total = f"s{k}"
        steps += [f"L = {total} * {UPSTREAM}", "backward(L)"]
        program = {"leaves": leaves, "steps": compile_steps(list(leaves), steps), "record": []}
        if _safe(program, want_relu_positive=None) and _log_args_ok(program):
            return program
    raise ValueError("no safe random program found")


def _log_args_ok(program: Program) -> bool:
    values = evaluate(program)
    for _, op, *args in program["steps"]:
        if op == "log" and values[args[0]] < 0.05:
            return False
        if op == "exp" and values[args[0]] > 10:
            return False
    return True
