"""A staff form that was refused: what was wrong with each field, as plain text (400)."""

from __future__ import annotations

from django import forms
from django.http import HttpResponse


def form_errors(form: forms.BaseForm, headline: str = "Nothing was changed.") -> HttpResponse:
    lines = [headline]
    for field, errors in form.errors.items():
        said = " ".join(str(error) for error in errors)
        lines.append(said if field == "__all__" else f"{field}: {said}")
    return HttpResponse("\n".join(lines), status=400, content_type="text/plain; charset=utf-8")
