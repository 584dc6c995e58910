"""Write one benchmark's section of BENCHMARKS.md, between its own markers, leaving the rest."""

from __future__ import annotations

import re
from pathlib import Path


def write_section(path: Path, name: str, lines: list[str]) -> str:
    """Replace (or append) the block marked ``name`` in ``path``; returns the block."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    block = "\n".join([begin, *lines, end])
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.DOTALL)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")
    return block
