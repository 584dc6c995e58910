"""The similarity report: copies found through renaming, re-commenting, reordering and dead code;
code everyone was given not counted; the same files always give the same scores; a page that
escapes what students wrote and loads nothing from outside."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from itertools import combinations
from pathlib import Path

import pytest
from disguiser import reflect
from similarity_disguise import disguise

from grader.similarity.compare import MIN_PRINTS, THRESHOLD, Pair, clusters, shared_regions
from grader.similarity.fingerprint import WINDOW, K, base_hashes, fingerprint, kgram_hashes, winnow
from grader.similarity.report import Source, build, render_html, to_json
from grader.similarity.summary import content_digest, section, to_meta
from grader.similarity.syntax import canonical as normalise

REPO = Path(__file__).resolve().parents[2]
CLASS = REPO / "tests" / "similarity_class"  # written independently, each in its own style
HAND_COPIES = REPO / "tests" / "similarity_class_copies"  # disguised by hand: kim_tran, liam_berg
HAND_COPIED_FROM = {"kim_tran": "ana_ruiz", "liam_berg": "eli_novak"}
STARTER = REPO / "tests" / "similarity_class_base" / "starter_helpers.py"
REFERENCE = Source("reference", (REPO / "reference" / "autograd_lab.py").read_text())
DISGUISED = ("ben_cho", "cleo_marsh", "dev_patel", "fay_osei", "hana_ito")  # copied by machine


def independent() -> dict[str, str]:
    found = {p.parent.name: p.read_text() for p in sorted(CLASS.glob("*/autograd_lab.py"))}
    assert len(found) >= 8
    return found


def planted_class() -> tuple[list[Source], set[frozenset[str]]]:
    engines = independent()
    sources = [Source(name, text) for name, text in engines.items()]
    planted: set[frozenset[str]] = set()
    for seed, name in enumerate(DISGUISED):
        copy = disguise(engines[name], seed)
        assert copy != engines[name]
        compile(copy, f"{name}_copy", "exec")  # still a program
        sources.append(Source(f"{name}_copy", copy))
        planted.add(frozenset((name, f"{name}_copy")))
    for copier, original in HAND_COPIED_FROM.items():
        sources.append(Source(copier, (HAND_COPIES / copier / "autograd_lab.py").read_text()))
        planted.add(frozenset((copier, original)))
    return sources, planted


# --- the token stream -----------------------------------------------------------------------------


def stream(source: str) -> list[str]:
    return [t.text for t in normalise(source).items]


def test_renaming_recommenting_and_constants_leave_the_stream_alone() -> None:
    one = 'def f(a, b):\n    """Add."""\n    total = a + b * 2  # sum\n    return total\n'
    two = "def g(x, y):\n    # a new comment\n\n    s = x + y * 3.5\n    return s\n"
    assert stream(one) == stream(two)
    assert stream(one) != stream("def f(a, b):\n    return a - b\n")  # an operator is code
    assert "If" in stream("if x:\n    pass\n")  # statements are kept


def test_a_string_inside_an_expression_is_kept_a_docstring_is_not() -> None:
    assert stream('x = "a"\n') == ["Assign", "Name", "str"]
    assert stream('"""doc"""\nx = 1\n') == ["Assign", "Name", "num"]
    assert stream('"a" + b\n') == ["Expr", "BinOp", "str", "Add", "Name"]


def test_attribute_access_spelled_with_getattr_and_the_like_is_plain_attribute_access() -> None:
    for plain, spelled in (
        ("y = x.grad\n", ['y = getattr(x, "grad")', 'y = getattr(x, "grad", 0.0)', "y = vars(x)['grad']"]),
        ("y = x.grad\n", ['y = x.__dict__["grad"]', 'y = object.__getattribute__(x, "grad")']),
        ("y = x.grad\n", ['y = x.__getattribute__("grad")', 'y = operator.attrgetter("grad")(x)']),
        ("y = x.a.b\n", ['y = attrgetter("a.b")(x)', 'y = getattr(getattr(x, "a"), "b")']),
        ("x.grad = v\n", ['setattr(x, "grad", v)', 'object.__setattr__(x, "grad", v)', "vars(x)['grad'] = v"]),
        ("x.grad = v\n", ['x.__setattr__("grad", v)', 'x.__dict__["grad"] = v', 'builtins.setattr(x, "grad", v)']),
        ("del x.grad\n", ['delattr(x, "grad")', 'object.__delattr__(x, "grad")', 'del x.__dict__["grad"]']),
        ("x.grad += g * y.grad\n", ['setattr(x, "grad", getattr(x, "grad") + g * getattr(y, "grad"))']),
        ("x.grad += g\n", ["x.grad = x.grad + g", "vars(x)['grad'] = x.__dict__['grad'] + g"]),
        ("out._backward()\n", ['getattr(out, "_backward")()']),
    ):
        for other in spelled:
            assert stream(other + "\n") == stream(plain), other
    # Only a literal name that could be written after the dot, and only the forms that read it.
    for kept in (
        "y = getattr(x, name)",
        'y = getattr(x, "not a name")',
        'y = getattr(x, "class")',
        'y = getattr(x, "grad", default)',
        'y = hasattr(x, "grad")',
        'y = x.get("grad")',
        'y = setattr(x, "grad", v)',
        'y = attrgetter("grad", "data")(x)',
    ):
        assert stream(kept + "\n") != stream("y = x.grad\n"), kept
    assert stream("x.grad = g + x.grad\n") != stream("x.grad += g\n")  # the order of an operation is code


def test_an_engine_and_its_copy_spelled_with_getattr_and_setattr_score_alike() -> None:
    for name in ("ana_ruiz", "eli_novak", "gus_lindqvist"):
        original = independent()[name]
        copy = reflect(original)
        assert "setattr(" in copy and "getattr(" in copy
        reads = [n for n in ast.walk(ast.parse(copy)) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)]
        assert not any(n.attr == "grad" for n in reads)  # `a.data, a.grad = ...` has no setattr form
        report = build([Source(name, original), Source("copy", copy)], [REFERENCE])
        assert report.pairs[0].score >= THRESHOLD and report.flagged, report.pairs[0]


def test_tokens_point_back_at_their_text() -> None:
    source = "x = 1\nif x:\n    y = 'é' + x  # c\n"
    for token in normalise(source).items:
        piece = source[token.start : token.end]
        if token.text == "Name":
            assert piece.isidentifier()
        elif token.end > token.start:
            assert piece and not piece[0].isspace()
    plus = next(t for t in normalise(source).items if t.text == "BinOp")
    assert source[plus.start : plus.end] == "'é' + x" and source.index("'é'") == plus.start


def test_a_file_python_cannot_parse_is_still_read_up_to_the_error() -> None:
    source = 'def f(a):\n    return a + 1\ns = """never closed\n'
    tokens = normalise(source)
    assert "line 3" in tokens.loose
    assert [t.text for t in tokens.items][:4] == ["FunctionDef", "arguments", "arg", "Return"]


