"""Path converters: a URL whose parts have the wrong shape matches no route (404) before any
view or query runs, so no path text that a column could not hold reaches PostgreSQL."""

from __future__ import annotations

from django.urls import register_converter

from .courses.access import BIGINT_MAX
from .courses.models import SLUG_PATTERN


class AssignmentSlug:
    """The shape ``Assignment.slug`` is validated to."""

    regex = SLUG_PATTERN

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class RowId:
    """A primary key: digits only, at most what a bigint holds (a longer number is no row)."""

    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if not 0 < number <= BIGINT_MAX:
            raise ValueError("not a row id")  # Django's resolver: this route does not match
        return number

    def to_url(self, value: int) -> str:
        return str(value)


class FileName:
    """A download's name, such as ``grades.csv``: the view knows which exist."""

    regex = "[a-z0-9][a-z0-9_-]{0,39}[.][a-z]{1,8}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


# Registered once, on import by the URL modules that use them.
register_converter(AssignmentSlug, "assignment")
register_converter(RowId, "row")
register_converter(FileName, "filename")
