"""Sections shown while the sandbox still runs: each is told once, as soon as it is settled, and
with the points the final result gives it (graded in the local runner; no Docker)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from grader.judge.progress import SectionWatch, SettledSection, probes_read_by
from grader.pipeline import Graded, grade_source
from grader.plan import build_plan
from grader.rubric import Rubric, load_rubric
from grader.runners.local import LocalRunner

REPO = Path(__file__).resolve().parents[2]
FILES = {
    "reference": REPO / "reference" / "autograd_lab.py",
    "mut_acc_mul": REPO / "tests" / "cases" / "mut_acc_mul" / "autograd_lab.py",  # the lab's central bug
    "partial_hidden": REPO / "tests" / "cases" / "partial_hidden" / "autograd_lab.py",  # fails some hidden inputs
    "checks_fail_own": REPO / "tests" / "cases" / "checks_fail_own" / "autograd_lab.py",
}
SEED = 7


@pytest.fixture(scope="module")
def rubric() -> Rubric:
    return load_rubric()


@pytest.fixture(scope="module")
def graded(rubric: Rubric) -> dict[tuple[str, bool], tuple[Graded, list[SettledSection]]]:
    out = {}
    for name, path in FILES.items():
        for visible_only in (False, True):
            heard: list[SettledSection] = []
            done = grade_source(
                path.read_bytes(),
                "",
                student=name,
                rubric=rubric,
                runner=LocalRunner(),
                seed=SEED,
                visible_only=visible_only,
                on_section=heard.append,
            )
            out[name, visible_only] = (done, heard)
    return out


@pytest.mark.parametrize("visible_only", [False, True], ids=["submit", "self_check"])
@pytest.mark.parametrize("name", list(FILES))
def test_every_section_is_told_once_with_its_final_points(
    name: str, visible_only: bool, graded: dict[tuple[str, bool], tuple[Graded, list[SettledSection]]]
) -> None:
    done, heard = graded[name, visible_only]
    final = {s.tag: s.points for s in done.result.sections}
    told = [s.tag for s in heard]
    assert sorted(told) == sorted(t for t in final if any(c.section == t for c in done.result.checks))
    assert len(set(told)) == len(told)
    for section in heard:
        assert round(sum(c.points for c in section.checks), 2) == final[section.tag], (name, section.tag)
        ours = {c.check_id: (c.outcome, c.points) for c in done.result.checks if c.section == section.tag}
        assert {c.check_id: (c.outcome, c.points) for c in section.checks} == ours


def test_a_self_checks_first_sections_come_before_its_bug_injection_runs(
    rubric: Rubric, graded: dict[tuple[str, bool], tuple[Graded, list[SettledSection]]]
) -> None:
    done, _ = graded["reference", True]
    assert done.evidence is not None
    plan = build_plan(rubric, seed=SEED, visible_only=True)
    stdout = done.evidence.raw.stdout
    heard_at: dict[str, int] = {}
    watch = SectionWatch(rubric, plan, nonce=done.evidence.nonce, on_section=lambda s: heard_at.setdefault(s.tag, at))
    at = 0
    cuts = random.Random(1)
    while at < len(stdout):  # pieces of any size, cut anywhere, as a pipe delivers them
        start, at = at, min(at + cuts.randint(1, 4000), len(stdout))
        watch.feed(stdout[start:at])
    assert set(heard_at) == set(probes_read_by(rubric, plan))
    step5 = stdout.find(b'"t":"mutant"')
    assert step5 > 0
    assert heard_at["api"] < step5 and heard_at["part1_trace"] < step5  # the visible checks, long before
    assert heard_at["bug_injection"] > step5


def test_a_record_that_names_no_probe_or_is_not_the_runs_own_settles_nothing(rubric: Rubric) -> None:
    plan = build_plan(rubric, seed=SEED, visible_only=True)
    heard: list[SettledSection] = []
    watch = SectionWatch(rubric, plan, nonce="a" * 32, on_section=heard.append)
    first = plan.probes[0].id
    watch.feed(f'@@AG:{"b" * 32} {{"t":"probe_end","probe":"{first}"}}\n'.encode())  # another run's nonce
    watch.feed(b"@@AG:" + b"a" * 32 + b' {"t":"probe_end","probe":7}\n')
    watch.feed(b"@@AG:" + b"a" * 32 + f' {{"t":"probe_end","probe":"{first}"}}'.encode())  # no newline yet
    assert heard == [] and watch.ended == set()
