"""The health page: queue depth per lane, the oldest waiting job, workers and heartbeats."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from ..accounts.identity import signed_in
from ..courses.models import STAFF_ROLES, Enrolment
from ..fleet.identity import current_recipe
from ..fleet.models import GradingWorker
from .models import PENDING, Submission
from .queue import LANES


def snapshot() -> dict[str, Any]:
    now = timezone.now()
    lanes = {}
    for lane in LANES:
        waiting = Submission.objects.filter(lane=lane, state__in=PENDING)
        oldest = waiting.order_by("received_at").values_list("received_at", flat=True).first()
        lanes[lane] = {
            "depth": waiting.count(),
            "oldest_age_seconds": round((now - oldest).total_seconds(), 1) if oldest else 0.0,
        }
    recipe = current_recipe()
    workers = [
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
    return {"lanes": lanes, "workers": workers, "recipe": recipe, "at": now.isoformat()}


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
    if not user.is_superuser and not Enrolment.objects.filter(user=user, role__in=STAFF_ROLES).exists():
        raise Http404
    data = snapshot()
    if "json" in request.GET:
        return JsonResponse(data)
    return render(request, "submissions/health.html", data)
