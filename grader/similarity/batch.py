"""``grader similarity OUT``: the report over a graded class's store, and its class-page section."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from grader.errors import SubmissionError
from grader.judge.expected import REFERENCE
from grader.store import Store, StoredSubmission

from .compare import THRESHOLD
from .report import HTML_NAME, SimilarityReport, Source, build, write
from .summary import SimilaritySection, content_digest, section, to_meta

META_KEY = "similarity"
MAX_BASE_BYTES = 1_000_000  # a starter file, not a data set


def read_base(paths: Sequence[Path], *, reference: Path | None = REFERENCE) -> list[Source]:
    """The reference solution (unless left out) and every file the instructor names as base code."""
    found = [] if reference is None else [Source(f"reference ({reference.name})", reference.read_text("utf-8"))]
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError as error:
            raise SubmissionError(f"cannot read the base file: {error.strerror}", where=str(path)) from None
        if len(data) > MAX_BASE_BYTES:
            raise SubmissionError(
                f"a base file is at most {MAX_BASE_BYTES} bytes, this one is {len(data)}", where=str(path)
            )
        found.append(Source(path.name, data.decode("utf-8", "replace")))
    return found


def _digest(submissions: Sequence[StoredSubmission]) -> str:
    return content_digest((s.student, s.content_sha) for s in submissions if s.source is not None)


def class_similarity(
    store: Store, out: Path, *, base: Sequence[Source], threshold: float = THRESHOLD, title: str
) -> SimilarityReport:
    """Compare every stored submission that has a file; write the JSON and the page under ``out``
    and the headline into the store, for the class page."""
    submissions = store.submissions()
    sources = [Source(s.student, s.source.decode("utf-8", "replace")) for s in submissions if s.source is not None]
    skipped = [(s.student, s.problem or "no file was found") for s in submissions if s.source is None]
    report = build(sources, base, threshold=threshold, skipped=skipped)
    write(report, out, title=title)
    store.set_meta(META_KEY, to_meta(report, _digest(submissions)))
    return report


def class_section(store: Store) -> SimilaritySection | None:
    return section(store.meta(META_KEY), digest=_digest(store.submissions()), href=HTML_NAME)