# --- fingerprints ---------------------------------------------------------------------------------


def test_winnowing_keeps_one_fingerprint_per_window() -> None:
    hashes = [5, 3, 8, 1, 9, 4, 7, 2, 6, 0, 11, 12]
    chosen = winnow(hashes, 4)
    for start in range(len(hashes) - 4 + 1):
        assert any(start <= at < start + 4 for at in chosen)  # every window has one
    assert chosen == sorted(set(chosen))
    assert winnow([], 4) == [] and winnow([3, 1, 1], 4) == [2]  # rightmost of equals


def test_a_shared_run_of_the_guaranteed_length_is_always_found() -> None:
    shared = "\n".join(f"v{i} = w{i} * {i} + (u{i} - {i}) / q" for i in range(4))
    for pad in range(6):
        left = "\n".join(f"def f{j}(a):\n    return a ** {j}" for j in range(pad)) + "\n" + shared + "\n"
        right = "class C:\n    pass\n" * (pad + 1) + shared + "\nprint(1)\n"
        assert len(normalise(shared).items) >= K + WINDOW - 1
        a, b = fingerprint("a", left, frozenset()), fingerprint("b", right, frozenset())
        assert a.prints & b.prints, pad


def test_base_code_is_taken_out_of_every_file() -> None:
    starter = STARTER.read_text()
    base = base_hashes([starter])
    only_starter = fingerprint("s", starter, base)
    assert not only_starter.prints and only_starter.own_tokens == 0
    engine = next(iter(independent().values()))
    with_starter = fingerprint("e", engine + "\n" + starter, base)
    alone = fingerprint("e", engine, base)
    # Only the few k-grams that straddle the seam between the two are new.
    assert alone.prints <= with_starter.prints
    assert len(with_starter.prints - alone.prints) <= K // 2, "more than the seam"


