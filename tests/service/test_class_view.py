"""The class view staff grade from: sorting and filtering from the query string, inline
overrides and extensions that come back to the same view with a message, and the audit page."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from service_cast import Cast
from stored_results import graded

from service.courses.models import Enrolment, Extension, Role
from service.submissions.models import AuditEntry, ScoreOverride, State, Submission
from service.submissions.templatetags.marks import state_word

pytestmark = [pytest.mark.db]

FULL = {"api": 10, "part1_trace": 25, "a6_parity": 15, "reuse": 15, "bug_injection": 15, "finite_difference": 20}


def enrol(cast: Cast, username: str, first: str, last: str) -> User:
    user = User.objects.create_user(username, f"{username}@example.edu", first_name=first, last_name=last)
    Enrolment.objects.create(course=cast.course, user=user, role=Role.STUDENT)
    return user


@pytest.fixture
def klass(cast: Cast) -> Cast:
    """alice: full marks; bob: late; cara: flagged for review; dan: overridden; eve: nothing yet."""
    cast.student.first_name, cast.student.last_name = "Alice", "Smith"
    cast.student.save()
    cast.student2.first_name, cast.student2.last_name = "Bob", "Jones"
    cast.student2.save()
    graded(cast.assignment, cast.student, FULL)
    graded(cast.assignment, cast.student2, {**FULL, "reuse": 5}, late_penalty=20)  # 90, counted 72
    cara = enrol(cast, "cara", "Cara", "Lee")
    graded(cast.assignment, cara, {"api": 10, "part1_trace": 20}, review=("Step-5 note missing",))
    dan = enrol(cast, "dan", "Dan", "Wu")
    over = graded(cast.assignment, dan, {"api": 5})
    ScoreOverride.objects.create(submission=over, score=50, reason="partial credit agreed", by=cast.instructor)
    enrol(cast, "eve", "Eve", "Ng")
    return cast


def order(page: str) -> list[str]:
    """The usernames of the table's rows, top to bottom."""
    return re.findall(r'<th scope="row">.*?</th>\n<td>([^<]*)</td>', page, re.S)


def view(client: Client, query: str = "") -> str:
    response = client.get(f"/a/a8/class/{query}")
    assert response.status_code == 200
    return response.content.decode()


def test_rows_show_sections_penalty_override_total_and_review(klass: Cast) -> None:
    page = view(klass.client(klass.ta))
    assert order(page) == ["alice", "bob", "cara", "dan", "eve"]  # by name: Alice Smith, Bob Jones, ...
    for heading in ("Engine API (Part 3)", "Late penalty", "Override reason", "Total", "Review"):
        assert heading in page
    bob = page[page.index('title="bob"') : page.index('title="cara"')]
    assert '<span class="badge badge-late">late</span> -18 (20%)' in bob and '<td class="num">72</td>' in bob
    assert '<td class="num">5</td>' in bob  # the reuse section's points
    dan = page[page.index('title="dan"') : page.index('title="eve"')]
    assert 'class="badge badge-override" title="partial credit agreed"' in dan and "5 → 50" in dan
    assert '<span title="partial credit agreed">partial credit agreed</span>' in dan
    cara = page[page.index('title="cara"') : page.index('title="dan"')]
    assert 'class="badge badge-review" title="Step-5 note missing"' in cara
    eve = page[page.index('title="eve"') :]
    assert "not submitted" in eve and "No graded submission to override." in eve
    assert "{# review requests link #}" not in page and 'href="/a/a8/class/audit/"' in page


