"""What a launch tells us about the LMS's gradebook, kept for sending grades back later.

Per LMS course (deployment and context) and course of ours: the line items URL and the scopes
granted; per assignment, the launch's own line item when a launch naming it carried one; per
student, their ``sub`` (the AGS userId). Updated at every launch.

A URL that is not on the platform (platform_urls: the registration's own origins, or a host in
LTI_SERVICE_HOSTS) is refused and logged: the grader would send its access token and students'
scores there.
"""

from __future__ import annotations

import logging

from django.contrib.auth.models import User
from lti_tool.models import LtiDeployment

from ..courses.models import Assignment, Course, Role
from .ags import KNOWN_SCOPES
from .claims import Claims, ags_endpoint, custom_text
from .models import GradebookLink, LineItem, LmsLearner, ScoreTarget
from .platform_urls import on_platform

log = logging.getLogger(__name__)


def remember_launch(
    deployment: LtiDeployment, context_id: str, course: Course, user: User, role: str, sub: str, claims: Claims
) -> None:
    """Record the launch's gradebook (call inside the launch's transaction)."""
    endpoint = ags_endpoint(claims)
    if endpoint is None or not context_id:
        return
    lineitems_url, lineitem_url, granted = endpoint
    registration = deployment.registration
    for url in (lineitems_url, lineitem_url):
        if url and not on_platform(url, registration):
            log.warning(
                "LTI launch from %s names an AGS URL on another host than its registration's (%r): "
                "no grades will be sent there",
                registration,
                url[:200],
            )
            return
    scopes = " ".join(s for s in granted if s in KNOWN_SCOPES)
    link, _ = GradebookLink.objects.update_or_create(
        deployment=deployment,
        context_id=context_id,
        course=course,
        defaults={"lineitems_url": lineitems_url, "scopes": scopes},
    )
    slug = custom_text(claims, "assignment")
    assignment = Assignment.objects.filter(course=course, slug=slug).first() if slug else None
    if assignment is not None and lineitem_url:
        line_item, made = LineItem.objects.get_or_create(
            link=link, assignment=assignment, defaults={"url": lineitem_url, "from_launch": True}
        )
        if not made and line_item.url != lineitem_url:
            # The LMS moved the column: every score is sent again, to the new one.
            LineItem.objects.filter(pk=line_item.pk).update(url=lineitem_url, from_launch=True)
            ScoreTarget.objects.filter(line_item=line_item).update(sent_version=0, refused_version=0)
    if role != Role.STUDENT:
        return
    learner, made = LmsLearner.objects.get_or_create(link=link, user=user, defaults={"sub": sub})
    if not made and learner.sub == sub:
        return
    if not made:
        LmsLearner.objects.filter(pk=learner.pk).update(sub=sub)
    # A student new to this gradebook: the scores they already have go to it.
    from .passback import scores_changed

    for assignment_id in course.assignments.values_list("pk", flat=True):
        scores_changed(assignment_id, [user.pk])
