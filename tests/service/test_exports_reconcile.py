"""Every export adds up: section points + late penalty + override adjustment = total, exactly
on the numbers as written, for every student, late or not, overridden or not."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from service_cast import Cast
from stored_results import graded

from grader.report.view import format_number
from service.courses.models import Enrolment, Role
from service.submissions.models import Submission

pytestmark = [pytest.mark.db]

# Sections summing to 76.93, and others with cents that a percentage turns into long decimals.
POINTS = {"api": 7.33, "part1_trace": 20.5, "a6_parity": 12.25, "reuse": 15, "bug_injection": 9.85,
          "finite_difference": 12}  # fmt: skip
ODD = {"api": 9.99, "part1_trace": 24.37, "a6_parity": 13.01, "reuse": 14.29, "bug_injection": 7.77,
       "finite_difference": 19.03}  # fmt: skip


def student(cast: Cast, username: str) -> User:
    user = User.objects.create_user(username, f"{username}@example.edu", first_name=username.title(), last_name="S")
    Enrolment.objects.create(course=cast.course, user=user, role=Role.STUDENT)
    return user


@pytest.fixture
def klass(cast: Cast) -> dict[str, Submission]:
    """On time, late, overridden, late and overridden, overridden twice, not submitted."""
    staff = cast.client(cast.instructor)
    made = {
        "ontime": graded(cast.assignment, student(cast, "ontime"), POINTS),
        "late": graded(cast.assignment, student(cast, "late"), POINTS, late_penalty=10),
        "late_odd": graded(cast.assignment, student(cast, "late_odd"), ODD, late_penalty=35),
        "over": graded(cast.assignment, student(cast, "over"), POINTS),
        "both": graded(cast.assignment, student(cast, "both"), ODD, late_penalty=20),
        "twice": graded(cast.assignment, student(cast, "twice"), POINTS, late_penalty=100),
    }
    student(cast, "absent")
    for name, score in (("over", "77.5"), ("both", "66.666"), ("twice", "10"), ("twice", "12.25")):
        answer = staff.post(f"/submissions/{made[name].pk}/override/", {"score": score, "reason": "read by hand"})
        assert answer.status_code == 302
    return made


def counted(made: dict[str, Submission], name: str) -> str:
    score = Submission.objects.get(pk=made[name].pk).counted_score
    assert score is not None
    return format_number(score)


def test_grades_csv_adds_up_for_every_student(cast: Cast, klass: dict[str, Submission]) -> None:
    body = cast.client(cast.instructor).get("/a/a8/class/export/grades.csv").content.decode()
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO(body, newline=""))}
    assert set(rows) == set(klass)  # nobody without a graded submission
    tags = [section.tag for section in cast.assignment.rubric().sections]
    for name, row in rows.items():
        parts = [row[tag] for tag in tags] + [row["late_penalty"], row["override"]]
        assert sum(Decimal(part) for part in parts) == Decimal(row["total"]), (name, row)
        assert row["total"] == counted(klass, name), name  # the score the service counts
    # The case a spreadsheet could not explain before: the sections say 76.93, the total 77.5.
    assert sum(Decimal(rows["over"][tag]) for tag in tags) == Decimal("76.93")
    assert (rows["over"]["override"], rows["over"]["total"]) == ("0.57", "77.5")
    assert (rows["late"]["late_penalty"], rows["late"]["late_penalty_percent"], rows["late"]["total"]) == (
        "-7.69",
        "10",
        "69.24",
    )
    assert rows["ontime"]["late_penalty"] == rows["ontime"]["override"] == "0"
    assert rows["twice"]["total"] == "12.25" and rows["twice"]["late_penalty"] == "-76.93"
    assert rows["both"]["override_reason"] == "read by hand"


def test_canvas_carries_the_same_total(cast: Cast, klass: dict[str, Submission]) -> None:
    staff = cast.client(cast.instructor)
    grades = csv.DictReader(io.StringIO(staff.get("/a/a8/class/export/grades.csv").content.decode(), newline=""))
    totals = {row["student"]: row["total"] for row in grades}
    canvas = list(csv.reader(io.StringIO(staff.get("/a/a8/class/export/canvas.csv").content.decode(), newline="")))
    assert canvas[0][-1] == cast.assignment.title
    by_login = {row[3]: row[-1] for row in canvas[1:]}  # SIS login id: the local username
    assert by_login == totals


@pytest.mark.parametrize("kind", ["gradescope.json", "prairielearn.json"])
def test_json_exports_add_up_for_every_student(cast: Cast, klass: dict[str, Submission], kind: str) -> None:
    body = cast.client(cast.instructor).get(f"/a/a8/class/export/{kind}").content.decode()
    data = json.loads(body, parse_float=Decimal)  # the decimals as written, not as floats
    assert set(data) == set(klass)
    for name, exported in data.items():
        grade = exported["extra_data"]["grade"] if kind == "gradescope.json" else exported["grade"]
        parts = [*grade["sections"].values(), grade["late_penalty"], grade["override"]]
        assert sum(Decimal(part) for part in parts) == Decimal(grade["total"]), (name, grade)
        assert Decimal(grade["total"]) == Decimal(counted(klass, name)), name
        if kind == "gradescope.json":
            assert Decimal(exported["score"]) == Decimal(grade["total"])
        else:
            assert Decimal(exported["score"]) == round(Decimal(grade["total"]) / Decimal(grade["max_points"]), 6)
    overridden = data["over"]["grade"] if kind == "prairielearn.json" else data["over"]["extra_data"]["grade"]
    assert overridden["override"] == Decimal("0.57") and overridden["override_reason"] == "read by hand"
