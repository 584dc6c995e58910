"""The health page: per lane, the jobs and students waiting, what runs, the oldest wait; the workers.

Site operators (superusers) see every course and every worker host; a course's staff see the
queue of their own courses only, and how many slots grade, not where.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.db.models import Count, Min, Q, QuerySet, Sum
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from ..accounts.identity import signed_in
from ..courses.models import STAFF_ROLES, Course, Enrolment
from ..fleet.identity import current_recipe
from ..fleet.models import GradingWorker
from .models import PENDING, State, Submission
from .queue import LANES


def _lanes(submissions: QuerySet[Submission]) -> dict[str, dict[str, Any]]:
    now = timezone.now()
    lanes = {}
    for lane in LANES:
        pending = submissions.filter(lane=lane, state__in=PENDING)
        figures = pending.aggregate(
            waiting=Count("id", filter=Q(state=State.QUEUED)),
            running=Count("id", filter=Q(state=State.RUNNING)),
            students_waiting=Count("user_id", filter=Q(state=State.QUEUED), distinct=True),
            # A job's age counts from when it was queued: a class regrade of old uploads is new.
            oldest=Min("queued_at", filter=Q(state=State.QUEUED)),
        )
        oldest = figures.pop("oldest")
        lanes[lane] = {
            **figures,
            "depth": figures["waiting"] + figures["running"],
            "oldest_age_seconds": round(max((now - oldest).total_seconds(), 0.0), 1) if oldest else 0.0,
        }
    return lanes


def _workers() -> list[dict[str, Any]]:
    now = timezone.now()
    recipe = current_recipe()
    return [
        {
            "host": w.host,
            "recipe": w.recipe,
            "current": w.recipe == recipe,
            "pid": w.pid,
            "image": w.image,
            "image_id": w.image_id[:19],
            "lanes": w.lanes,
            "concurrency": w.concurrency,
            "last_heartbeat": w.last_heartbeat.isoformat(),
            "age_seconds": round((now - w.last_heartbeat).total_seconds(), 1),
        }
        for w in GradingWorker.alive_now()
    ]


def snapshot() -> dict[str, Any]:
    """Everything, for site operators and /metrics."""
    return {
        "lanes": _lanes(Submission.objects.all()),
        "workers": _workers(),
        "recipe": current_recipe(),
        "at": timezone.now().isoformat(),
    }


def course_snapshot(courses: QuerySet[Course]) -> dict[str, Any]:
    """For a course's staff: their courses' queue, and how many slots grade (no host names)."""
    alive = GradingWorker.alive_now()
    return {
        "courses": sorted(courses.values_list("slug", flat=True)),
        "lanes": _lanes(Submission.objects.filter(assignment__course__in=courses)),
        "grading_slots": alive.aggregate(n=Sum("concurrency"))["n"] or 0,
        "at": timezone.now().isoformat(),
    }


@require_GET
def status(request: HttpRequest) -> HttpResponse:
    """For load balancers: the database answers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return HttpResponse("OK", content_type="text/plain")


@login_required
@require_GET
def health(request: HttpRequest) -> HttpResponse:
    user = signed_in(request)
    if user.is_superuser:
        data = snapshot()
        data["operator"] = True
    else:
        staffed = Enrolment.objects.filter(user=user, role__in=STAFF_ROLES, left_at__isnull=True).values("course_id")
        courses = Course.objects.filter(pk__in=staffed)
        if not courses.exists():
            raise Http404
        data = course_snapshot(courses)
        data["operator"] = False
    if "json" in request.GET:
        return JsonResponse(data)
    return render(request, "submissions/health.html", data)
