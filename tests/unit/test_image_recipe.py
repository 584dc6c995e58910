"""The recipe names what a sandbox runs, the same on every host whatever base it is built FROM."""

from __future__ import annotations

import shutil
from pathlib import Path

from grader.image import SANDBOX_DIR, image_tag, recipe_digest


def test_the_recipe_follows_the_sandbox_files_and_not_the_base(tmp_path: Path) -> None:
    copy = tmp_path / "sandbox"
    shutil.copytree(SANDBOX_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    recipe = recipe_digest(copy)
    assert recipe == recipe_digest() and len(recipe) == 12 and int(recipe, 16) >= 0
    # Two hosts with different bases: different tags, one recipe.
    assert image_tag("python:3.11-slim", base_id="sha256:1", sandbox_dir=copy) != image_tag(
        "autograd-grader-base:bookworm", base_id="sha256:2", sandbox_dir=copy
    )
    harness = copy / "harness" / "execution" / "child.py"
    harness.write_text(harness.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    assert recipe_digest(copy) != recipe
