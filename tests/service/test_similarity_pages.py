"""The service's similarity report: staff only, over each student's counted (else latest) file,
with the assignment's starter code left out; the class pages carry its headline."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from service_cast import REPO, Cast
from test_pages import upload

from service.courses.models import Assignment
from service.submissions.models import AuditEntry

sys.path.insert(0, str(REPO / "tests" / "unit"))
from similarity_disguise import disguise  # noqa: E402

pytestmark = [pytest.mark.db]

ENGINES = REPO / "tests" / "similarity_class"
STARTER = (REPO / "tests" / "similarity_class_base" / "starter_helpers.py").read_text()
ROUTE = "/a/a8/class/similarity/"


def engine(name: str) -> str:
    return (ENGINES / name / "autograd_lab.py").read_text()


def with_starter(text: str) -> bytes:
    return (text + "\n\n" + STARTER).encode()


def test_staff_see_a_copy_and_the_class_view_carries_the_headline(cast: Cast) -> None:
    upload(cast.client(cast.student), body=engine("cleo_marsh").encode())
    upload(cast.client(cast.student2), body=disguise(engine("cleo_marsh"), 4).encode())
    response = cast.client(cast.ta).get(ROUTE)
    assert response.status_code == 200
    page = response.content.decode()
    assert "alice and bob" in page and "similarity, not misconduct" in page
    assert "script-src 'none'" in response["Content-Security-Policy"]
    rows = json.loads(cast.client(cast.ta).get("/a/a8/class/similarity.json").content)["pairs"]
    assert [(r["a"], r["b"]) for r in rows] == [("alice", "bob")] and rows[0]["score"] >= 0.5
    view = cast.client(cast.ta).get("/a/a8/class/").content.decode()
    assert ROUTE in view and "1 pairs at 50% or more" in view and "alice and bob" in view
    upload(cast.client(cast.student2), body=engine("jo_mensah").encode())  # bob starts over
    assert "files have changed since" in cast.client(cast.ta).get("/a/a8/class/").content.decode()


def test_students_and_outsiders_get_404(cast: Cast) -> None:
    upload(cast.client(cast.student), body=engine("ana_ruiz").encode())
    for user in (cast.student, cast.student2, cast.outsider):
        assert cast.client(user).get(ROUTE).status_code == 404
        assert cast.client(user).get("/a/a8/class/similarity.json").status_code == 404
        assert cast.client(user).post("/a/a8/class/base-code/").status_code == 404
    assert cast.client(cast.ta).post("/a/a8/class/base-code/").status_code == 404  # instructors only
    assert cast.client(cast.instructor).get("/a/b1/class/similarity/").status_code == 404  # not their course


def test_starter_code_set_by_the_instructor_is_not_counted(cast: Cast) -> None:
    upload(cast.client(cast.student), body=with_starter(engine("ana_ruiz")))
    upload(cast.client(cast.student2), body=with_starter(engine("fay_osei")))
    instructor = cast.client(cast.instructor)
    assert "alice and bob" in instructor.get(ROUTE).content.decode()  # the pasted helpers look shared
    starter = SimpleUploadedFile("starter.py", STARTER.encode())
    assert instructor.post("/a/a8/class/base-code/", {"base_code": starter}).status_code == 302
    assert Assignment.objects.get(pk=cast.assignment.pk).base_code == STARTER
    assert AuditEntry.objects.filter(action="base_code", actor=cast.instructor).exists()
    page = instructor.get(ROUTE).content.decode()
    assert "alice and bob" not in page and "No pair scores 50% or more" in page
    assert "the assignment&#39;s starter code" in page
    assert instructor.post("/a/a8/class/base-code/").status_code == 302  # no file: cleared
    assert Assignment.objects.get(pk=cast.assignment.pk).base_code == ""


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"#" * 1_000_100, "at most 1 MB"),  # past the view's cap, under the body cap
        (b"x = 1\n" * 400_000, "larger than"),  # refused before the form is read (413)
        (b"\xff\xfe\x00binary", "UTF-8"),
        (b"ok\x00", "not binary"),
    ],
)
def test_a_bad_starter_file_is_refused_and_keeps_the_old_one(cast: Cast, body: bytes, why: str, tmp_path: Path) -> None:
    Assignment.objects.filter(pk=cast.assignment.pk).update(base_code="keep = 1\n")
    response = cast.client(cast.instructor).post(
        "/a/a8/class/base-code/", {"base_code": SimpleUploadedFile("s.py", body)}
    )
    assert response.status_code in (400, 413) and why in response.content.decode()
    assert Assignment.objects.get(pk=cast.assignment.pk).base_code == "keep = 1\n"


@pytest.mark.parametrize("body", [b"# nothing here yet\n", b"\n\n", b'"""Only a docstring."""\n'])
def test_a_file_with_no_code_leaves_the_report_standing(cast: Cast, body: bytes) -> None:
    # A student's upload of only comments (or nothing) is one more file, not a broken staff page.
    upload(cast.client(cast.student), body=body)
    upload(cast.client(cast.student2), body=engine("ana_ruiz").encode())
    for route in (ROUTE, "/a/a8/class/similarity.json", "/a/a8/class/"):
        assert cast.client(cast.ta).get(route).status_code == 200, route


def test_two_students_handing_in_the_reference_are_named_on_the_class_view(cast: Cast) -> None:
    leaked = (REPO / "reference" / "autograd_lab.py").read_bytes()
    upload(cast.client(cast.student), body=leaked)
    upload(cast.client(cast.student2), body=leaked)
    assert cast.client(cast.ta).get(ROUTE).status_code == 200  # the report is made, and its headline kept
    view = cast.client(cast.ta).get("/a/a8/class/").content.decode()
    assert "mostly the reference</span> alice, bob: these files are mostly the reference solution." in view


def test_the_grader_pages_served_to_staff_carry_the_header_and_the_way_back(cast: Cast) -> None:
    upload(cast.client(cast.student), body=engine("cleo_marsh").encode())
    for route, page in ((ROUTE, "Similarity report"), ("/a/a8/class/report/", "Class report")):
        response = cast.client(cast.ta).get(route)
        body = response.content.decode()
        assert '<header class="site-header">' in body and f'<li aria-current="page">{page}</li>' in body
        assert '<a href="/a/a8/class/">Class view</a>' in body and '<a href="/a/a8/">' in body
        assert '<link rel="stylesheet" href="/static/service/site.css">' in body
        policy = response["Content-Security-Policy"]
        assert "script-src 'none'" in policy and "form-action 'self'" in policy  # the sign-out form only
        assert "<script" not in body
