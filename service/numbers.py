"""Numbers in forms, read strictly: plain ASCII decimals only.

Python's own parsing also takes "nan", "inf", "1_000", full-width and Arabic-Indic digits and
thousands of digits; none of these is what a score or a number of minutes means, and a huge
one overflows the column it is stored in."""

from __future__ import annotations

import math
import re

from django import forms

# An exponent is allowed: Python writes small floats as 1e-05, and forms show stored values.
DECIMAL = re.compile(r"[+-]?(?:[0-9]{1,15}(?:\.[0-9]{0,15})?|\.[0-9]{1,15})(?:[eE][+-]?[0-9]{1,3})?", re.ASCII)
WHOLE = re.compile(r"[+-]?[0-9]{1,15}", re.ASCII)
SAID = "Enter a plain decimal number (digits, at most one point), such as 87.5."


def decimal(text: str) -> float | None:
    """The finite number ``text`` writes, or None when it is not a plain decimal."""
    text = text.strip()
    if not DECIMAL.fullmatch(text):
        return None
    number = float(text)
    return number if math.isfinite(number) else None


class StrictFloatField(forms.FloatField):
    default_error_messages = {"invalid": SAID}

    def to_python(self, value: object) -> float | None:  # type: ignore[override]  # stubs: IntegerField's
        if value in self.empty_values:
            return None
        number = decimal(str(value))
        if number is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return number


class StrictIntegerField(forms.IntegerField):
    default_error_messages = {"invalid": "Enter a whole number (digits only)."}

    def to_python(self, value: object) -> int | None:
        if value in self.empty_values:
            return None
        text = str(value).strip()
        if not WHOLE.fullmatch(text):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return int(text)
