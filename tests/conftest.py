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
REQUIRE_BROWSER = os.environ.get("REQUIRE_BROWSER") == "1"
# Folders graded once per session and shared by all their files: scheduled as one unit.
WHOLE_FOLDERS = ("browser",)
# The longest units, longest first (measured: `make test` and `make test-slow` print their
# slowest tests): started before everything else, so that no worker is left with one of them
# while the other idles at the end. Units not named here follow in collection order.
LONGEST_FIRST = (
    "tests/integration/test_adversarial.py",  # ~100 hostile files and their twins: ~12 min on a busy worker
    # Mostly waiting on sleeping floods (~6 min): beside the adversarial class, which wants both cores.
    "tests/service/test_fair_rush.py",
    "tests/integration/test_cases.py",  # ~70 gradings: ~10 min
    "tests/service/test_faults.py",  # a rush, a killed web process, two hosts: ~8 min
    "tests/integration/test_busy_machine.py",  # two gradings beside four spinning processes: ~7 min
    "tests/integration/test_batch.py",
    "tests/integration/test_sample_class.py",
    "tests/service/test_lti.py",
    "tests/browser",
    "tests/integration/test_shrunk_catalogue.py",
    "tests/integration/test_warm_pool.py",
)


# Per need (run_counts.mark_needs: "docker" here, "chromium" in tests/browser/conftest.py): tests
# selected, tests passed. Kept here, the one conftest the xdist controller loads.
_COUNTS: dict[str, list[int]] = {"docker": [0, 0], "chromium": [0, 0]}
_REQUIRED = {"docker": REQUIRE_DOCKER, "chromium": REQUIRE_BROWSER}


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
    for need, counts in _COUNTS.items():
        if needs(report, need):
            counts[0] += report.when == "setup"
            counts[1] += report.when == "call" and report.passed


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if is_worker(session.config):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for need, (selected, passed) in _COUNTS.items():
        if reporter is not None and (selected or need == "docker"):
            reporter.write_line(f"{need} tests passed: {passed} of {selected}")
        # A run that selected such tests and passed none of them cannot look green.
        if _REQUIRED[need] and selected and passed == 0 and exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