def test_the_same_files_give_the_same_report_in_any_process() -> None:
    """Python salts str hashes per process; fingerprints must not depend on it."""
    script = (
        "import sys, pathlib; sys.path.insert(0, sys.argv[1]);"
        "from grader.similarity.report import Source, build, to_json;"
        "files = sorted(pathlib.Path(sys.argv[2]).glob('*/autograd_lab.py'));"
        "print(to_json(build([Source(p.parent.name, p.read_text()) for p in files], [])))"
    )
    outputs = set()
    for seed in ("1", "2", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script, str(REPO), str(CLASS)], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    rows = json.loads(outputs.pop())["pairs"]
    n = len(independent())
    assert len(rows) == n * (n - 1) // 2 and rows[0]["score"] > 0


def test_kgram_hashes_depend_on_the_normalised_tokens_only() -> None:
    assert kgram_hashes(normalise("a = b + c * d - e / f ** g\n")) == kgram_hashes(
        normalise("x=y+z*w-v/u**t # same shape\n")
    )


# --- the class ------------------------------------------------------------------------------------


def test_every_planted_copy_ranks_above_every_independent_pair() -> None:
    sources, planted = planted_class()
    report = build(sources, [REFERENCE])
    copy_names = {name for pair in planted for name in pair} - set(independent())
    ranked = [frozenset((p.a, p.b)) for p in report.pairs]
    scores = {frozenset((p.a, p.b)): p.score for p in report.pairs}
    independent_pairs = [frozenset(pair) for pair in combinations(independent(), 2)]
    lowest_planted = min(scores[pair] for pair in planted)
    highest_independent = max(scores[pair] for pair in independent_pairs)
    assert lowest_planted > highest_independent, (lowest_planted, highest_independent)
    assert lowest_planted >= THRESHOLD > highest_independent
    positions = {pair: i for i, pair in enumerate(ranked)}
    assert max(positions[p] for p in planted) < min(positions[p] for p in independent_pairs)
    flagged = {frozenset((p.a, p.b)) for p in report.flagged}
    assert flagged == planted  # nothing else, not even a copy against an unrelated engine
    assert copy_names and not report.groups


def test_starter_code_pasted_everywhere_raises_no_pair_once_it_is_base_code() -> None:
    starter = STARTER.read_text()

    def paste(text: str) -> str:
        at = text.find('\nif __name__ == "__main__":')
        return text + "\n\n" + starter if at < 0 else text[:at] + "\n\n" + starter + text[at:]

    sources = [Source(name, paste(text)) for name, text in independent().items()]
    without = build(sources, [REFERENCE])
    assert without.flagged, "the pasted starter code should look like copying when it is not base code"
    report = build(sources, [REFERENCE, Source("starter_helpers.py", starter)])
    assert not report.flagged, report.pairs[:3]
    alone = build([Source(n, t) for n, t in independent().items()], [REFERENCE])
    assert report.pairs[0].score <= alone.pairs[0].score + 0.02  # as if nobody had pasted it


def test_three_copies_of_one_engine_make_one_group() -> None:
    engines = independent()
    name = "ana_ruiz"
    sources = [Source(n, t) for n, t in engines.items()]
    sources += [Source("copy_one", disguise(engines[name], 7)), Source("copy_two", disguise(engines[name], 8))]
    report = build(sources, [REFERENCE])
    assert report.groups == (("ana_ruiz", "copy_one", "copy_two"),)
    page = render_html(report, title="t")
    assert "Group 1: 3 submissions" in page


