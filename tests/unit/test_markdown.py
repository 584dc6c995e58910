"""Markdown feedback for LMS comment boxes: content, order, the hidden-check gate, and injection.

Rendered Markdown is checked by what a CommonMark renderer makes of it (markdown-it-py, with
tables and raw HTML on, as many LMS renderers allow), not by snapshots of the whole text.
Autolinks are checked with the renderers that make them: markdown-it-py with linkify on, and
GitHub's cmark-gfm (cmarkgfm) with its autolink extension.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import cmarkgfm
import markdown_it
import pytest
from cmarkgfm.cmark import Options
from result_builders import make_check, make_submission

from grader.report.markdown import (
    MAX_COMPARISONS,
    MAX_LISTED,
    MAX_OUTPUT_LINES,
    WORD_JOINER,
    code_block,
    escape_inline,
    render_markdown,
    write_markdown,
)
from grader.report.view import INFRA_BANNER
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

SECRET = "SECRET-HIDDEN-INPUT-7f3a"
SCRIPT = "<script>alert(1)</script>"
JS_LINK = "[x](javascript:alert(1))"
IMAGE = "![t](http://evil/x.png)"
PIPES = "| a | b |"
INLINE_ATTACKS = (SCRIPT, JS_LINK, IMAGE, PIPES, '<img src=x onerror="alert(1)">', "<http://evil/auto>")
# One string with everything, including lines that would start blocks or close a fence.
PAYLOAD = "\n".join((*INLINE_ATTACKS, "```", "~~~", "# heading", "> quote", "- item", "1. item", "***", "`tick`"))
# Everything a rendered comment may contain: the writer's own structure, nothing a student can add.
ALLOWED_TAGS = frozenset(
    {"h3", "h4", "p", "strong", "em", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "pre", "code"}
)

SECTIONS = (("api", "Value API"), ("trace", "Part 1 trace: L = (a*b + c) * relu(d)"), ("reuse", "Reuse"))


def check(check_id: str, section: str = "api", **fields: Any) -> CheckResult:
    return make_check(check_id, section, **fields)


def submission(*checks: CheckResult, **overrides: Any) -> SubmissionResult:
    overrides.setdefault("status_detail", "Every check ran to completion.")
    return make_submission(checks, dict(SECTIONS), **overrides)


class _Page(HTMLParser):
    """Tags, visible text and table cells of rendered Markdown.

    Text is what a reader sees: the invisible word joiners that keep URLs from becoming links are dropped.
    """

    def __init__(self) -> None:
        super().__init__()  # convert_charrefs: entities arrive as the characters they stand for
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.chunks: list[str] = []
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        data = data.replace(WORD_JOINER, "")
        self.chunks.append(data)
        if self._cell is not None:
            self._cell.append(data)

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    def names(self, tag: str) -> list[str]:
        return [name for name, _ in self.tags if name == tag]


def to_html(markdown: str) -> str:
    return str(markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown))


def page(markdown: str) -> _Page:
    parser = _Page()
    parser.feed(to_html(markdown))
    parser.close()
    return parser


def assert_inert(html: str, parsed: _Page) -> None:
    lowered = html.lower()
    assert "<script" not in lowered and "<img" not in lowered and 'href="javascript' not in lowered
    assert {name for name, _ in parsed.tags} <= ALLOWED_TAGS
    assert all(not attrs for name, attrs in parsed.tags if name not in ("th", "td")), "no links, no sources"


def pre_texts(html: str) -> list[str]:
    class _Pre(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.inside = False
            self.found: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "pre":
                self.inside = True
                self.found.append("")

        def handle_endtag(self, tag: str) -> None:
            if tag == "pre":
                self.inside = False

        def handle_data(self, data: str) -> None:
            if self.inside:
                self.found[-1] += data

    parser = _Pre()
    parser.feed(html)
    parser.close()
    return parser.found


# ---------------------------------------------------------------- escape_inline and code_block


@pytest.mark.parametrize(
    "text",
    [
        *INLINE_ATTACKS,
        "# heading",
        "> quote",
        "- item",
        "+ item",
        "1. item",
        "2) item",
        "***",
        "---",
        "===",
        "``code``",
        "**bold** _em_ ~~struck~~",
        "&amp; &#60;script&#62; &lt;",
        "[ref]: http://evil",
        "[^note]",
        "trailing backslash \\",
        "a \\| b \\\\| c",
        "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    ],
)
def test_escape_inline_renders_as_itself(text: str) -> None:
    escaped = escape_inline(text)
    html = to_html(escaped)
    parsed = page(escaped)
    assert_inert(html, parsed)
    assert parsed.names("p") == ["p"] and len(parsed.tags) == 1, html
    assert parsed.text.strip() == text
    # The same text survives a table cell whole: an escaped "|" never splits it.
    cells = page(f"| Observed | Match |\n| --- | --- |\n| {escaped} | ok |").tables
    assert cells == [[["Observed", "Match"], [text, "ok"]]]


def test_escape_inline_is_one_line_with_controls_shown() -> None:
    escaped = escape_inline("first\nsecond\r\nthird\u2028fourth\tfifth")
    assert "\n" not in escaped and "\r" not in escaped and "\t" not in escaped
    assert page(escaped).text.strip() == "first second third fourth fifth"
    assert page(escape_inline("clear\x1b[2J\x00 \u202eevil")).text.strip() == "clear\\x1b[2J\\x00 \\u202eevil"
    # Leading spaces would otherwise start an indented code block.
    assert page(escape_inline("    indented")).names("pre") == []


@pytest.mark.parametrize("run", [3, 5])
def test_code_block_fence_outlasts_backtick_runs(run: int) -> None:
    text = f"before\n{'`' * run}\n~~~\n{'`' * run}python\n<script>x</script>\nafter"
    block = code_block(text)
    fence = block.splitlines()[0]
    assert fence == "`" * (run + 1)
    tokens = markdown_it.MarkdownIt("commonmark").parse(block)
    fences = [token for token in tokens if token.type == "fence"]
    assert len(fences) == 1 and len(tokens) == 1
    assert fences[0].content == text + "\n"
    html = to_html(block)
    parsed = page(block)
    assert_inert(html, parsed)
    assert pre_texts(html) == [text + "\n"]


def test_code_block_minimum_fence_and_cap() -> None:
    assert code_block("plain") == "```\nplain\n```"
    lines = [f"line {n}" for n in range(MAX_OUTPUT_LINES + 5)]
    block = code_block("\n".join(lines))
    parsed = page(block)
    assert parsed.names("pre") == ["pre"]
    assert f"line {MAX_OUTPUT_LINES - 1}" in parsed.text and f"line {MAX_OUTPUT_LINES}" not in parsed.text
    assert "... 5 more lines not shown." in parsed.text


# ---------------------------------------------------------------- content and order


def graded() -> SubmissionResult:
    return submission(
        check("fields", "api"),
        check(
            "operators",
            "api",
            outcome=Outcome.PARTIAL,
            points=1.5,
            max_points=3,
            message="Subtraction is wrong.",
            hint="Reread reflected operators.",
        ),
        check("forward", "trace", outcome=Outcome.FAILED, message="L.data is wrong."),
        check("grads", "trace", outcome=Outcome.ERROR, message="backward() raised."),
        check("later", "reuse", outcome=Outcome.NOT_RUN, message="Not run."),
        check("reuse", "reuse", outcome=Outcome.TIMEOUT, message="Timed out."),
    )


def test_score_sections_and_total() -> None:
    result = graded()
    markdown = render_markdown(result)
    parsed = page(markdown)
    assert parsed.names("h3") == ["h3"]
    assert "Feedback: ada \u00b7 autograd_lab.py" in parsed.text
    assert "Score: 3.5 / 13" in parsed.text
    assert "Status: Graded: Every check ran to completion." in parsed.text
    assert parsed.tables[0] == [
        ["Section", "Points", "Out of"],
        ["1. Value API", "3.5", "5"],
        ["2. Part 1 trace: L = (a*b + c) * relu(d)", "0", "4"],
        ["3. Reuse", "0", "4"],
        ["Total", "3.5", "13"],
    ]
    assert "Passed: 1 of 6 checks \u00b7 Not run: 1" in parsed.text
    assert markdown.index("**Score:**") < markdown.index("**Status:**") < markdown.index("| Section |")


def test_failing_checks_in_rubric_order_without_passed_or_not_run() -> None:
    markdown = render_markdown(graded())
    headings = [line for line in markdown.splitlines() if line.startswith("**") and " points" in line]
    assert [line.split()[0] for line in headings] == ["**1\\.2", "**2\\.1", "**2\\.2", "**3\\.2"]
    text = page(markdown).text
    assert "1.2 operators \u00b7 \u25d0 Partly passed \u00b7 1.5 / 3 points" in text
    assert "Subtraction is wrong." in text and "Hint: Reread reflected operators." in text
    assert "3.1 later" not in text and "1.1 fields" not in text
    assert markdown.index("To fix first") < markdown.index("1\\.2") < markdown.index("**Passed:**")


def test_failing_list_is_capped() -> None:
    checks = [check(f"c{n:02d}", outcome=Outcome.FAILED, message=f"wrong {n:02d}") for n in range(MAX_LISTED + 3)]
    text = page(render_markdown(submission(*checks))).text
    assert f"wrong {MAX_LISTED - 1:02d}" in text and f"wrong {MAX_LISTED:02d}" not in text
    assert "... and 3 more failing checks in the HTML feedback." in text


def test_visible_details_comparisons_output_and_caps() -> None:
    comparisons = tuple(Comparison(f"v{n}.grad", "1.0", "2.0", n % 2 == 0) for n in range(MAX_COMPARISONS + 2))
    result = submission(
        check(
            "grads",
            "trace",
            outcome=Outcome.FAILED,
            message="Gradients are wrong.",
            comparisons=comparisons,
            misconception="Gradients are overwritten, not accumulated.",
            hint="Use +=.",
            notes=("Surviving bug class: ACC.",),
            output="\n".join(f"out {n}" for n in range(MAX_OUTPUT_LINES + 2)),
        )
    )
    parsed = page(render_markdown(result))
    table = parsed.tables[1]
    assert table[0] == ["Quantity", "Expected", "Observed", "Match"]
    assert table[1] == ["v0.grad", "1.0", "2.0", "\u2713 yes"]
    assert table[2] == ["v1.grad", "1.0", "2.0", "\u2717 no"]
    assert len(table) == 1 + MAX_COMPARISONS
    text = parsed.text
    assert "... 2 more comparisons in the HTML feedback." in text
    assert "Likely misconception: Gradients are overwritten, not accumulated." in text
    assert "Hint: Use +=." in text and "Surviving bug class: ACC." in text
    assert "out 0" in text and "... 2 more lines not shown." in text


@pytest.mark.parametrize("visibility", [Visibility.HIDDEN, Visibility.AFTER_DUE_DATE])
def test_hidden_check_never_shows_details(visibility: Visibility) -> None:
    leaky: dict[str, Any] = {
        "built": f"built {SECRET}",
        "comparisons": (Comparison(f"w.grad {SECRET}", SECRET, SECRET, False),),
        "output": f"printed {SECRET}",
        "misconception": f"diagnosed from {SECRET}",
        "hint": f"hint about {SECRET}",
        "notes": (f"note {SECRET}",),
    }
    hidden = check("neuron", "trace", outcome=Outcome.FAILED, visibility=visibility, message="Disagrees.", **leaky)
    visible = check("twin", "trace", outcome=Outcome.FAILED, message="Twin.", hint="Visible hint.")
    markdown = render_markdown(submission(hidden, visible))
    assert SECRET not in markdown
    parsed = page(markdown)
    assert len(parsed.tables) == 1  # the sections table only
    assert "2.1 neuron \u00b7 \u2717 Failed \u00b7 0 / 2 points" in parsed.text and "Disagrees." in parsed.text
    assert "details are not shown)" in parsed.text
    if visibility is Visibility.HIDDEN:
        assert "(hidden check: details are not shown)" in parsed.text
    assert "Hint: Visible hint." in parsed.text  # the gate is per check, not per report


def test_infra_error_shows_banner_and_no_score() -> None:
    result = graded()
    markdown = render_markdown(
        submission(*result.checks, status=Status.INFRA_ERROR, score=0.0, status_detail="The daemon stopped.")
    )
    parsed = page(markdown)
    assert INFRA_BANNER in parsed.text
    assert "Score" not in parsed.text and "To fix first" not in parsed.text and "Passed:" not in parsed.text
    assert parsed.tables == []
    assert "Status: Grader failure: The daemon stopped." in parsed.text


def test_load_failure_self_check_and_notices() -> None:
    result = submission(
        check("fields", outcome=Outcome.NOT_RUN, message="Not run: the file did not load."),
        status=Status.UNGRADABLE,
        visible_only=True,
        hidden_not_run=7,
        load=LoadReport(
            ok=False,
            mode="failed",
            class_name="",
            notices=("Class Engine graded as Value.",),
            error="SyntaxError: invalid syntax (line 42)\n    def __add__(self other):",
        ),
    )
    markdown = render_markdown(result)
    parsed = page(markdown)
    assert "Self-check: 7 hidden checks were not run; the score counts visible checks only." in parsed.text
    assert "Your file could not be loaded; no check could run." in parsed.text
    assert parsed.names("pre") == ["pre"]
    assert "SyntaxError: invalid syntax (line 42)\n    def __add__(self other):\n" in parsed.text
    assert "Note: Class Engine graded as Value." in parsed.text
    assert markdown.index("Self-check") < markdown.index("could not be loaded") < markdown.index("| Section |")


def test_diagnoses_step5_and_review_in_order() -> None:
    diagnosis = Diagnosis(
        operator="mul_drop_upstream",
        family="CHAIN",
        misconception="The multiply backward ignores out.grad.",
        handout="Part 2, chain rule",
        evidence="a.grad = 1.5 where 4.5 was expected",
        share=1.0,
        checks=("forward",),
    )
    base = graded()
    result = submission(
        *base.checks, diagnoses=(diagnosis,), step5_note="Step 5 says: I checked by hand.", review=("Odd output.",)
    )
    markdown = render_markdown(result)
    parsed = page(markdown)
    assert "What your results suggest" in parsed.text
    assert "CHAIN: recognised pattern: The multiply backward ignores out.grad." in parsed.text
    assert "Evidence: a.grad = 1.5 where 4.5 was expected." in parsed.text
    assert "Step-5 note: Step 5 says: I checked by hand." in parsed.text
    assert "Flagged for review: Odd output." in parsed.text
    order = ["| Section |", "What your results suggest", "Step-5 note", "Flagged for review", "To fix first"]
    positions = [markdown.index(marker) for marker in order]
    assert positions == sorted(positions)
    # A Step-5 note that a review flag already states is said once.
    same = submission(*base.checks, step5_note="Step 5 missing.", review=("Step 5 missing.",))
    assert "Step-5 note" not in render_markdown(same)


def test_all_passed_line() -> None:
    text = page(render_markdown(submission(check("a"), check("b", "trace")))).text
    assert "Passed: 2 of 2 checks \u00b7 Not run: 0 \u00b7 All checks passed." in text
    assert "To fix first" not in text


# ---------------------------------------------------------------- injection


def hostile() -> SubmissionResult:
    return submission(
        check("fields", "api"),
        check(
            "grads",
            "trace",
            outcome=Outcome.FAILED,
            message=PAYLOAD,
            comparisons=(Comparison(PAYLOAD, "4.5", PAYLOAD, False),),
            misconception=PAYLOAD,
            hint=PAYLOAD,
            notes=(PAYLOAD,),
            output=PAYLOAD + "\n`````\n" + PAYLOAD,
        ),
        student=PAYLOAD,
        filename=PAYLOAD,
        status_detail=PAYLOAD,
        step5_note=PAYLOAD,
        review=(PAYLOAD,),
        load=LoadReport(ok=True, mode="definitions", class_name="Value", notices=(PAYLOAD,)),
    )


def test_untrusted_text_cannot_inject_markdown_or_html() -> None:
    markdown = render_markdown(hostile())
    html = to_html(markdown)
    parsed = page(markdown)
    assert_inert(html, parsed)
    # The writer's own structure, and no more: one heading each, the two tables, the one output block.
    assert parsed.names("h3") == ["h3"] and parsed.names("h4") == ["h4"]
    assert len(parsed.tables) == 2 and parsed.names("pre") == ["pre"]
    assert len(parsed.tables[1]) == 2 and all(len(row) == 4 for row in parsed.tables[1])
    assert len(parsed.names("li")) == 1  # the check's one note
    flat = " ".join(PAYLOAD.split("\n"))
    assert parsed.tables[1][1][0] == flat and parsed.tables[1][1][2] == flat
    # Still readable: every piece shows as text.
    for piece in INLINE_ATTACKS:
        assert parsed.text.count(piece) >= 10, piece
    assert pre_texts(html) == [PAYLOAD + "\n`````\n" + PAYLOAD + "\n"]


def test_load_error_cannot_escape_its_block() -> None:
    error = PAYLOAD + "\n" + "`" * 7 + "\n" + SCRIPT
    result = submission(
        check("fields", outcome=Outcome.NOT_RUN),
        status=Status.UNGRADABLE,
        load=LoadReport(ok=False, mode="failed", class_name="", error=error),
    )
    markdown = render_markdown(result)
    html = to_html(markdown)
    parsed = page(markdown)
    assert_inert(html, parsed)
    assert pre_texts(html) == [error + "\n"]


def test_write_markdown(tmp_path: Path) -> None:
    result = graded()
    target = tmp_path / "out" / "ada.md"
    write_markdown(result, target)
    assert target.read_text(encoding="utf-8") == render_markdown(result)


# ---------------------------------------------------------------- autolinks


def linkify_html(markdown: str) -> str:
    """markdown-it-py with linkify on (linkify-it-py): bare URLs, www. and e-mails become links."""
    md = markdown_it.MarkdownIt("commonmark", {"html": True, "linkify": True}).enable(["table", "linkify"])
    return str(md.render(markdown))


def gfm_linkify_html(markdown: str) -> str:
    """markdown-it-py's GFM-like preset (tables, strikethrough, linkify)."""
    return str(markdown_it.MarkdownIt("gfm-like", {"html": True, "linkify": True}).render(markdown))


