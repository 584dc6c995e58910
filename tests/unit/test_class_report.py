"""The class report (OUT/index.html): statistics, histogram, pass rates, misconceptions, triage, escaping."""

from __future__ import annotations

import dataclasses
import html
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import pytest
from result_builders import make_check, make_submission

from grader.report.class_report import (
    BINS,
    GRADER_FAULT_NOTE,
    bin_counts,
    bin_index,
    render_class_report,
    write_class_report,
)
from grader.results import (
    CheckResult,
    Diagnosis,
    LoadReport,
    Outcome,
    Status,
    SubmissionResult,
    Visibility,
)

XSS = "<script>alert(1)</script>"
TAGS = ("api", "reuse")
TITLES = {"api": "Value API", "reuse": "Reused values accumulate"}


# --- builders -----------------------------------------------------------------------------------


def check(
    check_id: str,
    section: str,
    *,
    outcome: Outcome = Outcome.PASSED,
    points: float | None = None,
    max_points: float = 5.0,
    visibility: Visibility = Visibility.VISIBLE,
) -> CheckResult:
    return make_check(
        check_id, section, outcome=outcome, points=points, max_points=max_points, visibility=visibility,
        title=f"Title of {check_id}", message="",
    )  # fmt: skip


def checks(
    fields: Outcome = Outcome.PASSED, ops: Outcome = Outcome.PASSED, reuse: Outcome = Outcome.PASSED
) -> tuple[CheckResult, ...]:
    """Three checks, 5 points each: two in "api", one hidden in "reuse"."""
    return (
        check("value_fields", "api", outcome=fields),
        check("operators", "api", outcome=ops),
        check("self_reuse", "reuse", outcome=reuse, visibility=Visibility.HIDDEN),
    )


def submission(student: str, found: tuple[CheckResult, ...] | None = None, **overrides: Any) -> SubmissionResult:
    found = checks() if found is None else found
    fields: dict[str, Any] = {"student": student, "seed": 1, "execution_time": 1.0}
    return make_submission(found, {tag: TITLES[tag] for tag in TAGS}, **{**fields, **overrides})


def diagnosis(operator: str, misconception: str = "", family: str = "ACC") -> Diagnosis:
    return Diagnosis(
        operator=operator,
        family=family if operator else "",
        misconception=misconception or f"Misconception behind {operator or 'nothing'}.",
        handout="",
        evidence="",
        share=1.0,
        checks=(),
    )


def infra(student: str) -> SubmissionResult:
    # A grader failure: the score field is meaningless and must never reach a statistic.
    return submission(
        student,
        checks(Outcome.NOT_RUN, Outcome.NOT_RUN, Outcome.NOT_RUN),
        status=Status.INFRA_ERROR,
        score=999.0,
        status_detail="The container could not start.",
    )


def klass() -> list[SubmissionResult]:
    """Scores 15, 10, 5, 0 (scored), one infra error; a timeout and a review flag among them."""
    return [
        submission("ada"),
        submission("bob", checks(ops=Outcome.FAILED), diagnoses=(diagnosis("mul_no_upstream"),)),
        submission(
            "cy",
            checks(ops=Outcome.FAILED, reuse=Outcome.FAILED),
            diagnoses=(diagnosis("mul_no_upstream"), diagnosis("grad_overwrite", family="ACC")),
            review=("Step-5 note says the file was written with help.",),
        ),
        submission(
            "dee",
            checks(Outcome.FAILED, Outcome.NOT_RUN, Outcome.NOT_RUN),
            status=Status.TIMEOUT,
            status_detail="The probe ran past its 10 s deadline.",
            diagnoses=(diagnosis(""),),
        ),
        infra("eve"),
    ]


# --- HTML helpers -------------------------------------------------------------------------------


class _Page(HTMLParser):
    """Collects tags, text and links, and fails on unbalanced tags."""

    VOID: ClassVar[frozenset[str]] = frozenset({"meta", "br", "hr", "img", "input", "link"})

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.starts: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def tags(self, name: str) -> list[dict[str, str | None]]:
        return [attrs for tag, attrs in self.starts if tag == name]


def parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    assert parser.open == [], f"unclosed tags: {parser.open}"
    return parser


def section(page: str, heading_id: str) -> str:
    """The markup of one <section>, found by the id of its heading."""
    match = re.search(rf'<section aria-labelledby="{heading_id}">(.*?)</section>', page, re.S)
    assert match, heading_id
    return match.group(1)


def stat(page: str, label: str) -> str:
    match = re.search(rf"<dt>{label}</dt><dd>([^<]*)</dd>", page)
    assert match, label
    return match.group(1)


