"""A run of the student's checks that ran out of something is never a catch."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from grader.judge import bug_injection
from grader.judge.records import ScriptRun
from sandbox.harness import wire


def context(exception: str) -> SimpleNamespace:
    clean = ScriptRun(outcome=wire.FAILED, exception=exception, stop=f"{exception}@147")
    report = SimpleNamespace(script=lambda name: clean if name == wire.CLEAN else None)
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