def test_sorting_by_each_kind_of_column(klass: Cast) -> None:
    client = klass.client(klass.instructor)
    assert order(view(client, "?sort=name&dir=desc")) == ["eve", "dan", "cara", "bob", "alice"]
    by_total = view(client, "?sort=total&dir=desc")
    assert order(by_total) == ["alice", "bob", "dan", "cara", "eve"]  # 100, 72, 50, 30; nothing last
    assert order(view(client, "?sort=total")) == ["cara", "dan", "bob", "alice", "eve"]  # nothing last either way
    assert order(view(client, "?sort=section:reuse&dir=asc")) == ["cara", "dan", "bob", "alice", "eve"]
    assert order(view(client, "?sort=username&dir=desc"))[0] == "eve"
    assert order(view(client, "?sort=status"))[0] == "eve"  # not submitted comes before graded
    # The active header says so, and its link turns the order around; the others start afresh.
    assert '<th scope="col" class="num" aria-sort="descending"><a href="?sort=total">Total</a></th>' in by_total
    assert by_total.count("aria-sort=") == 1
    assert '<a href="?sort=section%3Areuse&amp;dir=desc" title="Reuse: gradient accumulation">Reuse</a>' in by_total


def test_each_filter_and_the_name_search(klass: Cast) -> None:
    client = klass.client(klass.ta)
    assert order(view(client, "?show=not-submitted")) == ["eve"]
    assert order(view(client, "?show=review")) == ["cara"]
    assert order(view(client, "?show=late")) == ["bob"]
    assert order(view(client, "?show=overridden")) == ["dan"]
    assert order(view(client, "?status=graded")) == ["alice", "bob", "cara", "dan"]
    assert order(view(client, "?status=not_submitted")) == ["eve"]
    assert order(view(client, "?status=queued")) == []
    assert order(view(client, "?q=smith")) == ["alice"]
    assert order(view(client, "?q=%20%20CARA%20")) == ["cara"]  # case and spaces do not matter
    assert order(view(client, "?show=late&q=alice")) == []
    assert "No student matches these filters." in view(client, "?show=late&q=alice")
    kept = view(client, "?show=late&sort=total&dir=desc&q=bo")
    assert '<input type="hidden" name="back" value="sort=total&amp;dir=desc&amp;show=late&amp;q=bo">' in kept


def test_a_file_that_does_not_load_counts_zero_and_needs_review(cast: Cast) -> None:
    frank = enrol(cast, "frank", "Frank", "Zhou")
    flag = "The file does not load, so every check scored 0."
    graded(cast.assignment, frank, {}, state=State.NOT_LOADABLE, review=(flag,))
    client = cast.client(cast.ta)
    assert order(view(client, "?show=review")) == ["frank"]
    page = view(client, "?status=not_loadable")
    assert order(page) == ["frank"]
    row = page[page.index('title="frank"') :]
    reasons = f"status: not loadable; {flag}"
    assert f'class="badge badge-review" title="{reasons}"' in row
    assert '<span class="badge badge-error">not loadable</span>' in row and '<td class="num">0</td>' in row
    assert state_word("not_loadable") == "does not load"  # the word a student reads


@pytest.mark.parametrize(
    "query",
    [
        "?sort=%27;DROP%20TABLE",
        "?sort=section:nope&dir=sideways",
        "?show=everything&status=melted",
        "?q=" + "x" * 5000,
        "?sort=total&sort=name&show=late&show=all",
        "?q=%F0%9F%98%80&status=",
        "?page=-1&sort=&dir=",
    ],
)
def test_unknown_query_values_fall_back_to_the_defaults(klass: Cast, query: str) -> None:
    page = view(klass.client(klass.instructor), query)
    assert order(page) in (["alice", "bob", "cara", "dan", "eve"], [])
    assert page.count("aria-sort=") <= 1