def hrefs(fragment: str) -> list[str]:
    return re.findall(r'<a href="([^"]*)">', fragment)


# --- statistics ---------------------------------------------------------------------------------


def test_statistics_cover_scored_submissions_only() -> None:
    page = render_class_report(klass(), title="A8")
    assert stat(page, "Submissions") == "5"
    assert stat(page, "Graded") == "3"  # the timeout and the infra error are not GRADED
    assert stat(page, "Mean score") == "7.5"  # (15 + 10 + 5 + 0) / 4; the infra 999 would skew it
    assert stat(page, "Median score") == "7.5"
    assert stat(page, "Highest score") == "15"
    assert stat(page, "Maximum possible") == "15"
    assert "1 grader failure (no score) is excluded from every statistic." in page


def test_mean_rounds_to_two_decimals() -> None:
    results = [submission("a"), submission("b"), submission("c", checks(ops=Outcome.FAILED))]
    page = render_class_report(results, title="t")
    assert stat(page, "Mean score") == "13.33"
    assert stat(page, "Median score") == "15"
    assert "excluded" not in page  # nothing to exclude, nothing said


# --- histogram ----------------------------------------------------------------------------------


def test_bin_edges() -> None:
    assert bin_index(0, 15) == 0
    assert bin_index(1.5, 15) == 1  # a lower edge belongs to the bin it opens
    assert bin_index(1.49, 15) == 0
    assert bin_index(15, 15) == BINS - 1  # full marks go in the top bin, not an eleventh
    assert bin_index(0.1 + 0.7, 1) == 8  # the sum is 0.7999999999999999: still 8 tenths of the maximum
    assert bin_index(-1, 15) == 0


def test_histogram_has_a_bar_per_bin_and_counts_every_scored_submission() -> None:
    results = klass()
    page = render_class_report(results, title="A8")
    svg = re.search(r"<svg.*?</svg>", page, re.S)
    assert svg
    bars = re.findall(r'<rect class="bar"[^>]*><title>([^<]*)</title></rect>', svg.group(0))
    assert len(bars) == BINS
    counts = [int(title.rsplit(": ", 1)[1].split()[0]) for title in bars]
    assert sum(counts) == 4  # the infra error is no bar's
    assert counts == bin_counts([r for r in results if r.scored])
    assert counts[0] == 1 and counts[3] == 1 and counts[6] == 1 and counts[9] == 1
    assert bars[9] == "13.5 to 15: 1 submission"


def test_histogram_is_accessible_and_has_a_data_table() -> None:
    parsed = parse(render_class_report(klass(), title="A8"))
    (svg,) = parsed.tags("svg")
    assert svg["role"] == "img"
    assert svg["aria-labelledby"] == "histogram-title histogram-desc"
    assert {"histogram-title", "histogram-desc"} <= {attrs.get("id") for _, attrs in parsed.starts}
    page = render_class_report(klass(), title="A8")
    table = re.search(r'<table class="histogram-data">(.*?)</table>', page, re.S)
    assert table
    assert len(re.findall(r'<td class="num">\d+</td>', table.group(1))) == BINS
    assert "Score (out of 15)" in page and ">Submissions</text>" in page
    assert "0 to under 1.5: 1; 4.5 to under 6: 1; 9 to under 10.5: 1; 13.5 to 15: 1." in page  # the <desc>


def test_bar_heights_scale_to_the_tallest_bin() -> None:
    results = [submission("a"), submission("b"), submission("c", checks(ops=Outcome.FAILED))]
    page = render_class_report(results, title="t")
    heights = [float(h) for h in re.findall(r'<rect class="bar"[^>]*height="([\d.]+)"', page)]
    assert heights[-1] == max(heights) > 0
    assert heights[6] == pytest.approx(heights[-1] / 2)
    assert heights.count(0.0) == BINS - 2


# --- sections and checks ------------------------------------------------------------------------


def test_section_pass_rates_and_means() -> None:
    page = section(render_class_report(klass(), title="A8"), "sections-title")
    api = re.search(r"Value API.*?</tr>", page, re.S)
    reuse = re.search(r"Reused values accumulate.*?</tr>", page, re.S)
    assert api and reuse
    # api: ada 10, bob 5, cy 5, dee 0 -> 1 of 4 full, mean 5; reuse: ada, bob full -> 2 of 4, mean 2.5
    assert re.findall(r'<td class="num">([^<]*)</td>', api.group(0)) == ["1 / 4", "25%", "5", "10"]
    assert re.findall(r'<td class="num">([^<]*)</td>', reuse.group(0)) == ["2 / 4", "50%", "2.5", "5"]


