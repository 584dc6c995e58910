"""An assignment's seed as the database keeps it: a key of 128 bits or more does not fit a
64-bit integer column, so it is stored as decimal text and read back as a Python int."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models

KEY_DIGITS = 78  # 2**256 has 78 decimal digits: the largest seed a rubric accepts


class KeyField(models.CharField):  # type: ignore[type-arg]  # stores text, gives int
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", KEY_DIGITS)
        super().__init__(*args, **kwargs)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> int | None:
        return None if value is None else int(value)

    def to_python(self, value: Any) -> int | None:
        if value is None or isinstance(value, int):
            return value
        text = str(value).strip()
        if not text.isascii() or not text.isdigit() or len(text) > KEY_DIGITS:
            raise ValidationError("a seed is a whole number of at most %(n)d digits", params={"n": KEY_DIGITS})
        return int(text)

    def get_prep_value(self, value: Any) -> str | None:
        value = self.to_python(value)
        return None if value is None else str(value)

    def value_to_string(self, obj: models.Model) -> str:
        return str(self.value_from_object(obj))
