"""Staff pages name people (first and last name from the LMS, the username on hover and in its
own column); a student's pages show nobody else."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from service_cast import Cast
from test_pages import upload

from service.submissions.models import AuditEntry, State, Submission

pytestmark = [pytest.mark.db]


@pytest.fixture
def named(cast: Cast) -> Cast:
    for user, first, last in ((cast.student, "Alice", "Zhou"), (cast.student2, "Bob", "Okafor")):
        user.first_name, user.last_name = first, last
        user.save()
    return cast


def test_staff_see_names_with_the_username_beside_them(named: Cast) -> None:
    cast = named
    mine = upload(cast.client(cast.student))
    upload(cast.client(cast.student2))
    staff = cast.client(cast.ta)
    view = staff.get("/a/a8/class/").content.decode()
    assert '<span title="alice">Alice Zhou</span>' in view and "<td>alice</td>" in view
    assert '<option value="bob">Bob Okafor (bob)</option>' in view  # the extension form
    page = staff.get(f"/submissions/{mine.pk}/").content.decode()
    assert '<span title="alice">Alice Zhou</span>' in page
    # The similarity report names both, the username telling two namesakes apart.
    assert "Alice Zhou (alice)" in staff.get("/a/a8/class/similarity/").content.decode()
    # Audit entries say whose grade changed, by name.
    Submission.objects.filter(pk=mine.pk).update(state=State.GRADED, score=50.0, max_score=100.0)
    assert (
        staff.post(f"/submissions/{mine.pk}/override/", {"score": "60", "reason": "regraded by hand"}).status_code
        == 302
    )
    assert AuditEntry.objects.get(action="override").detail.startswith("Alice Zhou (alice): ")
    due = (cast.assignment.due_at + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    assert staff.post("/a/a8/class/extension/", {"username": "bob", "due_at": due}).status_code == 302
    assert AuditEntry.objects.get(action="extension").detail.startswith("Bob Okafor (bob) on a8")


def test_grades_export_has_a_name_column_after_the_username(named: Cast) -> None:
    cast = named
    from service.courses.views import _with_names

    body = _with_names("student,total\r\nalice,50\r\n=cmd,1\r\n", {"alice": "Alice Zhou", "=cmd": "=HYPERLINK()"})
    rows = list(csv.reader(io.StringIO(body)))
    assert rows == [["student", "name", "total"], ["alice", "Alice Zhou", "50"], ["=cmd", "'=HYPERLINK()", "1"]]
    response = cast.client(cast.instructor).get("/a/a8/class/export/grades.csv")
    assert response.status_code == 200 and response.content.decode().startswith("student,name,")


def test_students_see_only_themselves(named: Cast) -> None:
    cast = named
    mine = upload(cast.client(cast.student))
    theirs = upload(cast.client(cast.student2))
    student = cast.client(cast.student)
    for path in ("/a/a8/", f"/submissions/{mine.pk}/", "/"):
        page = student.get(path).content.decode()
        assert "Bob" not in page and "Okafor" not in page and "bob" not in page
    # No "By ..." for students (the header's "Signed in as" names them, as on every page).
    assert "Alice Zhou" not in student.get(f"/submissions/{mine.pk}/").content.decode().partition('<main id="main">')[2]
    assert student.get(f"/submissions/{theirs.pk}/").status_code == 404
    assert student.get("/a/a8/class/").status_code == 404


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def test_a_name_or_reason_cannot_start_a_formula_in_a_spreadsheet_that_splits_on_semicolons(cast: Cast) -> None:
    # A name comes from the student's LMS profile. Where the list separator is ";" (most of
    # Europe), a spreadsheet opening the CSV starts a new cell after each ";" in a name.
    from stored_results import graded

    cast.student.first_name, cast.student.last_name = "Ana;=1+1;", "Lo"
    cast.student.save()
    made = graded(cast.assignment, cast.student, {"api": 10}, review=("flag;@SUM(1)",))
    staff = cast.client(cast.instructor)
    reason = "agreed;-2+3;+4"
    assert staff.post(f"/submissions/{made.pk}/override/", {"score": "9", "reason": reason}).status_code == 302
    for kind in ("grades.csv", "canvas.csv"):
        body = staff.get(f"/a/a8/class/export/{kind}").content.decode()
        for line in body.splitlines():
            for cell in line.split(";")[1:]:
                assert not cell.startswith(FORMULA_START), (kind, cell)
        assert "Ana;'=1+1;" in body  # the name kept, as text
    grades = list(csv.DictReader(io.StringIO(staff.get("/a/a8/class/export/grades.csv").content.decode())))
    assert grades[0]["override_reason"] == "agreed;'-2+3;'+4" and grades[0]["name"] == "Ana;'=1+1; Lo"
