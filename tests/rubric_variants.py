"""The shipped rubric with some of its limits changed, written where a test can load it: the
limits are data, and a property that must hold whatever they are is tested at other values."""

from __future__ import annotations

import re
from pathlib import Path

from grader.rubric import DEFAULT_RUBRIC, Rubric, load_rubric


def with_limits(folder: Path, text: str | None = None, **limits: float) -> Rubric:
    """The shipped rubric (or ``text``, a rubric's YAML) with each named limit (``cpus=2``) set to
    its new value."""
    text = Path(DEFAULT_RUBRIC).read_text(encoding="utf-8") if text is None else text
    for name, value in limits.items():
        line = re.compile(rf"^(  {name}: )[0-9.]+", re.MULTILINE)
        assert len(line.findall(text)) == 1, f"the rubric has no single limit {name}"
        text = line.sub(rf"\g<1>{value:g}", text)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ("_".join(f"{k}_{v:g}" for k, v in limits.items()) + ".yaml")
    path.write_text(text, encoding="utf-8")
    rubric = load_rubric(path)
    for name, value in limits.items():
        assert getattr(rubric.limits, name) == value, name
    return rubric


SHRINK = "    shrink: 12\n"


def no_shrinking(folder: Path) -> Rubric:
    """The shipped rubric with counterexample shrinking switched off on every probe."""
    text = Path(DEFAULT_RUBRIC).read_text(encoding="utf-8")
    assert SHRINK in text
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "no_shrink.yaml"
    path.write_text(text.replace(SHRINK, ""), encoding="utf-8")
    rubric = load_rubric(path)
    assert not any(p.shrink for p in rubric.probes.values())
    return rubric
