"""LTI Deep Linking 2.0 from the fake platform of test_lti.py: an instructor's deep linking
request signs them in, the picker lists the linked course's assignments, and the answer is a
signed LtiDeepLinkingResponse posted back to the platform, which an independent platform
implementation (lti1p3platform) verifies against the tool's published keys.

Also the OIDC login without client_id (optional in the spec).
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
import test_lti as fake
from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.test import Client
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.registration import Registration
from lti_tool.models import LtiRegistration
from service_cast import Cast

from service.courses.models import Enrolment, Role
from service.lti.models import CourseLink

pytestmark = [pytest.mark.db]

# The fake platform's fixtures, shared with test_lti.py.
platform_key = fake.platform_key
tool_jwk = fake.tool_jwk
jwks_url = fake.jwks_url
platform = fake.platform

DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"
RETURN_URL = f"{fake.ISSUER}/deep-link-return?course=7"


def dl_settings(**changes: Any) -> dict[str, Any]:
    claim: dict[str, Any] = {
        "deep_link_return_url": RETURN_URL,
        "accept_types": ["ltiResourceLink"],
        "accept_presentation_document_targets": ["iframe", "window"],
        "data": "platform-opaque-7",
    }
    claim.update(changes)
    return claim


def deep_link_launch(
    client: Client, key: Any, sub: str = "teacher-1", roles: list[str] | None = None, **changes: Any
) -> Any:
    changes.setdefault(DL + "deep_linking_settings", dl_settings())
    return fake.launch(
        client,
        key,
        sub,
        [fake.INSTRUCTOR] if roles is None else roles,
        message_type="LtiDeepLinkingRequest",
        resource_link=None,
        **changes,
    )


class VerifyingPlatform(LTI1P3PlatformConfAbstract):  # type: ignore[misc]  # untyped test library
    """lti1p3platform, knowing the tool by the key set it publishes."""

    def init_platform_config(self, **kwargs: Any) -> None:
        registration = Registration()
        registration.set_iss(fake.ISSUER).set_client_id(fake.CLIENT_ID)
        registration.set_tool_key_set(kwargs["tool_keys"])
        self._registration = registration

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        return self._registration


def pick(client: Client, **choice: str) -> Any:
    """A choice on the picker, posted as the browser posts it (with the page's CSRF token)."""
    page = client.get("/lti/deep-link/").content.decode()
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    token = found.group(1) if found else "none"
    return client.post("/lti/deep-link/", {"csrfmiddlewaretoken": token, **choice})


def posted_form(page: str) -> tuple[str, str]:
    action = re.search(r'<form method="post" action="([^"]+)" data-auto-submit>', page)
    token = re.search(r'<input type="hidden" name="JWT" value="([^"]+)">', page)
    assert action and token, page
    return html.unescape(action.group(1)), token.group(1)


def test_an_instructor_picks_an_assignment_and_the_lms_gets_a_signed_link(cast: Cast, platform: fake.Platform) -> None:
    client = fake.browser()
    response = deep_link_launch(client, platform.key)
    assert (response.status_code, response["Location"]) == (302, "/lti/deep-link/")
    teacher = fake.lti_user("teacher-1")
    assert Enrolment.objects.get(user=teacher, course=cast.course).role == Role.INSTRUCTOR

    picker = client.get("/lti/deep-link/")
    assert picker.status_code == 200
    page = picker.content.decode()
    assert 'value="a8"' in page and 'value="b1"' not in page  # the linked course's assignments only

    answer = pick(client, assignment="a8")
    assert answer.status_code == 200
    action, token = posted_form(answer.content.decode())
    assert action == RETURN_URL
    # No inline script: the form posts itself through a static file, and may post to the LMS only.
    assert "<script>" not in answer.content.decode() and "lti/auto_submit.js" in answer.content.decode()
    policy = answer["Content-Security-Policy"]
    assert re.search(r"form-action 'self' https://lms\.example\.edu(;|$)", policy), policy

    lms = VerifyingPlatform(tool_keys=client.get("/lti/jwks/").json())
    items = lms.validate_deeplinking_resp({"JWT": token})  # signature checked against /lti/jwks/
    assert items == [
        {
            "type": "ltiResourceLink",
            "title": "A8",
            "url": settings.SITE_ROOT + "/lti/launch/",
            "custom": {"assignment": "a8"},
            "lineItem": {"scoreMaximum": 100, "label": "A8", "resourceId": "a8"},
        }
    ]
    claims = lms._jwt["body"]
    assert claims["iss"] == fake.CLIENT_ID and claims["aud"] == [fake.ISSUER]
    assert claims[fake.LTI + "deployment_id"] == fake.DEPLOYMENT
    assert claims[fake.LTI + "message_type"] == "LtiDeepLinkingResponse"
    assert claims[DL + "data"] == "platform-opaque-7"  # echoed, as the spec requires

    # One request, one answer.
    assert pick(client, assignment="a8").status_code == 400


def test_the_picker_refuses_an_assignment_of_another_course(cast: Cast, platform: fake.Platform) -> None:
    client = fake.browser()
    assert deep_link_launch(client, platform.key).status_code == 302
    assert pick(client, assignment="b1").status_code == 400
    assert pick(client, assignment="x" * 5000).status_code == 400


@pytest.mark.parametrize(
    "roles", [[fake.LEARNER], [fake.INSTRUCTOR, f"{fake.MEMBERSHIP}/Instructor#TeachingAssistant"], []]
)
def test_only_an_instructor_may_deep_link(cast: Cast, platform: fake.Platform, roles: list[str]) -> None:
    client = fake.browser()
    response = deep_link_launch(client, platform.key, "student-1", roles)
    assert response.status_code == 403 and "Instructors only" in response.content.decode()
    assert fake.nobody_signed_in_from_lti()
    assert client.get("/lti/deep-link/").status_code == 302  # to the sign-in page


@pytest.mark.parametrize(
    "return_url",
    [
        "https://evil.example/steal",
        "https://lms.example.edu.evil.example/x",
        "http://lms.example.edu/deep-link-return",  # https platforms are answered over https only
        "https://user@lms.example.edu/x",
        "javascript:alert(1)",
        "",
    ],
)
def test_a_return_url_off_the_platform_is_refused(cast: Cast, platform: fake.Platform, return_url: str) -> None:
    client = fake.browser()
    response = deep_link_launch(
        client, platform.key, **{DL + "deep_linking_settings": dl_settings(deep_link_return_url=return_url)}
    )
    assert response.status_code == 400 and "return URL" in response.content.decode()
    assert fake.nobody_signed_in_from_lti()


def test_a_return_url_on_a_host_in_lti_service_hosts_is_answered_and_any_other_refused(
    cast: Cast, platform: fake.Platform, settings: Any
) -> None:
    settings.LTI_SERVICE_HOSTS = ("school.example.edu",)
    settings.LTI_ALLOW_HTTP = False  # as in production
    school = "https://school.example.edu/deep-link-return"
    client = fake.browser()
    assert (
        deep_link_launch(
            client, platform.key, **{DL + "deep_linking_settings": dl_settings(deep_link_return_url=school)}
        ).status_code
        == 302
    )
    answer = pick(client, assignment="a8")
    assert answer.status_code == 200 and posted_form(answer.content.decode())[0] == school
    assert "https://school.example.edu" in answer["Content-Security-Policy"]
    # Named: over https, on its default port only. Any host not named is refused at the launch.
    for stranger in ("https://other.example.edu/r", "https://school.example.edu:8443/r", "http://school.example.edu/r"):
        client = fake.browser()
        claim = {DL + "deep_linking_settings": dl_settings(deep_link_return_url=stranger)}
        response = deep_link_launch(client, platform.key, **claim)
        assert response.status_code == 400 and "return URL" in response.content.decode(), stranger
        assert client.get("/lti/deep-link/").status_code != 200  # no picker, so no signed answer


def test_a_platform_that_takes_no_resource_links_is_refused(cast: Cast, platform: fake.Platform) -> None:
    response = deep_link_launch(
        fake.browser(), platform.key, **{DL + "deep_linking_settings": dl_settings(accept_types=["file"])}
    )
    assert response.status_code == 400 and "resource link" in response.content.decode()  # pylti1p3 checks first


def test_a_staff_role_comes_only_through_the_context_s_own_link(cast: Cast, platform: fake.Platform) -> None:
    # An open link (custom course=) does not count: an LMS instructor teaching nothing here is refused.
    CourseLink.objects.create(deployment=platform.deployment, context_id="", course=cast.other_course)
    response = deep_link_launch(
        fake.browser(), platform.key, "teacher-9", context={"id": "ctx-new"}, custom={"course": "c2"}
    )
    assert response.status_code == 403 and "not linked" in response.content.decode()
    assert fake.nobody_signed_in_from_lti()
    assert not Enrolment.objects.filter(course=cast.other_course, user__username__startswith="lti-").exists()


def test_an_instructor_links_an_unlinked_lms_course_to_their_own_course(cast: Cast, platform: fake.Platform) -> None:
    # First launched from their course's own LMS course: an instructor of c1 through its link.
    assert fake.launch(fake.browser(), platform.key, "teacher-1", [fake.INSTRUCTOR]).status_code == 302
    client = fake.browser()
    response = deep_link_launch(client, platform.key, context={"id": "ctx-section-b", "title": "CS101 section B"})
    assert (response.status_code, response["Location"]) == (302, "/lti/deep-link/")
    page = client.get("/lti/deep-link/").content.decode()
    assert "CS101 section B" in page and "Link to Course one" in page and "Course two" not in page
    # Not a course they teach: refused, nothing linked.
    assert pick(client, course="c2").status_code == 400
    assert not CourseLink.objects.filter(context_id="ctx-section-b").exists()

    linked = pick(client, course="c1")
    assert (linked.status_code, linked["Location"]) == (302, "/lti/deep-link/")
    link = CourseLink.objects.get(deployment=platform.deployment, context_id="ctx-section-b")
    assert link.course == cast.course
    entry = LogEntry.objects.get(object_id=str(link.pk))
    assert entry.user == fake.lti_user("teacher-1") and "deep linking" in entry.change_message
    assert 'value="a8"' in client.get("/lti/deep-link/").content.decode()
    # Linking again changes nothing: the LMS course now has its course.
    pick(client, course="c1")
    assert CourseLink.objects.filter(context_id="ctx-section-b").count() == 1


def test_an_unlinked_lms_course_refuses_someone_who_teaches_nothing_here(cast: Cast, platform: fake.Platform) -> None:
    response = deep_link_launch(fake.browser(), platform.key, "teacher-2", context={"id": "ctx-elsewhere"})
    assert response.status_code == 403 and "ctx-elsewhere" in response.content.decode()
    assert fake.nobody_signed_in_from_lti()


def test_the_picker_needs_this_session_s_deep_linking_request(cast: Cast, platform: fake.Platform) -> None:
    # Signed in with a password, or through a plain launch: no deep linking request to answer.
    assert cast.client(cast.instructor).get("/lti/deep-link/").status_code == 400
    client = fake.browser()
    assert fake.launch(client, platform.key, "teacher-1", [fake.INSTRUCTOR]).status_code == 302
    assert pick(client, assignment="a8").status_code == 400


def test_a_replayed_deep_linking_request_is_refused(cast: Cast, platform: fake.Platform) -> None:
    client = fake.browser()
    state, nonce, path = fake.oidc_login(client, "teacher-1")
    token = fake.id_token(
        platform.key,
        nonce,
        "teacher-1",
        [fake.INSTRUCTOR],
        message_type="LtiDeepLinkingRequest",
        resource_link=None,
        **{DL + "deep_linking_settings": dl_settings()},
    )
    assert client.post(path, {"id_token": token, "state": state}).status_code == 302
    replay = fake.browser().post(path, {"id_token": token, "state": state})
    assert replay.status_code == 400 and "already used" in replay.content.decode()


# The OIDC login without client_id: the issuer's one registration stands for it.

LOGIN = {"iss": fake.ISSUER, "login_hint": "someone", "target_link_uri": "https://grader.example.edu/lti/launch/"}


def test_a_login_without_client_id_uses_the_issuer_s_only_registration(cast: Cast, platform: fake.Platform) -> None:
    response = fake.browser().get("/lti/login/", LOGIN)
    assert response.status_code == 302
    assert (
        response["Location"].startswith(f"{fake.ISSUER}/auth?")
        and f"client_id={fake.CLIENT_ID}" in response["Location"]
    )


def test_a_login_without_client_id_is_refused_when_the_issuer_has_several(cast: Cast, platform: fake.Platform) -> None:
    LtiRegistration.objects.create(
        name="Second tenant",
        issuer=fake.ISSUER,
        client_id="another-tenant",
        auth_url=f"{fake.ISSUER}/auth",
        token_url=f"{fake.ISSUER}/token",
        keyset_url=platform.registration.keyset_url,
    )
    response = fake.browser().get("/lti/login/", LOGIN)
    assert response.status_code == 400 and "client_id" in response.content.decode()
    # Naming it still works, and an inactive one does not count.
    assert fake.browser().get("/lti/login/", {**LOGIN, "client_id": fake.CLIENT_ID}).status_code == 302
    LtiRegistration.objects.filter(client_id="another-tenant").update(is_active=False)
    assert fake.browser().get("/lti/login/", LOGIN).status_code == 302


def test_a_login_without_client_id_from_an_unknown_issuer_is_refused(cast: Cast, platform: fake.Platform) -> None:
    response = fake.browser().get("/lti/login/", {**LOGIN, "iss": "https://nowhere.example" + "x" * 400})
    assert response.status_code == 400 and "not registered" in response.content.decode()
    assert not User.objects.filter(username__startswith="lti-").exists()
