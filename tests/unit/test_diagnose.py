"""Misconception diagnosis and the kill matrix, on the host, without a sandbox.

Engines are built in-process from the reference's source (trusted test code), observed with
the same executors the sandbox uses, judged, and diagnosed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from grader.judge.diagnose import diagnose, differing, kill_matrix, observe, reference_mutants
from grader.judge.expected import REFERENCE, compute_expected
from grader.judge.verdicts import judge
from grader.mutate import CATALOGUE, INFO, mutate_source
from grader.plan import Plan, build_plan
from grader.results import Diagnosis
from grader.rubric import Rubric, load_rubric

SOURCE = REFERENCE.read_text(encoding="utf-8")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rubric() -> Rubric:
    return load_rubric()


@pytest.fixture(scope="module")
def plan(rubric: Rubric) -> Plan:
    return build_plan(rubric, seed=11, visible_only=False)


def engine(source: str) -> type:
    module = types.ModuleType("engine_under_test")
    exec(compile(source, "engine_under_test.py", "exec"), module.__dict__)
    cls = module.__dict__["Value"]
    assert isinstance(cls, type)
    return cls


def diagnosed(source: str, rubric: Rubric, plan: Plan) -> tuple[Diagnosis, ...]:
    graded = Plan(plan.seed, plan.probes, tuple(c for c in plan.checks if c.section != "bug_injection"))
    expected = compute_expected(graded, class_name="Value")
    report = observe(engine(source), graded, numbered=True)  # hashes as in the sandbox: set order is fixed
    return diagnose(rubric, graded, expected, report, judge(rubric, graded, expected, report))


def test_a_correct_engine_has_nothing_to_diagnose(rubric: Rubric, plan: Plan) -> None:
    assert diagnosed(SOURCE, rubric, plan) == ()


@pytest.mark.parametrize("operator", [op.id for op in CATALOGUE])
def test_each_catalogue_bug_is_recognised(operator: str, rubric: Rubric, plan: Plan) -> None:
    mutated, _ = mutate_source(SOURCE, operator, "Value")
    found = diagnosed(mutated, rubric, plan)
    assert found and found[0].operator == operator
    assert found[0].misconception == INFO[operator].misconception and found[0].handout == INFO[operator].handout
    assert found[0].checks  # it explains at least one failing check


def test_the_step5_bug_written_differently_is_still_recognised(rubric: Rubric, plan: Plan) -> None:
    # Upstream first and the operands' order swapped: a different text, the same misconception.
    source = SOURCE.replace(
        "            self.grad += other.data * out.grad\n            other.grad += self.data * out.grad\n",
        "            other.grad = out.grad * self.data\n            self.grad = out.grad * other.data\n",
    )
    assert source != SOURCE
    found = diagnosed(source, rubric, plan)
    assert [d.operator for d in found][:1] == ["acc_mul"]
    assert "x.grad is" in found[0].evidence or found[0].evidence.startswith("seen in hidden")


def test_two_bugs_give_two_diagnoses(rubric: Rubric, plan: Plan) -> None:
    tanh, _ = mutate_source(SOURCE, "loc_tanh_linear", "Value")
    both, _ = mutate_source(tanh, "fwd_rmul", "Value")
    assert {d.operator for d in diagnosed(both, rubric, plan)} >= {"loc_tanh_linear", "fwd_rmul"}


def test_an_unknown_bug_is_described_node_by_node(rubric: Rubric, plan: Plan) -> None:
    # exp computed as 2**x: not in the catalogue.
    source = SOURCE.replace(
        'out = Value(math.exp(self.data), (self,), "exp")', 'out = Value(2.0 ** self.data, (self,), "exp")'
    )
    assert source != SOURCE
    found = diagnosed(source, rubric, plan)
    assert len(found) == 1 and found[0].operator == ""
    assert found[0].misconception.startswith("No single known bug explains these differences.")
    assert "expected" in found[0].misconception and "observed" in found[0].misconception


def test_fingerprints_are_cached_per_rubric_and_plan(rubric: Rubric, plan: Plan) -> None:
    assert reference_mutants(rubric, plan) is reference_mutants(rubric, plan)
    other = build_plan(rubric, seed=12, visible_only=False)
    assert reference_mutants(rubric, other) is not reference_mutants(rubric, plan)


def test_differing_ignores_orders_and_labels(rubric: Rubric, plan: Plan) -> None:
    # Building parents in the other order changes the backward schedule, not a single number.
    source = SOURCE.replace("self._prev = set(_children)", "self._prev = list(reversed(list(_children)))")
    assert source != SOURCE
    expected = compute_expected(plan, class_name="Value")
    assert differing(expected, plan, observe(engine(source), plan)) == {}


def test_kill_matrix_predicts_sections_and_has_no_blind_spot(rubric: Rubric, plan: Plan) -> None:
    matrix = kill_matrix(rubric, plan)
    assert len(matrix.rows) == len(CATALOGUE) and not matrix.not_applicable and not matrix.blind_spots
    # The sections an engine with the bug loses points in; bug injection never (it judges the
    # student's checks on the grader's engines), though the matrix shows the reference's own
    # checks catching every chaff.
    assert matrix.predicted("topo_no_visited") == ("reuse",)
    assert matrix.predicted("acc_mul") == ("reuse",)  # charged once, where accumulation is measured
    assert all(kills[matrix.sections.index("bug_injection")] for _, _, kills in matrix.rows)
    assert "finite_difference" in matrix.predicted("loc_tanh_linear")
    assert matrix.sections == tuple(s.tag for s in rubric.sections)
    text = matrix.render()
    assert text.splitlines()[0].split() == list(matrix.sections)


FINGERPRINTS = textwrap.dedent(
    """
    import hashlib, sys
    junk = [bytearray(int(sys.argv[1]) * 16 + n) for n in range(300)]  # shift later addresses
    from grader.judge.diagnose import reference_mutants
    from grader.plan import build_plan
    from grader.rubric import load_rubric
    rubric = load_rubric()
    for run in reference_mutants(rubric, build_plan(rubric, seed=rubric.seed, visible_only=False)):
        if run.operator in ("acc_add", "acc_mul", "topo_no_visited"):
            print(run.operator, hashlib.sha256(repr(sorted(run.fingerprint.items())).encode()).hexdigest())
    """
)


def test_order_dependent_fingerprints_do_not_depend_on_memory_addresses() -> None:
    # With = for +=, or no visited set, which numbers come out wrong follows the order a set of
    # nodes iterates in; the host numbers hashes as the sandbox does, so the fingerprint a
    # submission is matched against is the same in every grading (before: 5 layouts, 5 prints).
    runs = {
        subprocess.run(
            [sys.executable, "-c", FINGERPRINTS, str(shift)], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout
        for shift in (0, 1, 7, 33)
    }
    assert len(runs) == 1, runs
    assert len(runs.pop().split()) == 6
