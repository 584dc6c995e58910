"""Tokens with the span of text each came from, and the loose scanner for a file Python
cannot parse at all.

The loose scanner reads any text in one linear pass: names become ``N``, numbers ``0``,
strings ``S``; comments and blank lines are dropped. Its tokens are of another kind than the
syntax tree's (syntax.py), so a file read loosely is compared only with other such files;
that happens when no prefix of a file parses. Only text is read: nothing here runs student code.
"""

from __future__ import annotations

import keyword
import re
import tokenize
from dataclasses import dataclass

NAME, NUMBER, STRING = "N", "0", "S"
NEWLINE = ";"


@dataclass(frozen=True)
class Token:
    text: str  # the normalised form
    start: int  # character offsets of the original text, [start, end)
    end: int


@dataclass(frozen=True)
class Tokens:
    items: tuple[Token, ...]
    units: tuple[tuple[int, int], ...]  # [start, end) ranges of items: fingerprints never cross them
    loose: str  # what of the file Python could not read, and how it was read instead ("" for nothing)


def _normal(kind: int, text: str) -> str | None:
    if kind == tokenize.NAME:
        return text if keyword.iskeyword(text) else NAME
    if kind == tokenize.NUMBER:
        return NUMBER
    if kind == tokenize.STRING:
        return STRING
    if kind == tokenize.NEWLINE:
        return NEWLINE
    if kind == tokenize.OP:
        return None if text.isspace() or not text else text
    return None  # comments


def _keep(out: list[Token], token: Token) -> None:
    """Append ``token`` but for what is style, not code."""
    if token.text in (")", "]", "}") and out and out[-1].text == ",":
        out.pop()  # a trailing comma
    if token.text == NEWLINE and out and out[-1].text == NEWLINE:
        return  # `a = 1;` ends like `a = 1`, and blank lines are nothing
    out.append(token)


_LOOSE = re.compile(
    r"(?P<comment>#[^\n]*)"
    r"|(?P<string>[rRbBuUfF]{0,2}(?:'''[\s\S]*?(?:'''|$)|\"\"\"[\s\S]*?(?:\"\"\"|$)"
    r"|'(?:\\.|[^'\\\n])*'?|\"(?:\\.|[^\"\\\n])*\"?))"
    r"|(?P<number>\d[\w.]*)"
    r"|(?P<name>[^\W\d]\w*)"
    r"|(?P<newline>\n)"
    r"|(?P<space>[ \t\r\f\\]+)"
    r"|(?P<op>\*\*=?|//=?|->|[-+*/%@&|^<>!=:]=|<<=?|>>=?|\S)"
)


_LOOSE_KINDS = {
    "name": tokenize.NAME,
    "number": tokenize.NUMBER,
    "string": tokenize.STRING,
    "newline": tokenize.NEWLINE,
    "op": tokenize.OP,
}  # comments and spaces: dropped, as the tokenizer's own COMMENT


def loose_tokens(source: str) -> list[Token]:
    """Tokens of text Python refuses: names, numbers, strings and operators, no nesting."""
    out: list[Token] = []
    for match in _LOOSE.finditer(source):
        norm = _normal(_LOOSE_KINDS.get(match.lastgroup or "", tokenize.COMMENT), match.group())
        if norm is not None:
            _keep(out, Token(norm, match.start(), match.end()))
    return out
