"""A submission as the canonical tokens of its syntax tree, cut into units.

What a copier changes cheaply leaves these tokens alone: every name, literal, comment,
docstring, type annotation and line break is gone (the tree has no formatting, and names and
literals become their kind), so renaming, reformatting and re-commenting change nothing; nor
does spelling attribute access with getattr, setattr and the like (attributes.py). A unit
is one function or method (its nested closures included), one class's own statements, or the
module's own statements; fingerprints never cross units, so putting methods or top-level
functions in another order changes nothing either, while the order of statements inside a
function still counts.

A file with a syntax error is still read as a tree: the line Python points at is blanked and the
file parsed again (a few times at most); when that does not help, everything up to the broken
top-level statement is kept. Only a file with no readable prefix goes to the loose scanner.
Only text is read: nothing here runs student code.
"""

from __future__ import annotations

import ast
import re

from .attributes import plain_attributes
from .tokens import Token, Tokens, loose_tokens

MAX_REPAIRS = 8  # parses of a broken file, each after blanking the line Python pointed at
BIG_FILE = 300_000  # characters: past this a broken file gets one repair, not eight
_BODY_FIELDS = ("body", "orelse", "handlers", "finalbody", "cases")
_SKIPPED_FIELDS = frozenset({"ctx", "type_comment", "annotation", "returns", "type_params", "decorator_list"})
_LOCATED = (ast.stmt, ast.expr, ast.excepthandler, ast.arg, ast.keyword)
_DEFINITION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_AFTER_BLOCK = re.compile(r"after .* on line (\d+)")
_TOP_LEVEL = re.compile(r"[A-Za-z_@]")  # a line that starts a top-level statement


class _Lines:
    """Character offsets from the tree's (line, UTF-8 byte column) positions."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.starts = [0]
        for line in source.split("\n"):
            self.starts.append(self.starts[-1] + len(line) + 1)

    def offset(self, line: int, column: int) -> int:
        if not 1 <= line < len(self.starts):
            return len(self.source)
        start = self.starts[line - 1]
        text = self.source[start : self.starts[line] - 1]
        if not text.isascii():
            column = len(text.encode("utf-8", "surrogatepass")[:column].decode("utf-8", "replace"))
        return min(start + column, len(self.source))

    def line_end(self, line: int) -> int:
        return self.starts[line] - 1 if 1 <= line < len(self.starts) else len(self.source)


def _label(node: ast.AST) -> str | None:
    """The token a node stands for: its kind, with literals by type only."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or value is None or value is Ellipsis:
            return "const"
        return "str" if isinstance(value, str | bytes) else "num"
    if isinstance(node, ast.expr_context | ast.alias | ast.Module):
        return None
    return type(node).__name__


def _no_op(node: ast.AST, unread: frozenset[str] = frozenset()) -> bool:
    """A statement that does nothing: a bare literal (a docstring, a string used as a comment,
    ``...``), or a literal stored in a local the function never reads (padding)."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return True
    return (
        isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and all(isinstance(t, ast.Name) and t.id in unread for t in node.targets)
    )


def _unread(function: ast.AST) -> frozenset[str]:
    """The names a function stores but never reads (its nested functions' reads count)."""
    stored: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name):
            (stored if isinstance(node.ctx, ast.Store) else read).add(node.id)
    return frozenset(stored - read)


def _unit_tokens(root: ast.AST, lines: _Lines, out: list[Token], *, skip_defs: bool) -> None:
    """Pre-order tokens of ``root`` (iteratively: a deep tree cannot exhaust the stack). With
    ``skip_defs``, the functions and classes directly in its body are left for their own units."""
    stack: list[tuple[ast.AST | str, int, int]] = [(root, 0, 0)]  # node or marker, parent's span
    unread = _unread(root) if isinstance(root, ast.FunctionDef | ast.AsyncFunctionDef) else frozenset()
    while stack:
        item, start, end = stack.pop()
        if isinstance(item, str):  # a block marker: zero width, where the last token ended
            at = out[-1].end if out else start
            out.append(Token(item, at, at))
            continue
        node = item
        if isinstance(node, _LOCATED):
            start = lines.offset(node.lineno, node.col_offset)
            if _has_block(node):  # a compound statement's span is its header line
                end = lines.line_end(node.lineno)
            else:
                end = lines.offset(node.end_lineno or node.lineno, node.end_col_offset or 0)
        label = _label(node)
        if label is not None:
            out.append(Token(label, start, max(start, end)))
        children: list[ast.AST | str] = []
        if isinstance(node, _DEFINITION):
            children.extend(node.decorator_list)
        for field, value in ast.iter_fields(node):
            if field in _SKIPPED_FIELDS:
                continue
            if isinstance(value, ast.AST):
                children.append(value)
            elif isinstance(value, list):
                kept = [v for v in value if isinstance(v, ast.AST) and not _no_op(v, unread)]
                if skip_defs and node is root:
                    kept = [v for v in kept if not isinstance(v, _DEFINITION)]
                if field in _BODY_FIELDS and field != "body" and kept:
                    children.append(field)  # "orelse" and the like: where the other branch begins
                children.extend(kept)
        if _has_block(node):
            children.append("end")
        stack.extend((child, start, end) for child in reversed(children))


