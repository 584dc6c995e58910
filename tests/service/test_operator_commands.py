"""`grader service keys`, `admin` and `lti-registration-url` beside `make serve`: its private database
and secret key adopted (no DATABASE_URL, no SECRET_KEY in the environment), as on a fresh machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from lti_tool.models import Key
from service_cast import Cast

from grader.cli import cli
from service.lti.models import RegistrationCode
from service.lti.registering import code_digest

pytestmark = [pytest.mark.db]


@pytest.fixture
def beside_make_serve(postgres_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from service import devdb, serve

    monkeypatch.setattr(devdb, "DEFAULT_FOLDER", postgres_folder)  # the running test cluster stands in
    monkeypatch.setattr(serve, "VAR", tmp_path)
    (tmp_path / "secret_key").write_text("the-key-make-serve-drew\n")
    for name in ("DATABASE_URL", "SECRET_KEY", "SECRET_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["service", *args], catch_exceptions=False)


def test_keys_creates_the_signing_key_then_rotates_it(cast: Cast, beside_make_serve: None) -> None:
    import os

    assert not Key.objects.exists()
    first = run("keys")
    assert first.exit_code == 0, first.output
    assert os.environ["SECRET_KEY"] == "the-key-make-serve-drew"  # adopted, as beside make serve
    key = Key.objects.get()
    assert key.is_active and f"New signing key {key}" in first.output
    second = run("keys")
    assert second.exit_code == 0, second.output
    newest = Key.objects.order_by("-datetime_created", "-pk").first()
    assert newest is not None and newest.pk != key.pk and str(newest) in second.output
    assert Key.objects.filter(is_active=True).count() == 2  # the old one stays published for a week


def test_admin_creates_an_operator_and_resets_its_password(cast: Cast, beside_make_serve: None) -> None:
    made = run("admin", "ops")
    assert made.exit_code == 0, made.output
    password = made.output.strip().splitlines()[-1].strip()
    user = User.objects.get(username="ops")
    assert user.is_superuser and user.is_staff and user.check_password(password)
    browser = Client()  # signs in through the login page, and reaches the admin
    assert browser.post("/accounts/login/", {"username": "ops", "password": password}).status_code == 302
    assert browser.get("/admin/lti_tool/ltiregistration/").status_code == 200
    again = run("admin", "ops")
    assert again.exit_code == 0 and "Reset the password" in again.output
    new_password = again.output.strip().splitlines()[-1].strip()
    user.refresh_from_db()
    assert new_password != password and user.check_password(new_password) and not user.check_password(password)


def test_admin_never_touches_a_course_account_unless_asked(cast: Cast, beside_make_serve: None) -> None:
    refused = run("admin", cast.instructor.username)
    assert refused.exit_code != 0 and "not a site operator: not touched" in refused.output
    cast.instructor.refresh_from_db()
    assert not cast.instructor.is_superuser and cast.instructor.check_password(cast.password)
    promoted = run("admin", cast.instructor.username, "--promote")
    assert promoted.exit_code == 0, promoted.output
    cast.instructor.refresh_from_db()
    assert cast.instructor.is_superuser and not cast.instructor.check_password(cast.password)
    for bad in ("no spaces allowed", "lti-abc-123"):
        assert run("admin", bad).exit_code != 0
    assert not User.objects.filter(username__in=("no spaces allowed", "lti-abc-123")).exists()


def test_lti_registration_url_prints_a_one_time_url_valid_for_the_hours_asked(
    cast: Cast, beside_make_serve: None, settings: Any
) -> None:
    made = run("lti-registration-url", "--hours", "2")
    assert made.exit_code == 0, made.output
    url = made.output.strip()
    prefix = settings.SITE_ROOT + "/lti/register/"
    assert url.startswith(prefix) and url.endswith("/"), url
    code = url.removeprefix(prefix).removesuffix("/")
    stored = RegistrationCode.objects.get()
    assert stored.digest == code_digest(code) and code not in stored.digest  # only the digest is kept
    left = stored.expires_at - timezone.now()
    assert 7100 < left.total_seconds() <= 7200 and stored.created_by.startswith("shell:")
    assert run("lti-registration-url").exit_code == 0  # 24 hours by default
    assert max(c.expires_at for c in RegistrationCode.objects.all()) - timezone.now() > left * 11
    for bad in ("0", "337", "soon"):
        refused = CliRunner().invoke(cli, ["service", "lti-registration-url", "--hours", bad])
        assert refused.exit_code == 2 and "--hours" in refused.output
    assert RegistrationCode.objects.count() == 2
