"""Password sign-in throttling: an account locks after its own limit of failures, an address
after a higher one, each for a cool-off; a lockout is a 429 page that says when to come back
and tells nothing about which usernames exist; course staff can unlock a student."""

from __future__ import annotations

import io
import re
import time
from datetime import timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db.models import F
from django.test import Client, RequestFactory
from django.utils import timezone
from service_cast import Cast

from service.accounts.client import client_address
from service.courses.models import Enrolment, Role
from service.submissions.models import AuditEntry

pytestmark = [pytest.mark.db]

LOGIN = "/accounts/login/"
PER_ACCOUNT, PER_ADDRESS, COOL_OFF = 10, 30, 900


@pytest.fixture
def throttled(cast: Cast, settings: Any) -> Cast:
    """The service's default limits, named here so that the tests do not follow the environment,
    and a fast password hash: forty failures must not take forty PBKDF2 runs."""
    settings.LOGIN_FAILURES_PER_ACCOUNT = PER_ACCOUNT
    settings.LOGIN_FAILURES_PER_ADDRESS = PER_ADDRESS
    settings.LOGIN_COOLOFF_SECONDS = COOL_OFF
    settings.TRUSTED_PROXY_COUNT = 0
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    for user in (cast.student, cast.student2, cast.ta, cast.instructor, cast.outsider):
        user.set_password(cast.password)  # on the cast's own objects: their sessions follow the hash
        user.save()
    return cast


def sign_in(username: str, password: str, address: str = "192.0.2.1", forwarded: str | None = None) -> Any:
    extra = {"REMOTE_ADDR": address}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    return Client().post(LOGIN, {"username": username, "password": password}, **extra)


def refused_form(response: Any) -> bool:
    """The sign-in form again, with its error: a wrong password, not a lockout."""
    return response.status_code == 200 and b"did not match" in response.content


def locked(response: Any, cool_off: int = COOL_OFF) -> bool:
    if response.status_code != 429:
        return False
    assert 0 < int(response["Retry-After"]) <= cool_off
    assert b"Too many sign-in attempts. Try again in" in response.content
    return True


def signed_in(response: Any) -> bool:
    return response.status_code == 302 and response["Location"] == "/"


def pass_the_cool_off() -> None:
    """Move every recorded failure back past the cool-off: the clock, without waiting for it."""
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(seconds=COOL_OFF + 1))


def test_one_address_locks_after_its_limit_whatever_the_usernames(throttled: Cast) -> None:
    answers = [sign_in(f"user{i % 20}", "wrong") for i in range(40)]
    assert all(refused_form(r) for r in answers[: PER_ADDRESS - 1])
    assert all(locked(r) for r in answers[PER_ADDRESS - 1 :])  # the failure that reaches the limit, and on
    retry = int(answers[-1]["Retry-After"])
    assert COOL_OFF - 5 <= retry <= COOL_OFF
    page = answers[-1].content.decode()
    said = re.search(rf"Try again in {COOL_OFF // 60} minutes \(at (\d\d:\d\d) UTC\)", page)
    assert said is not None
    due = timezone.now() + timedelta(seconds=retry)
    assert said.group(1) in {f"{due - timedelta(seconds=s):%H:%M}" for s in (0, 5)}
    assert "staff can unlock" in page
    # Everyone behind that address waits, the right password too; other addresses do not.
    assert locked(sign_in(throttled.student.username, throttled.password))
    assert signed_in(sign_in(throttled.student.username, throttled.password, address="192.0.2.2"))


