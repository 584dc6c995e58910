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
IDENTITY = Identity("0123456789ab", "autograd-grader:0123456789ab", "sha256:" + "c" * 64, ("self_check", "submit"), 2)


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
    from django.contrib.auth.models import User

    operator = User.objects.create_superuser("root", "root@example.edu", cast.password)
    data = cast.client(operator).get("/health/?json").json()
    assert [(w["host"], w["pid"], w["image"], w["concurrency"]) for w in data["workers"]] == [
        (live.host, 41, IDENTITY.image, 4)
    ]
    page = cast.client(operator).get("/health/").content.decode()
    assert "grader-2" in page and IDENTITY.image in page and "grader-3" not in page
    # A course's staff learn how many slots grade, never where.
    staff = cast.client(cast.instructor).get("/health/").content.decode()
    assert "grader-2" not in staff and IDENTITY.image not in staff
    assert cast.client(cast.ta).get("/health/?json").json()["grading_slots"] == 4
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


def test_a_worker_on_another_sandbox_recipe_takes_none_of_the_jobs(cast: Cast, transactional_db: Any) -> None:
    from procrastinate.contrib.django import app
    from procrastinate.contrib.django.django_connector import DjangoConnector
    from procrastinate.contrib.django.models import ProcrastinateJob

    from service.fleet.identity import current_recipe, queue_for

    submission = upload(cast.client(cast.student))
    assert isinstance(app.connector, DjangoConnector)
    stale = "0" * 12
    assert stale != current_recipe()
    with app.replace_connector(app.connector.get_worker_connector()):
        queues = [queue_for(lane, stale) for lane in ("self_check", "submit", "regrade")]
        app.run_worker(queues=queues, wait=False, install_signal_handlers=False, listen_notify=False)
    job = ProcrastinateJob.objects.get(id=submission.job_id)
    assert job.status == "todo" and job.queue_name == queue_for("submit")
    assert Submission.objects.get(pk=submission.pk).state == State.QUEUED


def test_a_job_for_another_recipe_or_rubric_is_given_back_never_graded(cast: Cast) -> None:
    from service.fleet.identity import rubric_sha256
    from service.submissions import grading

    for field, value, said in (("recipe", "f" * 12, "sandbox recipe"), ("rubric_sha256", "0" * 64, "rubric")):
        submission = upload(cast.client(cast.student), kind="self_check")
        Submission.objects.filter(pk=submission.pk).update(**{field: value})
        with pytest.raises(grading.InfraFailure, match=said):
            grading.grade(submission.pk, final_attempt=False)
        retried = Submission.objects.get(pk=submission.pk)
        assert retried.state == State.QUEUED and retried.score is None and said in retried.detail
        last_try = grading.grade(submission.pk, final_attempt=True)
        last = Submission.objects.get(pk=submission.pk)
        outcomes = list(last.runs.order_by("started_at").values_list("outcome", flat=True))
        if field == "recipe":  # never graded with another sandbox
            assert last_try == State.INFRA_ERROR and last.state == State.INFRA_ERROR
            assert last.score is None and not last.result_json
            assert outcomes == [State.INFRA_ERROR, State.INFRA_ERROR]
        else:  # every host tried has the edited rubric: the assignment's rubric is now that one
            assert last_try == State.GRADED and last.state == State.GRADED and last.score == last.max_score
            assert last.rubric_sha256 == rubric_sha256(cast.assignment.rubric_path())
            assert outcomes == [State.INFRA_ERROR, State.GRADED]


