"""The service's tests run on a real PostgreSQL: a private cluster started for the session
(``service.devdb``, as the postgres user when we are root), never a system service.

A fixed cast, as in every view test: a student, a second student, a TA, an instructor, and an
outsider enrolled in another course.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_cast import Cast

from service import devdb

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def postgres_folder() -> Path:
    # Not under pytest's tmp folder: that one is private to root, and the cluster runs as the
    # postgres user when the tests run as root.
    return Path(tempfile.mkdtemp(prefix="grader-pg-"))


@pytest.fixture(scope="session")
def postgres(postgres_folder: Path) -> Iterator[str]:
    folder = postgres_folder
    try:
        yield devdb.start(folder)
    finally:
        devdb.stop(folder, mode="immediate")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(postgres: str) -> None:
    from django.conf import settings

    from service.settings import _database

    settings.DATABASES["default"].update(_database(postgres))
    settings.DATABASES["default"]["CONN_MAX_AGE"] = 0


@pytest.fixture
def cast(db: Any) -> Cast:
    from django.core.management import call_command

    call_command("createcachetable", verbosity=0)  # the database cache, in this test database
    return Cast()


@pytest.fixture(autouse=True)
def no_remembered_platforms() -> Iterator[None]:
    """Each test starts with the platforms its own database holds: the origins allowed to frame
    pages are kept a minute per process, and a test's flush sends no signal that forgets them."""
    from service.lti.framing import forget_platform_origins

    forget_platform_origins()
    yield
    forget_platform_origins()


def _commits(request: pytest.FixtureRequest) -> bool:
    """Whether the test writes for real (transactional_db, or a live server), not in a rolled-back
    transaction."""
    marker = request.node.get_closest_marker("django_db")
    if marker is not None and marker.kwargs.get("transaction"):
        return True
    return bool({"transactional_db", "live_server"} & set(request.fixturenames))


@pytest.fixture(autouse=True)
def no_jobs_left_behind(request: pytest.FixtureRequest, django_db_blocker: Any) -> Iterator[None]:
    """The queue's tables are procrastinate's, not Django's: the flush after a test that commits
    leaves its jobs behind, and the next test on the same worker would meet them (a queue
    position one too far). Emptied after such a test, whatever order the worker runs tests in."""
    yield
    if not _commits(request):
        return
    from django.db import connection

    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute("TRUNCATE procrastinate_jobs, procrastinate_events CASCADE")
