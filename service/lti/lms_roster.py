"""A course's enrolments kept as its LMS lists them (NRPS): the memberships URL remembered at
each launch, a sync asked for by staff or by an instructor's launch, and the sync itself.

A sync enrols every active member with their name, email and role (the launch's mapping,
``course_role``), creating accounts as launches do (``user_for_launch``). Someone the LMS no
longer lists, or lists as inactive, leaves: the enrolment is kept with ``left_at`` set, their
submissions stay, and they submit nothing more until a launch or a sync lists them again. Only
accounts the LMS knows (an LtiUser of the synced registration) can leave this way: accounts
enrolled by a CSV roster or by hand are not the LMS's to remove.

Everything is fetched first; then all of it is applied in one transaction, or nothing when a
page failed: a roster read halfway would make everyone on the missing pages leave.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from lti_tool.models import LtiDeployment, LtiRegistration, LtiUser
from procrastinate.exceptions import AlreadyEnqueued

from ..courses.models import Course, Enrolment, Role
from ..submissions.models import AuditEntry
from .claims import NRPS, Claims, context_id, course_role, email, names
from .identity import AccountRefused, user_for_launch
from .models import CourseLink, RosterSource, RosterSync
from .nrps import Member, RosterRefused, check_service_url, fetch_members

AUDIT_ACTION = "lms_roster"


def note_launch(enrolment: Enrolment, exact: bool, deployment: LtiDeployment, claims: Claims) -> None:
    """What a launch tells the roster, in the launch's transaction: the person is in the course
    (again), the course's memberships URL (exact links only), and, for an instructor's launch,
    a sync at most once per LTI_ROSTER_EVERY_MINUTES."""
    if enrolment.left_at is not None:
        Enrolment.objects.filter(pk=enrolment.pk).update(left_at=None)
        enrolment.left_at = None
    if not exact:
        return
    service = claims.get(NRPS)
    url = service.get("context_memberships_url") if isinstance(service, dict) else None
    link = CourseLink.objects.filter(deployment=deployment, context_id=context_id(claims)).first()
    if link is None or not isinstance(url, str):
        return
    try:
        check_service_url(url, deployment.registration)
    except RosterRefused:
        return  # never kept: no sync would send the token there anyway
    RosterSource.objects.update_or_create(link=link, defaults={"memberships_url": url, "seen_at": timezone.now()})
    if enrolment.role == Role.INSTRUCTOR:
        request_sync(enrolment.course_id, enrolment.user_id, at_most_every=settings.LTI_ROSTER_EVERY_MINUTES)


def request_sync(course_id: int, actor_id: int, at_most_every: int = 0) -> bool:
    """Queue a sync of the course (task ``sync_roster``, queue ``lms``); False when one is already
    waiting or, with ``at_most_every`` minutes, one was asked for more recently than that."""
    from .tasks import sync_roster  # the task module imports this one

    now = timezone.now()
    RosterSync.objects.get_or_create(course_id=course_id)
    due = RosterSync.objects.filter(course_id=course_id)
    if at_most_every:
        due = due.filter(Q(requested_at__isnull=True) | Q(requested_at__lt=now - timedelta(minutes=at_most_every)))
    with transaction.atomic():
        if not due.update(requested_at=now):  # a conditional UPDATE: two launches at once queue one
            return False
        try:
            with transaction.atomic():
                sync_roster.configure(queueing_lock=f"sync_roster-{course_id}").defer(
                    course_id=course_id, actor_id=actor_id
                )
        except AlreadyEnqueued:
            return False
    return True


def _apply(course: Course, registration: LtiRegistration, members: list[Member], present: set[int]) -> tuple[int, int]:
    """Enrol or update the active members; returns (new, refused) and adds their user ids to
    ``present``."""
    new = refused = 0
    for member in members:
        if not member.active:
            continue
        first, last = names(member.claims)
        lti_user, _ = LtiUser.objects.update_or_create(
            registration=registration,
            sub=member.user_id,
            defaults={"given_name": first, "family_name": last, "email": email(member.claims)},
        )
        try:
            user = user_for_launch(lti_user, registration.issuer, member.user_id, member.claims)
        except AccountRefused:
            refused += 1  # an operator's account linked to this LMS identity: not the roster's
            continue
        role = course_role(member.claims)
        _, made = Enrolment.objects.update_or_create(course=course, user=user, defaults={"role": role, "left_at": None})
        new += int(made)
        present.add(user.pk)
    return new, refused


def _record(course_id: int, actor_id: int, ok: bool, message: str) -> str:
    RosterSync.objects.update_or_create(
        course_id=course_id, defaults={"finished_at": timezone.now(), "ok": ok, "message": message[:500]}
    )
    if User.objects.filter(pk=actor_id).exists():
        AuditEntry.objects.create(actor_id=actor_id, action=AUDIT_ACTION, detail=message)
    return message


def sync_course(course_id: int, actor_id: int) -> str:
    """Read every roster source of the course and apply them; the outcome in words (also kept
    for the class view and audited under ``actor_id``)."""
    course = Course.objects.filter(pk=course_id).first()
    if course is None:
        return "no such course"
    sources = list(
        RosterSource.objects.filter(link__course=course)
        .exclude(link__context_id="")
        .select_related("link__deployment__registration")
    )
    if not sources:
        return _record(
            course_id, actor_id, False, "failed: no launch from the LMS has given this course's roster address yet"
        )
    fetched = []
    try:
        for source in sources:
            registration = source.link.deployment.registration
            fetched.append((registration, fetch_members(registration, source.memberships_url)))
    except RosterRefused as why:
        return _record(course_id, actor_id, False, f"failed: {why}")
    now = timezone.now()
    with transaction.atomic():
        present: set[int] = set()
        new = refused = listed = 0
        for registration, members in fetched:
            made, turned_away = _apply(course, registration, members, present)
            new, refused, listed = new + made, refused + turned_away, listed + len(members)
        # Left: the LMS's own people (an LtiUser of a synced registration) it lists no longer.
        known = LtiUser.objects.filter(registration__in=[r for r, _ in fetched], auth_user__isnull=False)
        leaving = Enrolment.objects.filter(
            course=course, left_at__isnull=True, user_id__in=known.values("auth_user_id")
        ).exclude(user_id__in=present)
        left = leaving.update(left_at=now)
        message = (
            f"{course.slug}: {listed} listed by the LMS, {len(present)} in the course "
            f"({new} newly enrolled), {left} left" + (f", {refused} operator account(s) not touched" if refused else "")
        )
        return _record(course_id, actor_id, True, message)
