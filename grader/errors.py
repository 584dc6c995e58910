"""One exception tree for the grader; each class carries the CLI exit code it maps to."""

from __future__ import annotations


class GraderError(Exception):
    """Root of every error the grader raises on purpose. The CLI catches only this."""

    exit_code = 2

    def __init__(self, message: str, *, where: str | None = None) -> None:
        self.message = message
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class RubricError(GraderError):
    """The rubric file is malformed: unknown key, wrong type, impossible value."""

    exit_code = 3


class RubricValidationError(GraderError):
    """The rubric loads but disagrees with the reference (literal mismatch, not full marks)."""

    exit_code = 4


class SubmissionError(GraderError):
    """Input the grader cannot take at all (missing folder, nothing to grade)."""

    exit_code = 5


class SandboxUnavailable(GraderError):
    """No sandbox can run: Docker is unreachable or the image is missing and cannot be built."""

    exit_code = 6


class InfraError(GraderError):
    """The grading infrastructure failed while grading; never the student's fault."""

    exit_code = 7


class ImageBuildError(GraderError):
    """Building the sandbox image failed."""

    exit_code = 8


class StoreError(GraderError):
    """The class store (OUT/grades.sqlite) cannot be used: damaged, or from an incompatible version."""

    exit_code = 9
