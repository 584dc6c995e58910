"""Workers register with their host and image and heartbeat; /metrics reports the queue."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from service_cast import Cast
from test_pages import upload

from service.fleet.models import GradingWorker
from service.fleet.registry import Identity, Registration
from service.submissions.models import GradingRun, State, Submission

pytestmark = [pytest.mark.db]
IDENTITY = Identity("autograd-grader:0123456789ab", "sha256:" + "c" * 64, ("self_check", "submit"), 2)


def test_a_worker_registers_heartbeats_and_says_when_it_stops(transactional_db: Any) -> None:
    with Registration(IDENTITY, interval=0.2) as worker:
        first = GradingWorker.objects.get(pk=worker.pk).last_heartbeat
        assert worker.alive and worker.lanes == "self_check,submit" and worker.concurrency == 2
        deadline = time.monotonic() + 10
        while GradingWorker.objects.get(pk=worker.pk).last_heartbeat == first and time.monotonic() < deadline:
            time.sleep(0.1)
        assert GradingWorker.objects.get(pk=worker.pk).last_heartbeat > first
    stopped = GradingWorker.objects.get(pk=worker.pk)
    assert stopped.stopped_at is not None and not stopped.alive
    assert not GradingWorker.alive_now().exists()


def test_the_health_page_lists_live_workers_with_host_and_image(cast: Cast) -> None:
    live = GradingWorker.objects.create(host="grader-2", pid=41, image=IDENTITY.image, lanes="submit", concurrency=4)
    GradingWorker.objects.create(
        host="grader-3", pid=7, lanes="submit", concurrency=1, last_heartbeat=timezone.now() - timedelta(hours=1)
    )
    GradingWorker.objects.create(host="grader-4", pid=8, lanes="submit", concurrency=1, stopped_at=timezone.now())
    data = cast.client(cast.ta).get("/health/?json").json()
    assert [(w["host"], w["pid"], w["image"], w["concurrency"]) for w in data["workers"]] == [
        (live.host, 41, IDENTITY.image, 4)
    ]
    page = cast.client(cast.instructor).get("/health/").content.decode()
    assert "grader-2" in page and IDENTITY.image in page and "grader-3" not in page
    assert cast.client(cast.student).get("/health/").status_code == 404


def scrape(client: Client, token: str) -> str:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain; version=0.0.4")
    return response.content.decode()


def test_metrics_need_the_token_and_report_lanes_statuses_timings_and_workers(cast: Cast, settings: Any) -> None:
    settings.METRICS_TOKEN = "m" * 40
    anonymous = Client()
    assert anonymous.get("/metrics").status_code == 404
    assert anonymous.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 404
    assert cast.client(cast.instructor).get("/metrics").status_code == 404  # a session is not the token
    upload(cast.client(cast.student))
    upload(cast.client(cast.student2), kind="self_check")
    done = upload(cast.client(cast.student2))
    Submission.objects.filter(pk=done.pk).update(state=State.GRADED)
    start = timezone.now()
    for seconds in (0.7, 3.0, 45.0):
        GradingRun.objects.create(
            submission=done,
            worker="w",
            started_at=start,
            finished_at=start + timedelta(seconds=seconds),
            outcome="graded",
        )
    GradingRun.objects.create(submission=done, worker="w", started_at=start)  # never finished: not timed
    GradingWorker.objects.create(host="grader-2", pid=41, lanes="submit", concurrency=4)
    text = scrape(anonymous, "m" * 40)
    assert 'autograder_queue_depth{lane="submit"} 1.0' in text
    assert 'autograder_queue_depth{lane="self_check"} 1.0' in text
    assert 'autograder_queue_depth{lane="regrade"} 0.0' in text
    assert 'autograder_submissions{status="graded"} 1.0' in text
    assert 'autograder_submissions{status="queued"} 2.0' in text
    assert 'autograder_grading_seconds_bucket{le="0.5"} 0.0' in text
    assert 'autograder_grading_seconds_bucket{le="1.0"} 1.0' in text
    assert 'autograder_grading_seconds_bucket{le="5.0"} 2.0' in text
    assert 'autograder_grading_seconds_bucket{le="+Inf"} 3.0' in text
    assert "autograder_grading_seconds_count 3.0" in text and "autograder_grading_seconds_sum 48.7" in text
    assert 'autograder_workers_alive{host="grader-2"} 1.0' in text
    assert 'autograder_oldest_job_age_seconds{lane="submit"}' in text


def test_without_a_token_configured_there_are_no_metrics(cast: Cast, settings: Any) -> None:
    settings.METRICS_TOKEN = ""
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 404


def test_grader_worker_refuses_an_unknown_lane_before_it_takes_a_job(cast: Cast) -> None:
    from click.testing import CliRunner

    from grader.cli import cli
    from grader.errors import InfraError

    outcome = CliRunner().invoke(cli, ["worker", "--lanes", "submit,bogus"])
    assert outcome.exit_code == InfraError.exit_code
    assert "unknown lane(s) ['bogus']" in outcome.output
    assert not GradingWorker.objects.exists()
    assert CliRunner().invoke(cli, ["worker", "--concurrency", "0"]).exit_code == 2  # click's own range check
