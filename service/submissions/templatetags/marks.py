"""``{{ value|points }}``: points written one way on every page, the grader's way (68, 12.5)."""

from __future__ import annotations

from django import template

from grader.report.view import format_number

register = template.Library()


@register.filter
def points(value: object) -> str:
    """Empty for no value; otherwise the grader's own formatting, so 68.0 and 68 never differ."""
    if value is None or value == "":
        return ""
    try:
        return format_number(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
