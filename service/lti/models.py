"""Which course of ours an LMS launch lands in.

A platform's deployment (django-lti's ``LtiDeployment``, managed in the admin) reaches only the
courses linked to it here; a launch naming any other course is refused.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from lti_tool.models import LtiDeployment

from ..courses.models import Course


class CourseLink(models.Model):
    """One LMS course (a deployment's LTI context) is one of our courses.

    A link with a blank context id says instead that any link of this deployment may name the
    course in its custom parameter ``course=<slug>``: for departments that configure the LMS
    link before they know the opaque context id their LMS gives the course.
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


class LinkProblem(Exception):
    """A launch whose LMS course leads to no course of ours, in words for the page."""


def linked_course(deployment: LtiDeployment, context_id: str, named_slug: str | None) -> Course:
    """The course a launch from ``context_id`` of ``deployment`` lands in, or LinkProblem.

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
            return exact.course
    if named_slug is not None:
        open_link = (
            CourseLink.objects.select_related("course")
            .filter(deployment=deployment, context_id="", course__slug=named_slug)
            .first()
        )
        if open_link is not None:
            return open_link.course
    # An unknown slug and a slug of a course not linked to this deployment read the same.
    raise LinkProblem("This LMS course is not linked to a course of the grader.")