def check_rows(page: str) -> list[tuple[str, str, str]]:
    body = section(page, "checks-title")
    return re.findall(
        r"<code>([^<]*)</code></th>.*?<td class=\"num\">([^<]*)</td>\s*<td class=\"num\">([^<]*)</td>", body, re.S
    )


def test_check_pass_rates_most_failed_first() -> None:
    rows = check_rows(render_class_report(klass(), title="A8"))
    # operators failed by bob and cy, not run for dee: 1/3; self_reuse 2/3 (hidden, still listed);
    # value_fields failed only by dee: 3/4. The infra error ran nothing and counts nowhere.
    assert rows == [
        ("operators", "1 / 3", "33%"),
        ("self_reuse", "2 / 3", "67%"),
        ("value_fields", "3 / 4", "75%"),
    ]


def test_equal_rates_put_more_failures_first_and_never_run_last() -> None:
    extra = (check("finite_diff", "reuse", outcome=Outcome.NOT_RUN),)
    results = [
        submission("a", checks(fields=Outcome.FAILED, ops=Outcome.FAILED) + extra),
        submission("b", checks(fields=Outcome.NOT_RUN, ops=Outcome.FAILED) + extra),
    ]
    rows = check_rows(render_class_report(results, title="t"))
    # Both api checks pass 0%; operators failed twice, value_fields once, so operators leads despite rubric order.
    assert [row[0] for row in rows] == ["operators", "value_fields", "self_reuse", "finite_diff"]
    assert rows[-1][1:] == ("0 / 0", "\u2014")


def test_hidden_check_titles_are_shown_to_the_instructor() -> None:
    page = section(render_class_report(klass(), title="A8"), "checks-title")
    assert "Title of self_reuse" in page and "<td>hidden</td>" in page


# --- misconceptions -----------------------------------------------------------------------------


def test_misconceptions_counted_per_operator() -> None:
    results = klass() + [
        submission(
            "fay",
            # The same operator twice counts the submission once.
            diagnoses=(diagnosis("mul_no_upstream", misconception="A later wording."),) * 2,
        )
    ]
    page = section(render_class_report(results, title="A8"), "misconceptions-title")
    rows = re.findall(r'<tr>\s*<th scope="row">(\w*) <code>(\w+)</code></th>.*?<td class="num">(\d+)</td>', page, re.S)
    assert rows == [("ACC", "mul_no_upstream", "3"), ("ACC", "grad_overwrite", "1")]
    assert page.count("<tr>") == 1 + len(rows)  # header row; dee's unmatched diagnosis gets no row
    assert "Misconception behind mul_no_upstream." in page  # the first occurrence's wording
    assert "A later wording." not in page
    assert "matched no known pattern: 1." in page  # dee's unmatched diagnosis


def test_misconception_links_at_most_five_students() -> None:
    results = [submission(f"s{n}", diagnoses=(diagnosis("seed_zero"),)) for n in range(7)]
    page = section(render_class_report(results, title="t"), "misconceptions-title")
    assert hrefs(page) == [f"s{n}/feedback.html" for n in range(5)]
    assert "and 2 more" in page


def test_misconceptions_ignore_grader_failures() -> None:
    results = [submission("a"), dataclasses.replace(infra("zed"), diagnoses=(diagnosis("x"),))]
    page = section(render_class_report(results, title="t"), "misconceptions-title")
    assert "No submission matched a known misconception." in page


# --- needs a human ------------------------------------------------------------------------------


def test_needs_a_human_lists_infra_first_then_timeouts_then_reviews() -> None:
    results = klass() + [
        submission("gus", load=LoadReport(ok=True, mode="definitions", class_name="Value", notices=("skipped",)))
    ]
    page = section(render_class_report(results, title="A8"), "humans-title")
    assert hrefs(page) == ["eve/feedback.html", "dee/feedback.html", "cy/feedback.html"]
    assert html.unescape(page).count(GRADER_FAULT_NOTE) == 1  # the timeout is the student's, not the grader's
    assert "The container could not start." in page
    assert "The probe ran past its 10 s deadline." in page
    assert "Step-5 note says the file was written with help." in page
    assert "ada/" not in page and "bob/" not in page and "gus/" not in page


def test_nobody_needs_a_human_in_a_clean_class() -> None:
    page = section(render_class_report([submission("ada")], title="t"), "humans-title")
    assert "Every submission graded normally" in page
    assert hrefs(page) == []


# --- links and escaping -------------------------------------------------------------------------


def test_every_student_links_to_their_feedback_page() -> None:
    page = section(render_class_report(klass(), title="A8"), "all-title")
    assert hrefs(page) == [f"{name}/feedback.html" for name in ("ada", "bob", "cy", "dee", "eve")]


