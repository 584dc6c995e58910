"""A new seed for an assignment: the instructor's deliberate act that changes every hidden input.

The seed lives in the rubric file (``assignment.seed``), so it is reviewed and versioned with
the rubric. Writing it back edits that one line and keeps every comment and key order.
"""

from __future__ import annotations

import re
from pathlib import Path

from .errors import RubricError
from .plan import new_seed
from .rubric import SEED_LIMIT, load_rubric

_BLOCK = re.compile(r"^assignment:[ \t]*(?:#.*)?$", re.M)
_SEED = re.compile(r"^(?P<indent>[ \t]+)seed:[ \t]*(?P<value>[^#\n]*?)[ \t]*(?P<comment>#.*)?$", re.M)
_KEY = re.compile(r"^(?P<indent>[ \t]+)[A-Za-z_]+:", re.M)


def reseed(path: Path, seed: int | None = None) -> tuple[int, int]:
    """Write a new ``assignment.seed`` into the rubric at ``path``; returns (old, new)."""
    old = load_rubric(path).seed
    new = new_seed() if seed is None else seed % SEED_LIMIT
    text = path.read_text(encoding="utf-8")
    block = _BLOCK.search(text)
    if block is None:
        raise RubricError("no top-level 'assignment:' block to hold the seed", where=str(path))
    end = re.compile(r"^\S", re.M).search(text, block.end() + 1)
    body_end = end.start() if end else len(text)
    found = _SEED.search(text, block.end(), body_end)
    if found:
        line = f"{found['indent']}seed: {new}" + (f"  {found['comment']}" if found["comment"] else "")
        text = text[: found.start()] + line + text[found.end() :]
    else:
        key = _KEY.search(text, block.end(), body_end)
        indent = key["indent"] if key else "  "
        text = text[: block.end()] + f"\n{indent}seed: {new}" + text[block.end() :]
    path.write_text(text, encoding="utf-8")
    if load_rubric(path).seed != new:  # the edit must read back as the new seed
        raise RubricError("the new seed could not be written", where=str(path))
    return old, new
