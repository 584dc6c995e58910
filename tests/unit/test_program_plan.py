"""The step language, trusted float math, and the probe plan built from rubric + seed."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import pytest

from grader.mutate import CATALOGUE
from grader.plan import UPSTREAM, _rng, build_plan
from grader.program import (
    central_differences,
    compile_steps,
    consumers,
    describe,
    evaluate,
    math_expectation,
    relu_inputs,
    root_of,
)
from grader.results import Visibility
from grader.rubric import DAG_OPS, Leaf, Probe, Section, load_rubric

NONCE = "0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def rubric():
    return load_rubric()


def program(leaves: dict[str, float], steps: list[str]) -> dict[str, Any]:
    return {"leaves": leaves, "steps": compile_steps(list(leaves), steps), "record": []}


def keys_of(value: Any) -> list[str]:
    """Every mapping key anywhere in a JSON value."""
    if isinstance(value, dict):
        return [k for k, v in value.items() for k in (k, *keys_of(v))]
    if isinstance(value, list):
        return [k for item in value for k in keys_of(item)]
    return []


# --- compile_steps ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "step"),
    [
        ("n1 = a * b", ["n1", "mul", "a", "b"]),
        ("n2 = a + 1", ["n2", "add", "a", 1.0]),
        ("n3 = 0.7 - a", ["n3", "sub", 0.7, "a"]),
        ("n4 = a / b", ["n4", "div", "a", "b"]),
        ("n5 = a ** -2.5", ["n5", "pow", "a", -2.5]),
        ("n6 = -a", ["n6", "neg", "a"]),
        ("n7 = relu(a)", ["n7", "relu", "a"]),
        ("n8 = tanh(b)", ["n8", "tanh", "b"]),
        ("n9 = exp(a)", ["n9", "exp", "a"]),
        ("n10 = log(b)", ["n10", "log", "b"]),
        ("w = sgd(a, 0.1)", ["w", "sgd", "a", 0.1]),
        ("  backward(a)  ", ["", "backward", "a"]),
    ],
)
def test_compile_valid_steps(text: str, step: list[Any]) -> None:
    assert compile_steps(["a", "b"], [text]) == [step]


def test_compile_chains_names_and_keeps_order() -> None:
    steps = compile_steps(
        ["a", "b", "c", "d"], ["n1 = a * b", "n2 = n1 + c", "n3 = relu(d)", "L = n2 * n3", "backward(L)"]
    )
    assert [s[0] for s in steps] == ["n1", "n2", "n3", "L", ""]
    assert steps[3] == ["L", "mul", "n2", "n3"]
    # Numbers in the steps are floats, so the plan JSON never mixes 1 and 1.0.
    assert all(type(a) is float for s in compile_steps(["a"], ["x = a * 2"]) for a in s[2:] if not isinstance(a, str))


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (["n = a * zz"], "'zz' is used before it is defined"),
        (["n = a * b", "n = a + b"], "'n' is already defined"),
        (["a = b * 2"], "'a' is already defined"),
        (["n = a ** b"], "the exponent must be a number"),
        (["n = 2 * 3"], "at least one operand must be a node"),
        (["n = sin(a)"], "unsupported operation"),
        (["n = a.data"], "unsupported operation"),
        (["n = a * (b + 1)"], "one operation per step"),
        (["a * b"], "must look like"),
        (["n, m = a, b"], "must look like"),
        (["n = a * b; m = a + b"], "one step per line"),
        (["n = = a"], "is not a step"),
        (["n = a * 'b'"], "operands are node names or numbers"),
        (["n = a * True"], "operands are node names or numbers"),
    ],
)
def test_compile_invalid_steps(steps: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compile_steps(["a", "b"], steps)


def test_unary_call_without_argument_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        compile_steps(["a"], ["n = relu()"])


def test_unary_call_with_two_arguments_is_rejected() -> None:
    with pytest.raises(ValueError):
        compile_steps(["a", "b"], ["n = relu(a, b)"])


def test_backward_of_a_number_is_rejected() -> None:
    with pytest.raises(ValueError):
        compile_steps(["a"], ["n = a * 2", "backward(3)"])


def test_describe_reads_like_student_code() -> None:
    text = describe(
        program({"a": 2.0, "b": 3.0}, ["n = a * b", "r = relu(n)", "m = -r", "backward(m)", "w = sgd(a, 0.1)"])
    )
    assert text.splitlines() == [
        "a = Value(2.0)",
        "b = Value(3.0)",
        "n = a * b",
        "r = n.relu()",
        "m = -r",
        "m.backward()",
        "w = Value(a.data - 0.1 * a.grad)",
    ]


def test_consumers_and_root() -> None:
    p = program({"x": 3.0}, ["m = x * x", "y = m + x", "backward(y)"])
    assert consumers(p) == {"x": {"m", "y"}, "m": {"y"}, "y": set()}
    assert root_of(p) == "y"
    with pytest.raises(ValueError, match="exactly one backward"):
        root_of(program({"x": 3.0}, ["m = x * x"]))
    with pytest.raises(ValueError, match="exactly one backward"):
        root_of(program({"x": 3.0}, ["m = x * x", "backward(m)", "backward(x)"]))


# --- float math ---------------------------------------------------------------------------


def test_evaluate_part1_by_hand() -> None:
    p = program(
        {"a": 2.0, "b": 3.0, "c": 1.0, "d": 1.5},
        ["n1 = a * b", "n2 = n1 + c", "n3 = relu(d)", "L = n2 * n3", "backward(L)"],
    )
    values = evaluate(p)
    assert (values["n1"], values["n2"], values["n3"], values["L"]) == (6.0, 7.0, 1.5, 10.5)
    assert evaluate(p, {"a": 1.0, "b": 1.0, "c": 1.0, "d": -2.0})["L"] == 0.0
    grads = central_differences(p)
    for name, want in {"a": 4.5, "b": 3.0, "c": 1.5, "d": 7.0}.items():
        assert math.isclose(grads[name], want, rel_tol=1e-8), (name, grads[name])
    expectation = math_expectation(p)
    assert expectation["L.data"] == 10.5
    assert set(expectation) == {f"{n}.data" for n in ("a", "b", "c", "d", "n1", "n2", "n3", "L")} | {
        f"{n}.grad" for n in ("a", "b", "c", "d")
    }


X, Y = 0.83, -1.37

# (steps over leaves x and y, d/dx, d/dy) for the derivative check.
ANALYTIC = [
    (["o = x * y"], Y, X),
    (["o = x / y"], 1 / Y, -X / Y**2),
    (["o = x - y"], 1.0, -1.0),
    (["o = x ** 3"], 3 * X**2, 0.0),
    (["o = x ** -2.5"], -2.5 * X**-3.5, 0.0),
    (["o = tanh(x)"], 1 - math.tanh(X) ** 2, 0.0),
    (["o = exp(y)"], 0.0, math.exp(Y)),
    (["o = log(x)"], 1 / X, 0.0),
    (["o = relu(y)"], 0.0, 0.0),
    (["o = relu(x)"], 1.0, 0.0),
    (["s = x * y", "o = s * x"], 2 * X * Y, X**2),
    (["t = tanh(y)", "o = x * t"], math.tanh(Y), X * (1 - math.tanh(Y) ** 2)),
]


@pytest.mark.parametrize(("steps", "dx", "dy"), ANALYTIC, ids=[" ; ".join(s) for s, _, _ in ANALYTIC])
def test_central_differences_match_analytic_derivatives(steps: list[str], dx: float, dy: float) -> None:
    # A non-unit upstream, as the plan uses: L = 1.7 * o.
    p = program({"x": X, "y": Y}, [*steps, "L = o * 1.7", "backward(L)"])
    grads = central_differences(p)
    assert math.isclose(grads["x"], 1.7 * dx, rel_tol=1e-8, abs_tol=1e-12), grads
    assert math.isclose(grads["y"], 1.7 * dy, rel_tol=1e-8, abs_tol=1e-12), grads


@pytest.mark.parametrize(
    ("leaves", "steps"),
    [
        ({"x": -1.0}, ["o = log(x)"]),
        ({"x": 800.0}, ["o = exp(x)"]),
        ({"x": 1e300}, ["o = x * x"]),
    ],
)
def test_evaluate_refuses_values_outside_the_domain(leaves: dict[str, float], steps: list[str]) -> None:
    with pytest.raises((ValueError, OverflowError)):
        evaluate(program(leaves, steps))


def test_evaluate_refuses_sgd() -> None:
    with pytest.raises(ValueError, match="sgd"):
        evaluate(program({"w": 1.0}, ["v = sgd(w, 0.1)"]))


def test_evaluate_refuses_complex_powers_with_value_error() -> None:
    with pytest.raises(ValueError):
        evaluate(program({"x": -2.0}, ["o = x ** 0.5"]))


def test_build_plan_redraws_when_a_fractional_power_sees_a_negative_base(rubric) -> None:
    leaf = Leaf("x", None, ((-2.0, -0.5), (0.5, 2.0)))
    probe = Probe(id="root", kind="program", leaves=(leaf,), steps=("o = x ** 0.5", "backward(o)"), instances=4)
    custom = _with_probe(rubric, probe)
    for seed in range(12):
        plan = build_plan(custom, seed=seed, visible_only=False)
        assert all(p["leaves"]["x"] > 0 for p in plan.probe("root").programs)


def _with_probe(rubric, probe: Probe):
    """The shipped rubric with one extra hidden check on ``probe`` (checks copied from part1.random)."""
    check = dataclasses.replace(rubric.check("part1.random"), id=f"extra.{probe.id}", probe=probe.id, points=0.0)
    section = Section(tag="extra", title="extra", checks=(check,))
    return dataclasses.replace(rubric, probes={**rubric.probes, probe.id: probe}, sections=(*rubric.sections, section))


# --- the plan -----------------------------------------------------------------------------


def test_plan_is_deterministic_for_a_seed(rubric) -> None:
    first = build_plan(rubric, seed=1234, visible_only=False).to_bytes(rubric, nonce=NONCE, isolate=True)
    second = build_plan(rubric, seed=1234, visible_only=False).to_bytes(rubric, nonce=NONCE, isolate=True)
    assert first == second
    other_nonce = build_plan(rubric, seed=1234, visible_only=False).to_bytes(rubric, nonce="f" * 32, isolate=True)
    assert other_nonce != first and other_nonce.replace(b"f" * 32, NONCE.encode()) == first


def test_plan_header(rubric) -> None:
    body = json.loads(build_plan(rubric, seed=5, visible_only=False).to_bytes(rubric, nonce=NONCE, isolate=False))
    assert body["nonce"] == NONCE
    assert (body["filename"], body["class_name"]) == ("autograd_lab.py", "Value")
    assert body["limits"] == {
        "probe_seconds": 2.0,
        "script_seconds": 20.0,
        "import_seconds": 20.0,  # a submission's import may take as long as a run of its checks
        "budget_seconds": 900.0,  # charged seconds
        "wall_seconds": 1792.0,  # the host's real-time limit, less the harness's margin to report
        "output_bytes": 16 * 1024,
        "child_memory_mb": 256,
        "shrink_seconds": 3.0,
    }
    assert body["student"] == {}  # the local runner cannot switch users
    # A self-check holds a service slot: its own, smaller allowances.
    own = json.loads(build_plan(rubric, seed=5, visible_only=True).to_bytes(rubric, nonce=NONCE, isolate=False))
    assert {k: own["limits"][k] for k in ("budget_seconds", "import_seconds")} == {
        "budget_seconds": 90.0,
        "import_seconds": 3.0,
    }
    isolated = json.loads(build_plan(rubric, seed=5, visible_only=False).to_bytes(rubric, nonce=NONCE, isolate=True))
    assert isolated["student"] == {"uid": 10002, "gid": 10002, "reap": True}
    assert [part["budget_seconds"] for part in body["parts"]] == [900.0]  # one part: the shipped rubric's
    # Two parts, each with half of the budget (grader/parts.py); the shown probes in the first.
    two = dataclasses.replace(rubric, limits=dataclasses.replace(rubric.limits, parts=2))
    parts = json.loads(build_plan(two, seed=5, visible_only=False).to_bytes(two, nonce=NONCE, isolate=False))["parts"]
    assert [part["budget_seconds"] for part in parts] == [450.0, 450.0]
    probes = [p for part in parts for p in part["probes"]]
    assert [p["id"] for p in parts[0]["probes"]][:3] == ["api", "part1", "neuron"]
    assert {p["kind"] for p in probes} == {"api", "program", "mutation"}
    # In every part, every run a student may see the output of comes before the first hidden
    # input: the shown probes, then its share of bug injection (the student's own checks), then
    # hidden probes, marked.
    for part in parts:
        kinds = [
            ("hidden" if p.get("hidden") else "mutation" if p["kind"] == "mutation" else "shown")
            for p in part["probes"]
        ]
        assert kinds == sorted(kinds, key=["shown", "mutation", "hidden"].index) and kinds.count("mutation") == 1
    assert not any(p["kind"] != "mutation" and not p.get("hidden") for p in parts[1]["probes"])
    shown = {c.probe for c in rubric.checks if c.visibility is Visibility.VISIBLE}
    shown |= {f.probe for c in rubric.checks if c.visibility is Visibility.VISIBLE for f in c.fallbacks}
    ids = [p["id"] for p in probes if p["kind"] != "mutation"]
    assert len(ids) == len(set(ids))  # every probe in one part, once
    assert {p["id"] for p in probes if p.get("hidden")} == set(ids) - shown
    # The mutation probe carries the grader's engines, in shares: each part has wheats of its
    # own (a run cannot tell from where it runs that it runs a buggy engine), then its chaffs;
    # together, every wheat, then the Step-5 and forced-fail chaffs, then the rest of the
    # catalogue. It carries no program: student code on an engine never sees an input.
    shares = [next(p for p in part["probes"] if p["kind"] == "mutation") for part in parts]
    wheats, chaff_ids = [], []
    for share in shares:
        assert (share["id"], share["kind"]) == ("mutation", "mutation")
        share_ids = [e["id"] for e in share["engines"]]
        assert share_ids[: len(share["wheats"])] == share["wheats"] and len(share["wheats"]) >= 2
        wheats += share["wheats"]
        chaff_ids.append(share_ids[len(share["wheats"]) :])
        assert "programs" not in share and "oracle" not in share
    assert len(wheats) == len(set(wheats)) >= 4
    dealt = [chaff for pair in zip(*chaff_ids, strict=False) for chaff in pair]
    assert dealt[:2] == ["acc_mul", "forced_fail"]
    assert sorted(dealt) == sorted(c for share in chaff_ids for c in share)
    assert sorted(dealt[2:]) == sorted(op.id for op in CATALOGUE if op.id != "acc_mul")


def test_the_order_of_the_catalogue_bugs_is_the_keys(rubric) -> None:
    # When a grading's budget cannot hold every run, the first bugs of this order are tried:
    # the same for every grading under one key, and another key draws another order.
    def order(seed: int) -> list[str]:
        probe = build_plan(rubric, seed=seed, visible_only=False).probe("mutation")
        return [m for m in probe.mutants if m not in probe.wheats]

    assert order(2**127 + 5) == order(2**127 + 5)
    assert order(2**127 + 5)[2:] != order(2**127 + 6)[2:]
    assert order(2**127 + 5)[:2] == order(2**127 + 6)[:2] == ["acc_mul", "forced_fail"]


def test_each_instance_has_its_own_keyed_generator(rubric) -> None:
    # HMAC(key, probe and instance): another key, even one bit away, gives unrelated inputs, and
    # two instances of one probe share no generator a student could rebuild from the other.
    key = 2**127 + 12345
    a, b = build_plan(rubric, seed=key, visible_only=False), build_plan(rubric, seed=key ^ 1, visible_only=False)
    for probe in (p for p in a.probes if p.kind == "program" and len(p.programs) > 1):
        assert probe.programs != b.probe(probe.id).programs, probe.id
    assert build_plan(rubric, seed=key, visible_only=False) == a  # and the same key, the same plan
    first, second = _rng(key, "reuse_random", 0), _rng(key, "reuse_random", 1)
    assert [first.random() for _ in range(4)] != [second.random() for _ in range(4)]


def test_hidden_probes_differ_across_seeds_and_fixed_ones_do_not(rubric) -> None:
    a = build_plan(rubric, seed=1, visible_only=False)
    b = build_plan(rubric, seed=2, visible_only=False)
    hidden = {c.probe for c in rubric.checks if c.visibility is not Visibility.VISIBLE}
    assert len(hidden) >= 20
    for probe_id in hidden:
        if a.probe(probe_id).kind == "api":  # the api twin: drawn leaves, no program
            assert a.probe(probe_id).api_inputs != b.probe(probe_id).api_inputs, probe_id
            continue
        assert a.probe(probe_id).programs != b.probe(probe_id).programs, probe_id
        leaves_a = [p["leaves"] for p in a.probe(probe_id).programs]
        leaves_b = [p["leaves"] for p in b.probe(probe_id).programs]
        assert leaves_a != leaves_b, probe_id
    for probe_id in ("part1", "neuron", "neuron_sgd", "reuse_square", "logexp"):
        assert a.probe(probe_id).programs == b.probe(probe_id).programs


def test_visible_only_plan_has_no_hidden_probe(rubric) -> None:
    plan = build_plan(rubric, seed=9, visible_only=True)
    visible = [c for c in rubric.checks if c.visibility is Visibility.VISIBLE]
    assert plan.checks == tuple(visible)
    hidden_only = {c.probe for c in rubric.checks} - {c.probe for c in visible}
    assert {"part1_random", "neuron_random", "diamond", "random_dags", "fd_add", "fd_log"} <= hidden_only
    # A visible check's form without the features other checks measure is shown too.
    derived = {f.probe for c in visible for f in c.fallbacks}
    assert {p.id for p in plan.probes} == {c.probe for c in visible} | derived
    assert not any(plan.probe(p).hidden for p in derived)
    body = plan.to_bytes(rubric, nonce=NONCE, isolate=False)
    sent = {p["id"] for part in json.loads(body)["parts"] for p in part["probes"]}
    assert not sent & hidden_only
    for probe_id in hidden_only:
        assert f'"{probe_id}"'.encode() not in body


@pytest.mark.parametrize("seed", [0, 1, 7, 2024])
@pytest.mark.parametrize("visible_only", [True, False])
def test_plan_carries_no_expected_value(rubric, seed: int, visible_only: bool) -> None:
    plan = build_plan(rubric, seed=seed, visible_only=visible_only)
    body = plan.to_bytes(rubric, nonce=NONCE, isolate=False)
    part1 = plan.probe("part1").programs[0]
    assert part1["leaves"] == {"a": 2.0, "b": 3.0, "c": 1.0, "d": 1.5}  # inputs are sent...
    assert b"10.5" not in body  # ...L.data is not
    assert b"4.5" not in body  # ...nor a.grad
    assert not [k for k in keys_of(json.loads(body)) if "expect" in k.lower()]
    assert b"expect" not in body.lower()


def test_part1_probe_records_graph_and_schedule(rubric) -> None:
    plan = build_plan(rubric, seed=3, visible_only=True)
    (part1,) = plan.probe("part1").programs
    assert part1["record"] == ["graph", "schedule"]
    assert part1["steps"][-1] == ["", "backward", "L"]


def test_part1_random_alternates_relu_sign(rubric) -> None:
    for seed in range(5):
        programs = build_plan(rubric, seed=seed, visible_only=False).probe("part1_random").programs
        signs = [relu_inputs(p, evaluate(p))[0] > 0 for p in programs]
        assert signs == [True, False, True, False]
        for p in programs:
            assert all(abs(v) >= 0.5 for k, v in p["leaves"].items() if k != "d")


def test_random_dags_are_domain_safe(rubric) -> None:
    everything = Probe(id="dags_all", kind="random_dag", instances=30, max_ops=8, ops=DAG_OPS)
    custom = _with_probe(rubric, everything)
    seen_ops: set[str] = set()
    for seed in range(4):
        plan = build_plan(custom, seed=seed, visible_only=False)
        for probe_id in ("random_dags", "dags_all"):
            for p in plan.probe(probe_id).programs:
                values = evaluate(p)  # raises if any node leaves the domain
                assert all(abs(v) <= 1e4 for v in values.values())
                assert all(abs(u) >= 0.05 for u in relu_inputs(p, values))
                for _, op, *args in p["steps"]:
                    seen_ops.add(op)
                    if op == "log":
                        assert values[args[0]] >= 0.05
                assert root_of(p) == "L"
                assert set(p["leaves"]) == {"p", "q", "r"} and all(abs(v) >= 0.1 for v in p["leaves"].values())
                # Every computed node feeds something: the DAG has a single sink, L.
                sinks = [n for n, users in consumers(p).items() if not users and n not in p["leaves"]]
                assert sinks == ["L"]
                last = p["steps"][-2]
                assert (last[0], last[1], last[3]) == ("L", "mul", UPSTREAM)
                grads = central_differences(p)
                assert all(math.isfinite(g) for g in grads.values())
    assert {"relu", "log", "exp", "tanh", "div"} <= seen_ops  # the safety checks above were exercised


def test_shipped_random_dags_use_only_arithmetic(rubric) -> None:
    programs = build_plan(rubric, seed=11, visible_only=False).probe("random_dags").programs
    assert len(programs) == 6
    assert {op for p in programs for _, op, *_ in p["steps"]} <= {"add", "sub", "mul", "neg", "backward"}


def _fd_probe_ids(rubric) -> list[str]:
    return [name for name, probe in rubric.probes.items() if probe.kind == "fd_op" and probe.core_of is None]


def test_fd_programs_use_a_scaled_upstream_and_an_accumulation_harness(rubric) -> None:
    plan = build_plan(rubric, seed=42, visible_only=False)
    ids = _fd_probe_ids(rubric)
    assert len(ids) == 17
    for probe_id in ids:
        probe = rubric.probes[probe_id]
        programs = plan.probe(probe_id).programs
        assert len(programs) == 2 * probe.instances, probe_id
        for scaled, accumulated in zip(programs[0::2], programs[1::2], strict=True):
            assert scaled["leaves"] == accumulated["leaves"]
            assert scaled["steps"][0] == accumulated["steps"][0]
            assert scaled["steps"][0][0] == "o"
            # Non-unit upstream: the root is o multiplied by 1.7.
            assert scaled["steps"][1:] == [["L", "mul", "o", 1.7], ["", "backward", "L"]]
            # Accumulation: every leaf feeds the op AND a later product, so its gradient sums two paths.
            users = consumers(accumulated)
            for leaf in accumulated["leaves"]:
                assert len(users[leaf]) == 2, (probe_id, leaf, users)
            assert accumulated["steps"][-1] == ["", "backward", "L"]
            for p in (scaled, accumulated):
                evaluate(p)
                assert not [s for s in p["steps"] if s[1] == "mul" and 1.0 in s[2:]]


def test_fd_points_avoid_the_places_bugs_hide(rubric) -> None:
    """Strata keep points away from 0 and +-1, divisors away from 0, log/fractional powers positive."""
    smooth_or_kinked = {"tanh", "exp", "relu"}  # their strata may touch +-1, never 0
    for seed in range(3):
        plan = build_plan(rubric, seed=seed, visible_only=False)
        for probe_id in _fd_probe_ids(rubric):
            probe = rubric.probes[probe_id]
            for p in plan.probe(probe_id).programs:
                x = p["leaves"]["x"]
                assert abs(x) >= 0.1, (probe_id, x)
                if probe.op not in smooth_or_kinked:
                    assert abs(x) >= 0.2 and abs(abs(x) - 1) >= 0.2, (probe_id, x)
                if "y" in p["leaves"]:
                    assert abs(x - p["leaves"]["y"]) >= 0.05
                if probe.op == "div":
                    assert abs(p["leaves"]["y"]) >= 0.5
                if probe.op == "rdiv":
                    assert abs(x) >= 0.5
                if probe.op == "log" or (
                    probe.op == "pow"
                    and probe.exponent is not None
                    and (probe.exponent < 0 or probe.exponent != int(probe.exponent))
                ):
                    assert x > 0, (probe_id, x)


def test_binary_fd_probes_cover_both_signs_of_each_operand(rubric) -> None:
    plan = build_plan(rubric, seed=0, visible_only=False)
    for probe_id in ("fd_add", "fd_sub", "fd_mul", "fd_div"):
        programs = plan.probe(probe_id).programs
        for leaf in ("x", "y"):
            signs = {p["leaves"][leaf] > 0 for p in programs}
            assert signs == {True, False}, (probe_id, leaf)