def github_html(markdown: str) -> str:
    """GitHub's own renderer: cmark-gfm with its autolink extension (raw HTML kept)."""
    return str(cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE))


# An LMS URL filter runs on the rendered page's text, after entities and backslash escapes are gone
# (Moodle's "Convert URLs into links", comment boxes that link "http..." and "www..."): this stands
# for them, linking what they link in what a reader sees.
_URL_FILTER = re.compile(r"(?i)(?<![\w/])(?:[a-z][a-z0-9+.-]*://|www\.)[^\s<]+|[\w.+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)+")


def url_filter_html(markdown: str) -> str:
    """The page's text with what the filter links marked as links; code is left alone, as filters do."""
    return _raw_text(linkify_html(markdown), link=True)


def _raw_text(html: str, *, link: bool = False) -> str:
    """The visible text of a page, joiners and all; with `link`, text outside code is run through the URL filter."""

    class _Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.chunks: list[str] = []
            self.code = 0

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.code += tag in ("pre", "code")

        def handle_endtag(self, tag: str) -> None:
            self.code -= tag in ("pre", "code")

        def handle_data(self, data: str) -> None:
            if link and not self.code:
                data = _URL_FILTER.sub(lambda match: f'<a href="{match.group()}">{match.group()}</a>', data)
            self.chunks.append(data)

    parser = _Text()
    parser.feed(html)
    parser.close()
    return "".join(parser.chunks)


