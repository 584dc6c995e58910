"""Short per-student feedback in Markdown, for pasting into LMS comment boxes (Canvas, Moodle, Gradescope).

It carries what the terminal summary carries, in the same order: score, sections, diagnoses, then
the failing checks first failing idea first. Comment boxes are small, so the list is capped and the
full detail is left to the HTML feedback.

Every string that comes from a submission (messages, observed values, output, notices, the load
error, the Step-5 note, even the student's name and file name) is untrusted. Many LMS renderers
pass raw HTML through, so such text goes through `escape_inline` (one line, no Markdown, no HTML,
no autolinked URL or e-mail address) or `code_block` (a fenced block it cannot close). Rubric text
is escaped too, since titles such as "(a*b + c) * relu(d)" would otherwise turn into emphasis; only
the writer's own labels use Markdown.
"""

from __future__ import annotations

import os
import re

from grader.report.view import (
    INFRA_BANNER,
    OUTCOME_LABELS,
    OUTCOME_SYMBOLS,
    VISIBILITY_NOTES,
    WITHHELD_NOTE,
    NumberedCheck,
    counterexample_of,
    diagnosis_lines,
    failing_checks,
    first_with,
    format_number,
    group_by_section,
    printable,
    score_text,
    self_check_text,
    shows_details,
    status_text,
    step5_line,
    write_text_atomic,
)
from grader.results import CheckResult, Comparison, Counterexample, GraphFigure, Outcome, SubmissionResult

MAX_LISTED = 10  # failing checks listed; the HTML feedback has the rest
MAX_COMPARISONS = 4
MAX_OUTPUT_LINES = 40


# HTML-significant characters become entities: a renderer that passes raw HTML through then sees
# text, and "<http://...>" cannot become an autolink.
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Markdown punctuation is backslash-escaped wherever it appears, so no link, image, emphasis, code
# span, strikethrough, heading, list marker or table cell can start inside untrusted text.
_PUNCTUATION = frozenset("\\`*_{}[]()#+-.!|~")

_LINE_SEPARATORS = re.compile("[\u2028\u2029]")
_BACKTICK_RUN = re.compile("`+")

# GFM's autolink extension (GitHub, cmark-gfm), linkify in markdown-it and the URL filters of LMS
# comment boxes turn bare "http://...", "www...." and "a@b.example" (also "mailto:"/"xmpp:") into
# live links. They match the text after entities and backslash escapes are decoded, so escaping
# cannot stop them: an invisible WORD JOINER (U+2060: zero width, no line break) inside each trigger
# does. No linkifier counts it as part of a scheme, of "www.", of an e-mail's local part or of the
# name after an "@" (GitHub's @mentions), and a reader sees the text unchanged.
WORD_JOINER = "\u2060"
_AUTOLINK_TRIGGER = re.compile(
    r"(?<=:)(?=/)"  # scheme://  ->  scheme:<WJ>//
    r"|(?i:(?<=mailto:)|(?<=xmpp:))"  # GFM's mailto:/xmpp: autolinks  ->  mailto:<WJ>a@b
    r"|(?i:(?<=www))(?=\.)"  # www.example  ->  www<WJ>.example
    r"|(?=@[^\W_])|(?<=@)(?=[^\W_])"  # a@b.example  ->  a<WJ>@<WJ>b.example (where a name could follow)
)


def _visible(text: str) -> str:
    """Control and bidi characters shown as escapes, Unicode line separators as newlines."""
    return _LINE_SEPARATORS.sub("\n", printable(text))


def _unlinked(text: str) -> str:
    """Text that no autolinker can turn into a link; it reads the same (the joiners are invisible)."""
    return _AUTOLINK_TRIGGER.sub(WORD_JOINER, text)


