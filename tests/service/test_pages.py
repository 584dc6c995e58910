"""Pages and policies without a worker: who reaches what, late rules, headers, the health page."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from service_cast import GOOD, Cast

from service.courses.models import Extension
from service.submissions.models import State, Submission

pytestmark = [pytest.mark.db]


def upload(client: Client, kind: str = "submit", body: bytes = GOOD, slug: str = "a8") -> Submission:
    response = client.post(f"/a/{slug}/", {"kind": kind, "file": SimpleUploadedFile("autograd_lab.py", body)})
    assert response.status_code == 302, response.content[:300]
    return Submission.objects.get(pk=int(response["Location"].strip("/").split("/")[-1]))


def test_every_student_route_answers_404_for_someone_elses_id(cast: Cast) -> None:
    mine = upload(cast.client(cast.student))
    routes = [
        f"/submissions/{mine.pk}/",
        f"/submissions/{mine.pk}/status.json",
        f"/submissions/{mine.pk}/feedback/",
    ]
    for other in (cast.student2, cast.outsider):
        client = cast.client(other)
        for route in routes:
            assert client.get(route).status_code == 404, (other.username, route)
        assert client.post(f"/submissions/{mine.pk}/override/", {"score": "1", "reason": "x"}).status_code == 404
    outsider = cast.client(cast.outsider)
    assert outsider.get("/a/a8/").status_code == 404
    for route in ("/a/a8/class/", "/a/a8/class/export/grades.csv", "/health/"):
        assert cast.client(cast.student).get(route).status_code == 404, route
        assert outsider.get(route).status_code == 404, route
    assert cast.client(cast.student).post("/a/a8/class/regrade/", {"which": "all"}).status_code == 404
    # Ids that do not exist look exactly the same.
    assert cast.client(cast.student).get("/submissions/987654/").status_code == 404
    assert cast.client(cast.student).get("/a/" + "x" * 300 + "/").status_code == 404


def test_pages_need_a_login(cast: Cast) -> None:
    for route in ("/", "/a/a8/", "/submissions/1/", "/health/", "/a/a8/class/"):
        response = Client().get(route)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), route


def test_the_receipt_shows_time_hash_and_position(cast: Cast) -> None:
    client = cast.client(cast.student)
    submission = upload(client)
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert hashlib.sha256(GOOD).hexdigest() in page and "position 1 in the queue" in page
    assert f'data-follow="/submissions/{submission.pk}/status.json"' in page


def test_late_penalty_grace_extension_and_hard_close(cast: Cast) -> None:
    assignment = cast.assignment
    assignment.due_at = timezone.now() - timedelta(days=1, hours=1)
    assignment.grace_minutes = 30
    assignment.late_penalty_per_day = 10
    assignment.save()
    late = upload(cast.client(cast.student))
    assert late.late_penalty == 20  # two started days after the grace period
    Extension.objects.create(assignment=assignment, user=cast.student2, due_at=timezone.now() + timedelta(days=1))
    assert upload(cast.client(cast.student2)).late_penalty == 0
    assignment.hard_close_at = timezone.now() - timedelta(minutes=1)
    assignment.save()
    closed = cast.client(cast.student).post(
        "/a/a8/", {"kind": "submit", "file": SimpleUploadedFile("autograd_lab.py", GOOD)}
    )
    assert closed.status_code == 403 and b"closed" in closed.content
    assert upload(cast.client(cast.student), kind="self_check").state == State.QUEUED  # self-checks still run
    assert upload(cast.client(cast.student2)).state == State.QUEUED  # the extension keeps it open


def test_a_self_check_refused_by_the_rate_limit_says_when_to_come_back(cast: Cast, settings: object) -> None:
    settings.SELF_CHECKS_PER_WINDOW = 1  # type: ignore[attr-defined]
    client = cast.client(cast.student)
    upload(client, kind="self_check")
    refused = client.post("/a/a8/", {"kind": "self_check", "file": SimpleUploadedFile("autograd_lab.py", GOOD)})
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert b"next one possible in" in refused.content


def test_the_web_process_never_runs_a_submission(cast: Cast, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hostile = f"open({str(marker)!r}, 'w').write('x')\nimport os\nos._exit(3)\n".encode()
    client = cast.client(cast.student)
    submission = upload(client, body=hostile)
    client.get(f"/submissions/{submission.pk}/")
    client.get(f"/submissions/{submission.pk}/status.json")
    cast.client(cast.instructor).get("/a/a8/class/")
    assert not marker.exists() and bytes(Submission.objects.get(pk=submission.pk).content) == hostile


def test_security_headers_on_every_kind_of_page(cast: Cast) -> None:
    client = cast.client(cast.student)
    page = client.get("/a/a8/")
    policy = page["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert page["X-Frame-Options"] == "DENY" and page["X-Content-Type-Options"] == "nosniff"
    login = Client().get("/accounts/login/")
    assert "script-src 'self'" in login["Content-Security-Policy"]
    assert "unsafe-inline" not in policy


def test_the_health_page_shows_lanes_to_staff_and_workers_to_operators(cast: Cast) -> None:
    from django.contrib.auth.models import User

    upload(cast.client(cast.student))
    upload(cast.client(cast.student2), kind="self_check")
    data = cast.client(cast.ta).get("/health/?json").json()
    assert data["lanes"]["submit"]["depth"] == 1 and data["lanes"]["self_check"]["depth"] == 1
    assert data["lanes"]["regrade"]["depth"] == 0 and data["lanes"]["submit"]["oldest_age_seconds"] >= 0
    assert data["grading_slots"] == 0 and "workers" not in data
    assert b"No worker is running" not in cast.client(cast.instructor).get("/health/").content
    operator = User.objects.create_superuser("root", "root@example.edu", cast.password)
    assert cast.client(operator).get("/health/?json").json()["workers"] == []
    assert b"No worker is running" in cast.client(operator).get("/health/").content
    assert Client().get("/status/").content == b"OK"


def test_an_instructor_imports_a_roster_and_nobody_else_can(cast: Cast) -> None:
    from django.contrib.auth.models import User

    from service.courses.models import Enrolment, Role

    csv_file = SimpleUploadedFile(
        "roster.csv", b"username,email,name\nzoe,zoe@example.edu,Zoe Q\nyan,yan@example.edu,Yan\n"
    )
    assert cast.client(cast.instructor).post("/a/a8/class/roster/", {"roster": csv_file}).status_code == 302
    assert set(
        Enrolment.objects.filter(course=cast.course, role=Role.STUDENT).values_list("user__username", flat=True)
    ) >= {"zoe", "yan"}
    assert not User.objects.get(username="zoe").has_usable_password()
    bad = SimpleUploadedFile("roster.csv", b"username,email,name\n=cmd,not-an-email,X\n")
    refused = cast.client(cast.instructor).post("/a/a8/class/roster/", {"roster": bad})
    assert refused.status_code == 400 and b"row 1" in refused.content
    for user in (cast.ta, cast.student, cast.outsider):
        again = SimpleUploadedFile("roster.csv", b"username,email,name\nmallory,m@example.edu,M\n")
        assert cast.client(user).post("/a/a8/class/roster/", {"roster": again}).status_code == 404
    assert not User.objects.filter(username="mallory").exists()


def _settings_with(**env: str) -> tuple[int, int]:
    """HSTS seconds and session age as the service computes them from this environment."""
    clean = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECURE_HSTS_SECONDS", "SESSION_HOURS")}
    clean.update(SECRET_KEY="s" * 50, DATABASE_URL="postgresql://unused@127.0.0.1:1/x", **env)
    code = "from service import settings as s; print(s.SECURE_HSTS_SECONDS, s.SESSION_COOKIE_AGE)"
    done = subprocess.run([sys.executable, "-c", code], env=clean, capture_output=True, text=True, check=True)
    hsts, age = done.stdout.split()
    return int(hsts), int(age)


def test_https_turns_hsts_on_by_default_and_a_sign_in_lasts_a_working_day() -> None:
    assert _settings_with(SITE_ROOT="https://grader.example.edu") == (365 * 24 * 3600, 12 * 3600)
    assert _settings_with(SITE_ROOT="http://127.0.0.1:8000") == (0, 12 * 3600)
    assert _settings_with(SITE_ROOT="https://grader.example.edu", SECURE_HSTS_SECONDS="0", SESSION_HOURS="2") == (
        0,
        2 * 3600,
    )


def test_the_pages_take_the_graders_stylesheet_from_its_one_source(cast: Cast) -> None:
    # One look for the feedback pages and the service's: the grader's style.css is served as
    # it is (no copy to drift), linked before the service's own components.
    from django.conf import settings

    page = cast.client(cast.student).get("/a/a8/").content.decode()
    grader_css, site_css = page.index("/static/grader/style.css"), page.index("/static/service/site.css")
    assert grader_css < site_css
    source = Path(settings.REPO / "grader" / "report" / "templates" / "style.css").read_bytes()
    served = Client().get("/static/grader/style.css")
    assert served.status_code == 200 and served["Content-Type"].startswith("text/css")
    assert b"".join(served.streaming_content) == source  # type: ignore[attr-defined]
    # Only that file: the grader's templates beside it are not static files.
    assert Client().get("/static/grader/feedback.html.j2").status_code == 404
