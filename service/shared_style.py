"""The grader's feedback stylesheet, served to the service's pages as ``grader/style.css``.

One source for both: ``grader/report/templates/style.css`` is inlined into the grader's own
HTML pages and linked from every service page (``service/templates/base.html``), with the
service's components in ``service/site.css`` on top. Only that one file is exposed, never the
templates beside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, overload

from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

import grader.report

FOLDER = Path(grader.report.__file__).resolve().parent / "templates"  # where the grader's pages take it from
NAME = "style.css"
PREFIX = "grader"
URL_PATH = f"{PREFIX}/{NAME}"  # what {% static %} is given


class GraderStyleFinder(BaseFinder):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=FOLDER)
        self.storage.prefix = PREFIX  # type: ignore[attr-defined]  # read by collectstatic and WhiteNoise

    def check(self, **kwargs: Any) -> list[Any]:
        return []

    @overload
    def find(self, path: str, find_all: Literal[False] = False) -> str | None: ...
    @overload
    def find(self, path: str, find_all: Literal[True]) -> list[str]: ...
    def find(self, path: str, find_all: bool = False) -> Any:
        # Not found is [] in either mode, as Django's own finders answer (staticfiles.finders.find
        # would take a None for a match).
        found = [str(FOLDER / NAME)] if path == URL_PATH else []
        return found[0] if found and not find_all else found

    def list(self, ignore_patterns: Any) -> Iterator[tuple[str, FileSystemStorage]]:
        yield NAME, self.storage
