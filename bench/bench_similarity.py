"""Cost of the similarity report, the implementation at a git revision (main by default) against
this checkout's, in one run, so the ratios hold however fast the machine is that day.

The revision's grader/similarity and its page template are read with ``git show`` into a
temporary package and imported beside this checkout's. Two workloads:

- a class: the independent engines of tests/similarity_styles and tests/similarity_class, each
  copied many times and every copy disguised differently (renamed, reordered, reformatted,
  padded, all at once), so every file is distinct and a tenth of all pairs are copies; stages
  timed apart (fingerprints, scoring every pair, the page, the JSON);
- one file of 0.9 MB holding everyone's code, beside the engines: the page's size and time.

    python bench/bench_similarity.py [--students 300] [--repeats 3] [--rev main] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from unittest import mock

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests" / "unit"))

from disguiser import everything  # noqa: E402
from jinja2 import ChoiceLoader, DictLoader, Environment  # noqa: E402
from markdown_section import write_section  # noqa: E402

import grader.report.html as report_html  # noqa: E402
from grader.similarity import compare, fingerprint, report  # noqa: E402

ENGINES = sorted(
    [
        *(REPO / "tests" / "similarity_styles").glob("*/autograd_lab.py"),
        *(REPO / "tests" / "similarity_class").glob("*/autograd_lab.py"),
    ]
)
REFERENCE = (REPO / "reference" / "autograd_lab.py").read_text()
MODULES = ("__init__", "tokens", "fingerprint", "compare", "report")
TEMPLATE = "grader/report/templates/similarity.html.j2"


class Implementation:
    """One implementation's entry points, and how to render its page with its own template."""

    def __init__(self, name: str, package: ModuleType, template: str | None) -> None:
        self.name = name
        self.compare = importlib.import_module(f"{package.__name__}.compare")
        self.fingerprint = importlib.import_module(f"{package.__name__}.fingerprint")
        self.report = importlib.import_module(f"{package.__name__}.report")
        self.template = template

    def render(self, built: object) -> str:
        if self.template is None:
            return self.report.render_html(built, title="bench")
        real = report_html.environment

        def environment() -> Environment:
            env = real()  # shared: an overlay, so this checkout's pages keep their own template
            return env.overlay(
                loader=ChoiceLoader([DictLoader({"similarity.html.j2": self.template or ""}), env.loader])
            )

        with mock.patch.object(report_html, "environment", environment):
            return self.report.render_html(built, title="bench")


def at_revision(rev: str, into: Path) -> Implementation:
    package = into / "similarity_then"
    package.mkdir()
    for module in MODULES:
        text = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{rev}:grader/similarity/{module}.py"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        (package / f"{module}.py").write_text(text)
    template = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:{TEMPLATE}"], capture_output=True, text=True, check=True
    ).stdout
    sys.path.insert(0, str(into))
    return Implementation(rev, importlib.import_module("similarity_then"), template)


def a_class(students: int) -> list[report.Source]:
    engines = [p.read_text() for p in ENGINES]
    return [report.Source(f"s{n:03d}", everything(engines[n % len(engines)], n)) for n in range(students)]


def holder_class() -> list[report.Source]:
    engines = {p.parent.name: p.read_text() for p in ENGINES}
    everyone = "\n\n".join(engines.values())
    huge = "\n\n".join([everyone] * (900_000 // len(everyone) + 1))
    return [report.Source(n, t) for n, t in engines.items()] + [report.Source("zz_everyone", huge)]


def stages(impl: Implementation, sources: list[report.Source]) -> dict[str, float]:
    times: dict[str, float] = {}
    source_type = impl.report.Source
    mine = [source_type(s.name, s.text) for s in sources]
    started = time.perf_counter()
    built = impl.report.build(mine, [source_type("reference", REFERENCE)])
    times["fingerprints and scoring"] = time.perf_counter() - started
    started = time.perf_counter()
    page = impl.render(built)
    times["the page"] = time.perf_counter() - started
    started = time.perf_counter()
    impl.report.to_json(built)
    times["the JSON"] = time.perf_counter() - started
    times["total"] = sum(times.values())
    times["page MB"] = len(page.encode()) / 1e6
    times["flagged"] = len(built.flagged)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rev", default="main", help="the git revision to compare against")
    parser.add_argument("--write", type=Path, help="update this Markdown file's similarity section")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        then = at_revision(args.rev, Path(tmp))
        now = Implementation("this checkout", sys.modules["grader.similarity"], None)
        assert now.compare is compare and now.fingerprint is fingerprint
        workloads: dict[str, Callable[[], list[report.Source]]] = {
            f"a class of {args.students}": lambda: a_class(args.students),
            "the engines and one 0.9 MB file holding them all": holder_class,
        }
        results: dict[tuple[str, str], list[dict[str, float]]] = {}
        for label, make in workloads.items():
            sources = make()
            for _ in range(args.repeats):  # alternate, so a drift in the machine's speed hits both
                for impl in (then, now):
                    results.setdefault((label, impl.name), []).append(stages(impl, sources))
                    print(
                        label,
                        impl.name,
                        {k: round(v, 3) for k, v in results[(label, impl.name)][-1].items()},
                        flush=True,
                    )

    def median(label: str, impl: str, key: str) -> float:
        return statistics.median(r[key] for r in results[(label, impl)])

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## Similarity report cost (`bench/bench_similarity.py`)",
        "",
        f"Measured {stamp} on this machine (2 cores), one process, median of {args.repeats}, the two "
        f"implementations alternating: `{args.rev}` (tokens of the text, read with `git show`) against this "
        f"checkout (the syntax tree, function by function). The class is made from the {len(ENGINES)} "
        "independent engines of tests/similarity_styles and tests/similarity_class, every copy disguised "
        "differently (renamed, reordered, padded, reformatted).",
        "",
        f"| workload | stage | {args.rev}, s | now, s | now / {args.rev} |",
        "|---|---|---|---|---|",
    ]
    for label in workloads:
        for key in ("fingerprints and scoring", "the page", "the JSON", "total"):
            old, new = median(label, args.rev, key), median(label, "this checkout", key)
            bold = "**" if key == "total" else ""
            lines.append(f"| {label} | {bold}{key}{bold} | {old:.2f} | {new:.2f} | {new / old if old else 0:.2f} |")
        old, new = median(label, args.rev, "page MB"), median(label, "this checkout", "page MB")
        lines.append(f"| {label} | page size, MB | {old:.1f} | {new:.1f} | {new / old if old else 0:.2f} |")
        old, new = median(label, args.rev, "flagged"), median(label, "this checkout", "flagged")
        lines.append(f"| {label} | pairs flagged | {old:.0f} | {new:.0f} | |")
    per_engine = [len(range(n, args.students, len(ENGINES))) for n in range(len(ENGINES))]
    copies = sum(k * (k - 1) // 2 for k in per_engine)
    lines += [
        "",
        f"The class holds {copies} pairs of copies (files made from one engine) and no other similar pair. In the "
        "second workload every flagged pair is the large file holding an engine: listed as a holding now, "
        "and joining no group.",
    ]
    print("\n".join(lines))
    if args.write:
        write_section(args.write, "bench_similarity", lines)


if __name__ == "__main__":
    main()
