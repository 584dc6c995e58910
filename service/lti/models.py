"""Which course of ours an LMS launch lands in.

A platform's deployment (django-lti's ``LtiDeployment``, managed in the admin) reaches only the
courses linked to it here; a launch naming any other course is refused.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from lti_tool.models import LtiDeployment, LtiRegistration

from ..courses.models import Course


class CourseLink(models.Model):
    """One LMS course (a deployment's LTI context) is one of our courses.

    A link with a blank context id says instead that any link of this deployment may name the
    course in its custom parameter ``course=<slug>``: for departments that configure the LMS
    link before they know the opaque context id their LMS gives the course. Any teacher of any
    course of that deployment can make such a link, so an open link enrols students only: a
    launch's staff role counts through an exact (context id) link alone.
    """

    deployment = models.ForeignKey(LtiDeployment, on_delete=models.CASCADE, related_name="course_links")
    context_id = models.CharField(
        max_length=255,
        blank=True,
        help_text="The LMS course's LTI context id (listed under LTI contexts after a first launch); "
        "blank lets this deployment's links name the course with the custom parameter course=<slug>",
    )
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="lti_links")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["deployment", "context_id"], condition=~Q(context_id=""), name="one_course_per_lti_context"
            ),
            models.UniqueConstraint(
                fields=["deployment", "course"], condition=Q(context_id=""), name="one_open_link_per_course"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.deployment} / {self.context_id or '(named by custom course=)'} -> {self.course}"


class SpentNonce(models.Model):
    """A launch nonce already used, kept as long as the platform's token could be replayed.

    A table with a unique key, not the cache: a cache may cull entries under load (unsigned
    login requests alone can fill it), and a culled entry would let a copied launch in again."""

    digest = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField(db_index=True)


class LinkProblem(Exception):
    """A launch whose LMS course leads to no course of ours, in words for the page."""


def linked_course(deployment: LtiDeployment, context_id: str, named_slug: str | None) -> tuple[Course, bool]:
    """The course a launch from ``context_id`` of ``deployment`` lands in, and whether the link
    names that exact context (only then may the launch's roles make someone staff); else
    LinkProblem.

    The context's own link wins; a custom ``course`` slug that disagrees with it is refused rather
    than silently ignored, so a misconfigured LMS link is noticed the first time it is used.
    """
    if context_id:
        exact = CourseLink.objects.select_related("course").filter(deployment=deployment, context_id=context_id).first()
        if exact is not None:
            if named_slug is not None and named_slug != exact.course.slug:
                raise LinkProblem(
                    f"This LMS course is linked to {exact.course.slug}, but the link names course {named_slug}."
                )
            return exact.course, True
    if named_slug is not None:
        open_link = (
            CourseLink.objects.select_related("course")
            .filter(deployment=deployment, context_id="", course__slug=named_slug)
            .first()
        )
        if open_link is not None:
            return open_link.course, False
    # An unknown slug and a slug of a course not linked to this deployment read the same.
    raise LinkProblem("This LMS course is not linked to a course of the grader.")


class RegistrationCode(models.Model):
    """A one-time code in a dynamic registration URL (``manage.py lti_registration_url``).

    The LMS opens the URL in its admin's browser, often in an iframe where our sign-in cookie
    does not reach: the code is what allows this one registration. Kept as an HMAC of the
    secret key, as API tokens are; spent when a registration succeeds."""

    digest = models.CharField(max_length=64, unique=True)
    created_by = models.CharField(max_length=150, help_text="who made the code (an operator's username or the shell)")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    registration = models.ForeignKey(
        LtiRegistration, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    def __str__(self) -> str:
        return f"code by {self.created_by}, {'used' if self.used_at else 'unused'}"