def test_one_account_locks_after_its_limit_from_any_number_of_addresses(throttled: Cast) -> None:
    alice = throttled.student.username
    answers = [sign_in(alice, "wrong", address=f"198.51.100.{i}") for i in range(1, 41)]
    assert all(refused_form(r) for r in answers[: PER_ACCOUNT - 1])
    assert all(locked(r) for r in answers[PER_ACCOUNT - 1 :])
    # Locked: the right password is refused, from a new address too, and refusals are not
    # counted, so the cool-off does not grow while she keeps trying.
    before = AccessAttempt.objects.order_by("-attempt_time").values_list("attempt_time", flat=True).first()
    assert locked(sign_in(alice, throttled.password, address="203.0.113.9"))
    assert AccessAttempt.objects.order_by("-attempt_time").values_list("attempt_time", flat=True).first() == before
    assert sum(AccessAttempt.objects.values_list("failures_since_start", flat=True)) == PER_ACCOUNT
    admin_login = Client().post("/admin/login/", {"username": alice, "password": "wrong"}, REMOTE_ADDR="203.0.113.9")
    assert locked(admin_login)  # the admin's sign-in goes through the same check
    # Other accounts at those addresses are not locked.
    assert signed_in(sign_in(throttled.student2.username, throttled.password, address="198.51.100.1"))
    pass_the_cool_off()
    assert signed_in(sign_in(alice, throttled.password, address="203.0.113.9"))


def test_a_short_cool_off_ends_on_the_clock(throttled: Cast, settings: Any) -> None:
    settings.LOGIN_COOLOFF_SECONDS = 3
    settings.LOGIN_FAILURES_PER_ACCOUNT = 3
    alice = throttled.student.username
    answers = [sign_in(alice, "wrong", address=f"198.51.100.{i}") for i in range(1, 4)]
    refused = sign_in(alice, throttled.password)
    assert locked(answers[-1], cool_off=3) and locked(refused, cool_off=3)
    wait = int(refused["Retry-After"])
    assert f"Try again in {wait} second".encode() in refused.content
    time.sleep(wait + 0.1)
    assert signed_in(sign_in(alice, throttled.password))


def _lock(username: str) -> None:
    for i in range(PER_ACCOUNT):
        sign_in(username, "wrong", address=f"198.51.100.{i + 1}")
    assert locked(sign_in(username, "wrong", address="203.0.113.1"))


def _row_of(page: str, username: str) -> str | None:
    """The class view's row of this student (its Username column)."""
    return next((row for row in page.split("<tr>") if f"<td>{username}</td>" in row), None)


def test_course_staff_unlock_a_student_of_their_course_and_it_is_audited(throttled: Cast) -> None:
    alice = throttled.student.username
    _lock(alice)
    staff = throttled.client(throttled.ta)
    page = staff.get("/a/a8/class/").content.decode()
    row = _row_of(page, alice)
    assert row and "locked" in row and "Unlock sign-in" in row
    other = _row_of(page, throttled.student2.username)
    assert other and "locked" not in other and "Unlock sign-in" in other
    assert staff.get("/a/a8/class/unlock/").status_code == 405
    answer = staff.post("/a/a8/class/unlock/", {"username": alice})
    assert answer.status_code == 302 and answer["Location"] == "/a/a8/class/"
    entry = AuditEntry.objects.get(action="unlock")
    assert entry.actor == throttled.ta and alice in entry.detail
    assert signed_in(sign_in(alice, throttled.password, address="203.0.113.1"))


def test_nobody_else_can_unlock_and_the_student_stays_locked(throttled: Cast) -> None:
    alice = throttled.student.username
    _lock(alice)
    other_ta = User.objects.create_user("tom", "tom@example.edu", throttled.password)
    Enrolment.objects.create(course=throttled.other_course, user=other_ta, role=Role.TA)
    tries = [
        (throttled.client(other_ta), "/a/a8/class/unlock/", alice),  # not staff of her course
        (throttled.client(other_ta), "/a/b1/class/unlock/", alice),  # his course, not her course
        (throttled.client(throttled.student2), "/a/a8/class/unlock/", alice),  # a classmate
        (throttled.client(throttled.ta), "/a/a8/class/unlock/", throttled.outsider.username),  # not enrolled
        (throttled.client(throttled.ta), "/a/a8/class/unlock/", throttled.instructor.username),  # staff, not a student
        (throttled.client(throttled.ta), "/a/a8/class/unlock/", ""),
    ]
    for client, route, username in tries:
        assert client.post(route, {"username": username}).status_code == 404, (route, username)
    assert Client().post("/a/a8/class/unlock/", {"username": alice}).status_code == 302  # to the login page
    assert locked(sign_in(alice, throttled.password, address="203.0.113.1"))
    assert not AuditEntry.objects.filter(action="unlock").exists()


