"""An LMS framing the service, in Chromium: a page on the registered platform's origin (a
loopback HTTP server standing in for the LMS) shows a student's assignment page in its iframe;
the same page served from an origin that is not registered gets Chromium's refusal, and so
does a staff page framed by the platform itself.

Over loopback there is no https: the session cookie stays SameSite=Lax, and the LMS page and
the service are the same site (localhost, other ports), so the cookie reaches the frame. What is
tested here is the framing decision (CSP frame-ancestors, no X-Frame-Options); the
SameSite=None; Secure cookies a cross-site LMS needs are tested in test_lti_framing.py.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import Client
from lti_tool.models import LtiRegistration
from playwright.sync_api import Page, expect, sync_playwright
from pytest_django.live_server_helper import LiveServer
from service_cast import Cast

from service.lti import framing

pytestmark = [pytest.mark.browser, pytest.mark.db, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def chromium() -> str:
    name = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    found = shutil.which(name)
    if found is None:
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"Chromium not found at {name} (REQUIRE_BROWSER=1)", pytrace=False)
        pytest.skip(f"Chromium not found at {name}")
    return found


class LmsPage:
    """A loopback web server whose one page frames ``target`` (set per test)."""

    def __init__(self) -> None:
        self.target = ""
        page = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
                body = f'<!doctype html><title>LMS</title><iframe id="tool" src="{page.target}"></iframe>'.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # "localhost", as pytest-django's live server is named: the same site, so the session's
        # SameSite=Lax cookie reaches the frame (over http; over https it is SameSite=None).
        self.origin = f"http://localhost:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def lms_pages() -> Iterator[tuple[LmsPage, LmsPage]]:
    """The registered platform's page, and a page on another origin."""
    registered, stranger = LmsPage(), LmsPage()
    try:
        yield registered, stranger
    finally:
        registered.close()
        stranger.close()


def session_cookie(user: Any) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def framed(page: Page, lms: LmsPage, target: str) -> tuple[bool, list[str]]:
    """Open the LMS page framing ``target``; whether the frame shows the service, and the
    console's errors."""
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    lms.target = target
    page.goto(lms.origin + "/")
    page.wait_for_load_state("load")
    frame = page.frame_locator("#tool")
    shows = frame.locator("nav").count() > 0  # every service page has the navigation bar
    return shows, errors


def test_the_registered_lms_frames_an_assignment_page_and_another_origin_cannot(
    chromium: str, cast: Cast, live_server: LiveServer, lms_pages: tuple[LmsPage, LmsPage]
) -> None:
    registered, stranger = lms_pages
    LtiRegistration.objects.create(
        name="Loopback LMS",
        issuer=registered.origin,
        client_id="tool",
        auth_url=registered.origin + "/auth",
        token_url=registered.origin + "/token",
        keyset_url=registered.origin + "/jwks",
    )
    framing.forget_platform_origins()
    student, instructor = session_cookie(cast.student), session_cookie(cast.instructor)
    assignment, class_view = f"{live_server.url}/a/a8/", f"{live_server.url}/a/a8/class/"

    # No ORM below: Playwright's loop runs in this thread.
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:

            def page_as(cookie: str) -> Page:
                context = browser.new_context()
                context.add_cookies([{"name": "sessionid", "value": cookie, "url": live_server.url}])
                return context.new_page()

            page = page_as(student)
            shows, errors = framed(page, registered, assignment)
            assert shows, errors
            expect(page.frame_locator("#tool").get_by_role("heading", name="A8")).to_be_visible()
            assert not errors

            page = page_as(student)
            shows, errors = framed(page, stranger, assignment)
            assert not shows
            assert any("frame-ancestors" in error for error in errors), errors

            page = page_as(instructor)
            shows, errors = framed(page, registered, class_view)
            assert not shows  # staff pages stay unframeable, even by the platform
            assert any("frame-ancestors" in error or "X-Frame-Options" in error for error in errors), errors
        finally:
            browser.close()