def escape_inline(text: str) -> str:
    """Untrusted text as one line of inert Markdown: it renders as exactly itself, newlines as spaces.

    Safe in a paragraph, a list item, a heading and a table cell; a URL or an e-mail address in it
    carries invisible word joiners, so it shows as text, never as a link.
    """
    # Stripped: leading spaces would make an indented code block, where escapes show literally.
    flat = _unlinked(" ".join(_visible(text).replace("\t", " ").split("\n")).strip())
    out = []
    for char in flat:
        if char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif char in _PUNCTUATION:
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def code_block(text: str, *, max_lines: int = MAX_OUTPUT_LINES) -> str:
    """Untrusted multi-line text as a fenced code block that nothing inside can close.

    The fence is backticks (a "~~~" line cannot close it) and longer than any backtick run in the
    text, so no line of the text is a closing fence. Past `max_lines` lines, a marker after the
    block says how many more there were. Autolinks never apply inside code, so URLs in it stay as
    printed (no word joiners to spoil copying the output).
    """
    lines = _visible(text).rstrip("\n").split("\n")
    hidden = max(0, len(lines) - max_lines)
    body = "\n".join(lines[:max_lines])
    longest = max((len(run) for run in _BACKTICK_RUN.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    block = f"{fence}\n{body}\n{fence}"
    if hidden:
        noun = "line" if hidden == 1 else "lines"
        block += f"\n\n*... {hidden} more {noun} not shown.*"
    return block


def _bold(text: str) -> str:
    # "****" renders as a rule or literal stars, so empty text gets no markers.
    escaped = escape_inline(text).strip()
    return f"**{escaped}**" if escaped else ""


def _row(*cells: str) -> str:
    # The space before each "|" matters: in GFM tables "\\|" would escape the separator.
    return "| " + " | ".join(cells) + " |"


def _header(result: SubmissionResult) -> list[str]:
    blocks = [f"### Feedback: {escape_inline(result.student)} \u00b7 {escape_inline(result.filename)}"]
    if result.scored:
        blocks.append(f"**Score:** {score_text(result)}")
    else:
        blocks.append(f"**{INFRA_BANNER}**")
    blocks.append(f"**Status:** {escape_inline(status_text(result))}")
    if result.visible_only:
        blocks.append(f"*{self_check_text(result)}; the score counts visible checks only.*")
    return blocks


def _load(result: SubmissionResult) -> list[str]:
    blocks = []
    if not result.load.ok:
        blocks.append("**Your file could not be loaded; no check could run.**")
        if result.load.error:
            blocks.append(code_block(result.load.error))
        if result.load.excerpt:
            blocks.append(code_block(result.load.excerpt))
    blocks.extend(f"**Note:** {escape_inline(notice)}" for notice in result.load.notices)
    return blocks


def _sections(result: SubmissionResult) -> str:
    rows = [_row("Section", "Points", "Out of"), _row("---", "---:", "---:")]
    for group in group_by_section(result):
        if group.section is None:
            continue  # a check naming a section the result lacks has no points row to show
        rows.append(
            _row(
                escape_inline(f"{group.index}. {group.title}"),
                format_number(group.section.points),
                format_number(group.section.max_points),
            )
        )
    rows.append(_row("**Total**", f"**{format_number(result.score)}**", f"**{format_number(result.max_score)}**"))
    return "\n".join(rows)


def _comparisons(comparisons: tuple[Comparison, ...]) -> list[str]:
    shown = comparisons[:MAX_COMPARISONS]
    rows = [_row("Quantity", "Expected", "Observed", "Match"), _row("---", "---", "---", "---")]
    for comparison in shown:
        match = "\u2713 yes" if comparison.ok else "\u2717 **no**"
        rows.append(
            _row(
                escape_inline(comparison.quantity),
                escape_inline(comparison.expected),
                escape_inline(comparison.observed),
                match,
            )
        )
    blocks = ["\n".join(rows)]
    if len(comparisons) > len(shown):
        more = len(comparisons) - len(shown)
        blocks.append(f"*... {more} more comparison{'s' if more != 1 else ''} in the HTML feedback.*")
    return blocks


def _details(check: CheckResult, figure: GraphFigure | None) -> list[str]:
    """What only a visible check may show; callers ask `shows_details` first."""
    blocks = []
    if check.comparisons:
        blocks.extend(_comparisons(check.comparisons))
    if figure is not None and not check.passed:
        blocks.append(f"**Your graph:** {escape_inline(figure.summary)}")
    if check.notes:
        blocks.append("\n".join(f"- {escape_inline(note)}" for note in check.notes))
    if check.misconception:
        blocks.append(f"**Likely misconception:** {escape_inline(check.misconception)}")
    if check.hint:
        blocks.append(f"**Hint:** {escape_inline(check.hint)}")
    if check.output:
        blocks.extend(("**Your program printed:**", code_block(check.output)))
    return blocks


def _failing(numbered: NumberedCheck, result: SubmissionResult) -> list[str]:
    check = numbered.check
    outcome = f"{OUTCOME_SYMBOLS[check.outcome]} {OUTCOME_LABELS[check.outcome]}"
    points = f"{format_number(check.points)} / {format_number(check.max_points)} points"
    title = _bold(f"{numbered.number} {check.title}")
    head = f"{title} \u00b7 {outcome} \u00b7 {points}"
    if not shows_details(check):
        note = VISIBILITY_NOTES[check.visibility]
        head += f" ({note[:1].lower()}{note[1:]})"
    blocks = [head]
    if check.message:
        blocks.append(escape_inline(check.message))
    found = counterexample_of(check)
    if found is not None:
        blocks.extend(_counterexample(check, found, result))
    if shows_details(check):
        blocks.extend(_details(check, result.figure(check.figure) if check.figure else None))
    return blocks


def _counterexample(check: CheckResult, found: Counterexample, result: SubmissionResult) -> list[str]:
    first = first_with(result, found)
    if first is not check:
        return [f"**Smallest failing program:** the same as for {escape_inline(first.title)}."]
    head = f"**Smallest failing program** ({found.operations} operation{'' if found.operations == 1 else 's'}):"
    if found.withheld:
        # A hidden check: the right answers and where the engine is wrong, never its own numbers.
        listed = found.comparisons[:MAX_COMPARISONS]
        if all(row.ok for row in listed):
            listed += found.wrong[:1]  # the quantity named as wrong is always listed
        rows = [_row("Quantity", "Right answer", "Your engine"), _row("---", "---", "---")]
        for row in listed:
            mark = "not shown" if row.ok else "\u2717 **wrong**"
            rows.append(_row(escape_inline(row.quantity), escape_inline(row.expected), mark))
        return [head, code_block(found.program), "\n".join(rows), f"*{WITHHELD_NOTE}*"]
    return [head, code_block(found.program), *_comparisons(found.wrong)]


def _counts(result: SubmissionResult, failing: int) -> str:
    total = len(result.checks)
    passed = sum(1 for check in result.checks if check.passed)
    not_run = sum(1 for check in result.checks if check.outcome is Outcome.NOT_RUN)
    line = f"**Passed:** {passed} of {total} checks \u00b7 **Not run:** {not_run}"
    if result.load.ok and total and not failing and not not_run:
        line += " \u00b7 All checks passed."
    return line


def _blocks(result: SubmissionResult) -> list[str]:
    blocks = [*_header(result), *_load(result)]
    if not result.scored:
        return blocks  # an infra error is not a grade: no points, no verdicts to act on
    if result.sections:
        blocks.append(_sections(result))
    diagnoses = diagnosis_lines(result)
    if diagnoses:
        blocks.append("**What your results suggest**")
        blocks.append("\n".join(f"- {_bold(heading + ':')} {escape_inline(body)}" for heading, body in diagnoses))
    if step5_line(result):
        blocks.append(f"**Step-5 note:** {escape_inline(step5_line(result))}")
    blocks.extend(f"**Flagged for review:** {escape_inline(reason)}" for reason in result.review)
    failing = failing_checks(result)
    if failing:
        blocks.append("#### To fix first (first failing idea first)")
        for numbered in failing[:MAX_LISTED]:
            blocks.extend(_failing(numbered, result))
        if len(failing) > MAX_LISTED:
            more = len(failing) - MAX_LISTED
            blocks.append(f"*... and {more} more failing check{'s' if more != 1 else ''} in the HTML feedback.*")
    blocks.append(_counts(result, len(failing)))
    return blocks


def render_markdown(result: SubmissionResult) -> str:
    """The feedback as Markdown; blocks are separated by blank lines so none runs into the next."""
    return "\n\n".join(_blocks(result)) + "\n"


def write_markdown(result: SubmissionResult, path: str | os.PathLike[str]) -> None:
    write_text_atomic(path, render_markdown(result))
