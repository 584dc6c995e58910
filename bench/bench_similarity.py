"""Cost of the similarity report for a class, against a bare container started in the same run.

The class: the independently written engines of tests/similarity_class, each copied many times
and every copy disguised differently (renamed, re-commented, reordered, padded with dead code),
so every file is distinct and a tenth of all pairs are copies: the worst case for the report's
page as well as for the comparison. Stages are timed apart: fingerprints (tokenize, hash,
winnow), scoring every pair, the page and the JSON.

    python bench/bench_similarity.py [--students 300] [--repeats 3] [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests" / "unit"))

from bench_throughput import bare_container  # noqa: E402
from markdown_section import write_section  # noqa: E402
from similarity_disguise import disguise  # noqa: E402

from grader.runners.docker import DockerRunner  # noqa: E402
from grader.similarity.compare import clusters, score_pairs  # noqa: E402
from grader.similarity.fingerprint import base_hashes, fingerprint  # noqa: E402
from grader.similarity.report import Source, build, render_html, to_json  # noqa: E402

ENGINES = sorted((REPO / "tests" / "similarity_class").glob("*/autograd_lab.py"))
REFERENCE = (REPO / "reference" / "autograd_lab.py").read_text()


def a_class(students: int) -> list[Source]:
    engines = [p.read_text() for p in ENGINES]
    return [Source(f"s{n:03d}", disguise(engines[n % len(engines)], n)) for n in range(students)]


def stages(sources: list[Source]) -> dict[str, float]:
    times: dict[str, float] = {}
    started = time.perf_counter()
    base = base_hashes([REFERENCE])
    prints = [fingerprint(s.name, s.text, base) for s in sources]
    times["fingerprints"] = time.perf_counter() - started
    started = time.perf_counter()
    pairs = score_pairs(prints)
    clusters(pairs, 0.5)
    times["scoring every pair"] = time.perf_counter() - started
    report = build(sources, [Source("reference", REFERENCE)])  # again, whole, for the page
    started = time.perf_counter()
    page = render_html(report, title="bench")
    times["the page (side by side, first 100 pairs)"] = time.perf_counter() - started
    started = time.perf_counter()
    to_json(report)
    times["the JSON (every pair)"] = time.perf_counter() - started
    times["total"] = sum(times.values())
    times["page MB"] = len(page.encode()) / 1e6
    times["flagged"] = len(report.flagged)
    times["pairs"] = len(report.pairs)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", type=Path, help="update this Markdown file's similarity section")
    args = parser.parse_args()

    image = DockerRunner().image
    bare_before = bare_container(image, 5)
    sizes = sorted({args.students // 3, 2 * args.students // 3, args.students})
    results: dict[int, list[dict[str, float]]] = {}
    for size in sizes:
        sources = a_class(size)
        results[size] = [stages(sources) for _ in range(args.repeats)]
        print(size, {k: round(v, 3) for k, v in results[size][-1].items()}, flush=True)
    bare = statistics.median([bare_before, bare_container(image, 5)])

    def median(size: int, key: str) -> float:
        return statistics.median(r[key] for r in results[size])

    full = args.students
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## Similarity report cost (`bench/bench_similarity.py`)",
        "",
        f"Measured {now} on this machine (2 cores), one process; a class of {full} distinct files made "
        f"from the {len(ENGINES)} independent engines of tests/similarity_class, each copy disguised "
        f"differently, so {int(median(full, 'flagged'))} of the {int(median(full, 'pairs'))} pairs are copies; "
        f"median of {args.repeats}. The baseline is a bare container (`docker run --rm IMAGE python3 -c pass`, "
        f"median of 5 before and 5 after): {bare:.2f} s.",
        "",
        "| stage | " + " | ".join(f"{n} students, s" for n in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for key in ("fingerprints", "scoring every pair", "the page (side by side, first 100 pairs)"):
        lines.append(f"| {key} | " + " | ".join(f"{median(n, key):.2f}" for n in sizes) + " |")
    lines.append(
        "| the JSON (every pair) | " + " | ".join(f"{median(n, 'the JSON (every pair)'):.2f}" for n in sizes) + " |"
    )
    lines.append("| **total** | " + " | ".join(f"**{median(n, 'total'):.2f}**" for n in sizes) + " |")
    lines.append("| in bare containers | " + " | ".join(f"{median(n, 'total') / bare:.1f}" for n in sizes) + " |")
    total = median(full, "total")
    lines += [
        "",
        f"The report for {full} students takes **{total:.1f} s, {total / bare:.1f} bare containers**: less than "
        f"grading {max(1, round(total / (2.14 * bare)))} submissions at --jobs 2 (2.14 bare containers each, "
        f"class throughput above). Scoring grows with the square of the class "
        f"({median(sizes[0], 'scoring every pair'):.2f} s for {sizes[0]}, {median(full, 'scoring every pair'):.2f} s "
        f"for {full}); fingerprints grow with it linearly. The page is {median(full, 'page MB'):.1f} MB.",
    ]
    block = "\n".join(lines)
    print(block)
    if args.write:
        write_section(args.write, "bench_similarity", lines)


if __name__ == "__main__":
    main()
