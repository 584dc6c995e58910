"""Shared test plumbing: the suites on every core, and Docker tests that never silently skip.

`make test` runs the suite on pytest-xdist workers (one per CPU). Tests are handed out by
file, so a module's fixtures (a class graded once, a live server) are built on one worker
only; a folder whose tests share one session fixture (the browser pages, graded once) goes to
one worker whole. Each worker is its own process: its own database cluster, Docker owner
label (host:pid) and free ports.

With REQUIRE_DOCKER=1 (set by `make test`), a skipped `docker` test is turned into a failure,
and a run that selected `docker` tests and passed none of them fails too. The counts are kept
where every report arrives (the xdist controller, or the one process without xdist).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from run_counts import is_worker, mark_needs, needs

REQUIRE_DOCKER = os.environ.get("REQUIRE_DOCKER") == "1"
# Folders graded once per session and shared by all their files: scheduled as one unit.
WHOLE_FOLDERS = ("browser",)
# The longest units, longest first (measured: `make test` and `make test-slow` print their
# slowest tests): started before everything else, so that no worker is left with one of them
# while the other idles at the end. Units not named here follow in collection order.
LONGEST_FIRST = (
    "tests/integration/test_adversarial.py",
    "tests/integration/test_cases.py",
    "tests/integration/test_batch.py",
    "tests/integration/test_shrunk_catalogue.py",
    "tests/service/test_faults.py",
    "tests/service/test_fair_rush.py",
    "tests/integration/test_busy_machine.py",
    "tests/integration/test_warm_pool.py",
    "tests/integration/test_sample_class.py",
    "tests/browser",
)


class _Counts:
    docker_selected = 0
    docker_passed = 0


def scope_of(nodeid: str) -> str:
    """The unit a worker takes whole: the test's file, or its folder for WHOLE_FOLDERS."""
    path = nodeid.split("::", 1)[0]
    parts = path.split("/")
    if len(parts) > 2 and parts[0] == "tests" and parts[1] in WHOLE_FOLDERS:
        return "/".join(parts[:2])
    return path


class _ByFileOrFolder:
    """Registered only where xdist is (`-p no:xdist` runs without it)."""

    @staticmethod
    def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
        from xdist.scheduler import LoadScopeScheduling

        class ByFileOrFolder(LoadScopeScheduling):  # type: ignore[misc]
            def _split_scope(self, nodeid: str) -> str:
                return scope_of(nodeid)

        config.option.loadscopereorder = False  # the collection's order (see below), not unit sizes
        return ByFileOrFolder(config, log)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Last, after pytest-django's own ordering: every worker sorts the same way, so they agree.
    rank = {unit: n for n, unit in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(scope_of(item.nodeid), len(rank)))


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_ByFileOrFolder(), "by-file-or-folder")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    if item.get_closest_marker("docker") is None:
        return
    mark_needs(report, "docker")
    if REQUIRE_DOCKER and report.skipped and not hasattr(report, "wasxfail"):  # a strict xfail is not a skip
        report.outcome = "failed"
        report.longrepr = f"Docker test skipped but REQUIRE_DOCKER=1: {report.longrepr}"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Called in the controller for every worker's report, and in a lone process for its own.
    if not needs(report, "docker"):
        return
    if report.when == "setup":
        _Counts.docker_selected += 1
    if report.when == "call" and report.passed:
        _Counts.docker_passed += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if is_worker(session.config):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"docker tests passed: {_Counts.docker_passed} of {_Counts.docker_selected}")
    if REQUIRE_DOCKER and _Counts.docker_selected and _Counts.docker_passed == 0 and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
