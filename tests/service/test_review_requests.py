"""Review requests: a student asks about one check of a graded submission from its feedback
page, staff answer (and may set the score), the student reads the answer; nobody else sees any."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.template import Context, Template
from django.test import Client
from django.utils import timezone
from service_cast import Cast

from grader import results as r
from grader.results_io import result_to_json
from service.submissions.models import (
    AuditEntry,
    Kind,
    ReviewRequest,
    ReviewState,
    ScoreOverride,
    State,
    Submission,
)
from service.submissions.reviews import MAX_MESSAGE, MAX_OPEN, MAX_TOTAL

pytestmark = [pytest.mark.db]

VISIBLE = [f"api.check{n}" for n in range(1, 8)]  # seven visible checks, one point each
HIDDEN = "api.random"  # and a hidden one worth three
HIDDEN_TITLE = "Random programs secret title"


def graded_result(student: str) -> r.SubmissionResult:
    checks = tuple(
        r.CheckResult(
            check_id, f"Visible check {n}", "api", r.Visibility.VISIBLE, 1.0 if n > 1 else 0.0, 1.0,
            r.Outcome.PASSED if n > 1 else r.Outcome.FAILED, "", "ok" if n > 1 else "wrong", "",
        )
        for n, check_id in enumerate(VISIBLE, start=1)
    ) + (
        r.CheckResult(HIDDEN, HIDDEN_TITLE, "api", r.Visibility.HIDDEN, 0.0, 3.0, r.Outcome.FAILED, "", "", ""),
    )  # fmt: skip
    return r.SubmissionResult(
        student, "autograd_lab.py", r.Status.GRADED, 6.0, 10.0, (r.SectionResult("api", "API", 6.0, 10.0),),
        checks, r.LoadReport(ok=True, mode="full", class_name="Value"), "", "a8", "0" * 40, 1, "docker", "", 1.0,
    )  # fmt: skip


def graded(user: User, cast: Cast, kind: str = Kind.SUBMIT) -> Submission:
    """A graded submission with a stored result, as a worker would leave it (no sandbox)."""
    return Submission.objects.create(
        assignment=cast.assignment, user=user, kind=kind, filename="autograd_lab.py", sha256="0" * 64, size=1,
        content=b"x", state=State.GRADED, score=6.0, max_score=10.0, visible_score=6.0, visible_max_score=7.0,
        result_json=result_to_json(graded_result(user.username)),
    )  # fmt: skip


def ask(client: Client, submission: Submission, check: str = VISIBLE[0], message: str = "Please look again") -> object:
    return client.post(f"/submissions/{submission.pk}/review/", {"check": check, "message": message})


def release_hidden(cast: Cast) -> None:
    cast.assignment.due_at = timezone.now() - timedelta(minutes=1)
    cast.assignment.save()


def test_a_student_asks_staff_answer_and_the_student_reads_the_answer(cast: Cast) -> None:
    alice = cast.client(cast.student)
    submission = graded(cast.student, cast)
    page = alice.get(f"/submissions/{submission.pk}/feedback/").content.decode()
    assert f'action="/submissions/{submission.pk}/review/"' in page and f'value="{VISIBLE[0]}"' in page

    sent = ask(alice, submission, message="The expected value looks wrong to me")
    assert sent.status_code == 302 and sent["Location"].endswith(f"/submissions/{submission.pk}/feedback/#check-1-1")
    review = ReviewRequest.objects.get()
    assert (review.student, review.assignment, review.check_id) == (cast.student, cast.assignment, VISIBLE[0])
    assert review.check_title == "Visible check 1" and review.state == ReviewState.OPEN
    assert AuditEntry.objects.filter(action="review_ask", submission=submission, actor=cast.student).exists()

    after = alice.get(sent["Location"]).content.decode()
    assert "was sent to staff" in after  # Django's message, in the service's header
    assert "The expected value looks wrong to me" in after and "Waiting for staff" in after
    assert after.count(f'value="{VISIBLE[0]}"') == 0  # no second form while one is open

    cast.student.first_name, cast.student.last_name = "Alice", "Nguyen"
    cast.student.save()
    staff = cast.client(cast.ta)
    listed = staff.get("/a/a8/class/requests/").content.decode()
    assert '<span title="alice">Alice Nguyen</span>' in listed and "The expected value looks wrong to me" in listed
    assert f"/submissions/{submission.pk}/" in listed and "Visible check 1" in listed

    waiting = Template("{% load reviews %}{% open_review_count a as n %}{{ n }}")  # the class view's link
    assert waiting.render(Context({"a": cast.assignment})) == "1"

    answered = staff.post(f"/a/a8/class/requests/{review.pk}/answer/", {"answer": "The check is right: see Part 2"})
    assert answered.status_code == 302 and answered["Location"] == "/a/a8/class/requests/"
    assert "Answered Alice Nguyen" in staff.get("/a/a8/class/requests/").content.decode()
    review.refresh_from_db()
    assert review.state == ReviewState.ANSWERED and review.answered_by == cast.ta and review.override is None
    assert not ScoreOverride.objects.exists()
    assert AuditEntry.objects.filter(action="review_answer", actor=cast.ta, submission=submission).exists()

    read = alice.get(f"/submissions/{submission.pk}/feedback/").content.decode()
    assert "The check is right: see Part 2" in read and ">Answered<" in read
    assert "The check is right: see Part 2" in alice.get("/a/a8/").content.decode()
    # Answered, the check can be asked about again.
    assert ask(alice, submission, message="One more question").status_code == 302


def test_an_answer_may_set_the_score_as_the_override_form_does(cast: Cast) -> None:
    alice, staff = cast.client(cast.student), cast.client(cast.instructor)
    submission = graded(cast.student, cast)
    ask(alice, submission)
    review = ReviewRequest.objects.get()
    path = f"/a/a8/class/requests/{review.pk}/answer/"
    too_high = staff.post(path, {"answer": "Fixed", "score": "11", "reason": ""})
    assert too_high.status_code == 400 and not ScoreOverride.objects.exists()
    assert ReviewRequest.objects.get().state == ReviewState.OPEN

    done = staff.post(path, {"answer": "You are right, the check was too strict", "score": "7.5", "reason": ""})
    assert done.status_code == 302
    made = ScoreOverride.objects.get()
    assert made.score == 7.5 and made.by == cast.instructor and "too strict" in made.reason
    assert Submission.objects.get(pk=submission.pk).counted_score == 7.5
    review.refresh_from_db()
    assert review.override == made and review.state == ReviewState.ANSWERED
    assert AuditEntry.objects.filter(action="override", submission=submission, detail__contains="6.0 -> 7.5").exists()
    assert AuditEntry.objects.filter(action="review_answer", detail__contains="score set to 7.5").exists()
    release_hidden(cast)  # before that the new score waits, as the score does
    page = alice.get(f"/submissions/{submission.pk}/feedback/").content.decode()
    assert "Score set to 7.5 / 10" in page

    again = staff.post(path, {"answer": "Twice", "score": "9", "reason": "again"})
    assert again.status_code == 409 and ScoreOverride.objects.count() == 1


def test_one_open_request_per_check_and_limits_per_assignment(cast: Cast) -> None:
    alice = cast.client(cast.student)
    first, second = graded(cast.student, cast), graded(cast.student, cast)
    assert ask(alice, first).status_code == 302
    duplicate = ask(alice, second)  # another submission, the same check: still one open request
    assert duplicate.status_code == 409 and "already have an open review request" in duplicate.content.decode()
    page = alice.get(f"/submissions/{second.pk}/feedback/").content.decode()
    assert f"Your open request about this check is on submission {first.pk}." in page

    for check in VISIBLE[1:MAX_OPEN]:
        assert ask(alice, first, check).status_code == 302
    over = ask(alice, first, VISIBLE[MAX_OPEN])
    assert over.status_code == 409 and f"{MAX_OPEN} open review requests" in over.content.decode()
    assert ReviewRequest.objects.filter(state=ReviewState.OPEN).count() == MAX_OPEN
    full = alice.get(f"/submissions/{first.pk}/feedback/").content.decode()
    assert f'action="/submissions/{first.pk}/review/"' not in full and f"{MAX_OPEN} open review requests" in full

    # Withdrawn ones still count towards the total.
    ReviewRequest.objects.update(state=ReviewState.WITHDRAWN)
    ReviewRequest.objects.bulk_create(
        ReviewRequest(
            submission=first, student=cast.student, assignment=cast.assignment, check_id=VISIBLE[6],
            check_title="Visible check 7", message="m", state=ReviewState.WITHDRAWN,
        )
        for _ in range(MAX_TOTAL - MAX_OPEN)
    )  # fmt: skip
    total = ask(alice, first, VISIBLE[6])
    assert total.status_code == 409 and f"asked for {MAX_TOTAL} reviews" in total.content.decode()
    # Bob's limits are his own.
    assert ask(cast.client(cast.student2), graded(cast.student2, cast)).status_code == 302


def test_a_hidden_check_cannot_be_asked_about_while_its_results_are_withheld(cast: Cast) -> None:
    alice = cast.client(cast.student)
    submission = graded(cast.student, cast)
    page = alice.get(f"/submissions/{submission.pk}/feedback/").content.decode()
    assert HIDDEN not in page and HIDDEN_TITLE not in page
    hidden, unknown = ask(alice, submission, HIDDEN), ask(alice, submission, "api.nothing")
    assert hidden.status_code == unknown.status_code == 400
    said = [re.search(r'<p class="error"[^>]*>(.*?)</p>', x.content.decode()) for x in (hidden, unknown)]
    assert said[0] and said[1] and said[0].group(1) == said[1].group(1)  # one refusal: an id cannot be probed
    assert not ReviewRequest.objects.exists()

    release_hidden(cast)
    assert f'value="{HIDDEN}"' in alice.get(f"/submissions/{submission.pk}/feedback/").content.decode()
    assert ask(alice, submission, HIDDEN).status_code == 302
    assert ReviewRequest.objects.get().check_title == HIDDEN_TITLE


def test_nobody_but_the_owner_asks_reads_or_withdraws_and_only_course_staff_answer(cast: Cast) -> None:
    alice, bob = cast.client(cast.student), cast.client(cast.student2)
    outsider, staff = cast.client(cast.outsider), cast.client(cast.instructor)
    mine = graded(cast.student, cast)
    ask(alice, mine, message="private words of alice")
    review = ReviewRequest.objects.get()
    bobs = graded(cast.student2, cast)

    assert ask(bob, mine).status_code == 404
    assert ask(outsider, mine).status_code == 404
    for client in (bob, outsider):
        assert client.get(f"/submissions/{mine.pk}/feedback/").status_code == 404
        assert client.post(f"/submissions/{mine.pk}/review/{review.pk}/withdraw/").status_code == 404
        assert client.get("/a/a8/class/requests/").status_code == 404
        assert client.post(f"/a/a8/class/requests/{review.pk}/answer/", {"answer": "mine now"}).status_code == 404
    # Bob's own submission id with alice's request id is no way in either.
    assert bob.post(f"/submissions/{bobs.pk}/review/{review.pk}/withdraw/").status_code == 404
    assert "private words of alice" not in bob.get(f"/submissions/{bobs.pk}/feedback/").content.decode()
    assert "private words of alice" not in bob.get("/a/a8/").content.decode()
    assert alice.get("/a/a8/class/requests/").status_code == 404
    # Staff read the request on the student's page but do not ask in the student's name.
    assert "private words of alice" in staff.get(f"/submissions/{mine.pk}/feedback/").content.decode()
    assert ask(staff, mine, VISIBLE[1]).status_code == 403
    # Staff of the course answer only through their own assignment's page.
    assert staff.post(f"/a/b1/class/requests/{review.pk}/answer/", {"answer": "x"}).status_code == 404
    assert ReviewRequest.objects.get().state == ReviewState.OPEN

    assert alice.post(f"/submissions/{mine.pk}/review/{review.pk}/withdraw/").status_code == 302
    assert ReviewRequest.objects.get().state == ReviewState.WITHDRAWN
    assert AuditEntry.objects.filter(action="review_withdraw", actor=cast.student).exists()
    late = staff.post(f"/a/a8/class/requests/{review.pk}/answer/", {"answer": "too late"})
    assert late.status_code == 409


@pytest.mark.parametrize(
    "fields",
    [
        {"check": VISIBLE[0], "message": "x" * (MAX_MESSAGE + 1)},
        {"check": VISIBLE[0], "message": "y" * 200_000},
        {"check": VISIBLE[0], "message": "a\x00b"},
        {"check": VISIBLE[0], "message": "   "},
        {"check": VISIBLE[0]},
        {"check": "api.check1\x00", "message": "hi"},
        {"check": "z" * 10_000, "message": "hi"},
        {"check": "", "message": "hi"},
        {"check": "'; drop table x; --", "message": "hi"},
    ],
)
def test_hostile_requests_are_refused_with_400(cast: Cast, fields: dict[str, str]) -> None:
    alice = cast.client(cast.student)
    submission = graded(cast.student, cast)
    response = alice.post(f"/submissions/{submission.pk}/review/", fields)
    assert response.status_code == 400
    assert b"not sent" in response.content or b"no such check" in response.content
    assert not ReviewRequest.objects.exists()


def test_hostile_answers_are_refused_with_400(cast: Cast) -> None:
    alice, staff = cast.client(cast.student), cast.client(cast.instructor)
    submission = graded(cast.student, cast)
    ask(alice, submission)
    path = f"/a/a8/class/requests/{ReviewRequest.objects.get().pk}/answer/"
    for fields in (
        {"answer": "a\x00b"},
        {"answer": "x" * 100_000},
        {"answer": ""},
        {"answer": "ok", "score": "nan"},
        {"answer": "ok", "score": "1", "reason": "r\x00"},
        {"answer": "ok", "score": "-1"},
    ):
        assert staff.post(path, fields).status_code == 400
    assert staff.post("/a/a8/class/requests/" + "9" * 19 + "/answer/", {"answer": "x"}).status_code == 404
    assert ReviewRequest.objects.get().state == ReviewState.OPEN and not ScoreOverride.objects.exists()


def test_self_checks_and_ungraded_submissions_take_no_request(cast: Cast) -> None:
    alice = cast.client(cast.student)
    check = graded(cast.student, cast, kind=Kind.SELF_CHECK)
    assert 'name="message"' not in alice.get(f"/submissions/{check.pk}/feedback/").content.decode()
    assert ask(alice, check).status_code == 400
    waiting = graded(cast.student, cast)
    Submission.objects.filter(pk=waiting.pk).update(state=State.QUEUED)
    assert ask(alice, waiting).status_code == 400
    assert not ReviewRequest.objects.exists()


def test_the_feedback_page_has_the_sites_header_its_forms_and_still_no_script(cast: Cast) -> None:
    alice = Client(enforce_csrf_checks=True)
    alice.force_login(cast.student)
    submission = graded(cast.student, cast)
    response = alice.get(f"/submissions/{submission.pk}/feedback/")
    page = response.content.decode()
    policy = response["Content-Security-Policy"]
    assert "script-src 'none'" in policy and "default-src 'none'" in policy
    assert "form-action 'self'" in policy and "style-src 'self' 'sha256-" in policy
    assert "<script" not in page.lower()
    assert '<header class="site-header">' in page and 'aria-label="Breadcrumb" class="crumbs"' in page
    assert '<li><a href="/">Assignments</a></li>' in page
    assert '<li><a href="/a/a8/">Course one · A8</a></li>' in page
    assert f'<li><a href="/submissions/{submission.pk}/">Submission {submission.pk}</a></li>' in page
    assert '<li aria-current="page">Feedback</li>' in page
    assert '<link rel="stylesheet" href="/static/service/site.css">' in page
    # The form carries the CSRF token the service checks.
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    refused = alice.post(f"/submissions/{submission.pk}/review/", {"check": VISIBLE[0], "message": "hi"})
    assert refused.status_code == 403 and not ReviewRequest.objects.exists()
    sent = alice.post(
        f"/submissions/{submission.pk}/review/",
        {"check": VISIBLE[0], "message": "hi", "csrfmiddlewaretoken": token.group(1)},
    )
    assert sent.status_code == 302 and ReviewRequest.objects.count() == 1
    # The class report keeps its own policy: no script, and its one form is the header's sign-out.
    report = cast.client(cast.instructor).get("/a/a8/class/report/")
    assert "script-src 'none'" in report["Content-Security-Policy"]
    assert report.content.decode().count("<form") == 1 and 'action="/accounts/logout/"' in report.content.decode()


def test_a_request_is_text_on_every_page_that_shows_it(cast: Cast) -> None:
    alice, staff = cast.client(cast.student), cast.client(cast.instructor)
    submission = graded(cast.student, cast)
    hostile = '<img src=x onerror="alert(1)">\nline two </textarea><script>alert(2)</script>'
    assert ask(alice, submission, message=hostile).status_code == 302
    review = ReviewRequest.objects.get()
    staff.post(f"/a/a8/class/requests/{review.pk}/answer/", {"answer": "<b>bold</b>\nsecond line"})
    pages = [
        staff.get("/a/a8/class/requests/").content.decode(),
        alice.get(f"/submissions/{submission.pk}/feedback/").content.decode(),
        alice.get("/a/a8/").content.decode(),
    ]
    for page in pages:
        assert "<img src=x" not in page and "<script>alert" not in page and "<b>bold</b>" not in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in pages[1] and "&lt;b&gt;bold&lt;/b&gt;<br>second line" in pages[2]


def test_a_score_set_in_an_answer_waits_like_the_score_while_hidden_results_are_withheld(cast: Cast) -> None:
    # The submission page shows no override while hidden results are withheld: an answer's new
    # score would tell the hidden checks' points (here 7 with all visible checks right: 0 of 3).
    alice, staff = cast.client(cast.student), cast.client(cast.instructor)
    submission = graded(cast.student, cast)
    ask(alice, submission)
    review = ReviewRequest.objects.get()
    answered = staff.post(f"/a/a8/class/requests/{review.pk}/answer/", {"answer": "Check 1 regraded", "score": "7"})
    assert answered.status_code == 302 and ScoreOverride.objects.get().score == 7.0
    pages = [
        alice.get(f"/submissions/{submission.pk}/feedback/").content.decode(),
        alice.get("/a/a8/").content.decode(),
        alice.get(f"/submissions/{submission.pk}/").content.decode(),
    ]
    for page in pages:
        assert "Check 1 regraded" in page or page is pages[2]
        assert "Score set to 7" not in page and "score set to 7" not in page and "/ 10" not in page
    assert "A new score was set: it shows after the deadline" in pages[0]
    assert "new score set: it shows after the deadline" in pages[1]
    assert "Score set to 7" in staff.get(f"/submissions/{submission.pk}/feedback/").content.decode()

    release_hidden(cast)
    assert "Score set to 7 / 10" in alice.get(f"/submissions/{submission.pk}/feedback/").content.decode()
    assert "score set to 7" in alice.get("/a/a8/").content.decode()
