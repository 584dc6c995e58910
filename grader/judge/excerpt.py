"""The lines of a file around the place it failed to load, with a caret under the spot.

Built on the host from the file it holds; only the line and column come from the sandbox,
and they are checked against the file (a line it does not have gives no excerpt). Tabs are
expanded so the caret lines up; the text is the student's own and is escaped by every
renderer like any other.
"""

from __future__ import annotations

MAX_WIDTH = 160  # a longer line is cut around the caret
AROUND = 1  # lines shown before and after the failing one


def source_excerpt(text: str, line: int | None, column: int | None = None) -> str:
    """``  58 | code`` lines for ``line`` and the lines around it, a caret under ``column``
    (1-based, in characters) when it falls inside the line. Empty when ``line`` is unknown."""
    lines = text.splitlines()
    if line is None or not 1 <= line <= len(lines):
        return ""
    first, last = max(1, line - AROUND), min(len(lines), line + AROUND)
    width = len(str(last))
    out: list[str] = []
    for number in range(first, last + 1):
        raw = lines[number - 1]
        shown, start = _window(raw.expandtabs(4), _caret_at(raw, column) if number == line else None)
        out.append(f"{number:>{width}} | {shown}".rstrip())
        if number == line and column is not None and start is not None:
            out.append(f"{'':>{width}} | {' ' * start}^")
    return "\n".join(out)


def _caret_at(raw: str, column: int | None) -> int | None:
    """The caret's place in the tab-expanded line, or None when the column is not in it."""
    if column is None or not 1 <= column <= len(raw) + 1:
        return None
    return len(raw[: column - 1].expandtabs(4))


def _window(line: str, caret: int | None) -> tuple[str, int | None]:
    """At most MAX_WIDTH characters of ``line``, around the caret when there is one."""
    if len(line) <= MAX_WIDTH:
        return line, caret
    start = 0 if caret is None else max(0, min(caret - MAX_WIDTH // 2, len(line) - MAX_WIDTH))
    cut = line[start : start + MAX_WIDTH]
    prefix = "..." if start else ""
    suffix = "..." if start + MAX_WIDTH < len(line) else ""
    return prefix + cut + suffix, None if caret is None else caret - start + len(prefix)
