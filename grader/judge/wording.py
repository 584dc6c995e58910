"""How observed and expected values are written in feedback: one rule for every stage."""

from __future__ import annotations

from .records import Observed, Unreadable

NOT_OBSERVED = "(not observed)"
_NONFINITE = {"nan": "NaN", "inf": "inf", "-inf": "-inf"}


def show(value: Observed | None) -> str:
    """A number as the feedback prints it; anything else says what it was."""
    if isinstance(value, float) and not isinstance(value, bool):
        return f"{value:.10g}"
    if isinstance(value, Unreadable):
        if value.kind == "nonfinite":
            return _NONFINITE.get(value.text, "overflow")
        if value.kind == "unread":
            return f"could not be read ({value.text})"
        return f"not a float ({value.text})"
    if value is None:
        return NOT_OBSERVED
    if isinstance(value, tuple):
        return str(list(value))
    return str(value)


def fmt(value: Observed | None) -> str:
    """A value in a comparison row: node-name lists as sets, labels quoted, numbers via ``show``."""
    if isinstance(value, tuple):
        return "{" + ", ".join(value) + "}" if value else "{} (none)"
    return repr(value) if isinstance(value, str) else show(value)
