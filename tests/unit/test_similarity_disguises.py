"""Copies disguised by machine against independent engines: every cheap disguise (renaming,
reordering, reformatting, padding, all at once, attribute access spelled with getattr and
setattr) leaves a copy at 0.85 or more while no two independent engines reach 0.35;
restructured copies still rank above every independent pair.
Also the findings of their own: a file that holds another, files that are the reference, a
file Python cannot wholly read, and a page bounded whatever the files."""

from __future__ import annotations

import importlib.util
import json
import sys
from functools import cache
from itertools import combinations
from pathlib import Path
from types import ModuleType

import pytest
from disguiser import DISGUISES, restructure

from grader.similarity.compare import THRESHOLD
from grader.similarity.report import Source, build, render_html, to_json

REPO = Path(__file__).resolve().parents[2]
STYLES = REPO / "tests" / "similarity_styles"  # twelve engines, each written in its own style
CLASS = REPO / "tests" / "similarity_class"  # ten more, written before them
REFERENCE = Source("reference (autograd_lab.py)", (REPO / "reference" / "autograd_lab.py").read_text())
COPY_AT_LEAST = 0.85
INDEPENDENT_AT_MOST = 0.35


def styles() -> dict[str, str]:
    return {p.parent.name: p.read_text() for p in sorted(STYLES.glob("*/autograd_lab.py"))}


def engines() -> dict[str, str]:
    return {**styles(), **{p.parent.name: p.read_text() for p in sorted(CLASS.glob("*/autograd_lab.py"))}}


def load(name: str, source: str, where: Path) -> ModuleType:
    path = where / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"engine_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def works(module: ModuleType) -> None:
    """The handout's graph, a reused node, and three functions against central differences."""
    value = module.Value
    a, b, c, d = value(2.0), value(3.0), value(1.0), value(1.5)
    loss = (a * b + c) * d.relu()
    loss.backward()
    assert loss.data == pytest.approx(10.5)
    assert [a.grad, b.grad, c.grad, d.grad] == pytest.approx([4.5, 3.0, 1.5, 7.0])
    assert hasattr(loss, "_prev") and hasattr(loss, "_op")
    x = value(3.0)
    (x * x + x).backward()
    assert x.grad == pytest.approx(7.0)
    for f, at in (
        (lambda v: (2 - v) / (v**2 + 1) - 3 / v, 0.7),
        (lambda v: (v * 2).tanh() * -v + 1.5 * v, 0.3),
        (lambda v: (v - 1).relu() / 2, 2.0),
    ):
        x = value(at)
        f(x).backward()
        h = 1e-6
        assert x.grad == pytest.approx((f(value(at + h)).data - f(value(at - h)).data) / (2 * h), abs=1e-4)


@cache
def disguised_class() -> tuple[dict[tuple[str, str], float], list[tuple[str, str]]]:
    """Every engine, and for each of the twelve styles one copy per disguise; the scores."""
    originals = engines()
    sources = [Source(name, text) for name, text in originals.items()]
    copies = []
    for seed, name in enumerate(styles()):
        for kind, disguise in [*DISGUISES.items(), ("restructure", restructure)]:
            sources.append(Source(f"{name}@{kind}", disguise(originals[name], seed)))
            copies.append((name, kind))
    report = build(sources, [REFERENCE])
    scores = {}
    for pair in report.pairs:
        scores[(pair.a, pair.b)] = scores[(pair.b, pair.a)] = pair.score
    return scores, copies


def test_the_engines_are_twelve_working_ones_in_their_own_styles() -> None:
    found = styles()
    assert len(found) >= 12
    for name, text in found.items():
        assert "class Value" in text or "Value = " in text, name


@pytest.mark.parametrize("name", sorted(styles()))
def test_an_engine_and_each_of_its_disguised_copies_compute_the_same_gradients(name: str, tmp_path: Path) -> None:
    original = styles()[name]
    works(load(name, original, tmp_path))
    for seed, (kind, disguise) in enumerate([*DISGUISES.items(), ("restructure", restructure)]):
        copy = disguise(original, seed)
        if kind != "reorder":
            assert copy != original, kind
        works(load(f"{name}_{kind}", copy, tmp_path))


@pytest.mark.parametrize("kind", sorted(DISGUISES))
def test_every_disguised_copy_scores_high(kind: str) -> None:
    scores, copies = disguised_class()
    found = {name: scores[(name, f"{name}@{k}")] for name, k in copies if k == kind}
    assert len(found) >= 6
    assert min(found.values()) >= COPY_AT_LEAST, found


