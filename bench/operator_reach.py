"""How many of the catalogue's bugs apply to each engine in the repository, and why the rest do not.

Every catalogue operator is applied (``mutate_text``, as the sandbox does) to every engine kept
here: the sample class (submissions/), the grading cases (tests/cases/), the similarity class and
its copies, the adversarial twins, the engines written in unusual forms (tests/unit/engines_forms/)
and the reference. A file that does not parse, or defines no engine class, is listed apart and
not counted. Printed: applied/total per engine and overall (and over submissions/ with
tests/cases/ alone), then every operator left unapplied with the reason it gave.

    python bench/operator_reach.py [--code DIR] [--quiet]

``--code DIR`` takes the operators from another checkout of the grader (``git worktree`` or an
unpacked ``git archive``), to compare before and after a change on the same engines.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]

GROUPS = (
    "submissions/*/autograd_lab.py",
    "tests/cases/*/autograd_lab.py",
    "tests/similarity_class*/**/*.py",
    "tests/adversarial/_twins/*.py",
    "tests/unit/engines_forms/*.py",
    "reference/autograd_lab.py",
)
CLASS = ("submissions/", "tests/cases/")  # the figure kept in docs/grading.md


def engines() -> list[Path]:
    found: list[Path] = []
    for pattern in GROUPS:
        found += sorted(p for p in REPO.glob(pattern) if p.is_file())
    return found


def load(code: Path) -> tuple[ModuleType, type[Exception]]:
    sys.path.insert(0, str(code))
    mutate = importlib.import_module("sandbox.harness.mutation.mutate")
    loader = importlib.import_module("sandbox.harness.probes.loader")
    return mutate, loader.LoadError


def share(applied: int, total: int) -> str:
    return f"{applied} of {total} ({100.0 * applied / total:.1f}%)" if total else "0 of 0"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--code", type=Path, default=REPO, help="checkout whose operators are applied")
    parser.add_argument("--quiet", action="store_true", help="totals only")
    args = parser.parse_args()
    mutate, load_error = load(args.code.resolve())
    operators = [op.id for op in mutate.CATALOGUE]

    rows: list[tuple[str, int]] = []
    missing: list[tuple[str, str, str]] = []
    skipped: list[tuple[str, str]] = []
    for path in engines():
        name = str(path.relative_to(REPO))
        source = path.read_text(encoding="utf-8")
        applied = 0
        reasons: list[tuple[str, str]] = []
        for op in operators:
            try:
                mutate.mutate_text(source, op, "Value")
                applied += 1
            except load_error as why:
                reasons = [("", f"does not parse: {why}")]
                break
            except mutate.NotApplicable as why:
                reasons.append((op, str(why)))
        if (reasons and reasons[0][0] == "") or (len(reasons) == len(operators) and _no_engine(reasons)):
            skipped.append((name, reasons[0][1]))
            continue
        rows.append((name, applied))
        missing += [(name, op, why) for op, why in reasons]

    total = len(operators)
    if not args.quiet:
        width = max(len(name) for name, _ in rows)
        for name, applied in rows:
            print(f"{name:<{width}}  {applied:>2}/{total}")
        print()
        if missing:
            print("not applied:")
            for name, op, why in missing:
                print(f"  {name}  {op}: {why}")
            print()
        if skipped:
            print("not engines (not counted):")
            for name, why in skipped:
                print(f"  {name}: {why}")
            print()
    for label, prefixes in (
        ("submissions/", ("submissions/",)),
        ("tests/cases/", ("tests/cases/",)),
        ("similarity class and copies", ("tests/similarity_class",)),
        ("adversarial twins", ("tests/adversarial/",)),
        ("engines in unusual forms", ("tests/unit/engines_forms/",)),
        ("reference", ("reference/",)),
        ("submissions/ and tests/cases/", CLASS),
    ):
        counts = [a for name, a in rows if name.startswith(prefixes)]
        print(f"{label}: {share(sum(counts), total * len(counts))} over {len(counts)} engines")
    print(f"every engine: {share(sum(a for _, a in rows), total * len(rows))} over {len(rows)} engines")
    return 0


def _no_engine(reasons: list[tuple[str, str]]) -> bool:
    """Every operator gave the same reason, about the class itself: not an engine."""
    first = reasons[0][1]
    return all(why == first for _, why in reasons) and ("no class" in first or "is bound last by" in first)


if __name__ == "__main__":
    raise SystemExit(main())
