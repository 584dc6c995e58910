"""Which course of ours an LMS launch lands in.

A platform's deployment (django-lti's ``LtiDeployment``, managed in the admin) reaches only the
courses linked to it here; a launch naming any other course is refused.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from lti_tool.models import LtiDeployment, LtiRegistration

from ..courses.models import Assignment, Course


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


class GradebookLink(models.Model):
    """An LMS course's gradebook for one of our courses: where its line items live (the AGS
    claim's ``lineitems`` URL) and what the platform lets the grader do there (its scopes),
    as the latest launch from that LMS course said."""

    deployment = models.ForeignKey(LtiDeployment, on_delete=models.CASCADE, related_name="gradebook_links")
    context_id = models.CharField(max_length=255)
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="gradebook_links")
    lineitems_url = models.URLField(max_length=1000, blank=True)
    scopes = models.CharField(max_length=1000, blank=True, help_text="the AGS scopes granted, space separated")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["deployment", "context_id", "course"], name="one_gradebook_per_lti_context")
        ]

    def __str__(self) -> str:
        return f"{self.deployment} / {self.context_id} -> {self.course}"


class LineItem(models.Model):
    """An assignment's column in one LMS gradebook: the launch's own line item when a launch
    naming the assignment carried one, else found (by resourceId) or created by the grader."""

    link = models.ForeignKey(GradebookLink, on_delete=models.CASCADE, related_name="line_items")
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="line_items")
    url = models.URLField(max_length=1000, blank=True, help_text="empty until found or created")
    from_launch = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["link", "assignment"], name="one_line_item_per_gradebook")]

    def __str__(self) -> str:
        return f"{self.assignment.slug} in {self.link}"


class LmsLearner(models.Model):
    """A student as one LMS gradebook knows them: the ``sub`` of their launches (the AGS userId)."""

    link = models.ForeignKey(GradebookLink, on_delete=models.CASCADE, related_name="learners")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lms_learners")
    sub = models.CharField(max_length=255)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["link", "user"], name="one_lms_identity_per_gradebook")]


class ScoreTarget(models.Model):
    """One student's cell in one LMS column: the score it should say (``wanted``, version
    ``wanted_version``) and the last version the platform took (``sent_version``).

    A change of the student's counted score records a new wanted version with a later timestamp;
    a push job sends whatever is wanted when it runs, so a retried or late job never sends an
    older score after a newer one."""

    line_item = models.ForeignKey(LineItem, on_delete=models.CASCADE, related_name="targets")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    wanted = models.JSONField(default=dict, help_text="the score document to send, timestamp included")
    wanted_version = models.PositiveIntegerField(default=0)
    wanted_at = models.DateTimeField(null=True, blank=True, help_text="the wanted score's timestamp")
    sent_version = models.PositiveIntegerField(default=0)
    sent_at = models.DateTimeField(null=True, blank=True)
    # While the hidden results are withheld the LMS is told "Pending": the score is sent again then.
    withheld_until = models.DateTimeField(null=True, blank=True, db_index=True)
    refused_version = models.PositiveIntegerField(default=0, help_text="a version the LMS refused: not retried alone")
    problem = models.CharField(max_length=500, blank=True, help_text="why the wanted score is not in the LMS yet")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["line_item", "user"], name="one_score_target_per_cell")]

    def __str__(self) -> str:
        return f"{self.user} in {self.line_item}: v{self.sent_version}/{self.wanted_version}"

    @property
    def in_lms(self) -> bool:
        return self.sent_version >= self.wanted_version


class RosterSource(models.Model):
    """Where the LMS lists an exactly linked course's members (NRPS ``context_memberships_url``),
    as its latest launch said. Only exact links have one: an open link's launches come from any
    course of the deployment, whose members are not this course's."""

    link = models.OneToOneField(CourseLink, on_delete=models.CASCADE, related_name="roster_source")
    memberships_url = models.CharField(max_length=2000)
    seen_at = models.DateTimeField(help_text="the launch that last gave this URL")

    def __str__(self) -> str:
        return f"{self.link}: {self.memberships_url}"


class RosterSync(models.Model):
    """A course's last roster sync from its LMS, as staff see it on the class view."""

    course = models.OneToOneField(Course, on_delete=models.CASCADE, related_name="roster_sync")
    requested_at = models.DateTimeField(null=True, blank=True, help_text="the last sync asked for (the rate limit)")
    finished_at = models.DateTimeField(null=True, blank=True)
    ok = models.BooleanField(null=True, help_text="None: never finished")
    message = models.CharField(max_length=500, blank=True)

    def __str__(self) -> str:
        return f"{self.course}: {self.message or 'never synced'}"


class RegistrationCode(models.Model):
    """A one-time code in a dynamic registration URL (``grader service lti-registration-url``).

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
