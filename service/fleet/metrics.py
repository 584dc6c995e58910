"""Prometheus metrics, read from the database at each scrape: every web process answers the
same, whichever served the scrape, and nothing is lost when a worker dies.

Open only with `Authorization: Bearer $METRICS_TOKEN`; without METRICS_TOKEN the endpoint
does not exist (404)."""

from __future__ import annotations

import hmac
from collections.abc import Iterator

from django.conf import settings
from django.db import connection
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from ..submissions.health import snapshot
from ..submissions.models import State, Submission
from .models import GradingWorker

BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)


def _grading_seconds() -> tuple[list[tuple[str, float]], float]:
    """Cumulative bucket counts and the sum over every finished grading run."""
    columns = ", ".join(f"count(*) FILTER (WHERE d <= {bound})" for bound in BUCKETS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns}, count(*), coalesce(sum(d), 0) FROM ("  # noqa: S608  # bounds are constants
            " SELECT extract(epoch FROM finished_at - started_at) AS d FROM submissions_gradingrun"
            " WHERE finished_at IS NOT NULL) AS runs"
        )
        row = cursor.fetchone()
    buckets = [(str(bound), float(count)) for bound, count in zip(BUCKETS, row, strict=False)]
    buckets.append(("+Inf", float(row[len(BUCKETS)])))
    return buckets, float(row[len(BUCKETS) + 1])


class QueueCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        state = snapshot()
        depth = GaugeMetricFamily("autograder_queue_depth", "Jobs waiting or running, per lane", labels=["lane"])
        age = GaugeMetricFamily(
            "autograder_oldest_job_age_seconds",
            "Seconds the oldest waiting job has waited since it was queued, per lane",
            labels=["lane"],
        )
        students = GaugeMetricFamily(
            "autograder_students_waiting", "Students with at least one job waiting, per lane", labels=["lane"]
        )
        for lane, figures in state["lanes"].items():
            depth.add_metric([lane], figures["depth"])
            age.add_metric([lane], figures["oldest_age_seconds"])
            students.add_metric([lane], figures["students_waiting"])
        yield depth
        yield age
        yield students
        jobs = GaugeMetricFamily("autograder_submissions", "Submissions per status", labels=["status"])
        counts = dict(Submission.objects.values_list("state").annotate(n=Count("id")).values_list("state", "n"))
        for status in State:
            jobs.add_metric([status.value], counts.get(status.value, 0))
        yield jobs
        buckets, total = _grading_seconds()
        yield HistogramMetricFamily(
            "autograder_grading_seconds", "Wall time of each finished grading run", buckets=buckets, sum_value=total
        )
        alive = GaugeMetricFamily("autograder_workers_alive", "Workers heartbeating, per host", labels=["host"])
        per_host = GradingWorker.alive_now().values("host").annotate(n=Count("id")).values_list("host", "n")
        for host, count in per_host:
            alive.add_metric([host], count)
        yield alive


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueCollector())
    return registry


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    token = settings.METRICS_TOKEN
    offered = request.headers.get("Authorization", "")
    if not token or not hmac.compare_digest(offered.encode(), f"Bearer {token}".encode()):
        raise Http404
    return HttpResponse(generate_latest(_registry()), content_type="text/plain; version=0.0.4; charset=utf-8")
