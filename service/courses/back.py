"""Where a staff form goes after it is sent: back to the class view, as it was sorted and
filtered, with a message saying what was done or what was wrong.

A form on the class view carries its view (``back``: the page's query string). A client that
posts without it (a script) gets the plain-text answer it always had: a redirect when done, a
400 saying what was wrong when refused."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.urls import reverse

from .class_list import read_view
from .models import Assignment
from .refusals import form_errors

BACK = "back"
MAX_BACK = 1000  # characters: a longer view is no view of ours; the plain class view is shown


def class_view_url(assignment: Assignment, back: str = "") -> str:
    """The class view with the sort and filter ``back`` names, read as strictly as the page reads them."""
    url = reverse("class-view", args=[assignment.slug])
    if not back or len(back) > MAX_BACK:
        return url
    tags = [section.tag for section in assignment.rubric().sections]
    query = read_view(QueryDict(back.lstrip("?")), tags).query()
    return f"{url}?{query}" if query else url


def done(request: HttpRequest, assignment: Assignment, said: str) -> HttpResponse:
    messages.success(request, said)
    return HttpResponseRedirect(class_view_url(assignment, request.POST.get(BACK, "")))


def refused(request: HttpRequest, assignment: Assignment, said: str, *, status: int = 400) -> HttpResponse:
    if BACK not in request.POST:
        return HttpResponse(said, status=status, content_type="text/plain; charset=utf-8")
    messages.error(request, said)
    return HttpResponseRedirect(class_view_url(assignment, request.POST.get(BACK, "")))


def refused_form(request: HttpRequest, assignment: Assignment, form: forms.BaseForm, headline: str) -> HttpResponse:
    if BACK not in request.POST:
        return form_errors(form, headline)
    lines = [headline]
    for name, errors in form.errors.items():
        said = " ".join(str(error) for error in errors)
        label = form.fields[name].label if name in form.fields else None
        lines.append(said if name == "__all__" else f"{label or name.replace('_', ' ').capitalize()}: {said}")
    messages.error(request, " ".join(lines))
    return HttpResponseRedirect(class_view_url(assignment, request.POST.get(BACK, "")))