def test_the_query_count_does_not_grow_with_the_class(cast: Cast) -> None:
    client = cast.client(cast.instructor)

    def add(count: int, start: int) -> None:
        for number in range(start, start + count):
            user = enrol(cast, f"s{number:03}", f"First{number}", "Last")
            if number % 3:
                submission = graded(cast.assignment, user, FULL, late_penalty=10 * (number % 2))
                if number % 5 == 0:
                    ScoreOverride.objects.create(submission=submission, score=1, reason="r", by=cast.instructor)
                graded(cast.assignment, user, FULL, received_at=timezone.now() - timedelta(days=1))

    add(5, 0)
    client.get("/a/a8/class/")  # warm caches (the rubric, the session)
    with CaptureQueriesContext(connection) as few:
        assert client.get("/a/a8/class/?sort=total").status_code == 200
    add(30, 5)
    with CaptureQueriesContext(connection) as many:
        page = client.get("/a/a8/class/?sort=total").content.decode()
    assert len(order(page)) == 37  # alice, bob and 35 more
    assert len(many.captured_queries) == len(few.captured_queries), [q["sql"][:90] for q in many.captured_queries]


def test_an_inline_override_comes_back_to_the_same_view_with_a_message(klass: Cast) -> None:
    staff = klass.client(klass.ta)
    alice = Submission.objects.get(user=klass.student)
    back = "sort=total&dir=desc&show=all&q=ali"
    form = {"score": "80", "reason": "late fix accepted", "back": back}
    answer = staff.post(f"/submissions/{alice.pk}/override/", form)
    assert answer.status_code == 302 and answer["Location"] == "/a/a8/class/?sort=total&dir=desc&q=ali"
    page = staff.get(answer["Location"]).content.decode()
    assert '<li class="success">Score of Alice Smith set to 80: late fix accepted</li>' in page
    assert Submission.objects.get(pk=alice.pk).counted_score == 80
    entry = AuditEntry.objects.get(action="override")
    assert (entry.assignment, entry.student, entry.submission_id) == (klass.assignment, klass.student, alice.pk)
    # Refused: no reason, a score above the maximum, a view that is no view; nothing changes.
    for form in (
        {"score": "70", "reason": "", "back": back},
        {"score": "170", "reason": "why not", "back": back},
        {"score": "nan", "reason": "x", "back": "sort=<script>&" + "q=" * 600},
    ):
        refused = staff.post(f"/submissions/{alice.pk}/override/", form)
        assert refused.status_code == 302 and refused["Location"].startswith("/a/a8/class/")
        said = staff.get(refused["Location"]).content.decode()
        assert '<li class="error">Nothing was changed: an override of Alice Smith&#x27;s score needs' in said
    assert ScoreOverride.objects.filter(submission=alice).count() == 1
    # Without the view (a script), the plain answers as before.
    assert staff.post(f"/submissions/{alice.pk}/override/", {"score": "70", "reason": ""}).status_code == 400


