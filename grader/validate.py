"""`grader rubric validate`: the rubric agrees with the reference, and the reference gets full marks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .judge.diagnose import KillMatrix, kill_matrix, wheat_failures
from .judge.expected import REFERENCE, compute_expected, math_expected
from .judge.wording import fmt
from .pipeline import grade_submission
from .plan import build_plan
from .results import Status, SubmissionResult
from .rubric import STRONG_SEED, Rubric, assignment_seed
from .runners.base import Runner

# Several seeds, so every random probe is exercised more than once.
VALIDATION_SEEDS = (0, 1, 2)


@dataclass(frozen=True)
class Validation:
    literal_errors: tuple[str, ...]
    literals_checked: int
    reference_result: SubmissionResult
    matrix: KillMatrix
    wheats: tuple[tuple[str, str, tuple[str, ...]], ...]  # (id, title, grader's checks it fails)

    @property
    def ok(self) -> bool:
        full = abs(self.reference_result.score - self.reference_result.max_score) < 1e-9
        graded = self.reference_result.status is Status.GRADED
        # Every catalogue bug must apply to the reference and be caught by some section; a
        # mutant no section catches is a blind spot of the rubric.
        matrix_ok = not self.matrix.blind_spots and not self.matrix.not_applicable
        # Every wheat must be right by the grader's own checks: the student's checks are held to it.
        wheats_ok = bool(self.wheats) and not any(failing for _, _, failing in self.wheats)
        return not self.literal_errors and full and graded and matrix_ok and wheats_ok


def check_literals(rubric: Rubric) -> tuple[list[str], int]:
    """Every ``expect:`` value in the rubric, compared with what the reference (or math) gives."""
    errors: list[str] = []
    checked = 0
    for seed in VALIDATION_SEEDS:
        plan = build_plan(rubric, seed=seed, visible_only=False)
        expected = compute_expected(plan, class_name=rubric.class_name)
        for check in plan.checks:
            if not check.expect:
                continue
            probe = plan.probe(check.probe)
            for index, program in enumerate(probe.programs):
                truth = math_expected(program) if check.expect_from == "math" else expected.program(probe.id, index)
                tolerance = rubric.tolerances[check.tolerance]
                for key, literal in check.expect.items():
                    checked += 1
                    value = truth.get(key)
                    if not isinstance(value, float) or not tolerance.accepts(value, literal):
                        errors.append(
                            f"{check.id}: {key} is {literal!r} in the rubric "
                            f"but {fmt(value)} from the {check.expect_from}"
                        )
    return sorted(set(errors)), checked


def validate_rubric(rubric: Rubric, *, runner: Runner, seed: int, reference: Path = REFERENCE) -> Validation:
    errors, checked = check_literals(rubric)
    result = grade_submission(reference, student="reference", rubric=rubric, runner=runner, seed=seed)
    plan = build_plan(rubric, seed=seed, visible_only=False)
    matrix = kill_matrix(rubric, plan, reference=reference)
    return Validation(tuple(errors), checked, result, matrix, wheat_failures(rubric, plan, reference=reference))


def seed_warnings(rubric: Rubric) -> list[str]:
    """What is weak about the assignment's seed: hidden inputs are only as secret as it is."""
    fix = "run `grader rubric reseed` (128 random bits) and regrade"
    if rubric.seed == assignment_seed(rubric.name, rubric.filename, None):
        return [f"the rubric has no assignment.seed: hidden inputs follow from its name, which anyone may know; {fix}"]
    if rubric.seed < STRONG_SEED:
        return [f"assignment.seed is short ({rubric.seed.bit_length()} bits): it can be searched for; {fix}"]
    return []