LINKIFIERS = {
    "markdown-it+linkify": linkify_html,
    "gfm-like+linkify": gfm_linkify_html,
    "cmark-gfm": github_html,
    "LMS URL filter": url_filter_html,
}

# GFM's autolink literals (scheme://, www., e-mail, mailto:, xmpp:), with hosts every linkifier
# accepts (a known TLD, an IP, no dot at all after a scheme).
AUTOLINKS = (
    "http://evil.example/x",
    "https://evil.com/login?next=/grades#top",
    "HTTPS://EVIL.COM",
    "ftp://files.evil.com/a.py",
    "http://evil/x.png",
    "http://user:pw@127.0.0.1:8080/",
    "www.evil.example",
    "WWW.Evil.Com/path",
    "a@b.example",
    "first.last+tag@mail.evil.com",
    "mailto:a@b.example",
    "MAILTO:grader@evil.com",
    "xmpp:a@b.example/resource",
)
# linkify-it's fuzzy links (no scheme, no www.): not GFM autolinks, and the backslash before every
# "." already keeps markdown-it from linking them.
FUZZY = ("evil.com", "see evil.com/x", "//evil.com/x")
CONTEXTS = {
    "paragraph": "{}",
    "in a sentence": "Expected 4.5, got {} instead.",
    "in parentheses": "see ({})",
    "emphasised": "*{}* _{}_ ~{}~",
    "list item": "- {}",
    "heading": "### {}",
    "table cell": "| Observed | Match |\n| --- | --- |\n| {} | no |",
}