def test_links_are_url_quoted() -> None:
    page = render_class_report([submission("o'brien & co/x y")], title="t")
    assert "o%27brien%20%26%20co%2Fx%20y/feedback.html" in hrefs(section(page, "all-title"))


def test_custom_feedback_href_receives_the_quoted_id() -> None:
    page = render_class_report([submission("a b")], title="t", feedback_href=lambda s: f"/fb/{s}.html")
    assert hrefs(section(page, "all-title")) == ["/fb/a%20b.html"]


def test_student_controlled_text_is_escaped() -> None:
    evil = submission(
        XSS,
        checks(ops=Outcome.FAILED),
        status=Status.UNGRADABLE,
        status_detail=f"detail {XSS}",
        review=(f"review {XSS}",),
        diagnoses=(diagnosis("mul_no_upstream", misconception=f"thinks {XSS}"),),
    )
    page = render_class_report([evil], title=f"title {XSS}")
    assert "<script>" not in page
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    for text in ("title ", "detail ", "review ", "thinks "):
        assert text + escaped in page
    assert f">{escaped}</a>" in page  # the student id as link text
    parsed = parse(page)
    assert "script" not in {tag for tag, _ in parsed.starts}


def test_page_parses_as_balanced_html() -> None:
    parsed = parse(render_class_report(klass(), title="A8"))
    names = {tag for tag, _ in parsed.starts}
    assert {"html", "head", "style", "main", "svg", "table"} <= names
    assert not parsed.tags("script") and not parsed.tags("link")  # self-contained: no external resources
    assert all(not (attrs.get("src") or "").startswith("http") for _, attrs in parsed.starts)


def test_sections_appear_in_the_promised_order() -> None:
    page = render_class_report(klass(), title="A8")
    order = ["<h1>", "distribution-title", "sections-title", "checks-title", "misconceptions-title", "humans-title"]
    positions = [page.index(marker) for marker in order + ["all-title"]]
    assert positions == sorted(positions)


# --- edge cases ---------------------------------------------------------------------------------


def test_empty_class_renders_a_no_submissions_page() -> None:
    page = render_class_report([], title="Nobody yet")
    parse(page)
    assert "<title>Nobody yet</title>" in page
    assert "No submissions" in page
    assert "<svg" not in page and "<table" not in page


def test_class_of_only_grader_failures_has_no_statistics() -> None:
    page = render_class_report([infra("a"), infra("b")], title="t")
    parse(page)
    assert stat(page, "Mean score") == "\u2014"
    assert "2 grader failures (no score) are excluded" in page
    assert "<svg" not in page and "No scored submissions" in page
    assert hrefs(section(page, "humans-title")) == ["a/feedback.html", "b/feedback.html"]


def test_full_table_has_a_column_per_section() -> None:
    page = section(render_class_report(klass(), title="A8"), "all-title")
    assert re.findall(r'<th scope="col" class="num" title="([^"]*)">(\w+)</th>', page) == [
        ("Value API", "api"),
        ("Reused values accumulate", "reuse"),
    ]
    bob = re.search(r'bob/feedback.html">bob</a></th>(.*?)</tr>', page, re.S)
    eve = re.search(r'eve/feedback.html">eve</a></th>(.*?)</tr>', page, re.S)
    assert bob and eve
    assert re.findall(r'<td class="num">([^<]*)</td>', bob.group(1)) == ["10 / 15", "5", "5"]
    assert re.findall(r'<td class="num">([^<]*)</td>', eve.group(1)) == ["\u2014 / 15", "\u2014", "\u2014"]


# --- writing ------------------------------------------------------------------------------------


def test_write_class_report_writes_the_rendered_page(tmp_path: Path) -> None:
    target = tmp_path / "out" / "index.html"
    write_class_report(klass(), target, title="A8")
    assert target.read_text(encoding="utf-8") == render_class_report(klass(), title="A8")
    assert os.stat(target).st_mode & 0o777 == 0o644
    assert [p.name for p in target.parent.iterdir()] == ["index.html"]  # no temporary file left behind


def test_write_class_report_leaves_the_old_page_when_rendering_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "index.html"
    target.write_text("previous", encoding="utf-8")

    def broken(src: object, dst: object) -> None:
        raise OSError("disk full")

    # Fail at the last step: the atomic writer must keep the old file and remove its temporary.
    monkeypatch.setattr("grader.report.view.os.replace", broken)
    with pytest.raises(OSError, match="disk full"):
        write_class_report(klass(), target, title="A8")
    monkeypatch.undo()
    assert target.read_text(encoding="utf-8") == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["index.html"]
