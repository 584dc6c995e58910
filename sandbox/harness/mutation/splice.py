"""Write an edited syntax tree back into its source by splicing, keeping every other byte.

``splice(source, old, new)`` takes the tree parsed from ``source`` and an edited copy of it
and returns ``source`` with only the edited statements rewritten: the smallest statements
whose ``ast.dump`` changed are replaced by ``ast.unparse`` of their new version, re-indented
to where they stood; inserted statements become new lines at the block's indentation. Every
other byte (comments, blank lines, quotes, spacing, line endings) is kept as written, so an
edited file differs from the original only where the edit is. A compound statement whose
header changed (``for x in reversed(xs):``) has only its header rewritten. When an edited
statement takes fewer lines than before, blank lines after it keep later line numbers as
they were. The result is checked: it must parse to ``new`` exactly, or ``SpliceError``.
Tree helpers the mutation operators and the equivalent copies share live here too: ``replace``
(swap nodes by identity), ``same`` and ``blocks``.

Standard library only: this runs inside the sandbox and on the host.
"""

from __future__ import annotations

import ast
import bisect
import copy
import difflib
import io
import re
import tokenize
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from .. import syntax

_BODIES = ("body", "orelse", "finalbody")  # statement-list fields of compound statements
_HEADER_ONLY = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)
_COMPOUND = (*_HEADER_ONLY, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try, ast.TryStar, ast.Match)


class SpliceError(Exception):
    """The edit cannot be written back as splices (or the spliced text does not parse to it)."""


@dataclass(frozen=True)
class Edit:
    start: int  # character offsets into the source; start == end inserts
    end: int
    text: str


