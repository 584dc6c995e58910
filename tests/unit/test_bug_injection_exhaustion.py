"""A run of the student's checks that ran out of something is never a catch."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from grader.judge import bug_injection, verdicts
from grader.judge.records import MutantRecord, ScriptRun
from grader.judge.verdicts import ENGINE_COMPARES
from grader.mutate import CATALOGUE
from grader.results import CheckResult, Outcome
from grader.rubric import load_rubric
from sandbox.harness import wire


def context(exception: str, gate: str = wire.PASSED) -> SimpleNamespace:
    clean = ScriptRun(outcome=wire.FAILED, exception=exception, stop=f"{exception}@147")
    runs = {wire.CLEAN: clean, wire.REFERENCE: ScriptRun(outcome=gate)}
    report = SimpleNamespace(script=runs.get)
    return SimpleNamespace(report=report, engine_faults=[SimpleNamespace(title="fd.add", wrong_values=True)])


@pytest.mark.parametrize(
    "exception", ["BlockingIOError", "MemoryError", "RecursionError", wire.PROCESS_LIMIT_STOP, wire.OUTPUT_LIMIT_STOP]
)
def test_checks_stopped_by_a_limit_never_switch_to_catching(exception: str) -> None:
    # A fork bomb in backward(): fork() fails with EAGAIN at the pids limit, and its processes'
    # tracebacks arrive in any order; counting "stops elsewhere" as catches scored it by chance.
    assert bug_injection.catching(context(exception)) is False  # type: ignore[arg-type]


def test_checks_that_fail_on_a_wrong_engine_do_catch() -> None:
    assert bug_injection.catching(context("AssertionError")) is True  # type: ignore[arg-type]


@pytest.mark.parametrize("gate", [wire.FAILED, wire.TIMEOUT, wire.NOT_RUN, wire.NOT_APPLICABLE, wire.CRASHED])
def test_checks_that_do_not_pass_on_a_correct_engine_never_catch(gate: str) -> None:
    # Checks that always raise (at a line drawn from a hash of the values) stop "somewhere else"
    # on every mutant; with the grader's correct class in their place they fail too.
    assert bug_injection.catching(context("AssertionError", gate)) is False  # type: ignore[arg-type]
    verdict = bug_injection.checks_pass(context("AssertionError", gate), 0)  # type: ignore[arg-type]
    assert not verdict.ok and "correct class" in verdict.problem


def _result(check_id: str, outcome: Outcome) -> CheckResult:
    rubric = load_rubric()
    check = rubric.check(check_id)
    return CheckResult(check_id, check.title, "", check.visibility, 0.0, check.points, outcome, "", "", "")


def test_a_fault_only_a_zero_point_check_sees_never_opens_catching_mode() -> None:
    """A file can be wrong on purpose where nothing is at stake (a hidden twin that only vouches),
    to have its checks' failures counted as catches: only checks worth points open the mode."""
    rubric = load_rubric()
    zero = next(c for c in rubric.checks if c.points == 0 and c.compare in ENGINE_COMPARES)
    paid = next(c for c in rubric.checks if c.points > 0 and c.compare in ENGINE_COMPARES)
    assert verdicts._engine_faults(rubric, {zero.id: _result(zero.id, Outcome.FAILED)}) == ()
    faults = verdicts._engine_faults(rubric, {paid.id: _result(paid.id, Outcome.FAILED)})
    assert [f.title for f in faults] == [paid.title]


def _scored(mutants: dict[str, ScriptRun], charged: frozenset[str] = frozenset()) -> tuple[int, int]:
    clean = ScriptRun(outcome=wire.PASSED)
    report = SimpleNamespace(
        mutants={k: MutantRecord(v) for k, v in mutants.items()}, script=lambda n: clean if n == wire.CLEAN else None
    )
    verdicts_, _ = bug_injection.score(SimpleNamespace(report=report, engine_faults=(), charged_features=charged))  # type: ignore[arg-type]
    return sum(v.ok for v in verdicts_), len(verdicts_)


def test_bugs_with_no_target_never_raise_the_share_caught() -> None:
    """The same checks, on a file where every bug applies and on one written so that half of them
    have no target: the second never scores more."""
    ids = [op.id for op in CATALOGUE[:4]]
    caught, missed = ScriptRun(outcome=wire.FAILED, stop="autograd_lab.py:9"), ScriptRun(outcome=wire.PASSED)
    absent = ScriptRun(outcome=wire.NOT_APPLICABLE, reason="written differently")
    every = _scored({ids[0]: caught, ids[1]: missed, ids[2]: caught, ids[3]: missed})
    fewer = _scored({ids[0]: caught, ids[1]: absent, ids[2]: caught, ids[3]: absent})
    assert every == fewer == (2, 4)


def test_an_edit_into_a_missing_operation_that_is_charged_elsewhere_is_not_counted() -> None:
    """No __sub__: api.arithmetic and fd.sub charge it, so the bug that would edit it is out of
    the count; while nothing charges it, it counts as not caught."""
    caught = ScriptRun(outcome=wire.FAILED, stop="autograd_lab.py:9")
    absent = ScriptRun(outcome=wire.NOT_APPLICABLE, reason="no __sub__")
    runs = {"acc_add": caught, "fwd_sub": absent}
    assert _scored(runs) == (1, 2)
    assert _scored(runs, frozenset({"sub"})) == (1, 1)
    assert _scored(runs, frozenset({"neg"})) == (1, 2)  # another feature excuses nothing here
