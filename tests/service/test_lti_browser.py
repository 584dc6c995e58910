"""LTI pages in a real browser, as staff see them: the deep linking picker an LMS opens, and the
class view of a course whose students came from the LMS (their names, usernames, where each
score stands in the LMS gradebook, and the last roster sync).

No Docker: the LMS's side is the fake platform of test_lti.py and rows as a passback and a
sync leave them. Screenshots are taken as in test_browser.py: under pytest's tmp folder, or
into docs/screenshots/service/ with UPDATE_SCREENSHOTS=1 (the docs' pictures).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
import test_browser as pages
import test_lti as fake
from django.utils import timezone
from lti_tool.models import LtiDeployment
from playwright.sync_api import expect
from pytest_django.live_server_helper import LiveServer
from service_cast import Cast
from test_browser import Tab, off_loop
from test_lti_deep_linking import deep_link_launch

from service.lti.models import CourseLink, GradebookLink, LineItem, RosterSource, RosterSync, ScoreTarget

pytestmark = [pytest.mark.browser, pytest.mark.db, pytest.mark.django_db(transaction=True)]

platform_key = fake.platform_key
tool_jwk = fake.tool_jwk
jwks_url = fake.jwks_url
platform = fake.platform
chromium = pages.chromium
browser = pages.browser
new_tab = pages.new_tab


def test_the_deep_linking_picker_lists_the_linked_courses_assignments(
    cast: Cast, platform: fake.Platform, new_tab: Callable[[], Tab], live_server: LiveServer, tmp_path: Path
) -> None:
    def launched() -> str:
        client = fake.browser()
        assert deep_link_launch(client, platform.key).status_code == 302
        return str(client.cookies["sessionid"].value)

    session = off_loop(launched)
    tab = new_tab()
    tab.page.context.add_cookies([{"name": "sessionid", "value": session, "url": live_server.url}])
    tab.open("/lti/deep-link/")
    picker = tab.page
    expect(picker.get_by_role("heading", name="Add an assignment to")).to_be_visible()
    # The linked course's assignments only, each a button that answers the LMS.
    expect(picker.locator(".choices button")).to_have_text(["A8"])
    tab.screenshot("deep-link-picker", tmp_path)
    assert tab.problems == []


def test_the_class_view_shows_lms_students_their_gradebook_cells_and_the_roster_sync(
    cast: Cast, platform: fake.Platform, new_tab: Callable[[], Tab], tmp_path: Path
) -> None:
    def lms_course() -> None:
        deployment = LtiDeployment.objects.get()
        link, _ = CourseLink.objects.get_or_create(deployment=deployment, context_id=fake.CONTEXT, course=cast.course)
        RosterSource.objects.create(link=link, memberships_url=f"{fake.ISSUER}/nrps", seen_at=timezone.now())
        book = GradebookLink.objects.create(
            deployment=deployment, context_id=fake.CONTEXT, course=cast.course, lineitems_url=f"{fake.ISSUER}/li"
        )
        column = LineItem.objects.create(link=book, assignment=cast.assignment, url=f"{fake.ISSUER}/li/8")
        cast.student.first_name, cast.student.last_name = "Ada", "Lovelace"
        cast.student.save()
        cast.student2.first_name, cast.student2.last_name = "Alan", "Turing"
        cast.student2.save()
        now = timezone.now()
        ScoreTarget.objects.create(line_item=column, user=cast.student, wanted_version=2, sent_version=2, sent_at=now)
        ScoreTarget.objects.create(
            line_item=column, user=cast.student2, wanted_version=1, refused_version=1, problem="the LMS answered 400"
        )
        RosterSync.objects.create(
            course=cast.course,
            requested_at=now - timedelta(minutes=1),
            finished_at=now,
            ok=True,
            message="a8: 3 listed by the LMS, 3 in the course (1 newly enrolled), 0 left",
        )

    off_loop(lms_course)
    tab = new_tab()
    tab.sign_in(cast.instructor.username, cast.password)
    tab.open("/a/a8/class/")
    page = tab.page
    headers = page.locator("table tr").first.locator("th")
    expect(headers).to_contain_text(["Student", "Username", "Counted", "Total", "Submissions", "LMS", "Sign-in"])
    ada = page.locator("tr", has_text="Ada Lovelace")
    expect(ada.locator("td").first).to_have_text(cast.student.username)  # the name is the row's header
    expect(ada).to_contain_text("sent")
    expect(page.locator("tr", has_text="Alan Turing")).to_contain_text("not sent to the LMS: the LMS answered 400")
    expect(page.get_by_role("button", name="Sync roster from the LMS")).to_be_visible()
    expect(page.locator(".roster-status")).to_contain_text("3 listed by the LMS, 3 in the course")
    expect(page.locator(".roster-status")).not_to_contain_text("launch the grader from it first")
    tab.screenshot("class-view-lms", tmp_path)
    assert tab.problems == []