def test_an_inline_extension_says_what_was_done(klass: Cast) -> None:
    staff = klass.client(klass.instructor)
    until = timezone.localtime(klass.assignment.due_at + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    answer = staff.post("/a/a8/class/extension/", {"username": "bob", "due_at": until, "back": "show=late"})
    assert answer["Location"] == "/a/a8/class/?show=late"
    page = staff.get(answer["Location"]).content.decode()
    said = f"Extension for Bob Jones: due {until.replace('T', ' ')}; 1 submission(s) re-priced."
    assert f'<li class="success">{said}</li>' in page
    assert Submission.objects.get(user=klass.student2).late_penalty == 0  # received before the new date
    assert Extension.objects.filter(user=klass.student2).exists()
    assert order(page) == []  # no longer late: the filter kept shows nobody
    assert f'value="{until}"' in view(staff)  # the row's form shows the date in force
    gone = staff.post("/a/a8/class/extension/", {"username": "bob", "due_at": "", "back": ""})
    assert "Extension of Bob Jones withdrawn" in staff.get(gone["Location"]).content.decode()
    early = timezone.localtime(klass.assignment.due_at - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    refused = staff.post("/a/a8/class/extension/", {"username": "bob", "due_at": early, "back": ""})
    assert "never earlier" in staff.get(refused["Location"]).content.decode()
    actions = AuditEntry.objects.filter(assignment=klass.assignment, action="extension", student=klass.student2)
    assert actions.count() == 2


def test_course_wide_actions_confirm_with_a_message(klass: Cast) -> None:
    staff = klass.client(klass.instructor)
    regrade = staff.post("/a/a8/class/regrade/", {"which": "latest", "back": "sort=status"})
    assert regrade["Location"] == "/a/a8/class/?sort=status"
    assert "4 submission(s) queued for a regrade" in staff.get(regrade["Location"]).content.decode()
    wrong = staff.post("/a/a8/class/regrade/", {"which": "most", "back": ""})
    assert "Regrade &#x27;latest&#x27; or &#x27;all&#x27;." in staff.get(wrong["Location"]).content.decode()
    unlocked = staff.post("/a/a8/class/unlock/", {"username": "cara", "back": ""})
    assert "Cara Lee can sign in again." in staff.get(unlocked["Location"]).content.decode()


def test_the_audit_page_is_for_the_courses_staff_only(klass: Cast) -> None:
    from service.courses.models import Course

    other = Course.objects.get(slug="c2")
    foreign = enrol(klass, "fran", "Fran", "Other")
    Enrolment.objects.filter(user=foreign).update(course=other, role=Role.INSTRUCTOR)
    for user in (klass.student, klass.outsider, foreign):
        assert klass.client(user).get("/a/a8/class/audit/").status_code == 404
    assert Client().get("/a/a8/class/audit/").status_code == 302  # sign in first
    assert klass.client(klass.ta).get("/a/a8/class/audit/").status_code == 200


def test_the_audit_page_lists_this_assignments_changes_newest_first(klass: Cast) -> None:
    staff = klass.client(klass.instructor)
    alice = Submission.objects.get(user=klass.student)
    staff.post(f"/submissions/{alice.pk}/override/", {"score": "91", "reason": "the hidden check was wrong"})
    until = timezone.localtime(klass.assignment.due_at + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    staff.post("/a/a8/class/extension/", {"username": "bob", "due_at": until})
    staff.post("/a/a8/class/unlock/", {"username": "cara"})
    form = {"due_at": until, "grace_minutes": 5, "late_penalty_per_day": 10, "hard_close_at": "", "counted": "latest",
            "hidden_details": "visible"}  # fmt: skip
    assert staff.post("/a/a8/class/policy/", form).status_code == 302
    AuditEntry.objects.create(actor=klass.instructor, action="elsewhere", detail="another assignment's")
    page = staff.get("/a/a8/class/audit/").content.decode()
    actions = re.findall(r"<td>(?:<span class=\"badge badge-override\">)?(\w+)(?:</span>)?</td>\n<td>", page)
    assert actions == ["policy", "unlock", "extension", "override"]
    assert "the hidden check was wrong" in page and f'href="/submissions/{alice.pk}/"' in page
    assert '<span title="cara">Cara Lee</span>' in page and "elsewhere" not in page
    assert '<li aria-current="page">Audit log</li>' in page


def test_the_audit_page_is_paginated_and_its_page_number_strict(klass: Cast) -> None:
    for number in range(120):
        AuditEntry.objects.create(actor=klass.ta, action="regrade", assignment=klass.assignment, detail=f"n{number}")
    client = klass.client(klass.ta)
    first = client.get("/a/a8/class/audit/").content.decode()
    assert first.count("<tr>") == 51 and "n119<" in first and "Page 1 of 3" in first
    last = client.get("/a/a8/class/audit/?page=3").content.decode()
    assert "n0<" in last and 'rel="prev"' in last and 'rel="next"' not in last
    for page, shown in (("abc", 1), ("0", 1), ("-2", 1), ("99999999999999", 1), ("7", 3), ("²", 1), ("", 1)):
        answer = client.get(f"/a/a8/class/audit/?page={page}")
        assert answer.status_code == 200 and f"Page {shown} of 3" in answer.content.decode(), page
    assert State.GRADED  # the cast's own submissions are untouched by reading the log
