"""Shrinking a failing program: exact math for any program, and a search that finds a small
program showing the same bug, deterministically and within its budget."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from grader.plan import _random_dag
from grader.program import central_differences, compile_steps, evaluate
from sandbox.harness.shrinking import shrink

OPS = ("add", "sub", "mul", "div", "square", "neg", "tanh", "relu", "exp", "log")


def _program(leaves: dict[str, float], steps: list[str]) -> dict[str, Any]:
    return {"leaves": leaves, "steps": compile_steps(list(leaves), steps), "record": []}


def test_exact_counts_every_path_of_a_reused_node() -> None:
    program = _program({"x": 3.0}, ["s = x * x", "y = s + x", "backward(y)"])
    values = shrink.exact(program)
    assert values["y.data"] == 12.0 and values["x.grad"] == 7.0  # 2x + 1
    assert values["s.grad"] == 1.0 and values["y.grad"] == 1.0


@pytest.mark.parametrize("seed", range(25))
def test_exact_agrees_with_float_math_and_finite_differences(seed: int) -> None:
    program = _random_dag(random.Random(seed), 5, OPS)
    values, exact = evaluate(program), shrink.exact(program)
    assert all(math.isclose(exact[f"{n}.data"], v, rel_tol=1e-12, abs_tol=1e-12) for n, v in values.items())
    for leaf, numeric in central_differences(program).items():
        assert math.isclose(exact[f"{leaf}.grad"], numeric, rel_tol=1e-5, abs_tol=1e-6), leaf


def test_programs_outside_a_domain_are_refused() -> None:
    with pytest.raises(shrink.OutsideDomain):
        shrink.exact(_program({"x": -1.0}, ["y = log(x)", "backward(y)"]))
    with pytest.raises(shrink.OutsideDomain):
        shrink.exact(_program({"x": 0.0, "y": 1.0}, ["z = y / x", "backward(z)"]))


def _overwriting(program: dict[str, Any]) -> dict[str, float]:
    """An engine whose backward assigns instead of adding: a reused node keeps one path only."""
    values = {k: v for k, v in shrink.exact(program).items() if k.endswith(".data")}
    grads = {k.removesuffix(".data"): 0.0 for k in values}
    grads[shrink.root(program)] = 1.0
    for target, op, *args in reversed([s for s in program["steps"] if s[1] not in shrink.PASSIVE]):
        operands = [values[f"{a}.data"] if isinstance(a, str) else float(a) for a in args] + [0.0]
        local = shrink._local(op, operands[0], operands[1], values[f"{target}.data"])
        for arg, d in zip(args, local, strict=False):
            if isinstance(arg, str):
                grads[arg] = d * grads[target]
    return {f"{n}.grad": g for n, g in grads.items()}


def _wrong(program: dict[str, Any]) -> bool:
    want, got = shrink.exact(program), _overwriting(program)
    return any(not math.isclose(want[k], v, rel_tol=1e-7, abs_tol=1e-9) for k, v in got.items())


def test_a_reuse_bug_shrinks_to_a_program_of_a_few_operations() -> None:
    shown = 0
    for seed in range(20):
        program = _random_dag(random.Random(seed), 6, ("add", "sub", "mul", "neg", "tanh"))
        if not _wrong(program):
            continue  # this random program happens not to reuse a node where it shows
        shown += 1
        small, rounds = shrink.shrink(program, shrink.one_by_one(_wrong))
        assert _wrong(small) and rounds <= 20
        assert shrink.operations(small) <= 2, (seed, small)  # x + x or x * x is enough to show it
        assert shrink.operations(small) < shrink.operations(program)
        assert all(v in shrink.SIMPLE for v in small["leaves"].values())
    assert shown >= 15  # most random programs show it: the loop above is not vacuous


def test_shrinking_is_deterministic_and_keeps_to_its_budget() -> None:
    program = _random_dag(random.Random(3), 6, ("add", "sub", "mul"))
    assert shrink.shrink(program, shrink.one_by_one(_wrong)) == shrink.shrink(program, shrink.one_by_one(_wrong))
    batches: list[int] = []

    def counting(batch: list[dict[str, Any]]) -> int | None:
        batches.append(len(batch))
        return shrink.one_by_one(_wrong)(batch)

    _, rounds = shrink.shrink(program, counting, rounds=2, batch=5)
    assert rounds == len(batches) <= 2 and max(batches) <= 5


def test_a_program_no_smaller_one_of_which_fails_is_kept() -> None:
    program = _program({"x": 1.0}, ["y = x * x", "backward(y)"])
    assert _wrong(program)
    small, _ = shrink.shrink(program, shrink.one_by_one(_wrong))
    assert small == program


def test_every_candidate_tried_is_inside_the_domains() -> None:
    program = _program({"x": 0.7, "y": 1.3}, ["a = x * y", "b = log(a)", "c = b + a", "backward(c)"])
    seen: list[dict[str, Any]] = []

    def record(candidate: dict[str, Any]) -> bool:
        seen.append(candidate)
        return False

    shrink.shrink(program, shrink.one_by_one(record))
    assert seen and all(shrink._valid(c) for c in seen)
