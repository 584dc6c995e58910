"""LTI 1.3: OIDC login initiation, the launch, and the tool's public keys, on django-lti's views.

A launch is two browser trips. The platform sends the browser to ``login/`` (its issuer, client
id and a login hint); we answer with a redirect to the platform's auth URL carrying a state (also
set as a cookie) and a nonce. The platform then POSTs a signed id_token and the state to
``launch/``: pylti1p3 checks state, nonce, signature (against the platform's JWKS URL),
registration and deployment; django-lti records the platform's user, context and membership;
we sign the user in, enrol them in the linked course with their course role, and redirect.

Every refusal is a page with a 4xx status that says what to fix, never a 500.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.models import User
from django.db import DataError, IntegrityError, transaction
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.views.decorators.http import require_GET
from lti_tool import views as lti_views
from lti_tool.models import Key, LtiRegistration
from lti_tool.utils import DjangoToolConfig
from pylti1p3.contrib.django.launch_data_storage.cache import DjangoCacheDataStorage
from pylti1p3.contrib.django.oidc_login import DjangoOIDCLogin
from pylti1p3.exception import LtiException, OIDCException

from ..courses.access import assignment_for
from ..courses.models import Course, Enrolment, Role
from . import deep_linking, lms_roster, login_limits
from .claims import (
    ClaimProblem,
    Claims,
    canvas_user_id,
    context_id,
    context_title,
    course_role,
    custom_text,
    subject,
)
from .framing import frameable_by_platforms
from .gradebook import remember_launch
from .identity import AccountRefused, user_for_launch
from .models import CourseLink, LinkProblem, SpentNonce, linked_course

logger = logging.getLogger(__name__)

# pylti1p3 keeps a login's nonce, and accepts a validated (state, id_token) pair again, for a day.
USED_NONCE_SECONDS = 24 * 3600


def refused(
    request: HttpRequest, status: int, title: str, message: str, details: Sequence[tuple[str, str]] = ()
) -> HttpResponse:
    return render(request, "lti/refused.html", {"title": title, "message": message, "details": details}, status=status)


def launch_url() -> str:
    """The one redirect URI a platform registers for this tool, whatever target_link_uri it sends."""
    return settings.SITE_ROOT + reverse("lti-launch")


class ToolConfigFor(DjangoToolConfig):  # type: ignore[misc]  # django-lti is untyped
    """django-lti's registration lookup, for a login that names no client id (optional in the
    spec): the issuer's one active registration stands for it."""

    def __init__(self, client_id: str) -> None:
        super().__init__()
        self.only_client_id = client_id

    def find_registration_by_params(self, iss: str, client_id: str | None, *args: object, **kwargs: object) -> Any:
        return super().find_registration_by_params(iss, client_id or self.only_client_id, *args, **kwargs)


def tool_config_for(params: QueryDict) -> DjangoToolConfig | str:
    """The lookup for this login; without a client id, the issuer's only registration, or the
    reason there is none."""
    if params.get("client_id"):
        return DjangoToolConfig(None)
    issuer = params.get("iss") or ""
    found = list(LtiRegistration.objects.active().filter(issuer=issuer[:256]).values_list("client_id", flat=True)[:2])
    if not found:
        return "The grader has no active registration for this LMS."
    if len(found) > 1:
        return "The grader has several registrations for this LMS: the login must name its client_id."
    return ToolConfigFor(found[0])


@method_decorator(frameable_by_platforms, name="dispatch")
class LoginView(lti_views.OIDCLoginInitView):  # type: ignore[misc]  # django-lti is untyped
    """OIDC third-party login initiation (GET or POST from the platform); CSRF-exempt by django-lti.

    django-lti answers with pylti1p3's cookie-check page first, which needs an inline script our
    CSP refuses; the plain redirect is all that is needed. The LMS loads it in its iframe: the
    registered platforms may frame it.
    """

    def get_oidc_response(self, request: HttpRequest, registration_uuid: object, params: QueryDict) -> HttpResponse:
        if not params.get("target_link_uri"):
            return refused(request, 400, "Not an LTI login", "The login request has no target_link_uri.")
        wait = login_limits.seconds_until_allowed(request)
        if wait:
            slow_down = refused(
                request, 429, "Too many logins", f"Too many LTI logins from your network: try again in {wait} s."
            )
            slow_down["Retry-After"] = str(wait)
            return slow_down
        if login_limits.store_full():
            full = refused(
                request, 503, "Too many launches at once", "Too many launches are in progress: try again in a minute."
            )
            full["Retry-After"] = "60"
            return full
        tool_config = tool_config_for(params)
        if isinstance(tool_config, str):
            return refused(request, 400, "This LMS is not registered", tool_config)
        # pylti1p3's Django classes have no annotations (the package is otherwise typed).
        storage = DjangoCacheDataStorage()  # type: ignore[no-untyped-call]
        oidc_login = DjangoOIDCLogin(request, tool_config)  # type: ignore[no-untyped-call]
        oidc_login.set_launch_data_storage(storage)
        # The nonce this login stores must outlive the trip to the LMS and back, not a day.
        oidc_login.set_launch_data_lifetime(settings.LTI_LOGIN_STATE_SECONDS)
        try:
            response: HttpResponse = oidc_login.redirect(launch_url())
        except (OIDCException, LtiException) as error:
            logger.info("LTI login refused: %s", error)
            return refused(
                request,
                400,
                "This LMS is not registered",
                "The grader has no active registration for this LMS and client id.",
                [("Reason", str(error)[:200])],
            )
        except Key.DoesNotExist:
            logger.error("LTI login with no active tool key: run grader service keys")
            return refused(request, 503, "LTI is not set up yet", "The grader has no signing key yet.")
        return response