def _reads(html: str) -> str:
    return _raw_text(html).replace(WORD_JOINER, "")


@pytest.mark.parametrize("renderer", LINKIFIERS)
@pytest.mark.parametrize("url", AUTOLINKS + FUZZY)
def test_urls_and_emails_in_student_text_never_become_links(url: str, renderer: str) -> None:
    render = LINKIFIERS[renderer]
    for context, template in CONTEXTS.items():
        html = render(template.replace("{}", escape_inline(url)))
        assert "<a" not in html.lower(), (context, html)
        # Still readable: every copy reads the same, apart from the invisible joiners.
        assert _reads(html).count(url) == template.count("{}"), (context, html)


@pytest.mark.parametrize("url", AUTOLINKS)
def test_each_autolink_tested_is_live_without_the_joiners(url: str) -> None:
    # The test above means something: escaping alone (entities, backslashes) leaves each of these a
    # link in some renderer, because autolinking runs on the decoded text.
    escaped = escape_inline(url).replace(WORD_JOINER, "")
    assert escaped != escape_inline(url)
    assert any("<a" in render(escaped) for render in LINKIFIERS.values()), escaped


@pytest.mark.parametrize("url", FUZZY)
def test_each_fuzzy_link_tested_is_live_unescaped(url: str) -> None:
    assert "<a" in linkify_html(url)


