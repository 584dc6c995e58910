"""Every relative link in the README and docs/*.md leads to a file that exists, and a `#heading`
to a heading of that page (GitHub's anchors); every library the project installs is explained."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.*?)\s*#*\s*$", FENCE.sub("", page.read_text()), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def test_the_anchor_rule_reads_headings_as_github_does(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# LTI 1.3: an LMS\n## Grades (AGS)\n## `make serve`\n## Grades (AGS)\n")
    assert anchors(page) == {"lti-13-an-lms", "grades-ags", "make-serve", "grades-ags-1"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        if not goal.exists() or not goal.resolve().is_relative_to(REPO):
            broken.append(target)
        elif anchor and (goal.suffix != ".md" or anchor not in anchors(goal)):
            broken.append(target)
    assert broken == []


def test_the_readme_links_every_docs_page() -> None:
    linked = {(REPO / t.partition("#")[0]).resolve() for t in links(REPO / "README.md")}
    assert {page.resolve() for page in PAGES[1:]} <= linked


def test_every_installed_library_says_why_in_the_readme() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Why each library is here") :]
    missing = []
    for requirement in names:
        name = re.split(r"[\[<>=~! ]", requirement, maxsplit=1)[0]
        if name.startswith("types-"):
            name = "types-*"
        elif name == "psycopg":
            name = "`psycopg`"
        if name not in section:
            missing.append(name)
    assert missing == []
