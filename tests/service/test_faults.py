"""The real stack in separate processes: gunicorn, grading workers, PostgreSQL and Docker.

A rush of students submitting at once through the JSON API, and a worker killed with -9 in
the middle of a job: every upload receipted, every job ending graded exactly once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import pytest
import requests
from django.contrib.auth.models import User
from django.db import connection
from service_cast import REPO, Cast

from grader.pipeline import grade_submission
from grader.rubric import load_rubric
from grader.runners.docker import DockerRunner
from service import devdb
from service.accounts.models import ApiToken
from service.courses.models import Enrolment, Role
from service.submissions.models import SCORED, GradingRun, Kind, State, Submission

pytestmark = [pytest.mark.db, pytest.mark.docker, pytest.mark.django_db(transaction=True)]

# A class's deadline rush: as many uploads at once as a 30-student section sends in its last minute.
STUDENTS = 30
# The sample class without the three that run into a limit on purpose (an endless loop, a
# memory bomb, an output flood): each costs a full time budget, and the rush is about the queue.
SLOW_ON_PURPOSE = {"henry_adams", "jack_oconnor", "kate_lee"}
SAMPLES = sorted(p for p in (REPO / "submissions").glob("*/autograd_lab.py") if p.parent.name not in SLOW_ON_PURPOSE)


def _database_url(host: str | None = None, port: str | int | None = None) -> str:
    """The test database's URL, its password included, reached at ``host:port`` (a relay's)."""
    db = connection.settings_dict
    login = f"{db['USER']}:{quote(str(db['PASSWORD']), safe='')}" if db.get("PASSWORD") else db["USER"]
    return f"postgresql://{login}@{host or db['HOST']}:{port or db['PORT']}/{db['NAME']}"


def _env(**extra: str) -> dict[str, str]:
    url = _database_url()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(DATABASE_URL=url, SECRET_KEY="test-secret-key-used-only-by-the-test-suite", **extra)
    env["DJANGO_SETTINGS_MODULE"] = "service.settings"
    return env


def _worker(concurrency: int = 2, **extra_env: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "grader", "worker", "--concurrency", str(concurrency)],
        env=_env(**extra_env),
        cwd=REPO,
        start_new_session=True,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def web() -> Iterator[str]:
    port = devdb.free_port()
    process = _start_web(port)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(process)


def _students(cast: Cast, prefix: str, count: int) -> list[User]:
    users = [User.objects.create_user(f"{prefix}{n}", f"{prefix}{n}@example.edu") for n in range(count)]
    for user in users:
        Enrolment.objects.create(course=cast.course, user=user, role=Role.STUDENT)
    return users


def _wait_until_done(ids: list[int], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not Submission.objects.filter(pk__in=ids, state__in=(State.QUEUED, State.RUNNING)).exists():
            return
        time.sleep(1)
    raise AssertionError("the queue did not drain in time")


@pytest.mark.slow
def test_a_rush_of_students_is_receipted_and_graded_exactly_once(cast: Cast, web: str) -> None:
    tokens = {}
    for number in range(STUDENTS):
        user = User.objects.create_user(f"s{number:03d}", f"s{number:03d}@example.edu")
        Enrolment.objects.create(course=cast.course, user=user, role=Role.STUDENT)
        tokens[user.username] = ApiToken.issue(user)
    files = {name: SAMPLES[i % len(SAMPLES)] for i, name in enumerate(sorted(tokens))}

    def send(name: str) -> tuple[int, dict[str, object]]:
        response = requests.post(
            f"{web}/api/v1/assignments/a8/submissions",
            headers={"Authorization": f"Token {tokens[name]}"},
            data={"kind": "submit"},
            files={"file": ("autograd_lab.py", files[name].read_bytes())},
            timeout=120,
        )
        return response.status_code, response.json()

    with ThreadPoolExecutor(max_workers=STUDENTS) as pool:
        receipts = list(pool.map(send, sorted(tokens)))
    assert [status for status, _ in receipts] == [201] * STUDENTS
    ids = [int(str(body["id"])) for _, body in receipts]
    worker = _worker()
    try:
        _wait_until_done(ids, seconds=900)
    finally:
        _stop(worker)
    graded = {s.user.username: s for s in Submission.objects.filter(pk__in=ids).select_related("user")}
    assert len(graded) == STUDENTS
    for name, submission in graded.items():
        # Exactly one run, or infrastructure failures retried and then one run: never a second
        # execution of a job that was already running ("discarded").
        outcomes = [run.outcome for run in submission.runs.all()]
        assert [o for o in outcomes if o != State.INFRA_ERROR] == [submission.state], (name, outcomes)
    # The same scores as the grader's own pipeline gives the same files with the assignment's seed.
    rubric, runner = load_rubric(), DockerRunner()
    seed = cast.assignment.seed
    expected = {path: grade_submission(path, student="x", rubric=rubric, runner=runner, seed=seed) for path in SAMPLES}
    for name, submission in graded.items():
        want = expected[files[name]]
        assert submission.state == want.status.value, name
        assert submission.score == (want.score if want.scored else None), name
    from procrastinate.contrib.django.models import ProcrastinateJob

    # The queue's tables outlive each test's flush (they are not Django's): only these jobs.
    jobs = [
        job for job in ProcrastinateJob.objects.filter(task_name="grade_submission") if job.args["submission_id"] in ids
    ]
    assert sorted(job.args["submission_id"] for job in jobs) == sorted(ids)  # one job each, none lost
    assert {job.status for job in jobs} == {"succeeded"}


def test_a_worker_killed_mid_job_leaves_the_job_to_be_retried_once(cast: Cast) -> None:
    client = cast.client(cast.student)
    from django.core.files.uploadedfile import SimpleUploadedFile

    body = (REPO / "reference" / "autograd_lab.py").read_bytes()
    response = client.post("/a/a8/", {"kind": "submit", "file": SimpleUploadedFile("autograd_lab.py", body)})
    submission_id = int(response["Location"].strip("/").split("/")[-1])
    first = _worker(concurrency=1)
    try:
        deadline = time.monotonic() + 120
        while Submission.objects.get(pk=submission_id).state != State.RUNNING:
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.2)
        os.killpg(first.pid, signal.SIGKILL)  # the worker and anything it started, at once
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    assert Submission.objects.get(pk=submission_id).state == State.RUNNING  # stranded, not lost
    from service.submissions.tasks import retry_stalled

    time.sleep(6)  # the dead worker's last heartbeat is older than the threshold used here
    with pytest.MonkeyPatch.context() as patch:
        from django.conf import settings

        patch.setattr(settings, "STALLED_WORKER_SECONDS", 5)  # in this process only: no live worker
        from procrastinate.contrib.django import app

        with app.replace_connector(app.connector.get_worker_connector()):

            async def reap() -> int:
                async with app.open_async():
                    return await retry_stalled()

            assert asyncio.run(reap()) == 1
    second = _worker(concurrency=1)
    try:
        _wait_until_done([submission_id], seconds=300)
    finally:
        _stop(second)
    done = Submission.objects.get(pk=submission_id)
    assert done.state == State.GRADED and done.score == 100.0
    runs = list(done.runs.order_by("started_at"))
    assert [(run.outcome, run.finished_at is None) for run in runs] == [("", True), ("graded", False)]
    from procrastinate.contrib.django.models import ProcrastinateJob

    assert ProcrastinateJob.objects.get(id=done.job_id).status == "succeeded"


@pytest.mark.slow
def test_a_worker_that_loses_its_docker_engine_gives_its_jobs_back_and_stops(cast: Cast) -> None:
    """Its jobs end as infrastructure failures, are graded by another worker, never scored by it
    and never counted against the student; it takes no more jobs."""
    from socket_proxy import EngineRelay

    from service.fleet.models import GradingWorker
    from service.submissions.intake import receive

    relay = EngineRelay()
    broken = _worker(concurrency=1, DOCKER_HOST=relay.docker_host)
    healthy: subprocess.Popen[bytes] | None = None
    try:
        deadline = time.monotonic() + 180
        while not GradingWorker.objects.filter(pid=broken.pid, stopped_at__isnull=True).exists():
            assert broken.poll() is None and time.monotonic() < deadline, "the worker never registered"
            time.sleep(0.2)
        relay.cut()
        body = (REPO / "reference" / "autograd_lab.py").read_bytes()
        # Three students: a student's new self-check would replace their own queued one.
        submissions = [
            receive(cast.assignment, student, Kind.SELF_CHECK, "autograd_lab.py", body)
            for student in _students(cast, "engine", 3)
        ]
        ids = [s.pk for s in submissions if isinstance(s, Submission)]
        assert len(ids) == 3
        broken.wait(timeout=120)  # it drained itself
        assert GradingWorker.objects.get(pid=broken.pid).stopped_at is not None
        failed_there = list(GradingRun.objects.filter(submission_id__in=ids).values_list("outcome", flat=True))
        assert failed_there and set(failed_there) == {State.INFRA_ERROR}
        assert not Submission.objects.filter(pk__in=ids, state__in=SCORED).exists()
        healthy = _worker(concurrency=2)
        _wait_until_done(ids, seconds=600)
    finally:
        for process in (broken, healthy):
            if process is not None:
                _stop(process)
    for submission in Submission.objects.filter(pk__in=ids):
        outcomes = [run.outcome for run in submission.runs.order_by("started_at")]
        assert submission.state == State.GRADED and submission.score is not None, outcomes
        assert [o for o in outcomes if o != State.INFRA_ERROR] == [State.GRADED], outcomes  # scored once


@pytest.mark.slow
def test_postgresql_restarted_while_jobs_run_loses_nothing_and_grades_each_once(
    cast: Cast, postgres_folder: Path
) -> None:
    """Workers reconnect; a job whose result could not be written is retried after its worker's
    old registration goes silent; every submission ends graded exactly once."""
    from service.submissions.intake import receive

    body = (REPO / "reference" / "autograd_lab.py").read_bytes()
    # Six students: a student's new self-check would replace their own queued one.
    users = _students(cast, "restart", 6)
    received = [receive(cast.assignment, user, Kind.SELF_CHECK, "autograd_lab.py", body) for user in users]
    ids = [s.pk for s in received if isinstance(s, Submission)]
    assert len(ids) == 6
    worker = _worker(concurrency=2, STALLED_WORKER_SECONDS="30")
    try:
        deadline = time.monotonic() + 180
        while not Submission.objects.filter(pk__in=ids, state=State.RUNNING).exists():
            assert time.monotonic() < deadline, "no job started"
            time.sleep(0.2)
        devdb.restart(postgres_folder)
        connection.close()  # this process's connection died with the server
        _wait_until_done(ids, seconds=600)
        assert worker.poll() is None  # it came back with the database, it did not exit
    finally:
        _stop(worker)
    for submission in Submission.objects.filter(pk__in=ids):
        outcomes = [run.outcome for run in submission.runs.order_by("started_at")]
        assert submission.state == State.GRADED and submission.score is not None, outcomes
        assert outcomes.count(State.GRADED) == 1, outcomes  # one result written, whatever was cut off


def _start_web(port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "service.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--threads",
            "8",
        ],
        env=_env(SITE_ROOT=f"http://127.0.0.1:{port}"),
        cwd=REPO,
        start_new_session=True,  # the master and its workers die together
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/status/", timeout=5).status_code == 200:
                return process
        except requests.RequestException:  # not listening yet, or too busy starting to answer
            time.sleep(0.1)
    os.killpg(process.pid, signal.SIGKILL)
    raise AssertionError("the web process did not start")


@pytest.mark.slow
def test_the_web_process_killed_mid_rush_loses_no_receipted_upload(cast: Cast) -> None:
    """Students whose upload fails while the web process is down send it again; every upload
    that got a receipt is graded (or superseded by the same student's later one), and no job
    runs twice."""
    students = 20
    tokens = {}
    for number in range(students):
        user = User.objects.create_user(f"w{number:03d}", f"w{number:03d}@example.edu")
        Enrolment.objects.create(course=cast.course, user=user, role=Role.STUDENT)
        tokens[user.username] = ApiToken.issue(user)
    body = (REPO / "reference" / "autograd_lab.py").read_bytes()
    port = devdb.free_port()
    web = _start_web(port)
    restarted = False

    def send(name: str) -> int:
        deadline = time.monotonic() + 120
        while True:
            try:
                response = requests.post(
                    f"http://127.0.0.1:{port}/api/v1/assignments/a8/submissions",
                    headers={"Authorization": f"Token {tokens[name]}"},
                    data={"kind": "submit"},
                    files={"file": ("autograd_lab.py", body)},
                    timeout=30,
                )
                if response.status_code == 201:
                    return int(response.json()["id"])
            except requests.RequestException:
                pass  # the web process is down: try again, as a student would
            assert time.monotonic() < deadline, f"{name} never got a receipt"
            time.sleep(0.3)

    worker = _worker()
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            futures = [pool.submit(send, name) for name in sorted(tokens)]
            while Submission.objects.filter(user__username__startswith="w").count() < students // 4:
                time.sleep(0.05)
            os.killpg(web.pid, signal.SIGKILL)  # mid-rush, requests in flight
            web.wait(timeout=30)
            web = _start_web(port)
            restarted = True
            receipts = [future.result() for future in futures]
        _wait_until_done(receipts, seconds=600)
    finally:
        _stop(worker)
        if web.poll() is None:
            os.killpg(web.pid, signal.SIGTERM)
            web.wait(timeout=30)
    assert restarted and len(set(receipts)) == students
    for submission in Submission.objects.filter(pk__in=receipts):
        assert submission.state in (State.GRADED, State.SUPERSEDED), (submission.pk, submission.state)
    every = Submission.objects.filter(user__username__startswith="w")  # receipted or cut off in flight
    for submission in every:
        outcomes = [run.outcome for run in submission.runs.all()]
        assert len([o for o in outcomes if o != State.INFRA_ERROR]) <= 1, (submission.pk, outcomes)
    for name in tokens:
        mine = every.filter(user__username=name)
        assert mine.filter(state=State.GRADED).exists(), (name, list(mine.values_list("state", flat=True)))


@pytest.mark.slow
def test_two_grading_hosts_in_their_own_network_namespaces_share_the_queue(
    cast: Cast, request: pytest.FixtureRequest
) -> None:
    from netns_hosts import HostNetwork

    from service.fleet.models import GradingWorker

    db = connection.settings_dict
    network = HostNetwork(int(db["PORT"]))
    workers: list[subprocess.Popen[bytes]] = []
    try:
        hosts = network.make(2)
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if network.fallback and reporter is not None:
            reporter.write_line(f"grading hosts simulated as plain processes on loopback: {network.fallback}")
        for host in hosts:
            if host.namespace:  # the host reaches the database through its veth pair only
                probe = f"import socket; socket.create_connection(('127.0.0.1', {db['PORT']}), timeout=3)"
                cut_off = subprocess.run(host.command([sys.executable, "-c", probe]), capture_output=True, timeout=60)
                assert cut_off.returncode != 0, "a namespaced host reached the database on loopback"
            env = _env()
            env["DATABASE_URL"] = _database_url(host.database_host, host.database_port)
            command = host.command([sys.executable, "-m", "grader", "worker", "--concurrency", "1"])
            workers.append(subprocess.Popen(command, env=env, cwd=REPO, start_new_session=True))
        deadline = time.monotonic() + 180
        while GradingWorker.alive_now().count() < 2:
            assert all(w.poll() is None for w in workers), "a worker exited"
            assert time.monotonic() < deadline, "the workers did not register"
            time.sleep(0.2)
        from service.submissions.intake import receive

        body = (REPO / "reference" / "autograd_lab.py").read_bytes()
        ids = []
        for number in range(10):
            user = User.objects.create_user(f"h{number:03d}", f"h{number:03d}@example.edu")
            Enrolment.objects.create(course=cast.course, user=user, role=Role.STUDENT)
            received = receive(cast.assignment, user, Kind.SUBMIT, "autograd_lab.py", body)
            assert isinstance(received, Submission)
            ids.append(received.pk)
        _wait_until_done(ids, seconds=600)
    finally:
        for worker in workers:
            _stop(worker)
        network.close()
    runs = GradingRun.objects.filter(submission_id__in=ids)
    for submission in Submission.objects.filter(pk__in=ids):
        assert submission.state == State.GRADED
        assert [r.outcome for r in submission.runs.all()] == [State.GRADED]  # graded once, by one host
    hosts_used = {run.worker.split(":")[0] for run in runs}
    if not network.fallback:
        assert hosts_used == {"grader-a", "grader-b"}, hosts_used  # both hosts took jobs
        assert set(GradingWorker.objects.values_list("host", flat=True)) >= {"grader-a", "grader-b"}
