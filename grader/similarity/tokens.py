"""A submission as a stream of normalised tokens, each with the span of text it came from.

Names become ``N``, numbers ``0``, strings ``S``; comments, blank lines and docstrings are
dropped. Renaming a variable, changing a constant or rewording a comment then leaves the
stream as it was, while the shape of the code (keywords, operators, nesting) stays. A file that
Python's tokenizer refuses (an unclosed string, say) is still read, by a looser scanner, so a
broken copy is compared too. Only text is read: nothing here runs student code.
"""

from __future__ import annotations

import io
import keyword
import re
import tokenize
from dataclasses import dataclass

NAME, NUMBER, STRING = "N", "0", "S"
NEWLINE, INDENT, DEDENT = ";", "{", "}"


@dataclass(frozen=True)
class Token:
    text: str  # the normalised form
    start: int  # character offsets of the original text, [start, end)
    end: int


@dataclass(frozen=True)
class Tokens:
    items: tuple[Token, ...]
    loose: str  # why Python's tokenizer was not used ("" when it was)


def _offsets(source: str) -> list[int]:
    """Character offset of the start of each line (1-based line numbers index it)."""
    starts = [0, 0]  # lines end at "\n" only, as the tokenizer's readline splits them
    for line in source.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    return starts


def _normal(kind: int, text: str) -> str | None:
    if kind == tokenize.NAME:
        return text if keyword.iskeyword(text) else NAME
    if kind == tokenize.NUMBER:
        return NUMBER
    if kind == tokenize.STRING:
        return STRING
    if kind == tokenize.NEWLINE:
        return NEWLINE
    if kind == tokenize.INDENT:
        return INDENT
    if kind == tokenize.DEDENT:
        return DEDENT
    if kind in (tokenize.OP, tokenize.ERRORTOKEN):
        return None if text.isspace() or not text else text
    return None  # comments, NL, ENCODING, ENDMARKER


def _keep(out: list[Token], token: Token) -> None:
    """Append ``token`` but for what is style, not code, in both scanners."""
    if token.text in (")", "]", "}") and out and out[-1].text == ",":
        out.pop()  # a trailing comma
    if token.text == NEWLINE and out and out[-1].text == NEWLINE:
        return  # `a = 1;` ends like `a = 1`, and blank lines are nothing
    out.append(token)


def _python(source: str) -> list[Token]:
    starts = _offsets(source)
    out: list[Token] = []
    statement_start = True  # the next token begins a statement (a lone string there is a docstring)
    pending: Token | None = None  # a string that may be a docstring, decided at the next token
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.ERRORTOKEN and tok.string in ("'", '"'):
            # An unclosed quote: CPython 3.11's tokenizer rescans the rest of the line at each
            # one (quadratic on a line of them), so the loose scanner reads this file instead.
            raise tokenize.TokenError("an unclosed string", tok.start)
        norm = _normal(tok.type, tok.string)
        if norm is None:
            continue
        start = starts[tok.start[0]] + tok.start[1] if tok.start[0] < len(starts) else len(source)
        end = starts[tok.end[0]] + tok.end[1] if tok.end[0] < len(starts) else len(source)
        token = Token(norm, start, end)
        if pending is not None:
            if norm != NEWLINE:
                out.append(pending)  # the string was part of an expression after all
                out.append(token)
            pending = None
            statement_start = norm in (NEWLINE, INDENT, DEDENT)
            continue
        if statement_start and norm == STRING:
            pending = token
            continue
        _keep(out, token)
        statement_start = norm in (NEWLINE, INDENT, DEDENT)
    if pending is not None:
        out.append(pending)
    return out


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


def _loose(source: str) -> list[Token]:
    """Tokens of text Python's tokenizer refuses: the same normal forms, no nesting tokens."""
    out: list[Token] = []
    for match in _LOOSE.finditer(source):
        norm = _normal(_LOOSE_KINDS.get(match.lastgroup or "", tokenize.COMMENT), match.group())
        if norm is not None:
            _keep(out, Token(norm, match.start(), match.end()))
    return out


def normalise(source: str) -> Tokens:
    # Python reads a lone CR as a line end, the tokenizer's readline does not: make it one (same
    # length, so every offset still points at the text as written).
    source = re.sub(r"\r(?!\n)", "\n", source)
    try:
        return Tokens(tuple(_python(source)), "")
    except (tokenize.TokenError, SyntaxError) as error:  # IndentationError is a SyntaxError
        reason = error.args[0] if error.args else type(error).__name__
        return Tokens(tuple(_loose(source)), f"read loosely: Python's tokenizer stopped ({reason})")
