"""The class store: one SQLite file under OUT, one row per student, written result by result.

Each result is committed in its own transaction the moment it exists, so killing the grader
at any point (even kill -9) loses nothing already graded and leaves nothing half-written: a
transaction is either in the file or not. A rerun reads the store to decide, per student,
whether to skip (same submission bytes, rubric, image and seed), re-judge a stored sandbox
run (the rubric changed but not what the sandbox is asked to do), or run again.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import StoreError
from .results import SubmissionResult
from .results_io import evidence_from_json, evidence_to_json, result_from_json, result_to_json
from .runners.base import Evidence

STORE_NAME = "grades.sqlite"
SCHEMA_VERSION = 2  # 2: the seed is a key of 128 bits or more, kept as text

_RESULTS_TABLE = """
CREATE TABLE IF NOT EXISTS results (
    student TEXT PRIMARY KEY REFERENCES submissions(student),
    content_sha TEXT NOT NULL,
    rubric_sha TEXT NOT NULL,
    image TEXT NOT NULL,
    seed TEXT NOT NULL,
    status TEXT NOT NULL,
    score REAL NOT NULL,
    result TEXT NOT NULL,
    evidence TEXT,
    graded_at REAL NOT NULL,
    runs INTEGER NOT NULL DEFAULT 1
)
"""

_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS submissions (
    student TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    content_sha TEXT NOT NULL,
    source BLOB,
    origin TEXT NOT NULL,
    notices TEXT NOT NULL,
    problem TEXT NOT NULL
);
"""
    + _RESULTS_TABLE
    + ";"
)


@dataclass(frozen=True)
class StoredSubmission:
    student: str
    name: str
    content_sha: str
    source: bytes | None
    origin: str
    notices: tuple[str, ...]
    problem: str


@dataclass(frozen=True)
class StoredResult:
    student: str
    content_sha: str
    rubric_sha: str
    image: str
    seed: int
    result: SubmissionResult
    evidence: Evidence | None
    graded_at: float
    runs: int  # how many times this student went through the sandbox in this store


class Store:
    """One connection, used from one thread (the batch's coordinator)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(path, isolation_level=None)  # explicit transactions only
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")  # a commit survives power loss, not just kill -9
            self._db.executescript(_SCHEMA)
            version = self.meta("schema_version")
            if version == "1":
                self._from_version_1()
            elif version is None:
                self.set_meta("schema_version", str(SCHEMA_VERSION))
            elif version != str(SCHEMA_VERSION):
                raise StoreError(f"{path} was written by another version of the grader (schema {version})")
        except sqlite3.DatabaseError as error:
            raise StoreError(f"{path} is not a usable grade store: {error}") from error

    def close(self) -> None:
        self._db.close()

    def _from_version_1(self) -> None:
        """Version 1 kept the seed as an INTEGER column, which cannot hold a 128-bit key (SQLite
        would turn it into a float): the results table is rebuilt with the seed as text."""
        with self._transaction():
            self._db.execute("ALTER TABLE results RENAME TO results_v1")
            self._db.execute(_RESULTS_TABLE)
            self._db.execute(
                "INSERT INTO results SELECT student, content_sha, rubric_sha, image, CAST(seed AS TEXT),"
                " status, score, result, evidence, graded_at, runs FROM results_v1"
            )
            self._db.execute("DROP TABLE results_v1")
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- meta ------------------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    # --- submissions -------------------------------------------------------------------------------

    def put_submission(self, item: StoredSubmission) -> None:
        with self._transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO submissions (student, name, content_sha, source, origin, notices, problem)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    item.student,
                    item.name,
                    item.content_sha,
                    item.source,
                    item.origin,
                    json.dumps(list(item.notices)),
                    item.problem,
                ),
            )

    def submissions(self) -> list[StoredSubmission]:
        rows = self._db.execute(
            "SELECT student, name, content_sha, source, origin, notices, problem FROM submissions ORDER BY student"
        ).fetchall()
        return [StoredSubmission(r[0], r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), r[6]) for r in rows]

    # --- results -------------------------------------------------------------------------------------

    def put_result(
        self,
        *,
        content_sha: str,
        rubric_sha: str,
        image: str,
        result: SubmissionResult,
        evidence: Evidence | None,
        ran: bool,
    ) -> None:
        """Record a student's newest result in one transaction (``ran``: it went through the sandbox)."""
        with self._transaction():
            previous = self._db.execute("SELECT runs FROM results WHERE student = ?", (result.student,)).fetchone()
            runs = (previous[0] if previous else 0) + (1 if ran else 0)
            self._db.execute(
                "INSERT OR REPLACE INTO results"
                " (student, content_sha, rubric_sha, image, seed, status, score, result, evidence, graded_at, runs)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    result.student,
                    content_sha,
                    rubric_sha,
                    image,
                    str(result.seed),
                    result.status.value,
                    result.score,
                    result_to_json(result),
                    evidence_to_json(evidence) if evidence else None,
                    time.time(),
                    runs,
                ),
            )

    def result(self, student: str) -> StoredResult | None:
        row = self._db.execute(_SELECT_RESULT + " WHERE student = ?", (student,)).fetchone()
        return None if row is None else _stored(row)

    def results(self) -> list[StoredResult]:
        return [_stored(r) for r in self._db.execute(_SELECT_RESULT + " ORDER BY student").fetchall()]

    def forget_missing(self, students: set[str]) -> int:
        """Drop rows of students no longer in the input (a re-downloaded class); returns how many."""
        known = {r[0] for r in self._db.execute("SELECT student FROM submissions").fetchall()}
        gone = sorted(known - students)
        with self._transaction():
            for student in gone:
                self._db.execute("DELETE FROM results WHERE student = ?", (student,))
                self._db.execute("DELETE FROM submissions WHERE student = ?", (student,))
        return len(gone)

    # --- plumbing --------------------------------------------------------------------------------------

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


_SELECT_RESULT = "SELECT student, content_sha, rubric_sha, image, seed, result, evidence, graded_at, runs FROM results"


def _stored(row: tuple[object, ...]) -> StoredResult:
    student, content_sha, rubric_sha, image, seed, result, evidence, graded_at, runs = row
    return StoredResult(
        str(student),
        str(content_sha),
        str(rubric_sha),
        str(image),
        int(str(seed)),
        result_from_json(str(result)),
        evidence_from_json(str(evidence)) if evidence else None,
        float(str(graded_at)),
        int(str(runs)),
    )


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *rest: object) -> None:
        self._db.execute("ROLLBACK" if kind else "COMMIT")
