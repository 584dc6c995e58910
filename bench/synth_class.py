"""Build a synthetic class from the reference and the mutation catalogue, for tests and benchmarks.

Each student is the reference solution with zero, one or two catalogue bugs injected (by the
same AST operators the grader uses), and some with weaker checks (the handout's only, or
`assert True`) or a syntax error, so a class has the spread of a real one. Deterministic for a
seed. Endless loops are left out unless asked for: each costs a full time limit.

    python bench/synth_class.py OUT_DIR [--students 200] [--seed 1] [--with-timeouts 0]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from grader.mutate import CATALOGUE, NotApplicable, mutate_source  # noqa: E402

REFERENCE = (REPO / "reference" / "autograd_lab.py").read_text(encoding="utf-8")
CHECKS_START = "def check_part1_graph() -> None:"
HANDOUT_ONLY_MAIN = """

def main() -> None:
    check_part1_graph()
    check_a6_neuron()
    check_reuse()
    check_log_exp_fd()
    print("All checks passed.")


if __name__ == "__main__":
    main()
"""


def weaker_checks(source: str, kind: str) -> str:
    """Replace the file's main() with the handout's checks only, or with `assert True`."""
    head, _, _ = source.partition("def main() -> None:")
    if kind == "handout":
        return head.rstrip() + "\n" + HANDOUT_ONLY_MAIN
    engine, _, _ = source.partition(CHECKS_START)
    return engine.rstrip() + "\n\n\nif __name__ == '__main__':\n    assert True\n"


def student_source(rng: random.Random, index: int, timeouts: set[int]) -> str:
    if index in timeouts:
        return REFERENCE.replace(
            '        """Seed dL/dL = 1 and run every node\'s local rule in reverse topological order."""\n',
            '        """Seed dL/dL = 1."""\n        while True:\n            pass\n',
        )
    roll = rng.random()
    if roll < 0.03:
        return REFERENCE.replace("def __add__(self, other", "def __add__(self other", 1)  # a syntax error
    source = REFERENCE
    bugs = rng.choices([0, 1, 2], weights=[4, 4, 1])[0]
    for operator in rng.sample([op.id for op in CATALOGUE], bugs):
        try:
            source, _ = mutate_source(source, operator, "Value")
        except NotApplicable:
            pass  # the first bug removed this one's target (e.g. both edit __mul__'s backward)
    checks = rng.choices(["full", "handout", "none"], weights=[5, 4, 1])[0]
    return source if checks == "full" else weaker_checks(source, checks)


def build(out: Path, *, students: int, seed: int, with_timeouts: int = 0) -> list[Path]:
    rng = random.Random(seed)
    timeouts = set(rng.sample(range(students), min(with_timeouts, students)))
    paths = []
    for index in range(students):
        folder = out / f"synth_{index:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "autograd_lab.py"
        path.write_text(student_source(rng, index, timeouts), encoding="utf-8")
        paths.append(path)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--with-timeouts", type=int, default=0)
    args = parser.parse_args()
    paths = build(args.out, students=args.students, seed=args.seed, with_timeouts=args.with_timeouts)
    print(f"wrote {len(paths)} submissions under {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
