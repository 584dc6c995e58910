"""Staff set the late policy and extensions from the class view; scores follow at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from service_cast import Cast
from test_pages import upload

from service.courses.models import Assignment, Counted, Extension
from service.submissions.models import AuditEntry, State, Submission

pytestmark = [pytest.mark.db]


def local(when: timezone.datetime) -> str:
    return timezone.localtime(when).strftime("%Y-%m-%dT%H:%M")


def policy_form(**changes: object) -> dict[str, object]:
    form: dict[str, object] = {
        "due_at": local(timezone.now() + timedelta(days=2)),
        "grace_minutes": 15,
        "late_penalty_per_day": 10,
        "hard_close_at": "",
        "counted": "best",
        "hidden_details": "visible",
    }
    form.update(changes)
    return form


def graded(submission: Submission, score: float) -> Submission:
    Submission.objects.filter(pk=submission.pk).update(state=State.GRADED, score=score, max_score=100.0)
    return Submission.objects.get(pk=submission.pk)


def test_an_instructor_sets_the_policy_and_late_penalties_follow(cast: Cast) -> None:
    late = graded(upload(cast.client(cast.student)), 80.0)
    assert late.late_penalty == 0 and late.counted_score == 80.0
    yesterday = local(timezone.now() - timedelta(hours=30))
    response = cast.client(cast.instructor).post("/a/a8/class/policy/", policy_form(due_at=yesterday))
    assert response.status_code == 302
    assignment = Assignment.objects.get(pk=cast.assignment.pk)
    assert assignment.counted == Counted.BEST and assignment.grace_minutes == 15
    assert assignment.hard_close_at is None
    repriced = Submission.objects.get(pk=late.pk)
    assert repriced.late_penalty == 20 and repriced.counted_score == 64.0  # two started days late
    entry = AuditEntry.objects.get(action="policy")
    assert entry.actor == cast.instructor and "1 re-priced" in entry.detail
    page = cast.client(cast.instructor).get("/a/a8/class/").content.decode()
    assert 'name="due_at"' in page and 'value="15"' in page


def test_a_bad_policy_changes_nothing_and_says_why(cast: Cast) -> None:
    before = Assignment.objects.get(pk=cast.assignment.pk)
    client = cast.client(cast.instructor)
    for bad in (
        policy_form(late_penalty_per_day=250),
        policy_form(grace_minutes=-5),
        policy_form(due_at="next tuesday"),
        policy_form(counted="worst"),
        policy_form(hard_close_at=local(timezone.now() - timedelta(days=9))),
    ):
        response = client.post("/a/a8/class/policy/", bad)
        assert response.status_code == 400 and response.content.startswith(b"Nothing was changed."), bad
    after = Assignment.objects.get(pk=cast.assignment.pk)
    assert (after.due_at, after.late_penalty_per_day, after.counted) == (
        before.due_at,
        before.late_penalty_per_day,
        before.counted,
    )
    assert (
        b"hard close cannot come before"
        in client.post(
            "/a/a8/class/policy/", policy_form(hard_close_at=local(timezone.now() - timedelta(days=9)))
        ).content
    )


def test_only_the_courses_instructor_sets_the_policy(cast: Cast) -> None:
    for user in (cast.ta, cast.student, cast.outsider):
        assert cast.client(user).post("/a/a8/class/policy/", policy_form(late_penalty_per_day=99)).status_code == 404
    assert cast.client(cast.instructor).post("/a/b1/class/policy/", policy_form()).status_code == 404
    assert Assignment.objects.get(pk=cast.assignment.pk).late_penalty_per_day == 0
    assert not AuditEntry.objects.filter(action="policy").exists()
    ta_page = cast.client(cast.ta).get("/a/a8/class/").content.decode()
    assert "Save policy" not in ta_page and "Set extension" in ta_page


def test_staff_grant_and_withdraw_an_extension_and_the_penalty_follows(cast: Cast) -> None:
    assignment = cast.assignment
    assignment.due_at = timezone.now() - timedelta(hours=5)
    assignment.late_penalty_per_day = 25
    assignment.save()
    late = graded(upload(cast.client(cast.student)), 60.0)
    assert late.late_penalty == 25 and late.counted_score == 45.0
    until = local(timezone.now() + timedelta(days=1))
    granted = cast.client(cast.ta).post("/a/a8/class/extension/", {"username": "alice", "due_at": until})
    assert granted.status_code == 302
    assert Extension.objects.get(assignment=assignment, user=cast.student).due_at > timezone.now()
    assert Submission.objects.get(pk=late.pk).counted_score == 60.0
    assert '<span title="alice">alice</span>: due' in cast.client(cast.instructor).get("/a/a8/class/").content.decode()
    withdrawn = cast.client(cast.instructor).post("/a/a8/class/extension/", {"username": "alice", "due_at": ""})
    assert withdrawn.status_code == 302
    assert not Extension.objects.filter(user=cast.student).exists()
    assert Submission.objects.get(pk=late.pk).late_penalty == 25
    assert [e.actor for e in AuditEntry.objects.filter(action="extension").order_by("at")] == [cast.ta, cast.instructor]


def test_an_extension_is_only_for_a_student_of_the_course_and_only_staff_grant_it(cast: Cast) -> None:
    until = local(timezone.now() + timedelta(days=1))
    for name in ("otto", "tara", "nobody", "x" * 151):
        response = cast.client(cast.instructor).post("/a/a8/class/extension/", {"username": name, "due_at": until})
        assert response.status_code == 400, name
    for user in (cast.student, cast.outsider):
        response = cast.client(user).post("/a/a8/class/extension/", {"username": "alice", "due_at": until})
        assert response.status_code == 404
    assert (
        cast.client(cast.instructor).post("/a/b1/class/extension/", {"username": "otto", "due_at": until}).status_code
        == 404
    )
    bad_date = cast.client(cast.ta).post("/a/a8/class/extension/", {"username": "alice", "due_at": "soon"})
    assert bad_date.status_code == 400 and b"due_at" in bad_date.content
    assert not Extension.objects.exists()
    assert User.objects.filter(username="nobody").count() == 0


def test_every_assignment_draws_its_hidden_inputs_from_a_seed_of_its_own(cast: Cast) -> None:
    # The shipped rubric and its seed are public: a course's hidden inputs must not follow from them.
    from grader.rubric import load_rubric

    public = load_rubric().seed
    seeds = {cast.assignment.seed, cast.other_assignment.seed}
    assert len(seeds) == 2 and public not in seeds
    assert all(2**96 <= seed < 2**128 for seed in seeds)  # keys of 128 random bits (2**-32 below 2**96)
    # The class view shows it to staff, so that they can grade the same files with the CLI.
    staff = cast.client(cast.instructor).get("/a/a8/class/")
    assert str(cast.assignment.seed).encode() in staff.content


def test_the_demo_loads_twice_but_never_takes_over_a_real_account(cast: Cast) -> None:
    from service.courses.roster import RosterError, load_demo

    first = dict(load_demo())
    second = dict(load_demo())  # `make serve` again: new passwords for the demo's own accounts
    assert set(first) == set(second) == {"instructor", "student1", "student2"} and first != second
    assert User.objects.get(username="student1").check_password(second["student1"])
    User.objects.filter(username="student2").delete()
    real = User.objects.create_user("student2", "s2@uni.example", "a-long-enough-password")
    with pytest.raises(RosterError, match="not a demo account"):
        load_demo()
    real.refresh_from_db()
    assert real.check_password("a-long-enough-password")
