"""The service's header around the grader's own staff pages (the class report, the similarity
report): the same breadcrumbs, signed-in line and stylesheet as every other page."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.templatetags.static import static
from django.urls import reverse

from grader.report.site_frame import Crumb, SiteFrame

from ..accounts.identity import signed_in
from .models import Assignment


def site_frame(
    request: HttpRequest, crumbs: tuple[Crumb, ...], notices: tuple[tuple[str, str], ...] = (), **extra: Any
) -> SiteFrame:
    """The service's frame for a page the grader renders: the breadcrumbs given, who is signed
    in, Django's pending messages (then ``notices``), the service's stylesheet."""
    user = signed_in(request)
    said = tuple((message.tags, str(message)) for message in messages.get_messages(request))
    return SiteFrame(
        crumbs=crumbs,
        who=user.get_full_name() or user.get_username(),
        sign_out=reverse("logout"),
        csrf_token=get_token(request),
        stylesheets=(static("service/site.css"),),
        messages=said + notices,
        **extra,
    )


def assignment_crumbs(assignment: Assignment) -> tuple[Crumb, Crumb]:
    return (
        Crumb("Assignments", reverse("home")),
        Crumb(f"{assignment.course.title} · {assignment.title}", reverse("assignment", args=[assignment.slug])),
    )


def class_page_frame(request: HttpRequest, assignment: Assignment, page: str) -> SiteFrame:
    """A staff page under the class view: the way back runs through it to the assignment."""
    crumbs = (*assignment_crumbs(assignment), Crumb("Class view", reverse("class-view", args=[assignment.slug])))
    return site_frame(request, (*crumbs, Crumb(page)))