def _has_block(node: ast.AST) -> bool:
    return isinstance(node, ast.stmt) and any(getattr(node, f, None) for f in _BODY_FIELDS)


def _units(tree: ast.Module, lines: _Lines) -> tuple[list[Token], list[tuple[int, int]]]:
    """Every unit's tokens, in the order of the file, and each unit's [start, end) range: the
    module's own statements, each class's header and own statements, each function whole."""
    items: list[Token] = []
    units: list[tuple[int, int]] = []

    def unit(root: ast.AST, *, skip_defs: bool) -> None:
        before = len(items)
        _unit_tokens(root, lines, items, skip_defs=skip_defs)
        if len(items) > before:
            units.append((before, len(items)))

    def scope(node: ast.Module | ast.ClassDef) -> None:
        unit(node, skip_defs=True)
        for child in node.body:
            if isinstance(child, ast.ClassDef):
                scope(child)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                unit(child, skip_defs=False)

    scope(tree)
    return items, units


def _parse(source: str) -> tuple[ast.Module | None, str]:
    """The tree of ``source``, repairing or cutting it at syntax errors; and what was done."""
    lines = source.split("\n")
    budget = 1 if len(source) > BIG_FILE else MAX_REPAIRS
    blanked: list[int] = []
    first_error = ""
    for _ in range(budget + 1):
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError as error:
            if not first_error:
                first_error = f"line {error.lineno}: {error.msg}"
            line = _line_to_blank(error, lines)
            if line is None or line in blanked:
                break
            blanked.append(line)
            indent = lines[line - 1][: len(lines[line - 1]) - len(lines[line - 1].lstrip())]
            # Same length, so offsets still point at the text as written: a literal statement
            # (dropped like a docstring) where the indentation allows one, else blank.
            filler = "" if isinstance(error, IndentationError) else "0"
            lines[line - 1] = (indent + filler).ljust(len(lines[line - 1]))
            continue
        except (ValueError, RecursionError, MemoryError, OverflowError) as error:
            return None, f"read loosely: Python could not parse it ({type(error).__name__})"
        if not blanked:
            return tree, ""
        shown = ", ".join(str(n) for n in blanked[:5]) + (" …" if len(blanked) > 5 else "")
        return (
            tree,
            f"line{'s' if len(blanked) > 1 else ''} {shown} left out: Python could not read them ({first_error})",
        )
    return _prefix(lines, first_error)


def _line_to_blank(error: SyntaxError, lines: list[str]) -> int | None:
    line = error.lineno
    found = _AFTER_BLOCK.search(error.msg or "")
    if isinstance(error, IndentationError) and found and "expected an indented block" in error.msg:
        line = int(found.group(1))  # the header with no body, not the line after it
    if line is None or not 1 <= line <= len(lines) or not lines[line - 1].strip():
        return None
    return line


def _prefix(lines: list[str], first_error: str) -> tuple[ast.Module | None, str]:
    """Everything before the top-level statement Python could not read, if that parses."""
    try:
        ast.parse("\n".join(lines))
    except SyntaxError as error:
        stop = min(max((error.lineno or 1) - 1, 0), len(lines))
    except (ValueError, RecursionError, MemoryError, OverflowError):
        return None, "read loosely: Python could not parse it"
    tries = 0
    for cut in range(stop, -1, -1):
        if 0 < cut < len(lines) and not _TOP_LEVEL.match(lines[cut]):
            continue  # cut only where a top-level statement begins
        tries += 1
        try:
            return ast.parse("\n".join(lines[:cut])), f"read up to line {cut}: Python stops at {first_error}"
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            if tries >= 4:
                break
    return None, f"read loosely: Python stops at {first_error}"


def canonical(source: str) -> Tokens:
    """The canonical tokens of ``source`` by unit; the loose scanner's when no tree can be had."""
    # Python reads a lone CR as a line end: make it one (same length, so offsets still point at
    # the text as written). A NUL is never code: a space, same length.
    source = re.sub(r"\r(?!\n)", "\n", source).replace("\x00", " ")
    tree, note = _parse(source)
    if tree is None:
        items = loose_tokens(source)
        return Tokens(tuple(items), ((0, len(items)),) if items else (), note or "read loosely")
    plain_attributes(tree)
    try:
        items, units = _units(tree, _Lines(source))
    except RecursionError:  # classes nested past the stack: the loose scanner's tokens
        loose = loose_tokens(source)
        return Tokens(tuple(loose), ((0, len(loose)),) if loose else (), "read loosely: the tree is too deep")
    return Tokens(tuple(items), tuple(units), note)
