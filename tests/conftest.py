"""Shared test plumbing: Docker tests must run in CI, never silently skip.

With REQUIRE_DOCKER=1 (set by .ci/run and `make test`), a skipped `docker` test is turned into
a failure, and a session that ran no `docker` test at all fails too.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

REQUIRE_DOCKER = os.environ.get("REQUIRE_DOCKER") == "1"
_docker_ran = 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    global _docker_ran
    outcome = yield
    report = outcome.get_result()
    if item.get_closest_marker("docker") is None:
        return
    if report.when == "call" and report.passed:
        _docker_ran += 1
    if REQUIRE_DOCKER and report.skipped and not hasattr(report, "wasxfail"):  # a strict xfail is not a skip
        report.outcome = "failed"
        report.longrepr = f"Docker test skipped but REQUIRE_DOCKER=1: {report.longrepr}"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"docker tests passed: {_docker_ran}")
    selected_docker = any(item.get_closest_marker("docker") for item in session.items)
    if REQUIRE_DOCKER and selected_docker and _docker_ran == 0 and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