def test_no_two_independent_engines_score_high() -> None:
    scores, _ = disguised_class()
    independent = {pair: scores[pair] for pair in combinations(engines(), 2)}
    assert max(independent.values()) <= INDEPENDENT_AT_MOST, max(independent.items(), key=lambda kv: kv[1])
    assert INDEPENDENT_AT_MOST < THRESHOLD < COPY_AT_LEAST


def test_restructured_copies_rank_above_every_independent_pair() -> None:
    scores, copies = disguised_class()
    restructured = min(scores[(name, f"{name}@{k}")] for name, k in copies if k == "restructure")
    independent = max(scores[pair] for pair in combinations(engines(), 2))
    assert restructured > independent and restructured >= THRESHOLD


# --- findings of their own ----------------------------------------------------------------------


def test_two_students_who_submit_the_reference_are_flagged_as_such() -> None:
    leaked = REFERENCE.text
    sources = [Source(n, t) for n, t in list(styles().items())[:4]]
    sources += [Source("rae", leaked), Source("sol", DISGUISES["everything"](leaked, 3))]
    report = build(sources, [REFERENCE])
    assert [(m.name, m.reference) for m in report.mostly_base] == [("rae", True), ("sol", True)]
    assert "rae" not in report.too_small and "sol" not in report.too_small
    page = render_html(report, title="t")
    assert "2 submissions are mostly the reference solution" in page
    data = json.loads(to_json(report))
    assert [m["name"] for m in data["mostly_base"]] == ["rae", "sol"] and data["mostly_base"][0]["reference"]


def test_a_small_engine_pasted_inside_a_larger_file_is_held_not_a_low_score() -> None:
    found = styles()
    small = found["kahn_counts"]
    large = found["node_subclasses"] + "\n\n" + found["table_lookup"].replace("class Value", "class Other") + small
    report = build([Source("kahn", small), Source("big", large), Source("other", found["counter_heap"])], [REFERENCE])
    pair = next(p for p in report.pairs if {p.a, p.b} == {"kahn", "big"})
    assert pair.score >= COPY_AT_LEAST and pair.holder == "big"
    assert [p.holder for p in report.contained] == ["big"]
    assert "One file holds most of another" in render_html(report, title="t")
    assert json.loads(to_json(report))["contained"] == [{"holder": "big", "held": "kahn", "score": pair.score}]


def test_a_file_of_one_engine_then_another_does_not_chain_them_into_a_group() -> None:
    found = styles()
    a, b = found["grad_dict"], found["free_functions"]
    sources = [Source("a", a), Source("a_copy", DISGUISES["rename"](a, 1)), Source("b", b)]
    sources += [Source("b_copy", DISGUISES["reorder"](b, 2)), Source("both", a + "\n\n" + b)]
    report = build(sources, [REFERENCE])
    assert all(len(g) < 5 for g in report.groups) and not any({"a", "b"} <= set(g) for g in report.groups)
    assert {p.holder for p in report.contained} == {"both"}


def test_one_broken_line_keeps_the_rest_of_the_file() -> None:
    original = styles()["stack_postorder"]
    lines = original.split("\n")
    middle = next(i for i, line in enumerate(lines) if "def __pow__" in line) + 1
    broken = "\n".join([*lines[:middle], "        return self.data ** (k", *lines[middle:]])
    report = build([Source("a", original), Source("b", broken)], [REFERENCE])
    assert report.pairs[0].score >= COPY_AT_LEAST, report.pairs[0]
    assert "left out" in report.prints["b"].tokens.loose
    unclosed = original + '\nnotes = """never closed\n'
    report = build([Source("a", original), Source("b", unclosed)], [REFERENCE])
    assert report.pairs[0].score >= COPY_AT_LEAST and report.prints["b"].tokens.loose


def test_the_page_is_bounded_for_a_file_holding_everyones_code() -> None:
    everyone = "\n\n".join(engines().values())
    huge = "\n\n".join([everyone] * (900_000 // len(everyone) + 1))
    assert len(huge) >= 900_000
    sources = [Source(n, t) for n, t in engines().items()] + [Source("zz_everyone", huge)]
    report = build(sources, [REFERENCE])
    page = render_html(report, title="t")
    assert {p.holder for p in report.contained} == {"zz_everyone"}
    assert not report.groups
    assert len(page.encode()) < 4_000_000, len(page)
    assert "lines not shown" in page