def test_clusters_are_groups_of_three_or_more_only() -> None:
    pairs = [Pair("a", "b", 0.9, 0.9, 0.9), Pair("b", "c", 0.6, 0.6, 0.6), Pair("d", "e", 0.95, 0.9, 0.95)]
    pairs += [Pair("c", "d", 0.2, 0.2, 0.2)]
    assert clusters(pairs, 0.5) == [("a", "b", "c")]
    assert clusters(pairs, 0.1) == [("a", "b", "c", "d", "e")]


def test_a_file_with_almost_no_code_of_its_own_scores_nothing() -> None:
    starter = STARTER.read_text()
    tiny = "class Value:\n    pass\n"
    report = build([Source("tiny", tiny), Source("starter_only", starter), Source("x", tiny)], [Source("s", starter)])
    assert all(p.score == 0 for p in report.pairs)
    assert set(report.too_small) == {"tiny", "x"}
    assert [m.name for m in report.mostly_base] == ["starter_only"]  # its own finding, not too small
    assert len(fingerprint("t", tiny, frozenset()).prints) < MIN_PRINTS


# --- the outputs ----------------------------------------------------------------------------------


def test_the_json_is_every_pair_highest_first() -> None:
    sources, _ = planted_class()
    data = json.loads(to_json(build(sources, [REFERENCE])))
    rows = data["pairs"]
    n = len(sources)
    assert data["version"] == 2 and data["threshold"] == THRESHOLD
    assert len(rows) == n * (n - 1) // 2
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
    assert set(rows[0]) == {"a", "b", "score", "a_share", "b_share", "holder"}
    assert all(0 <= r["score"] <= 1 and r["score"] == max(r["a_share"], r["b_share"]) for r in rows)


def test_the_page_escapes_what_students_wrote_and_loads_nothing() -> None:
    engine = independent()["ben_cho"]
    hostile = engine + '\n# </pre><script>alert(1)</script><img src="http://evil.example/x">\n'
    name = '<b onmouseover="x()">mallory</b>'
    report = build([Source(name, hostile), Source("copy", disguise(hostile, 3))], [REFERENCE])
    page = render_html(report, title="A8 <similarity>")
    assert report.flagged
    assert "<script>" not in page and "<img" not in page and "<b onmouseover" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b onmouseover=" in page
    assert "similarity, not misconduct" in page
    tags = Tags()
    tags.feed(page)
    assert not tags.seen & {"script", "img", "link", "iframe", "object", "embed", "b"}
    assert all(not value.startswith(("http:", "https:", "//")) for value in tags.links), tags.links
    assert "@import" not in page and "url(" not in page
    assert '<mark class="shared"' in page


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.add(tag)
        self.links += [value or "" for key, value in attrs if key in ("href", "src", "action")]


def test_the_side_by_side_marks_the_shared_code_in_both_files() -> None:
    engines = independent()
    copy = disguise(engines["cleo_marsh"], 1)
    report = build([Source("cleo_marsh", engines["cleo_marsh"]), Source("copy", copy)], [REFERENCE])
    page = render_html(report, title="t")
    assert page.count('<details id="pair-1"') == 1
    left, right = page.split('aria-label="cleo_marsh"')[1], page.split('aria-label="copy"')[1]
    assert left.count('<mark class="shared"') > 20 and right.count('<mark class="shared"') > 20
    assert "of its own code found in the other" in page


def test_the_class_page_section_reads_back_and_knows_when_it_is_stale() -> None:
    sources, _ = planted_class()
    report = build(sources, [REFERENCE])
    digest = content_digest([("a", "1"), ("b", "2")])
    meta = to_meta(report, digest)
    current = section(meta, digest=digest, href="similarity.html")
    assert current is not None and not current.stale and current.flagged == len(report.flagged)
    assert current.top[0].score.endswith("%") and current.contained == len(report.contained)
    older = json.loads(meta)
    del older["contained"], older["mostly_reference"]
    assert section(json.dumps(older), digest=digest, href="x") is not None  # a headline stored before them
    changed = section(meta, digest=content_digest([("a", "1"), ("b", "3")]), href="similarity.html")
    assert changed is not None and changed.stale
    for broken in ("", "{", "[]", '{"digest": 1}', json.dumps({**json.loads(meta), "groups": [[1]]})):
        assert section(broken, digest=digest, href="x") is None