def test_operators_unlock_with_the_admin_and_the_management_command(throttled: Cast) -> None:
    alice = throttled.student.username
    _lock(alice)
    root = User.objects.create_superuser("root", "root@example.edu", throttled.password)
    admin = Client()
    admin.force_login(root)
    listing = admin.get("/admin/axes/accessattempt/")
    assert listing.status_code == 200 and alice.encode() in listing.content
    call_command("axes_reset_username", alice, stdout=io.StringIO())
    assert signed_in(sign_in(alice, throttled.password, address="203.0.113.1"))


def _same_apart_from(page: bytes, username: str) -> str:
    text = page.decode()
    text = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "CSRF", text)
    text = re.sub(r"\d+ (minutes?|seconds?) \(at \d\d:\d\d", "WAIT", text)
    return text.replace(f'value="{username}"', 'value="NAME"')


def test_neither_failures_nor_lockouts_tell_which_usernames_exist(throttled: Cast) -> None:
    real, made_up = throttled.student.username, "no-such-user"
    assert not User.objects.filter(username=made_up).exists()
    first = {name: sign_in(name, "wrong", address=f"198.51.100.{n}") for n, name in enumerate((real, made_up))}
    assert refused_form(first[real]) and refused_form(first[made_up])
    assert _same_apart_from(first[real].content, real) == _same_apart_from(first[made_up].content, made_up)
    for name in (real, made_up):
        for i in range(PER_ACCOUNT - 2):
            assert refused_form(sign_in(name, "wrong", address=f"203.0.113.{i}"))
    last = {name: sign_in(name, "wrong", address="192.0.2.50") for name in (real, made_up)}
    assert locked(last[real]) and locked(last[made_up])
    assert _same_apart_from(last[real].content, real) == _same_apart_from(last[made_up].content, made_up)
    assert real not in last[real].content.decode() and made_up not in last[made_up].content.decode()
    right = sign_in(real, throttled.password, address="192.0.2.51")
    assert locked(right) and _same_apart_from(right.content, real) == _same_apart_from(last[made_up].content, made_up)


def test_behind_the_proxy_each_student_is_counted_at_their_own_address(throttled: Cast, settings: Any) -> None:
    settings.TRUSTED_PROXY_COUNT = 1
    settings.LOGIN_FAILURES_PER_ADDRESS = 5
    proxy = "10.0.0.2"  # every request's REMOTE_ADDR
    for i in range(5):
        sign_in(f"user{i}", "wrong", address=proxy, forwarded="198.51.100.1")
    assert locked(sign_in("user9", "wrong", address=proxy, forwarded="198.51.100.1"))
    # A classmate at another address, through the same proxy, is not locked.
    assert refused_form(sign_in("user9", "wrong", address=proxy, forwarded="198.51.100.2"))
    assert signed_in(sign_in(throttled.student2.username, throttled.password, address=proxy, forwarded="198.51.100.2"))
    # A client cannot choose its address: what it sends is left of what the proxy appends.
    alice = throttled.student.username
    assert locked(sign_in(alice, throttled.password, address=proxy, forwarded="192.0.2.77, 198.51.100.1"))
    counted = set(AccessAttempt.objects.values_list("ip_address", flat=True))
    assert counted == {"198.51.100.1", "198.51.100.2"}


