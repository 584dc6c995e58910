"""LTI Deep Linking 2.0: an instructor picks one of the linked course's assignments in the LMS,
and the LMS gets back a signed link to it (an ``ltiResourceLink`` with a gradebook column).

The launch (views.LaunchView) signs the instructor in and sends them to ``picker``. The deep
linking request itself stays in pylti1p3's launch store, found again through the session
(django-lti's middleware sets ``request.lti_launch``); the answer is pylti1p3's ``DeepLink``
response JWT, signed with the tool's key and posted by the browser to the platform's return URL.

An LMS course not linked to a course of ours yet can be linked here by an instructor of the
course it is linked to: it is their course, and their LMS course, that they join. The link is
made as the admin would make it, and recorded in the admin's log.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.admin.models import ADDITION, LogEntry
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from lti_tool.constants import SESSION_KEY
from lti_tool.models import LtiRegistration
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.exception import LtiException
from pylti1p3.lineitem import LineItem

from ..accounts.identity import signed_in
from ..courses.models import Course, Enrolment, Role
from .claims import ClaimProblem, Claims, context_id, context_title
from .framing import frameable_by_platforms, origin_of
from .models import CourseLink
from .platform_urls import on_platform

logger = logging.getLogger(__name__)

DL_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
SCORE_MAXIMUM = 100


def return_url(claims: Claims, registration: LtiRegistration) -> str:
    """The platform's deep link return URL, when it is on the platform and it takes our kind of
    content item; else ClaimProblem. The tool posts a signed message there."""
    settings_claim = claims.get(DL_SETTINGS)
    if not isinstance(settings_claim, dict):
        raise ClaimProblem("The deep linking request has no deep_linking_settings.")
    url = settings_claim.get("deep_link_return_url")
    if not on_platform(url, registration):
        raise ClaimProblem("The deep link return URL is not on this LMS's own host.")
    accepted = settings_claim.get("accept_types")
    if not isinstance(accepted, list) or "ltiResourceLink" not in accepted:
        raise ClaimProblem("This LMS does not accept LTI resource links here.")
    assert isinstance(url, str)  # on_platform checked it
    return url


def teaching(user: User) -> list[Course]:
    return list(Course.objects.filter(enrolments__user=user, enrolments__role=Role.INSTRUCTOR).order_by("slug"))


def _launch(request: HttpRequest) -> Any | None:
    """This session's deep linking request, when it was made for the signed-in user."""
    launch: Any = getattr(request, "lti_launch", None)
    if launch is None or not launch.is_present or not launch.is_deep_link_launch:
        return None
    try:
        auth_user_id = launch.user.auth_user_id
    except Exception:  # noqa: BLE001  (the LtiUser went away: the launch is no use either way)
        return None
    return launch if auth_user_id == request.user.pk else None


def _refused(request: HttpRequest, status: int, title: str, message: str) -> HttpResponse:
    return render(request, "lti/refused.html", {"title": title, "message": message}, status=status)


@frameable_by_platforms
@login_required
@require_http_methods(["GET", "POST"])
def picker(request: HttpRequest) -> HttpResponse:
    """GET: the linked course's assignments (or the instructor's courses, to link the LMS course
    to one first). POST ``course``: link it. POST ``assignment``: answer the LMS."""
    launch = _launch(request)
    if launch is None:
        return _refused(
            request, 400, "No deep linking request", "Add the grader to your LMS course again from the LMS."
        )
    user = signed_in(request)
    claims: Claims = launch.get_launch_data()
    deployment = launch.deployment
    context = context_id(claims)
    link = CourseLink.objects.select_related("course").filter(deployment=deployment, context_id=context).first()
    if link is None:
        courses = teaching(user)
        if request.method == "POST":
            chosen = next((c for c in courses if c.slug == request.POST.get("course", "")[:40]), None)
            if chosen is None:
                return _refused(request, 400, "Choose one of your courses", "That is not a course you teach.")
            _link(user, deployment, context, chosen)
            return redirect("lti-deep-link")
        return render(
            request,
            "lti/deep_link_picker.html",
            {"context_title": context_title(claims) or context, "courses": courses, "course": None},
        )
    if not Enrolment.objects.filter(course=link.course, user=user, role=Role.INSTRUCTOR).exists():
        return _refused(request, 403, "Instructors only", "Only an instructor of the course can add its assignments.")
    assignments = list(link.course.assignments.order_by("due_at", "slug"))
    if request.method == "POST":
        chosen_assignment = next((a for a in assignments if a.slug == request.POST.get("assignment", "")[:40]), None)
        if chosen_assignment is None:
            return _refused(request, 400, "Choose an assignment", "That is not an assignment of this course.")
        return _answer(request, launch, chosen_assignment.slug, chosen_assignment.title)
    return render(
        request,
        "lti/deep_link_picker.html",
        {"context_title": context_title(claims) or context, "course": link.course, "assignments": assignments},
    )


def _link(user: User, deployment: Any, context: str, course: Course) -> None:
    try:
        with transaction.atomic():
            link = CourseLink.objects.create(deployment=deployment, context_id=context, course=course)
            LogEntry.objects.log_actions(
                user_id=user.pk,
                queryset=[link],
                action_flag=ADDITION,
                change_message=f"Linked from an LTI deep linking request by {user.get_username()}",
                single_object=True,
            )
    except IntegrityError:
        return  # linked meanwhile (a second tab): the picker shows whichever link won
    logger.info(
        "LTI context %r of deployment %s linked to course %s by %s",
        context,
        deployment.pk,
        course.slug,
        user.get_username(),
    )


def _answer(request: HttpRequest, launch: Any, slug: str, title: str) -> HttpResponse:
    """The page that posts the signed deep linking response to the LMS."""
    registration = launch.registration
    try:
        url = return_url(launch.get_launch_data(), registration)
        deep_link = launch.get_message_launch().get_deep_link()
    except (ClaimProblem, LtiException) as problem:
        return _refused(request, 400, "This deep linking request cannot be answered", str(problem))
    line_item = LineItem().set_score_maximum(SCORE_MAXIMUM).set_label(title).set_resource_id(slug)
    resource = (
        DeepLinkResource()
        .set_url(settings.SITE_ROOT + reverse("lti-launch"))
        .set_title(title)
        .set_custom_params({"assignment": slug})
        .set_lineitem(line_item)
    )
    origin = origin_of(url)
    if origin is None:
        return _refused(request, 400, "This deep linking request cannot be answered", "Its return URL is unusable.")
    token = deep_link.get_response_jwt([resource])
    # The answer is this launch's last use: a second POST must not send another link.
    request.session.pop(SESSION_KEY, None)
    logger.info("Deep link to %s sent to %s by %s", slug, registration.issuer, request.user.get_username())
    response = render(request, "lti/deep_link_return.html", {"return_url": url, "jwt": token, "title": title})
    # Our forms post to ourselves only; this one, to the LMS that asked.
    response._csp_update = {"form-action": [origin]}  # type: ignore[attr-defined]  # read by django-csp
    return response