@method_decorator(frameable_by_platforms, name="dispatch")
class LaunchView(lti_views.LtiLaunchBaseView):  # type: ignore[misc]  # django-lti is untyped
    """The platform's signed launch (POST, CSRF-exempt by django-lti: the id_token is the proof)."""

    def post(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        try:
            response: HttpResponse | None = super().post(request, *args, **kwargs)
        except LtiException as error:
            logger.info("LTI launch refused: %s", error)
            response = refused(
                request,
                400,
                "This launch could not be verified",
                "Launch the grader again from your LMS. If it keeps failing, give the reason below to the "
                "grader's staff.",
                [("Reason", str(error)[:200])],
            )
        except Key.DoesNotExist:
            logger.error("LTI launch with no active tool key: run grader service keys")
            response = refused(request, 503, "LTI is not set up yet", "The grader has no signing key yet.")
        except (KeyError, TypeError, AttributeError, ValueError, DataError):
            # django-lti records the launch's claims reading them with [] and iteration, unchecked,
            # and its columns are bounded: a signed but malformed token is the platform's error (400).
            logger.warning("LTI launch with malformed claims", exc_info=True)
            response = refused(request, 400, "This launch could not be read", "The LMS sent claims we cannot use.")
        if response is None:  # django-lti answers nothing for a message type without a handler
            response = refused(request, 400, "Unsupported launch", "This kind of LTI launch is not supported.")
        if response.status_code >= 400:
            request.session.flush()  # a refused launch leaves nobody signed in and no launch in the session
        return response

    def handle_resource_launch(self, request: HttpRequest, lti_launch: Any) -> HttpResponse:
        claims: Claims = lti_launch.get_launch_data()
        deployment = lti_launch.deployment
        context = context_id(claims)
        try:
            issuer, sub = subject(claims)
            _first_use(issuer, claims)
            course, exact = linked_course(deployment, context, custom_text(claims, "course"))
            with transaction.atomic():
                user = user_for_launch(lti_launch.user, issuer, sub, claims)
                if exact:
                    enrolment, _ = Enrolment.objects.update_or_create(
                        course=course, user=user, defaults={"role": course_role(claims)}
                    )
                else:
                    # Through an open link the LMS vouches for a student at most; a role given
                    # here by staff (roster, admin, an exact link) is kept as it is.
                    enrolment, _ = Enrolment.objects.get_or_create(
                        course=course, user=user, defaults={"role": Role.STUDENT}
                    )
                lms_id = canvas_user_id(claims)
                if lms_id and enrolment.lms_user_id != lms_id:
                    Enrolment.objects.filter(pk=enrolment.pk).update(lms_user_id=lms_id)
                remember_launch(deployment, context, course, user, enrolment.role, sub, claims)
                lms_roster.note_launch(enrolment, exact, deployment, claims)
        except (ClaimProblem, LinkProblem, AccountRefused) as problem:
            where = [("Deployment", deployment.deployment_id), ("Context id", context or "(none)")]
            return _launch_refused(request, problem, [*where, ("Context title", context_title(claims) or "(none)")])
        login(request, user, backend=USER_BACKEND)
        return redirect(_landing(user, course, claims))

    def handle_inactive_deployment(self, request: HttpRequest, lti_launch: Any) -> HttpResponse:
        return refused(
            request,
            403,
            "This LMS deployment is not active",
            "The grader knows this deployment but has not switched it on. Ask the grader's staff to "
            "activate it (Admin, LTI deployments).",
            [("Issuer", lti_launch.registration.issuer), ("Deployment", lti_launch.deployment.deployment_id)],
        )

    def handle_deep_linking_launch(self, request: HttpRequest, lti_launch: Any) -> HttpResponse:
        """An instructor adding the grader to their LMS course: signed in, then the picker.

        As in a resource launch, the LMS's instructor role counts only through the context's own
        link; an LMS course not linked yet admits someone who already teaches a course here, to
        link it (deep_linking.picker). Everyone else is refused before an account is touched.
        """
        claims: Claims = lti_launch.get_launch_data()
        deployment = lti_launch.deployment
        context = context_id(claims)
        try:
            issuer, sub = subject(claims)
            if course_role(claims) != Role.INSTRUCTOR:
                return refused(
                    request, 403, "Instructors only", "Only an instructor of the LMS course can add the grader to it."
                )
            deep_linking.return_url(claims, lti_launch.registration)
            if not context:
                raise ClaimProblem("The deep linking request names no LMS course (context).")
            _first_use(issuer, claims)
            exact = CourseLink.objects.filter(deployment=deployment, context_id=context).first()
            with transaction.atomic():
                user = user_for_launch(lti_launch.user, issuer, sub, claims)
                if exact is not None:
                    Enrolment.objects.update_or_create(
                        course=exact.course, user=user, defaults={"role": Role.INSTRUCTOR}
                    )
                elif not deep_linking.teaching(user):
                    raise LinkProblem("This LMS course is not linked to a course of the grader.")
        except (ClaimProblem, LinkProblem, AccountRefused) as problem:
            where = [("Deployment", deployment.deployment_id), ("Context id", context)]
            return _launch_refused(request, problem, where)
        login(request, user, backend=USER_BACKEND)
        return redirect("lti-deep-link")

    def handle_submission_review_launch(self, request: HttpRequest, lti_launch: Any) -> HttpResponse:
        return _unsupported(request, "Submission review")

    def handle_data_privacy_launch(self, request: HttpRequest, lti_launch: Any) -> HttpResponse:
        return _unsupported(request, "Data privacy")


# Of the two sign-in backends (settings.py: axes first), the one that loads users.
USER_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _launch_refused(request: HttpRequest, problem: Exception, where: list[tuple[str, str]]) -> HttpResponse:
    """The page for a launch that was verified but cannot be used: what to fix, and where."""
    if isinstance(problem, LinkProblem):
        advice = f"{problem} Ask the grader's staff to link it (Admin, LTI course links)."
        return refused(request, 403, "This course is not linked", advice, where)
    if isinstance(problem, AccountRefused):
        return refused(request, 403, "Sign in with your password", str(problem))
    return refused(request, 400, "This launch could not be used", str(problem))


def _unsupported(request: HttpRequest, kind: str) -> HttpResponse:
    return refused(
        request, 400, "Unsupported launch", f"{kind} launches are not supported; add the grader as a plain link."
    )


def _first_use(issuer: str, claims: Claims) -> None:
    """Refuse a token without an expiry, and any second use of a nonce.

    pylti1p3 checks that the nonce came from our login step but never spends it, and accepts a
    (state, id_token) pair it has validated once again without the state cookie: a copied launch
    POST would sign its user in for as long as the token lives. PyJWT checks ``exp`` only when
    present. The used-nonce record lives as long as pylti1p3 would accept the nonce.
    """
    if not isinstance(claims.get("exp"), int | float):
        raise ClaimProblem("The launch has no expiry time (exp).")
    nonce = claims.get("nonce")
    digest = hashlib.sha256(f"{issuer}\n{nonce}".encode()).hexdigest()
    now = timezone.now()
    SpentNonce.objects.filter(expires_at__lt=now).delete()
    try:
        with transaction.atomic():
            SpentNonce.objects.create(digest=digest, expires_at=now + timedelta(seconds=USED_NONCE_SECONDS))
    except IntegrityError:
        raise ClaimProblem("This launch was already used. Launch the grader again from your LMS.") from None


def _landing(user: User, course: Course, claims: Claims) -> str:
    """The assignment the link names (custom ``assignment=<slug>``) when it is in the launch's
    course and the user reaches it, else the user's home page."""
    slug = custom_text(claims, "assignment")
    if slug is not None:
        try:
            assignment, _role = assignment_for(user, slug)
        except Http404:
            return reverse("home")
        if assignment.course_id == course.pk:
            return reverse("assignment", args=[assignment.slug])
    return reverse("home")


@require_GET
def jwks(request: HttpRequest) -> HttpResponse:
    """The tool's active public keys (django-lti's Key model, rotated with grader service keys)."""
    response: HttpResponse = lti_views.jwks(request)
    return response