def test_the_client_address(settings: Any) -> None:
    factory = RequestFactory()

    def address(remote: str, forwarded: str | None = None, proxies: int = 0) -> str:
        settings.TRUSTED_PROXY_COUNT = proxies
        extra = {"REMOTE_ADDR": remote}
        if forwarded is not None:
            extra["HTTP_X_FORWARDED_FOR"] = forwarded
        return client_address(factory.get("/", **extra))

    assert address("192.0.2.1", "198.51.100.1") == "192.0.2.1"  # no proxy: the header is the client's
    assert address("10.0.0.2", "198.51.100.1", proxies=1) == "198.51.100.1"
    assert address("10.0.0.2", "6.6.6.6, 198.51.100.1", proxies=1) == "198.51.100.1"
    assert address("10.0.0.3", "6.6.6.6, 198.51.100.1, 10.0.0.2", proxies=2) == "198.51.100.1"
    assert address("10.0.0.2", "198.51.100.1", proxies=2) == "10.0.0.2"  # fewer entries than proxies
    assert address("10.0.0.2", None, proxies=1) == "10.0.0.2"
    assert address("10.0.0.2", "6.6.6.6, not-an-address", proxies=1) == "10.0.0.2"
    assert address("10.0.0.2", " 2001:DB8:0:0::1 ", proxies=1) == "2001:db8::1"  # canonical
    assert address("", None) == ""


def test_a_successful_sign_in_forgives_only_that_accounts_failures_from_there(throttled: Cast, settings: Any) -> None:
    settings.LOGIN_FAILURES_PER_ACCOUNT = 5
    settings.LOGIN_FAILURES_PER_ADDRESS = 8
    alice, here = throttled.student.username, "192.0.2.10"
    for name in ("zed", "zed"):
        assert refused_form(sign_in(name, "wrong", address=here))  # someone else's failures here
    for _ in range(3):
        assert refused_form(sign_in(alice, "wrong", address=here))  # her typos
    assert refused_form(sign_in(alice, "wrong", address="192.0.2.11"))  # a guess from elsewhere
    assert signed_in(sign_in(alice, throttled.password, address=here))
    # Her account still counts the failure from elsewhere: four more lock it, not five.
    answers = [sign_in(alice, "wrong", address=f"192.0.2.{20 + i}") for i in range(4)]
    assert all(refused_form(r) for r in answers[:3]) and locked(answers[3])
    # The address still counts zed's two, not her three: six more failures lock it, not eight or three.
    answers = [sign_in(f"user{i}", "wrong", address=here) for i in range(6)]
    assert all(refused_form(r) for r in answers[:5]) and locked(answers[5])


def test_odd_sign_in_requests_are_answered_never_failed(throttled: Cast, settings: Any) -> None:
    settings.TRUSTED_PROXY_COUNT = 1
    odd = [
        ({"username": "nul\x00name", "password": "x"}, {}),
        ({"username": "a" * 10_000, "password": "x"}, {}),
        ({"username": "é" * 150, "password": "x" * 10_000}, {"HTTP_USER_AGENT": "u" * 10_000}),
        ({"username": "alice", "password": "x"}, {"HTTP_X_FORWARDED_FOR": ",,,\x00, 999.1.1.1"}),
        ({"username": "alice", "password": "x"}, {"HTTP_X_FORWARDED_FOR": "1.2.3.4:80", "REMOTE_ADDR": "not-an-ip"}),
        ({"username": "alice", "password": "x", "extra": "\x00" * 5000}, {"HTTP_ACCEPT": "a" * 5000}),
        ({"password": "x"}, {}),
    ]
    for form, extra in odd:
        answer = Client().post(LOGIN, form, **extra)
        # A NUL in a header is refused before any view (service/request_shape.py): a 400 that says so.
        nul_header = any("\x00" in value for value in extra.values())
        assert answer.status_code == (400 if nul_header else 200), (form, extra)
    # The last but one had no usable address at all: counted, like every other, under none.
    assert AccessAttempt.objects.filter(ip_address=None).exists()
