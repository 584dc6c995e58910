"""The grading workers, wherever they run: host, image, lanes and heartbeat."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone


class GradingWorker(models.Model):
    """One `grader worker` process. It registers when it starts, heartbeats while it runs and
    says when it stops; one that stops heartbeating was killed or lost its host."""

    host = models.CharField(max_length=200)
    pid = models.PositiveIntegerField()
    recipe = models.CharField(max_length=12, blank=True, help_text="the sandbox recipe whose jobs it takes")
    image = models.CharField(max_length=200, blank=True, help_text="the sandbox image's tag")
    image_id = models.CharField(max_length=100, blank=True, help_text="the sandbox image's digest on this host")
    lanes = models.CharField(max_length=200)
    concurrency = models.PositiveSmallIntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    last_heartbeat = models.DateTimeField(default=timezone.now, db_index=True)
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["host", "pid", "-started_at"]

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}"

    @property
    def alive(self) -> bool:
        silence = timedelta(seconds=settings.STALLED_WORKER_SECONDS)
        return self.stopped_at is None and timezone.now() - self.last_heartbeat < silence

    @classmethod
    def alive_now(cls) -> models.QuerySet[GradingWorker]:
        since = timezone.now() - timedelta(seconds=settings.STALLED_WORKER_SECONDS)
        return cls.objects.filter(stopped_at__isnull=True, last_heartbeat__gte=since)