class Source:
    """A source text with line/column (UTF-8 byte) positions turned into character offsets."""

    def __init__(self, text: str):
        self.text = text
        breaks = list(re.finditer(r"\r\n|\r|\n", text))
        self.starts = [0, *(m.end() for m in breaks)]
        self.newline = breaks[0].group() if breaks else "\n"
        self._colons: list[int] | None = None

    def line(self, lineno: int) -> str:
        """Line ``lineno`` (1-based) without its line break."""
        start = self.starts[lineno - 1]
        end = self.starts[lineno] if lineno < len(self.starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def offset(self, lineno: int, col: int) -> int:
        line = self.line(lineno)
        chars = col if line.isascii() else len(line.encode("utf-8")[:col].decode("utf-8", "replace"))
        return self.starts[lineno - 1] + chars

    def start(self, node: ast.AST) -> int:
        """Where ``node`` starts, decorators included (at their ``@``)."""
        decorators = getattr(node, "decorator_list", None)
        if decorators:
            first = decorators[0]
            at = self.text.rfind("@", self.starts[first.lineno - 1], self.offset(first.lineno, first.col_offset))
            if at >= 0:
                return at
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def first_line(self, node: ast.AST) -> int:
        decorators = getattr(node, "decorator_list", None)
        return int(decorators[0].lineno if decorators else node.lineno)  # type: ignore[attr-defined]

    def indent(self, node: ast.AST) -> str | None:
        """The whitespace before ``node`` on its line, or None when other code precedes it."""
        lineno = self.first_line(node)
        prefix = self.text[self.starts[lineno - 1] : self.start(node)]
        return prefix if prefix.strip() == "" else None

    def line_after(self, lineno: int) -> int | None:
        """The offset where the line after ``lineno`` starts (None after the last line, or
        after a line continued by a backslash)."""
        if lineno >= len(self.starts) or self.line(lineno).endswith("\\"):
            return None
        return self.starts[lineno]

    def colons(self) -> list[int]:
        """Offsets of every ``:`` operator token (never one in a string or comment)."""
        if self._colons is None:
            lines = [self.text[s:e] for s, e in zip(self.starts, [*self.starts[1:], len(self.text)], strict=True)]
            found = []
            try:
                for token in tokenize.generate_tokens(iter(lines).__next__):
                    if token.type == tokenize.OP and token.string == ":":
                        found.append(self.starts[token.start[0] - 1] + token.start[1])
            except (tokenize.TokenError, SyntaxError, IndexError):
                pass
            self._colons = found
        return self._colons


def _string_rows(text: str) -> set[int]:
    """Rows (0-based) of ``text`` that continue a multi-line string: never re-indented."""
    rows: set[int] = set()
    kinds = {tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in kinds and token.end[0] > token.start[0]:
                rows.update(range(token.start[0], token.end[0]))  # 1-based rows after the first
    except (tokenize.TokenError, SyntaxError):
        pass
    return rows


def render(node: ast.AST, indent: str, newline: str = "\n") -> str:
    """``ast.unparse(node)`` with every line after the first indented by ``indent`` (four
    unparse spaces become one tab when the file indents with tabs)."""
    text = ast.unparse(ast.fix_missing_locations(node))
    lines = text.split("\n")
    unit = "\t" if "\t" in indent else None
    keep = _string_rows(text)
    for row in range(1, len(lines)):
        if row in keep:
            continue
        line = lines[row]
        stripped = line.lstrip(" ")
        depth = len(line) - len(stripped)
        lead = unit * (depth // 4) + " " * (depth % 4) if unit else " " * depth
        lines[row] = indent + lead + stripped if stripped else ""
    return newline.join(lines)


def same(a: object, b: object) -> bool:
    """``ast.dump(a) == ast.dump(b)`` (positions ignored), stopping at the first difference.

    Written as plain loops (no generators): every mutant's text is checked with it, on the
    whole tree, inside the sandbox's CPU budget."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return _same_lists(a, b)  # type: ignore[arg-type]
    if not isinstance(a, ast.AST):
        return a == b and repr(a) == repr(b)
    for field in a._fields:
        x, y = getattr(a, field, None), getattr(b, field, None)
        if x is y:
            continue  # one object (the shared Load and Store contexts, None)
        kind = type(x)
        if kind is not type(y):
            return False
        if kind is list:
            if not _same_lists(x, y):  # type: ignore[arg-type]
                return False
        elif isinstance(x, ast.AST):
            if not same(x, y):
                return False
        elif x != y or repr(x) != repr(y):
            return False
    return True


def _same_lists(a: list[object], b: list[object]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if not same(x, y):
            return False
    return True


def _header(node: ast.AST) -> str:
    """``ast.dump`` of a node without its statement lists (handlers and cases keep their own headers)."""
    clone = copy.copy(node)
    for field, value in ast.iter_fields(node):
        if field in _BODIES and isinstance(value, list):
            setattr(clone, field, [])
        elif field in ("handlers", "cases"):
            setattr(clone, field, [ast.Constant(_header(item)) for item in value])
    return ast.dump(clone)


def blocks(node: ast.AST) -> list[list[ast.stmt]]:
    """Every statement list of a compound statement, handlers' and cases' bodies included."""
    found: list[list[ast.stmt]] = []
    for field, value in ast.iter_fields(node):
        if field in _BODIES and isinstance(value, list):
            found.append(value)
        elif field in ("handlers", "cases"):
            found.extend(item.body for item in value)
    return found


# --- reading and editing trees ---------------------------------------------------------------------


class _Replace(ast.NodeTransformer):
    """Replace nodes (by identity) with new ones; ``None`` removes a statement (left as pass)."""

    def __init__(self, swaps: dict[int, ast.AST | None]):
        self.swaps = swaps
        self.pending = set(swaps)  # once every node is swapped, the rest of the tree is left alone

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if not self.pending:
            return node
        for field, old in ast.iter_fields(node):
            if isinstance(old, list):
                new_items = []
                for item in old:
                    if isinstance(item, ast.AST) and id(item) in self.swaps:
                        self.pending.discard(id(item))
                        swapped = self.swaps[id(item)]
                        new_items.append(swapped if swapped is not None else _pass(item))
                    elif isinstance(item, ast.AST):
                        new_items.append(self.visit(item))
                    else:
                        new_items.append(item)
                setattr(node, field, new_items)
            elif isinstance(old, ast.AST):
                if id(old) in self.swaps:
                    self.pending.discard(id(old))
                    swapped = self.swaps[id(old)]
                    setattr(node, field, swapped if swapped is not None else _pass(old))
                else:
                    setattr(node, field, self.visit(old))
        return node


def _pass(where: ast.AST) -> ast.stmt:
    return ast.copy_location(ast.Pass(), where)


def replace(tree: ast.Module, swaps: dict[int, ast.AST | None]) -> None:
    _Replace(swaps).visit(tree)


# --- writing edits back -----------------------------------------------------------------------------


class _Planner:
    def __init__(self, source: Source, fine: bool, edited: Sequence[int] | None = None):
        self.src = source
        self.fine = fine
        self.edited = sorted(set(edited)) if edited is not None else None

    def _untouched(self, old: ast.stmt) -> bool:
        """No edited line falls in ``old``'s lines: the statement is the same in both trees
        (``new`` was parsed from the same text; the final check catches a line not reported)."""
        if self.edited is None:
            return False
        first, last = self.src.first_line(old), getattr(old, "end_lineno", None) or old.lineno
        at = bisect.bisect_left(self.edited, first)
        return at == len(self.edited) or self.edited[at] > last

    def _padding(self, lineno: int, old_lines: int, new_text: str) -> list[Edit]:
        """Blank lines after line ``lineno`` so later lines keep their numbers."""
        missing = old_lines - (new_text.count("\n") + 1)
        where = self.src.line_after(lineno)
        if missing <= 0 or where is None:
            return []
        return [Edit(where, where, self.src.newline * missing)]

    def replace(self, old: ast.stmt, new: ast.stmt) -> list[Edit] | None:
        indent = self.src.indent(old)
        text = render(new, indent or "", self.src.newline)
        if indent is None and "\n" in text:
            return None  # a compound statement cannot follow `;` or a colon on one line
        start, end = self.src.start(old), self.src.end(old)
        old_lines = old.end_lineno - self.src.first_line(old) + 1  # type: ignore[operator]
        return [Edit(start, end, text), *self._padding(old.end_lineno, old_lines, text)]  # type: ignore[arg-type]

    def header(self, old: ast.stmt, new: ast.stmt) -> list[Edit] | None:
        """Rewrite only ``old``'s header (up to its colon), keeping its body's text."""
        start = self.src.start(old)
        body_start = self.src.start(old.body[0])  # type: ignore[attr-defined]
        colons = [c for c in self.src.colons() if start < c < body_start]
        if not colons:
            return None
        clone = copy.copy(new)
        for field in _BODIES:
            if isinstance(getattr(clone, field, None), list):
                setattr(clone, field, [ast.Pass()] if field == "body" else [])
        text = ast.unparse(clone).split("\n", 1)[0]
        if self.src.text.startswith("elif", start):
            text = "el" + text
        colon_line = bisect.bisect_right(self.src.starts, colons[-1])
        old_lines = colon_line - old.lineno + 1
        return [Edit(start, colons[-1] + 1, text), *self._padding(colon_line, old_lines, text)]

    def insert(self, olds: list[ast.stmt], at: int, news: list[ast.stmt]) -> list[Edit] | None:
        simple = [render(n, "") for n in news]
        anchor = olds[at] if at < len(olds) else olds[-1]
        indent = self.src.indent(anchor)
        if at < len(olds):
            if self.src.text.startswith("elif", self.src.start(anchor)):
                return None
            if indent is not None:
                where = self.src.starts[self.src.first_line(anchor) - 1]
                text = "".join(indent + render(n, indent, self.src.newline) + self.src.newline for n in news)
                return [Edit(where, where, text)]
            if any("\n" in s for s in simple):
                return None
            where = self.src.start(anchor)
            return [Edit(where, where, "".join(s + "; " for s in simple))]
        where_next = self.src.line_after(anchor.end_lineno)  # type: ignore[arg-type]
        if indent is not None and where_next is not None:
            text = "".join(indent + render(n, indent, self.src.newline) + self.src.newline for n in news)
            return [Edit(where_next, where_next, text)]
        if any("\n" in s for s in simple) or isinstance(anchor, _COMPOUND):
            return None
        where = self.src.end(anchor)
        return [Edit(where, where, "".join("; " + s for s in simple))]

    def replace_run(self, olds: list[ast.stmt], news: list[ast.stmt]) -> list[Edit] | None:
        indent = self.src.indent(olds[0])
        if indent is None:
            return None
        text = (self.src.newline + indent).join(render(n, indent, self.src.newline) for n in news)
        start, end = self.src.start(olds[0]), self.src.end(olds[-1])
        old_lines = olds[-1].end_lineno - self.src.first_line(olds[0]) + 1  # type: ignore[operator]
        return [Edit(start, end, text), *self._padding(olds[-1].end_lineno, old_lines, text)]  # type: ignore[arg-type]

    def compound(self, old: ast.stmt, new: ast.stmt) -> list[Edit] | None:
        """A compound statement's header alone, if it changed (a few kinds), then its bodies."""
        header = (
            [] if _header(old) == _header(new) else self.header(old, new) if isinstance(old, _HEADER_ONLY) else None
        )
        if header is None:
            return None
        edits = list(header)
        for before, after in zip(blocks(old), blocks(new), strict=True):
            found = self.body(before, after)
            if found is None:
                return None
            edits.extend(found)
        return edits

    def statement(self, old: ast.stmt, new: ast.stmt) -> list[Edit] | None:
        if self._untouched(old):
            return []
        if self.fine and type(old) is type(new) and blocks(old):
            # Header, then bodies: an unchanged compound statement yields no edit, and each of
            # its statements is compared once (not again at every level above it).
            edits = self.compound(old, new)
            if edits is not None:
                return edits
        elif same(old, new):
            return []
        if same(old, new):
            return []
        return self.replace(old, new)

    def body(self, olds: list[ast.stmt], news: list[ast.stmt]) -> list[Edit] | None:
        opcodes: Sequence[tuple[str, int, int, int, int]] = [("replace", 0, len(olds), 0, len(news))]
        if len(olds) != len(news):
            before, after = [ast.dump(s) for s in olds], [ast.dump(s) for s in news]
            opcodes = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
        edits: list[Edit] = []
        for tag, i1, i2, j1, j2 in opcodes:
            found: list[Edit] | None
            if tag == "equal":
                continue
            if tag == "replace" and i2 - i1 == j2 - j1:
                found = []
                for old, new in zip(olds[i1:i2], news[j1:j2], strict=True):
                    one = self.statement(old, new)
                    if one is None:
                        return None
                    found.extend(one)
            elif tag == "insert":
                found = self.insert(olds, i1, news[j1:j2])
            elif tag == "replace":
                found = self.replace_run(olds[i1:i2], news[j1:j2])
            else:
                found = None  # a deletion: the enclosing statement is rewritten instead
            if found is None:
                return None
            edits.extend(found)
        return edits


def apply(text: str, edits: list[Edit]) -> str:
    """``text`` with ``edits`` made (they must not overlap; insertions at one place keep their order)."""
    ordered = sorted(enumerate(edits), key=lambda item: (item[1].start, item[1].end, item[0]))
    pieces, at = [], 0
    for _, edit in ordered:
        if edit.start < at:
            raise SpliceError("overlapping edits")
        pieces += [text[at : edit.start], edit.text]
        at = edit.end
    return "".join([*pieces, text[at:]])


def splice(
    source: str, old: ast.Module, new: ast.Module, *, fine: bool = True, edited: Sequence[int] | None = None
) -> str:
    """``source`` (which parses to ``old``) edited to parse to ``new``, as described above.
    With ``fine=False`` whole top-level statements are rewritten (a fallback). ``edited``: the
    lines the edit touched (``new`` being a fresh parse of ``source``, edited): statements
    without one are not compared."""
    return splice_parsed(source, old, new, fine=fine, edited=edited)[0]


def splice_parsed(
    source: str, old: ast.Module, new: ast.Module, *, fine: bool = True, edited: Sequence[int] | None = None
) -> tuple[str, ast.Module]:
    """``splice``, with the text's own parse (made to check it), positions and all."""
    edits = _Planner(Source(source), fine, edited).body(old.body, new.body)
    if edits is None:
        raise SpliceError("the edit cannot be written back as splices")
    text = apply(source, edits)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in the student's strings, say
            reparsed = syntax.parse(text)
    except (SyntaxError, ValueError) as error:
        raise SpliceError(f"the spliced text does not parse: {error}") from None
    if not same(reparsed, new):
        raise SpliceError("the spliced text does not parse to the edited tree")
    return text, reparsed


def write_back(source: str, old: ast.Module, new: ast.Module, edited: Sequence[int] | None = None) -> str:
    """``splice``, falling back to whole top-level statements, then to ``ast.unparse``.
    With the ``edited`` lines, only statements holding one are compared first; should they not
    tell the whole edit (the check fails), every statement is."""
    first = [(True, edited)] if edited is not None else []
    for fine, lines in (*first, (True, None), (False, None)):
        try:
            return splice(source, old, new, fine=fine, edited=lines)
        except SpliceError:
            continue
    return ast.unparse(new) + "\n"
