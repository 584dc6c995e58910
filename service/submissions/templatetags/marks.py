"""``{{ value|points }}``: points written one way on every page, the grader's way (68, 12.5);
``{{ state|state_word }}``: a submission's state in words."""

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


STATE_WORDS = {
    "not_loadable": "does not load",
    "timeout": "timed out",
    "oom": "out of memory",
    "output_limit": "output limit",
    "infra_error": "grader failure",
    "superseded": "replaced",
}


@register.filter
def state_word(state: object) -> str:
    """The state as a word a student reads: "timed out", not ``timeout``; queued, running and
    graded are already words (and the page that follows a queued submission shows them as is)."""
    text = str(state or "")
    return STATE_WORDS.get(text, text.replace("_", " "))
