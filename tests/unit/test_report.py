"""Report writers: HTML feedback, results.json, grades.csv and the terminal summary.

The golden file `tests/unit/golden/feedback_full_marks.html` is the renderer's output for
`full_marks()`. After an intended change to the page, regenerate it and review the diff:

    UPDATE_GOLDEN=1 python3 -m pytest tests/unit/test_report.py -k golden
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import pytest
from jinja2 import StrictUndefined
from result_builders import make_check, make_submission

from grader.plan import seed_label
from grader.report import (
    render_feedback_html,
    render_summary,
    to_gradescope,
    write_feedback_html,
    write_grades_csv,
    write_gradescope,
)
from grader.report.gradescope import dumps_gradescope
from grader.report.html import TEMPLATE, CheckCard, environment
from grader.report.markdown import render_markdown
from grader.report.view import INFRA_BANNER, format_number, status_text
from grader.results import (
    CheckResult,
    Comparison,
    Diagnosis,
    LoadReport,
    Outcome,
    Status,
    SubmissionResult,
    Visibility,
)
from grader.results_io import result_from_json, result_to_json, summary_from_json

GOLDEN = Path(__file__).parent / "golden" / "feedback_full_marks.html"
TAGS = ("api", "part1_trace", "a6_parity", "reuse", "bug_injection", "finite_difference")
SECRET = "SECRET-HIDDEN-INPUT-7f3a"
XSS = "<script>alert(1)</script>"
QUOTED = 'said "hi"'

SECTION_TITLES = {
    "api": "Value API",
    "part1_trace": "Part 1 trace: L = (a*b + c) * relu(d)",
    "a6_parity": "A6 parity: two-input neuron",
    "reuse": "Reused values accumulate",
    "bug_injection": "Your checks catch injected bugs",
    "finite_difference": "Finite-difference agreement",
}


def check(
    check_id: str,
    section: str,
    *,
    points: float = 2.0,
    max_points: float = 2.0,
    outcome: Outcome = Outcome.PASSED,
    visibility: Visibility = Visibility.VISIBLE,
    **fields: Any,
) -> CheckResult:
    fields.setdefault("title", check_id.replace("_", " ").capitalize())
    return make_check(
        check_id, section, outcome=outcome, visibility=visibility, points=points, max_points=max_points, **fields
    )


def submission(checks: tuple[CheckResult, ...], **overrides: Any) -> SubmissionResult:
    return make_submission(checks, {tag: SECTION_TITLES[tag] for tag in TAGS}, **overrides)


def full_marks() -> SubmissionResult:
    checks = (
        check("value_fields", "api", built="Value(2.0) and its fields data, grad, _prev, _op."),
        check("operators", "api", points=3, max_points=3, built="a + b, a * b, a ** 2, a - b, a / b, 2 + a."),
        check(
            "forward_L",
            "part1_trace",
            built="L = (a*b + c) * relu(d) with a=2, b=3, c=1, d=1.5.",
            comparisons=(Comparison("L.data", "10.5", "10.5", True),),
        ),
        check(
            "grads_L",
            "part1_trace",
            points=4,
            max_points=4,
            built="L.backward() on the Part 1 graph.",
            comparisons=(
                Comparison("a.grad", "4.5", "4.5", True),
                Comparison("b.grad", "3.0", "3.0", True),
            ),
            output="L = 10.5\na.grad = 4.5\n",
        ),
        check("neuron_grads", "a6_parity", points=2.5, max_points=2.5, instances_passed=5, instances_total=5),
        check("neuron_hidden", "a6_parity", visibility=Visibility.HIDDEN, message="Correct on random inputs."),
        check("self_reuse", "reuse", built="c = (a + a) * a with a = 2."),
        check("catches_mutants", "bug_injection", points=5, max_points=5),
        check("finite_diff", "finite_difference", visibility=Visibility.AFTER_DUE_DATE),
    )
    return submission(checks, status_detail="Every check ran to completion.")


def with_failures() -> SubmissionResult:
    checks = (
        check("value_fields", "api"),
        check(
            "operators",
            "api",
            points=1.5,
            max_points=3,
            outcome=Outcome.PARTIAL,
            built="a - b and 2 - a.",
            message=f"Subtraction printed {XSS} and {QUOTED}.",
            hint="Reread the section on reflected operators.",
            output=f"debug {XSS} {QUOTED}\n" * 3,
            instances_passed=1,
            instances_total=2,
        ),
        check(
            "grads_L",
            "part1_trace",
            points=0,
            max_points=4,
            outcome=Outcome.FAILED,
            built="L.backward() on the Part 1 graph.",
            message="Two gradients are wrong.",
            comparisons=(
                Comparison("a.grad", "4.5", "1.5", False),
                Comparison("b.grad", "3.0", "1.5", False),
                Comparison("c.grad", "1.5", "1.5", True),
                Comparison("d.grad", "7.0", "0.0", False),
                Comparison("n1.grad", "1.5", "1.0", False),
            ),
            misconception="The multiply backward drops the upstream gradient.",
            hint="In __mul__, multiply by out.grad.",
        ),
        check(
            "neuron_hidden",
            "a6_parity",
            points=0,
            max_points=3,
            outcome=Outcome.FAILED,
            visibility=Visibility.HIDDEN,
            message="Gradients disagree with the reference on random inputs.",
            built=f"neuron with w = {SECRET}",
            comparisons=(Comparison(f"w.grad {SECRET}", SECRET, SECRET, False),),
            output=f"printed {SECRET}",
            misconception=f"diagnosed from {SECRET}",
            hint=f"hint about {SECRET}",
        ),
        check(
            "finite_diff_after",
            "finite_difference",
            points=0,
            max_points=2,
            outcome=Outcome.ERROR,
            visibility=Visibility.AFTER_DUE_DATE,
            message="Your code raised ZeroDivisionError.",
            built=SECRET,
            output=SECRET,
            comparisons=(Comparison(SECRET, "1", "2", False),),
        ),
        check("self_reuse", "reuse", points=0, outcome=Outcome.TIMEOUT, message="backward() did not finish in 2 s."),
        check("catches_mutants", "bug_injection", points=5, max_points=5),
    )
    return submission(
        checks,
        student='=HYPERLINK("http://x")',
        status_detail="Every check ran to completion.",
        load=LoadReport(
            ok=True,
            mode="definitions",
            class_name="Value",
            notices=("Top-level code after line 80 was skipped.", f"Notice with {XSS}."),
        ),
    )


def infra_error() -> SubmissionResult:
    checks = (check("value_fields", "api", points=0, outcome=Outcome.NOT_RUN, message="Not run."),)
    return submission(
        checks,
        student="grace",
        status=Status.INFRA_ERROR,
        score=0.0,
        status_detail="Docker daemon stopped responding while the container ran.",
    )


def load_failure() -> SubmissionResult:
    checks = tuple(
        check(f"c_{tag}", tag, points=0, outcome=Outcome.NOT_RUN, message="Not run: the file did not load.")
        for tag in TAGS
    )
    return submission(
        checks,
        student="alan",
        status=Status.NOT_LOADABLE,
        status_detail="the file does not load: SyntaxError: invalid syntax (line 42); no check could run",
        review=("The file does not load, so every check scored 0.",),
        load=LoadReport(
            ok=False,
            mode="failed",
            class_name="",
            error="SyntaxError: invalid syntax (autograd_lab.py, line 42)\n    def __add__(self other):",
        ),
    )


def self_check() -> SubmissionResult:
    visible = tuple(c for c in with_failures().checks if c.visibility is Visibility.VISIBLE)
    return submission(visible, visible_only=True, hidden_not_run=7)


ALL = {
    "full_marks": full_marks,
    "with_failures": with_failures,
    "infra_error": infra_error,
    "load_failure": load_failure,
    "self_check": self_check,
}


class _Balance(HTMLParser):
    """Fails on unclosed or mismatched tags: a template typo shows up here."""

    VOID: ClassVar[frozenset[str]] = frozenset({"meta", "br", "hr", "img", "input", "link"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()


def parse(html: str) -> _Balance:
    parser = _Balance()
    parser.feed(html)
    parser.close()
    assert parser.stack == [], parser.stack
    return parser


# ---------------------------------------------------------------- HTML


def test_environment_escapes_and_is_strict() -> None:
    env = environment()
    assert env.undefined is StrictUndefined
    assert callable(env.autoescape) and env.autoescape(TEMPLATE) is True


@pytest.mark.parametrize("name", sorted(ALL))
def test_html_is_well_formed_and_self_contained(name: str) -> None:
    html = render_feedback_html(ALL[name]())
    parser = parse(html)
    tags = {tag for tag, _ in parser.tags}
    assert html.startswith("<!DOCTYPE html>")
    assert ("html", {"lang": "en"}) in parser.tags
    assert "script" not in tags and "link" not in tags and "img" not in tags
    assert (
        "url(" not in html.replace("url(#", "")
        and "@import" not in html
        and "http://" not in html.replace("http://x", "")
    )
    assert "prefers-color-scheme: dark" in html and "@media print" in html
    assert "main" in tags and "h1" in tags


def test_html_escapes_untrusted_text() -> None:
    html = render_feedback_html(with_failures())
    assert XSS not in html
    assert QUOTED not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "said &#34;hi&#34;" in html
    assert "=HYPERLINK(&#34;http://x&#34;)" in html


def test_html_full_marks_content() -> None:
    html = render_feedback_html(full_marks())
    assert "Score: 24.5 / 24.5" in html
    assert "<caption>Points per section of the rubric</caption>" in html
    assert '<th scope="col">Section</th>' in html and '<th scope="row">' in html
    assert "3f9c2b7a1d0e" in html and "3f9c2b7a1d0e4" not in html  # short sha only
    assert "20240917" not in html  # the seed: never on a page students read
    assert "<details>" in html and "<summary>Your program's output (2 lines)</summary>" in html
    # Section order is the result's; numbering is section.check.
    assert html.index('id="check-1-1"') < html.index('id="check-2-1"') < html.index('id="check-6-1"')
    assert "Self-check" not in html


def test_html_failures_show_visible_details_in_order() -> None:
    html = render_feedback_html(with_failures())
    card = html[html.index('id="check-2-1"') : html.index('id="section-3"')]
    order = [
        "L.backward() on the Part 1 graph.",
        "Two gradients are wrong.",
        "<table",
        "d.grad",
        "Likely misconception:",
        "Hint:",
    ]
    positions = [card.index(text) for text in order]
    assert positions == sorted(positions)
    assert "1 of 2 instances passed" in html
    assert "Partly passed" in html and "Timed out" in html
    assert "Top-level code after line 80 was skipped." in html


def test_html_never_shows_hidden_details() -> None:
    html = render_feedback_html(with_failures())
    assert SECRET not in html
    hidden = html[html.index('id="check-3-1"') : html.index('id="section-4"')]
    assert "Gradients disagree with the reference on random inputs." in hidden
    assert "0 / 3 points" in hidden and "Failed" in hidden
    assert "<table" not in hidden and "<details" not in hidden and "Hint" not in hidden


@pytest.mark.parametrize("name", sorted(ALL))
def test_html_never_shows_the_seed(name: str) -> None:
    # Students read this page; with the seed and the rubric, anyone can draw the hidden inputs.
    result = ALL[name]()
    assert str(result.seed) not in render_feedback_html(result)
    assert str(result.seed) not in render_markdown(result)


def test_template_gates_hidden_details_on_its_own() -> None:
    """Even if the view layer copied hidden details in, the template must not print them."""
    leaky = CheckCard(
        anchor="check-1-1",
        number="1.1",
        title="t",
        points="0",
        max_points="1",
        outcome="failed",
        outcome_label="Failed",
        outcome_symbol="x",
        public=False,
        visibility_note="Hidden check",
        message="m",
        built=SECRET,
        comparisons=(Comparison(SECRET, SECRET, SECRET, False),),
        instances=SECRET,
        misconception=SECRET,
        hint=SECRET,
        output=SECRET,
        output_lines=1,
        notes=(SECRET,),
    )
    module = environment().get_template("_check.html.j2").module
    html = str(module.check_card(leaky, True))  # type: ignore[attr-defined]
    assert SECRET not in html and "m" in html


def test_html_infra_error_shows_banner_and_no_score() -> None:
    html = render_feedback_html(infra_error())
    assert INFRA_BANNER in html
    assert "Score:" not in html and "Points per section" not in html and "points</span>" not in html
    assert "Docker daemon stopped responding" in html


def test_html_load_failure_is_prominent() -> None:
    html = render_feedback_html(load_failure())
    assert "Your file could not be loaded" in html
    assert "SyntaxError: invalid syntax (autograd_lab.py, line 42)" in html
    assert html.index("could not be loaded") < html.index("Score by section")
    assert 'class="status status-not_loadable">Not loadable<' in html
    # The review flag is said in the load banner, never under a Step-5 heading: no note was read.
    flagged = html.index("Flagged for review by your instructor:</span> The file does not load")
    assert html.index("could not be loaded") < flagged < html.index("Score by section")
    assert "Step 5 note" not in html and "built their graphs without" not in html


def test_a_file_that_does_not_load_is_stored_and_read_back() -> None:
    result = load_failure()
    text = result_to_json(result)
    assert result_from_json(text) == result
    summary = summary_from_json(text)
    assert summary.status is Status.NOT_LOADABLE and summary.review == result.review


def test_html_self_check_mentions_hidden_not_run() -> None:
    assert "Self-check: 7 hidden checks were not run" in render_feedback_html(self_check())


def test_write_feedback_html(tmp_path: Path) -> None:
    target = tmp_path / "out" / "ada.html"
    write_feedback_html(full_marks(), target)
    assert target.read_text(encoding="utf-8") == render_feedback_html(full_marks())
    assert [p.name for p in target.parent.iterdir()] == ["ada.html"]  # no temp file left


def test_golden_full_marks() -> None:
    html = render_feedback_html(full_marks())
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(html, encoding="utf-8")
    assert html == GOLDEN.read_text(encoding="utf-8"), "run with UPDATE_GOLDEN=1 and review the diff"


# ---------------------------------------------------------------- results.json


def strict_loads(text: str) -> Any:
    def reject(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=reject)


@pytest.mark.parametrize("name", sorted(ALL))
def test_gradescope_is_strict_json(name: str) -> None:
    data = strict_loads(dumps_gradescope(ALL[name]()))
    assert data["visibility"] == "visible" and data["stdout_visibility"] == "hidden"
    assert isinstance(data["execution_time"], int) and data["execution_time"] == 3
    # The seed is the key to every hidden input: results.json carries a fingerprint of it only.
    assert "seed" not in data["extra_data"] and data["extra_data"]["seed_id"] == seed_label(20240917)
    assert "20240917" not in json.dumps(data)
    assert data["extra_data"]["rubric_sha"] == "3f9c2b7a1d0e4c5b6a7980f1e2d3c4b5a6978877"
    assert data["extra_data"]["runner"] == "docker"


def test_gradescope_tests_tags_numbers_visibility() -> None:
    result = with_failures()
    data = to_gradescope(result)
    assert data["score"] == result.score
    tests = data["tests"]
    assert len(tests) == len(result.checks)
    by_id = {t["extra_data"]["check_id"]: t for t in tests}
    for c in result.checks:
        t = by_id[c.check_id]
        assert t["tags"] == [c.section]
        assert t["name"] == c.title
        assert t["score"] == c.points and t["max_score"] == c.max_points
        assert t["status"] == ("passed" if c.outcome is Outcome.PASSED else "failed")
    assert [t["number"] for t in tests] == ["1.1", "1.2", "2.1", "3.1", "4.1", "5.1", "6.1"]
    assert by_id["neuron_hidden"]["visibility"] == "hidden"
    assert by_id["finite_diff_after"]["visibility"] == "after_due_date"
    assert by_id["grads_L"]["visibility"] == "visible"
    out = by_id["grads_L"]["output"]
    assert "a.grad: expected 4.5, observed 1.5 [MISMATCH]" in out
    assert "Likely misconception:" in out and "Hint: In __mul__" in out
    assert by_id["operators"]["status"] == "failed"  # partial is not passed
    assert "Top-level code after line 80 was skipped." in data["output"]


def test_gradescope_never_leaks_hidden_details() -> None:
    text = dumps_gradescope(with_failures())
    assert SECRET not in text
    data = strict_loads(text)
    hidden = next(t for t in data["tests"] if t["extra_data"]["check_id"] == "neuron_hidden")
    assert hidden["output"] == "Gradients disagree with the reference on random inputs."


def test_gradescope_infra_error_has_no_score() -> None:
    data = to_gradescope(infra_error())
    assert "score" not in data
    assert data["tests"] == []
    assert data["extra_data"]["status"] == "infra_error"
    assert INFRA_BANNER in data["output"] and "Docker daemon stopped responding" in data["output"]


def test_gradescope_load_failure_output() -> None:
    data = to_gradescope(load_failure())
    assert data["score"] == 0
    assert "line 42" in data["output"] and "Not loadable" in data["output"]
    assert data["extra_data"]["status"] == "not_loadable"
    assert data["extra_data"]["review"] == list(load_failure().review)


def test_gradescope_rejects_nan(tmp_path: Path) -> None:
    bad = dataclasses.replace(full_marks(), score=float("nan"))
    target = tmp_path / "results.json"
    with pytest.raises(ValueError):
        write_gradescope(bad, target)
    assert not target.exists() and list(tmp_path.iterdir()) == []


def test_write_gradescope(tmp_path: Path) -> None:
    target = tmp_path / "results" / "results.json"
    write_gradescope(with_failures(), target)
    assert strict_loads(target.read_text(encoding="utf-8")) == to_gradescope(with_failures())


# ---------------------------------------------------------------- grades.csv


def test_csv_round_trips(tmp_path: Path) -> None:
    target = tmp_path / "grades.csv"
    results = [full_marks(), with_failures(), infra_error(), load_failure()]
    write_grades_csv(results, target, TAGS)
    with target.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == [
            "student", *TAGS, "late_penalty", "override", "total",
            "max_total", "late_penalty_percent", "override_reason", "status", "detail", "review",
        ]  # fmt: skip
        rows = list(reader)
    assert len(rows) == 4
    ada, injected, grace, alan = rows
    assert ada["student"] == "ada" and ada["a6_parity"] == "4.5" and ada["total"] == "24.5"
    # The CLI grader takes nothing off and sets nothing by hand: the sections are the total.
    assert (ada["late_penalty"], ada["override"], ada["late_penalty_percent"]) == ("0", "0", "0")
    assert ada["api"] == "5" and ada["max_total"] == "24.5" and ada["status"] == "graded"
    assert injected["student"] == '\'=HYPERLINK("http://x")'  # spreadsheet formula defused
    assert injected["api"] == "3.5"
    assert grace["status"] == "infra_error" and grace["detail"].startswith("Docker daemon")
    assert all(grace[tag] == "" for tag in (*TAGS, "late_penalty", "override")) and grace["total"] == ""
    # A file that does not load: its own status, the error and its line, and flagged for a person.
    assert alan["total"] == "0" and alan["status"] == "not_loadable"
    assert alan["detail"].startswith("the file does not load: SyntaxError") and "(line 42)" in alan["detail"]
    assert alan["review"] == "The file does not load, so every check scored 0."


def test_csv_rejects_clashing_tags(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_grades_csv([full_marks()], tmp_path / "g.csv", ["api", "total"])


@pytest.mark.parametrize(
    ("value", "text"),
    [(12.5, "12.5"), (100.0, "100"), (0.1 + 0.2, "0.3"), (-0.0, "0"), (2 / 3, "0.666667"), (1e-9, "0")],
)
def test_format_number(value: float, text: str) -> None:
    assert format_number(value) == text


# ---------------------------------------------------------------- terminal


@pytest.mark.parametrize("name", sorted(ALL))
def test_terminal_plain_without_color(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    text = render_summary(ALL[name](), color=False)
    assert "\x1b" not in text
    assert text.strip()


def test_terminal_colored_when_asked() -> None:
    assert "\x1b[" in render_summary(with_failures(), color=True)


def test_terminal_never_leaks_hidden_details() -> None:
    for color in (False, True):
        assert SECRET not in render_summary(with_failures(), color=color)


def test_terminal_summary_content_and_order() -> None:
    text = render_summary(with_failures(), color=False)
    first_line = text.splitlines()[0]
    assert "autograd_lab.py" in first_line and "8.5 / 21" in first_line and "Graded" in first_line
    for tag_title in ("Value API", "Finite-difference agreement"):
        assert tag_title in text
    order = ["1.2 ", "2.1 ", "3.1 ", "4.1 ", "6.1 "]
    positions = [text.index(number) for number in order]
    assert positions == sorted(positions)
    assert "d.grad: expected 7.0" in text and "n1.grad" not in text  # at most 4 comparisons
    assert "Hint: In __mul__" in text
    assert "(hidden check)" in text
    assert XSS in text  # terminal text is not HTML; shown as is


def test_terminal_load_error_first() -> None:
    text = render_summary(load_failure(), color=False)
    assert "could not be loaded" in text and "line 42" in text
    assert "6 checks were not run." in text
    assert text.index("could not be loaded") < text.index("6 checks were not run.")


def test_terminal_infra_error_has_no_score() -> None:
    text = render_summary(infra_error(), color=False)
    assert INFRA_BANNER in text and " / " not in text


def test_terminal_self_check_and_full_marks() -> None:
    assert "Self-check: 7 hidden checks were not run" in render_summary(self_check(), color=False)
    assert "All checks passed." in render_summary(full_marks(), color=False)


def test_terminal_neutralises_control_and_markup() -> None:
    result = dataclasses.replace(with_failures(), student="eve[bold]\x1b[2J", status_detail="[/] unbalanced [red")
    text = render_summary(result, color=True)
    assert "\x1b[2J" not in text and "\\x1b[2J" in text
    assert "eve[bold]" in text and "[/] unbalanced [red" in text


def test_print_summary_uses_given_console() -> None:
    from rich.console import Console

    from grader.report import print_summary

    buffer = io.StringIO()
    print_summary(full_marks(), Console(file=buffer, width=100))
    assert "All checks passed." in buffer.getvalue()


# ---------------------------------------------------------------- diagnosis, notes, review


def diagnosed() -> SubmissionResult:
    base = with_failures()
    checks = list(base.checks)
    checks[0] = dataclasses.replace(checks[0], notes=("Not caught (LOC, local derivative rules): <tanh>.",))
    return dataclasses.replace(
        base,
        checks=tuple(checks),
        diagnoses=(
            Diagnosis(
                "acc_mul",
                "ACC",
                "__mul__'s backward assigns <instead> of adding.",
                "Part 3, 'Why += is non-negotiable'",
                "x.grad is 3 (expected 7) for y = x*x + x",
                1.0,
                (checks[0].check_id,),
            ),
        ),
        step5_note="Step-5 note found (lines 1-4): it describes a failing assertion.",
        review=("Step-5 note incomplete",),
    )


def test_diagnosis_notes_and_review_reach_every_format() -> None:
    result = diagnosed()
    html = render_feedback_html(result)
    assert "What your results suggest" in html
    assert "__mul__&#39;s backward assigns &lt;instead&gt; of adding." in html  # escaped, never markup
    assert "Not caught (LOC, local derivative rules): &lt;tanh&gt;." in html
    assert "Flagged for review by your instructor:</span> Step-5 note incomplete" in html
    text = render_summary(result, color=False)
    assert "ACC: recognised pattern: __mul__'s backward assigns <instead> of adding." in text
    assert "Flagged for review: Step-5 note incomplete" in text
    data = json.loads(dumps_gradescope(result))
    assert "x.grad is 3 (expected 7)" in data["output"]
    assert data["extra_data"]["misconceptions"] == ["acc_mul"] and data["extra_data"]["review"] == [
        "Step-5 note incomplete"
    ]
    assert any("Not caught (LOC" in t["output"] for t in data["tests"])


def test_review_column_in_csv(tmp_path: Path) -> None:
    target = tmp_path / "grades.csv"
    write_grades_csv([full_marks(), diagnosed()], target, TAGS)
    with target.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["review"] for r in rows] == ["", "Step-5 note incomplete"]


def test_status_detail_that_repeats_the_label_is_not_shown_twice() -> None:
    result = dataclasses.replace(full_marks(), status_detail="graded")
    assert status_text(result) == "Graded"
    assert "Graded</strong> graded" not in render_feedback_html(result)
    assert "graded" not in render_summary(result, color=False).lower().replace("graded", "", 1)
    timed_out = dataclasses.replace(full_marks(), status=Status.TIMEOUT, status_detail="backward() never returned")
    assert status_text(timed_out) == "Timed out: backward() never returned"