@pytest.mark.parametrize("name", sorted(HAND_COPIED_FROM))
def test_the_hand_made_copies_are_disguised_and_still_run(name: str) -> None:
    copy = (HAND_COPIES / name / "autograd_lab.py").read_text()
    original = independent()[HAND_COPIED_FROM[name]]
    assert copy != original and stream(copy) != stream(original)  # reordered and padded, not just renamed
    done = subprocess.run(
        [sys.executable, str(HAND_COPIES / name / "autograd_lab.py")], capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-500:]


# --- found by a hostile review --------------------------------------------------------------------


def test_a_line_of_unclosed_quotes_is_left_out_not_read_quadratically() -> None:
    """CPython 3.11's tokenize module rescans a line at every unclosed quote (64 KB took 50 s);
    the parser's own tokenizer does not, and the broken line is left out."""
    hostile = "y = 2\nx = " + "'\\" * 32_000 + "x\nz = y\n"
    tokens = normalise(hostile)
    assert "line 2" in tokens.loose and [t.text for t in tokens.items].count("Assign") == 2


def test_line_endings_and_punctuation_do_not_hide_a_copy() -> None:
    original = independent()["ana_ruiz"]
    lone_cr = "# my lab\r" + original.replace("\n", "\r")  # Python runs it; the tokenizer saw one comment
    crlf = original.replace("\n", "\r\n")
    semicolons = "\n".join(line + ";" if line.strip().endswith(")") else line for line in original.split("\n"))
    commas = original.replace(", self)", ", self,)").replace("(self, other)", "(self, other,)")
    for disguised in (lone_cr, crlf, semicolons, commas):
        report = build([Source("a", original), Source("b", disguised)], [REFERENCE])
        assert report.pairs[0].score >= 0.95, report.pairs[0]


def test_a_crlf_file_is_shown_without_its_carriage_returns() -> None:
    original = independent()["cleo_marsh"]
    report = build([Source("a", original), Source("b", original.replace("\n", "\r\n"))], [REFERENCE])
    page = render_html(report, title="t")
    assert "\\x0d" not in page and "\r" not in page and report.flagged


def test_a_stored_headline_with_numbers_out_of_range_is_ignored() -> None:
    good = json.loads(to_meta(build([Source("a", "x = 1\n")], []), "d"))
    for bad in ({"threshold": 1e999}, {"threshold": 7}, {"compared": 1e999}):
        assert section(json.dumps({**good, **bad}), digest="d", href="x") is None
    assert section(json.dumps(good).replace('"threshold": 0.5', '"threshold": NaN'), digest="d", href="x") is None


def test_a_marked_run_names_the_line_its_code_starts_on_in_the_other_file() -> None:
    engines = independent()
    mine = engines["ana_ruiz"]
    theirs = (HAND_COPIES / "kim_tran" / "autograd_lab.py").read_text()
    report = build([Source("ana_ruiz", mine), Source("kim_tran", theirs)], [REFERENCE])
    regions = shared_regions(report.prints["ana_ruiz"], report.prints["kim_tran"], theirs, report.base)
    assert regions
    their_lines = theirs.split("\n")
    their_starts = [0]
    for line in their_lines:
        their_starts.append(their_starts[-1] + len(line) + 1)
    mine_items, their_items = report.prints["ana_ruiz"].tokens.items, report.prints["kim_tran"].tokens.items
    for region in regions:
        kinds = {t.text for t in mine_items if t.start == region.start and t.end > t.start}
        line_start, line_end = their_starts[region.other_line - 1], their_starts[region.other_line]
        named = {t.text for t in their_items if line_start <= t.start < line_end}
        assert kinds & named, (region, their_lines[region.other_line - 1])  # the run begins on that line
