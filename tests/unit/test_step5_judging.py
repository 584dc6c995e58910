"""Step 5 judged on the grader's engines: a chaff counts only when every wheat passes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from grader.engines import wheats
from grader.judge import bug_injection
from grader.judge.records import MutantRecord, ScriptRun
from grader.mutate import CATALOGUE, STEP5
from sandbox.harness import wire

WHEATS = tuple(w.id for w in wheats())
BUGS = tuple(op.id for op in CATALOGUE)
PASS = ScriptRun(outcome=wire.PASSED)
FAIL = ScriptRun(outcome=wire.FAILED, stop="autograd_lab.py:150,161")


def context(runs: dict[str, ScriptRun], mutant: str = STEP5) -> SimpleNamespace:
    report = SimpleNamespace(mutants={k: MutantRecord(v) for k, v in runs.items()}, script=runs.get, end=None)
    probe = SimpleNamespace(wheats=WHEATS, mutants=(*WHEATS, *BUGS))
    return SimpleNamespace(report=report, probe=probe, check=SimpleNamespace(mutant=mutant), load=None)


def with_wheats(wheat: ScriptRun = PASS, **chaffs: ScriptRun) -> dict[str, ScriptRun]:
    return {**{w: wheat for w in WHEATS}, **chaffs}


def test_a_chaff_the_checks_fail_on_is_caught_when_every_wheat_passes() -> None:
    ctx = context(with_wheats(acc_mul=FAIL))
    assert bug_injection.checks_pass(ctx, 0).ok  # type: ignore[arg-type]
    assert bug_injection.mutant_killed(ctx, 0).ok  # type: ignore[arg-type]


@pytest.mark.parametrize("wheat", [FAIL, ScriptRun(outcome=wire.TIMEOUT, limit=3.0), ScriptRun(outcome=wire.NOT_RUN)])
def test_no_chaff_counts_when_a_wheat_does_not_pass(wheat: ScriptRun) -> None:
    # Checks that always fail (a raise picked by a hash, a comparison with the file as written)
    # fail on a correct engine too: nothing they "catch" counts.
    runs = with_wheats(**{op: FAIL for op in BUGS})
    runs[WHEATS[-1]] = wheat
    ctx = context(runs)
    assert not bug_injection.checks_pass(ctx, 0).ok  # type: ignore[arg-type]
    assert not bug_injection.mutant_killed(ctx, 0).ok  # type: ignore[arg-type]
    verdicts, _ = bug_injection.score(ctx)  # type: ignore[arg-type]
    assert not any(v.ok for v in verdicts)


def test_a_constructor_the_handout_lacks_is_said() -> None:
    runs = with_wheats()
    runs[WHEATS[0]] = FAIL
    ctx = context(runs)
    ctx.load = SimpleNamespace(extra_args=("label",))
    assert "(label)" in bug_injection.checks_pass(ctx, 0).problem  # type: ignore[arg-type]


def test_a_failing_wheat_is_named_with_the_students_lines_and_no_text_of_the_run() -> None:
    runs = with_wheats()
    runs[WHEATS[1]] = ScriptRun(outcome=wire.FAILED, stop="autograd_lab.py:150,161", message="secret", exception="E")
    verdict = bug_injection.checks_pass(context(runs), 0)  # type: ignore[arg-type]
    title = wheats()[1].title.rstrip(".")
    assert title[1:] in verdict.problem and "your line 150, 161" in verdict.problem
    assert "secret" not in verdict.problem and "secret" not in str(verdict.comparisons)


@pytest.mark.parametrize("stop", [wire.OUTPUT_LIMIT_STOP, wire.PROCESS_LIMIT_STOP])
def test_a_run_the_sandbox_stopped_is_never_a_catch(stop: str) -> None:
    stopped = ScriptRun(outcome=wire.FAILED, exception=stop, message="limit")
    assert not bug_injection.mutant_killed(context(with_wheats(acc_mul=stopped)), 0).ok  # type: ignore[arg-type]


def test_a_timeout_is_not_a_catch() -> None:
    hung = ScriptRun(outcome=wire.TIMEOUT, limit=4.0)
    verdict = bug_injection.mutant_killed(context(with_wheats(acc_mul=hung)), 0)  # type: ignore[arg-type]
    assert not verdict.ok and verdict.kind == "timeout"


def test_the_share_is_out_of_every_catalogue_chaff_tried_or_not() -> None:
    # Half caught, a quarter not tried (the budget): those count as not caught.
    runs = with_wheats()
    for i, op in enumerate(BUGS):
        runs[op] = FAIL if i % 2 == 0 else PASS if i % 4 == 1 else ScriptRun(outcome=wire.NOT_RUN, message="budget")
    verdicts, notes = bug_injection.score(context(runs))  # type: ignore[arg-type]
    assert len(verdicts) == len(BUGS)
    assert sum(v.ok for v in verdicts) == (len(BUGS) + 1) // 2
    assert any("not tried" in n for n in notes)