@pytest.mark.parametrize(
    "text",
    [
        "Value.backward",
        "autograd_lab.py",
        "4.5",
        "{'a': 1}",
        "ratio 1:2 at 12:30",
        "?@[",
        "x @ y",
        "javascript:alert(1)",
    ],
)
def test_text_without_an_autolink_gets_no_joiners(text: str) -> None:
    assert WORD_JOINER not in escape_inline(text)


def test_joiners_break_each_trigger() -> None:
    wj = WORD_JOINER
    assert escape_inline("http://a.example") == f"http:{wj}//a\\.example"
    assert escape_inline("www.a.example") == f"www{wj}\\.a\\.example"
    assert escape_inline("a@b.example") == f"a{wj}@{wj}b\\.example"
    assert escape_inline("mailto:a@b.example") == f"mailto:{wj}a{wj}@{wj}b\\.example"
    assert escape_inline("ping @octocat") == f"ping {wj}@{wj}octocat"  # a GitHub @mention


LINKS = "Visit http://evil.example/phish or www.evil.com, mail help@evil.com (mailto:help@evil.com)."


def hostile_links() -> SubmissionResult:
    links = LINKS
    return submission(
        check("fields", "api"),
        check(
            "grads",
            "trace",
            outcome=Outcome.FAILED,
            message=links,
            comparisons=(Comparison(links, "4.5", links, False),),
            misconception=links,
            hint=links,
            notes=(links,),
            output=links,
        ),
        student="eve http://evil.example",
        filename="www.evil.com.py",
        status_detail=links,
        step5_note=links,
        review=(links,),
        load=LoadReport(ok=True, mode="definitions", class_name="Value", notices=(links,)),
    )


@pytest.mark.parametrize("renderer", LINKIFIERS)
def test_whole_feedback_has_no_autolinks(renderer: str) -> None:
    markdown = render_markdown(hostile_links())
    html = LINKIFIERS[renderer](markdown)
    assert "<a" not in html.lower(), html
    visible = _reads(html)
    assert "eve http://evil.example" in visible and "www.evil.com.py" in visible
    # Status, notice, review flag, message, two table cells, note, misconception, hint, and the output.
    assert visible.count(LINKS) == 10


@pytest.mark.parametrize("renderer", ["markdown-it+linkify", "gfm-like+linkify", "cmark-gfm"])
def test_urls_in_code_blocks_stay_as_printed_and_are_not_links(renderer: str) -> None:
    # Autolinks never apply inside code, so printed output keeps its URLs exactly (no joiners).
    output = "\n".join(AUTOLINKS + FUZZY)
    block = code_block(output)
    assert WORD_JOINER not in block
    html = LINKIFIERS[renderer](block)
    assert "<a" not in html.lower()
    assert pre_texts(html) == [output + "\n"]
