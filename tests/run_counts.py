"""What the conftests share to count the tests that must run (Docker, Chromium) across xdist
workers: a report carries what its test needed, and only the process that sees every report
(the xdist controller, or a lone process) judges the counts."""

from __future__ import annotations

import pytest


def mark_needs(report: pytest.TestReport, what: str) -> None:
    report.user_properties.append(("needs", what))  # user properties travel to the controller


def needs(report: pytest.TestReport, what: str) -> bool:
    """Whether the test behind a report was marked (mark_needs) as needing `what`."""
    return any(tuple(prop) == ("needs", what) for prop in report.user_properties)


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")
