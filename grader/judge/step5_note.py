"""The Step-5 note: a comment at the top of the file recording one failing and one passing assertion.

The handout asks students to "document one failing and one passing assertion in a short
comment at the top of autograd_lab.py". Whether the note is *right* is a human judgement, so
this only finds it (module docstring or leading comments, before the first definition) and
says what it mentions; a missing or one-sided note flags the submission for manual review.
Read with ``tokenize`` on the host: the text is inspected, never executed.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

_BUG = re.compile(r"\+=|accumulat|overwrit|assign|step\s*5|inject|\bbug\b|mutat", re.IGNORECASE)
# Students write this note in their own words: "FAILS", "came out different", "blew up" for the
# failing assertion; "PASSES", "still fine", "still 8.0" for the passing one.
_FAIL = re.compile(r"fail|assertionerror|breaks?\b|broke|wrong|different|mismatch|blew up|incorrect", re.IGNORECASE)
_PASS = re.compile(
    r"pass|still (?:holds|works|ok|fine|good|correct|gave|gives|\d)|succeed|unaffected|\bok\b|unchanged",
    re.IGNORECASE,
)
_DEFINITION = re.compile(r"^\s*(?:class|def|async\s+def)\b")


@dataclass(frozen=True)
class Step5Note:
    found: bool  # a note about the bug exists at the top of the file
    failing: bool  # it describes an assertion that fails with the bug
    passing: bool  # ... and one that passes
    lines: tuple[int, int]  # first and last line of the text read (0, 0 when none)
    excerpt: str  # the first lines of the note, for the report

    @property
    def complete(self) -> bool:
        return self.found and self.failing and self.passing

    def summary(self) -> str:
        if not self.found:
            return "No Step-5 note found at the top of the file (a comment naming a failing and a passing assertion)."
        said = [w for w, ok in (("a failing assertion", self.failing), ("a passing assertion", self.passing)) if ok]
        missing = [
            w for w, ok in (("a failing assertion", self.failing), ("a passing assertion", self.passing)) if not ok
        ]
        text = f"Step-5 note found (lines {self.lines[0]}-{self.lines[1]})"
        if said:
            text += ": it describes " + " and ".join(said)
        if missing:
            text += "; it does not describe " + " or ".join(missing)
        return text + "."


def _header_text(source: str) -> tuple[list[tuple[int, str]], int]:
    """(line, text) of comments and string literals before the first definition, and last line read."""
    pieces: list[tuple[int, str]] = []
    last = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            line = token.start[0]
            if (
                token.type == tokenize.NAME
                and token.string in ("class", "def", "async")
                and _DEFINITION.match(token.line)
            ):
                break
            if token.type == tokenize.COMMENT:
                pieces.append((line, token.string.lstrip("#").strip()))
            elif token.type == tokenize.STRING:
                pieces.append((line, token.string))
            last = token.end[0]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # a broken file still gets what was read before the error
    return pieces, last


def find_note(source: str) -> Step5Note:
    pieces, _ = _header_text(source)
    text = "\n".join(t for _, t in pieces)
    if not pieces or not _BUG.search(text):
        return Step5Note(False, False, False, (0, 0), "")
    first = pieces[0][0]
    last = pieces[-1][0] + pieces[-1][1].count("\n")
    excerpt = "\n".join(text.strip().splitlines()[:8])[:600]
    return Step5Note(True, bool(_FAIL.search(text)), bool(_PASS.search(text)), (first, last), excerpt)
