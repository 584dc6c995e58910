"""Intake: the submitted bytes, or why they cannot be graded at all (missing, binary, too large)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def intake(path: Path, max_bytes: int) -> tuple[bytes | None, str]:
    """The file's bytes, or None and why it cannot be graded at all."""
    if not path.is_file():
        return None, f"no file named {path.name} was submitted"
    with path.open("rb") as handle:
        raw = handle.read(max_bytes + 1)
    why = source_problem(raw, path.name, max_bytes)
    return (None, why) if why else (raw, "")


def source_problem(raw: bytes, name: str, max_bytes: int) -> str:
    """Why these bytes cannot be graded as a Python file ("" when they can)."""
    if len(raw) > max_bytes:
        return f"{name} is over the {max_bytes // 1024} KiB limit"
    if b"\x00" in raw:
        return f"{name} is not a text file (it contains NUL bytes)"
    try:
        importlib.util.decode_source(raw)
    except (SyntaxError, UnicodeError, LookupError) as error:  # UnicodeError: a codec that refuses any text
        return f"{name} is not readable Python text (save it as UTF-8): {error}"
    return ""
