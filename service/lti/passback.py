"""Students' counted scores, sent to the LMS gradebooks they launched from.

Whatever changes a counted score (a grading, a regrade, an override, a late policy or
extension, the release of the hidden results) calls ``score_changed``. It records, per LMS
cell (``ScoreTarget``), the score document the LMS should now hold, under a new version and a
strictly later timestamp, and queues a push in the ``lms`` queue, in the caller's transaction.
The push sends whatever the row wants when it runs: a retried or late job sends the newest
score or nothing, never an older one after a newer one.

The LMS is told what the student's own pages show: until the hidden results are released it
gets "Pending" and no score at all (docs/lms-admins.md says why).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from ..courses.models import Assignment, HiddenDetails
from ..submissions.standing import counted_submission
from . import ags
from .models import LineItem, LmsLearner, ScoreTarget

log = logging.getLogger(__name__)

LMS_QUEUE = "lms"
LINE_ITEM_TAG = "grader"
MAX_RESEND = 5000  # rows re-queued per sweep; the next sweep takes the rest


def score_changed(assignment_id: int, user_id: int) -> int:
    return scores_changed(assignment_id, [user_id])


def scores_changed(assignment_id: int, user_ids: Iterable[int] | None = None) -> int:
    """Record the score each LMS cell of the assignment (of these students, or all) should now
    hold, and queue the pushes; returns how many cells changed.

    Never fails the caller: a grade is kept even if its trip to the LMS cannot be recorded (a
    savepoint keeps the caller's transaction usable; the error is logged)."""
    try:
        with transaction.atomic():
            return _record(assignment_id, user_ids, force=False)
    except Exception:
        log.exception("the LMS copy of assignment %s's scores was not updated", assignment_id)
        return 0


def resend(assignment: Assignment, user_id: int) -> int:
    """Send a student's score again as it stands now, under a new timestamp (staff's button)."""
    with transaction.atomic():
        return _record(assignment.pk, [user_id], force=True)


def wanted_score(
    assignment: Assignment, user_id: int, lms_user_id: str
) -> tuple[dict[str, Any] | None, datetime | None]:
    """The score document for a student (without its timestamp), and until when it is withheld
    as Pending; (None, None) when the student has no counted score yet."""
    counted = counted_submission(assignment, user_id)
    if counted is None:
        return None, None
    feedback = f"{settings.SITE_ROOT}/submissions/{counted.pk}/feedback/"
    pending = {
        "userId": lms_user_id,
        "scoreMaximum": 100,
        "activityProgress": "Submitted",
        "gradingProgress": "Pending",
    }
    if counted.hides_hidden(viewer_is_staff=False):
        # Nothing of the hidden checks, not even a visible-only score that an LMS would show as the grade.
        release = assignment.hidden_released_at(user_id)
        said = f"Graded when the hidden checks are released. Feedback so far: {feedback}"
        return {**pending, "comment": said}, release
    score, maximum = counted.counted_score, counted.max_score
    if score is None or not maximum:
        return {**pending, "comment": f"Feedback: {feedback}"}, None
    given = round(min(max(score / maximum * 100, 0.0), 100.0), 2)
    return {
        "userId": lms_user_id,
        "scoreGiven": given,
        "scoreMaximum": 100,
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",
        "comment": f"Feedback: {feedback}",
    }, None


def _record(assignment_id: int, user_ids: Iterable[int] | None, *, force: bool) -> int:
    learners = LmsLearner.objects.filter(link__course__assignments__pk=assignment_id).select_related("link")
    if user_ids is not None:
        learners = learners.filter(user_id__in=list(user_ids))
    if not learners.exists():  # the common case: nobody here came from an LMS
        return 0
    assignment = Assignment.objects.get(pk=assignment_id)
    changed = 0
    for learner in learners.order_by("pk"):
        wanted, withheld_until = wanted_score(assignment, learner.user_id, learner.sub)
        if wanted is None:
            ScoreTarget.objects.filter(line_item__assignment=assignment, user_id=learner.user_id).update(
                withheld_until=None
            )
            continue
        line_item, _ = LineItem.objects.get_or_create(link=learner.link, assignment=assignment)
        target, _ = ScoreTarget.objects.select_for_update().get_or_create(line_item=line_item, user_id=learner.user_id)
        before = {k: v for k, v in target.wanted.items() if k != "timestamp"}
        if not force and target.wanted_version and before == wanted and target.withheld_until == withheld_until:
            continue
        now = timezone.now()
        now = now.replace(microsecond=now.microsecond // 1000 * 1000)  # the timestamp's precision
        # Strictly later than the last one: a platform keeps the score with the latest timestamp.
        stamp = max(now, target.wanted_at + timedelta(milliseconds=1)) if target.wanted_at else now
        target.wanted = {**wanted, "timestamp": stamp.isoformat(timespec="milliseconds")}
        target.wanted_at = stamp
        target.wanted_version += 1
        target.withheld_until = withheld_until
        target.problem = ""
        target.save(update_fields=["wanted", "wanted_at", "wanted_version", "withheld_until", "problem"])
        defer_push(target.pk)
        changed += 1
    return changed


def defer_push(target_id: int) -> None:
    """Queue the push of a cell: one waiting job per cell (it sends the newest score anyway),
    and one running at a time (the lock), so pushes of a cell never overtake each other."""
    from procrastinate.exceptions import AlreadyEnqueued

    from .tasks import push_score

    try:
        with transaction.atomic():  # a refused duplicate leaves the caller's transaction usable
            push_score.configure(queueing_lock=f"lms-push-{target_id}", lock=f"lms-cell-{target_id}").defer(
                target_id=target_id
            )
    except AlreadyEnqueued:
        pass


def push(target_id: int) -> str:
    """Send the cell's wanted score if the LMS does not have it yet. Raises
    ags.PlatformUnavailable to be retried; a refusal is recorded for staff."""
    target = (
        ScoreTarget.objects.select_related("line_item__link__deployment__registration", "line_item__assignment")
        .filter(pk=target_id)
        .first()
    )
    if target is None or target.sent_version >= target.wanted_version:
        return "up to date"
    version, wanted = target.wanted_version, target.wanted
    link = target.line_item.link
    gradebook = ags.Gradebook(link.deployment.registration, link.lineitems_url, tuple(link.scopes.split()))
    mine = ScoreTarget.objects.filter(pk=target.pk, wanted_version=version)
    try:
        url = target.line_item.url or _line_item_url(target.line_item.pk, gradebook)
        ags.post_score(gradebook, url, _score(wanted))
    except ags.PlatformRefused as refusal:
        log.warning("the LMS did not take score target %s (version %s): %s", target.pk, version, refusal)
        mine.update(refused_version=version, problem=str(refusal)[:500])
        return "refused"
    except ags.PlatformUnavailable as error:
        mine.update(problem=f"the LMS is not answering ({error}); trying again"[:500])
        raise
    ScoreTarget.objects.filter(pk=target.pk, sent_version__lt=version).update(
        sent_version=version, sent_at=timezone.now()
    )
    mine.update(problem="")
    return "sent"


def _score(wanted: dict[str, Any]) -> ags.Score:
    given = wanted.get("scoreGiven")
    return ags.Score(
        user_id=str(wanted["userId"]),
        score_given=float(given) if given is not None else None,
        score_maximum=float(wanted["scoreMaximum"]),
        activity_progress=str(wanted["activityProgress"]),
        grading_progress=str(wanted["gradingProgress"]),
        timestamp=str(wanted["timestamp"]),
        comment=str(wanted.get("comment", "")),
    )


def _line_item_url(line_item_id: int, gradebook: ags.Gradebook) -> str:
    """The assignment's column in this gradebook, found or created once: the row stays locked
    meanwhile, so two students' pushes never create two columns."""
    with transaction.atomic():
        line_item = LineItem.objects.select_for_update().select_related("assignment").get(pk=line_item_id)
        if not line_item.url:
            assignment = line_item.assignment
            line_item.url = ags.find_or_create_line_item(gradebook, assignment.slug, assignment.title, LINE_ITEM_TAG)
            line_item.save(update_fields=["url"])
        return line_item.url


def send_released() -> int:
    """Cells told "Pending" whose hidden results' release has come: their scores go now.

    The release is computed again here, not only read from ``withheld_until``: a due date or
    hard close edited in the admin moves it without telling anyone."""
    now = timezone.now()
    withheld: dict[int, set[int]] = defaultdict(set)
    for assignment_id, user_id in ScoreTarget.objects.filter(withheld_until__isnull=False).values_list(
        "line_item__assignment_id", "user_id"
    ):
        withheld[assignment_id].add(user_id)
    changed = 0
    for assignment in Assignment.objects.filter(pk__in=withheld):
        released = [
            user_id
            for user_id in sorted(withheld[assignment.pk])
            if assignment.hidden_details != HiddenDetails.AFTER_DUE_DATE
            or assignment.hidden_released_at(user_id) <= now
        ]
        if released:
            changed += scores_changed(assignment.pk, released)
    return changed


def defer_unsent() -> int:
    """Queue again every cell the LMS does not have yet (its pushes gave up while the platform
    was down), except those it refused: they wait for a new score or staff's resend."""
    unsent = ScoreTarget.objects.filter(sent_version__lt=F("wanted_version")).exclude(
        refused_version=F("wanted_version")
    )
    ids = list(unsent.order_by("pk").values_list("pk", flat=True)[:MAX_RESEND])
    for target_id in ids:
        defer_push(target_id)
    return len(ids)


def class_status(assignment: Assignment) -> dict[int, str]:
    """Per student, what staff see in the class view's LMS column ("" when never launched from an LMS)."""
    status: dict[int, str] = {}
    for target in ScoreTarget.objects.filter(line_item__assignment=assignment).order_by("pk"):
        if target.in_lms:
            said = "sent (pending the hidden results' release)" if target.withheld_until else "sent"
        elif target.problem and target.refused_version == target.wanted_version:
            said = f"not sent to the LMS: {target.problem}"
        elif target.problem:
            said = f"waiting: {target.problem}"
        else:
            said = "waiting to be sent"
        earlier = status.get(target.user_id)
        # With several gradebooks, the one that needs attention is shown.
        if earlier is None or earlier.startswith("sent"):
            status[target.user_id] = said
    return status
