"""The two slow honest files of tests/cases, made a third as long for the test suite.

`checks_train_mlp` (checks that train a small MLP: about 3 s per run of the checks, paid by
every run of Step 5) and `demo_at_import` (a 0.7 s demo at top level, paid by every probe's
import) are kept at full length for the benchmarks (bench/bench_harness_cost.py,
bench/bench_parts.py), which measure what such a file costs. What the suites prove with them,
full marks for an honest slow file within the shipped limits and the same points on a busy
machine, holds at any length; a third of it (1 s, 0.25 s) keeps their gradings from holding a
core for minutes.
"""

from __future__ import annotations

from pathlib import Path

CASES = Path(__file__).resolve().parent / "cases"
# What each case is shortened by: its length, as written in it, and a third of it.
SHORTER = {
    "checks_train_mlp": ("def check_mlp_learns(steps: int = 1200)", "def check_mlp_learns(steps: int = 400)"),
    "demo_at_import": ("DEMO_GRAPHS = 35000\n", "DEMO_GRAPHS = 12000\n"),
}


def short_text(name: str) -> str:
    """The case's file with its length cut to a third (the case itself when it is not slow)."""
    text = (CASES / name / "autograd_lab.py").read_text(encoding="utf-8")
    if name not in SHORTER:
        return text
    long, short = SHORTER[name]
    assert text.count(long) == 1, f"{name}: its length moved; update tests/short_cases.py"
    return text.replace(long, short)