def test_jobs_queued_before_jobs_named_their_recipe_move_to_this_releases_queues(cast: Cast) -> None:
    import importlib
    from types import SimpleNamespace

    from django.apps import apps
    from django.db import connection
    from procrastinate.contrib.django.models import ProcrastinateJob

    from service.fleet.identity import queue_for
    from service.submissions.tasks import grade_submission

    submission = upload(cast.client(cast.student))
    Submission.objects.filter(pk=submission.pk).update(recipe="")
    old = grade_submission.configure(queue="submit").defer(submission_id=submission.pk)
    finished = grade_submission.configure(queue="regrade").defer(submission_id=submission.pk)
    ProcrastinateJob.objects.filter(id=finished).update(status="succeeded")
    migration = importlib.import_module("service.submissions.migrations.0003_job_identity")
    migration.route_waiting_jobs(apps, SimpleNamespace(connection=connection))
    assert ProcrastinateJob.objects.get(id=old).queue_name == queue_for("submit")
    assert ProcrastinateJob.objects.get(id=finished).queue_name == "regrade"  # history is left as it was
    assert Submission.objects.get(pk=submission.pk).recipe == queue_for("submit").split(".")[1]


def test_a_self_check_sent_during_a_class_regrade_is_graded_before_the_regrade(
    cast: Cast, transactional_db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from procrastinate.contrib.django import app
    from procrastinate.contrib.django.django_connector import DjangoConnector
    from procrastinate.contrib.django.models import ProcrastinateJob

    from service.submissions import grading

    graded: list[int] = []

    def record(submission_id: int, *, final_attempt: bool) -> str:
        graded.append(submission_id)
        Submission.objects.filter(pk=submission_id).update(state=State.GRADED)
        return "graded"

    monkeypatch.setattr(grading, "grade", record)
    earlier = [upload(cast.client(user)) for user in (cast.student, cast.student2)]
    Submission.objects.filter(pk__in=[s.pk for s in earlier]).update(state=State.GRADED, score=50.0, max_score=100.0)
    ProcrastinateJob.objects.filter(id__in=[s.job_id for s in earlier]).update(status="succeeded")  # graded before
    assert cast.client(cast.instructor).post("/a/a8/class/regrade/", {"which": "all"}).status_code == 302
    counted = upload(cast.client(cast.student2))
    self_check = upload(cast.client(cast.student), kind="self_check")
    assert isinstance(app.connector, DjangoConnector)
    with app.replace_connector(app.connector.get_worker_connector()):
        app.run_worker(wait=False, concurrency=1, install_signal_handlers=False, listen_notify=False)
    # Received last, graded first; then the counted submission; the regrade lane last.
    mine = {self_check.pk, counted.pk, *(s.pk for s in earlier)}
    order = [pk for pk in graded if pk in mine]  # the queue's tables outlive other tests' rows
    assert order[:2] == [self_check.pk, counted.pk]
    assert sorted(order[2:]) == sorted(s.pk for s in earlier)  # each once


def test_the_installed_grader_command_runs_the_service_commands_from_any_folder(cast: Cast, tmp_path: Any) -> None:
    """A grading host runs `grader worker` from its service manager, not from the checkout."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from grader.errors import InfraError

    grader = Path(sys.executable).parent / "grader"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_SETTINGS"))},
        "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/unused",
        "SECRET_KEY": "test-secret-key-used-only-by-the-test-suite",
    }
    done = subprocess.run(
        [str(grader), "worker", "--lanes", "bogus"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == InfraError.exit_code, done.stderr
    assert "unknown lane(s) ['bogus']" in done.stderr + done.stdout


def test_beside_make_serve_the_service_commands_use_its_database_and_key(
    postgres: str, postgres_folder: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from service import devdb, serve

    monkeypatch.setattr(devdb, "DEFAULT_FOLDER", postgres_folder)  # the running test cluster stands in
    monkeypatch.setattr(serve, "VAR", tmp_path)
    (tmp_path / "secret_key").write_text("the-key-make-serve-drew\n")
    for name in ("DATABASE_URL", "SECRET_KEY", "SECRET_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    assert serve.adopt_local_service()
    assert os.environ["DATABASE_URL"] == devdb.url(postgres_folder) and ":" in os.environ["DATABASE_URL"][13:]
    assert os.environ["SECRET_KEY"] == "the-key-make-serve-drew"
    # A DATABASE_URL of the operator's own always wins.
    monkeypatch.setenv("DATABASE_URL", "postgresql://grader@db.example.edu/grader")
    assert not serve.adopt_local_service()
    assert os.environ["DATABASE_URL"] == "postgresql://grader@db.example.edu/grader"
