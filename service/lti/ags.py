"""Talking to a platform's Assignment and Grade Services: an access token, line items, scores.

pylti1p3's clients do the protocol (``ServiceConnector``, ``AssignmentsGradesService``), on the
registration django-lti's tool config gives. What we add around them:

- every URL is checked by platform_urls (the registration's own origins and LTI_SERVICE_HOSTS)
  before anything is sent there, each request again: a launch cannot make the grader hand its
  access token, or a student's score, to another host;
- every call has a time limit and a size limit on the answer, follows no redirect, and a job
  makes a bounded number of calls (a platform that pages forever is cut off);
- the access token (OAuth 2 client credentials with a signed JWT assertion, RFC 7523) is kept
  until shortly before it expires, per registration and scope set, in this process only: a
  bearer token is never written to the database.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import requests
from django.conf import settings
from lti_tool.models import Key, LtiRegistration
from lti_tool.utils import DjangoToolConfig
from pylti1p3.assignments_grades import AssignmentsGradesService, TAssignmentsGradersData
from pylti1p3.exception import LtiException, LtiServiceException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.service_connector import ServiceConnector

from .platform_urls import MAX_URL, Origin, allowed_origins, on_platform, origin

AGS = "https://purl.imsglobal.org/spec/lti-ags/scope/"
LINEITEM, LINEITEM_READONLY, SCORE, RESULT_READONLY = (
    AGS + "lineitem",
    AGS + "lineitem.readonly",
    AGS + "score",
    AGS + "result.readonly",
)
KNOWN_SCOPES = (LINEITEM, LINEITEM_READONLY, SCORE, RESULT_READONLY)
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
# Calls one push may make: a token, a few pages of line items, a creation, the score.
CALL_BUDGET = 40
# A token is renewed this long before the platform says it expires (clocks, a slow request).
TOKEN_MARGIN_SECONDS = 60
MAX_TOKEN_SECONDS = 24 * 3600
MAX_TOKEN_CHARS = 8192


class PlatformUnavailable(Exception):
    """The platform did not answer usably for now (5xx, 429, timeout, refused connection, an
    expired token): the push is tried again later."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class PlatformRefused(Exception):
    """The platform refused (4xx) or answered something unusable, or the grader will not send
    there: retrying the same thing would not help. In words for staff."""


class BoundedSession(requests.Session):
    """An HTTP session that reaches only the registration's origins, within a time and size
    limit per call and a number of calls per push; it follows no redirect (one could lead the
    bearer token elsewhere)."""

    def __init__(self, allowed: frozenset[Origin]) -> None:
        super().__init__()
        self.trust_env = False  # no proxy or .netrc from the worker's environment sees the token
        self.headers["User-Agent"] = "grader-lti-ags"
        self.allowed = allowed
        self.calls = 0

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        target = url.decode() if isinstance(url, bytes) else url
        if len(target) > MAX_URL or origin(target) not in self.allowed:
            raise PlatformRefused(f"not sent: {target[:120]!r} is not on the LMS's registered host")
        self.calls += 1
        if self.calls > CALL_BUDGET:
            raise PlatformRefused(f"the LMS needed more than {CALL_BUDGET} requests for one score")
        limit = settings.LTI_SERVICE_TIMEOUT_SECONDS
        kwargs.update(timeout=(limit, limit), allow_redirects=False, stream=True)
        deadline = time.monotonic() + limit
        try:
            response = super().request(method, url, *args, **kwargs)
        except requests.RequestException as error:  # timeouts, refused connections, broken answers
            raise PlatformUnavailable(f"the LMS did not answer: {type(error).__name__}") from None
        try:
            response._content = self._read(response, deadline)  # what .json() and .text read
        finally:
            response.close()
        if response.is_redirect or 300 <= response.status_code < 400:
            # pylti1p3 takes any status below 400 for success: a redirect is no score taken.
            raise PlatformRefused(f"the LMS answered a redirect ({response.status_code}), not followed")
        sent_type = (kwargs.get("headers") or {}).get("Content-Type", "")
        if sent_type == SCORE_TYPE and response.ok:
            response._content = b""  # a taken score's answer carries nothing we use, readable or not
        return response

    @staticmethod
    def _read(response: requests.Response, deadline: float) -> bytes:
        cap = settings.LTI_SERVICE_MAX_BYTES
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > cap:
            raise PlatformRefused(f"the LMS answered {int(declared)} bytes (the limit is {cap})")
        body = bytearray()
        try:
            for chunk in response.iter_content(16 * 1024):
                body += chunk
                if len(body) > cap:
                    raise PlatformRefused(f"the LMS answered more than {cap} bytes")
                if time.monotonic() > deadline:
                    raise PlatformUnavailable("the LMS answered too slowly")
        except requests.RequestException as error:
            raise PlatformUnavailable(f"the LMS's answer broke off: {type(error).__name__}") from None
        return bytes(body)


@dataclass
class _Token:
    value: str
    expires: float


_tokens: dict[tuple[int, tuple[str, ...]], _Token] = {}
_tokens_lock = threading.Lock()


def forget_tokens(registration_pk: int | None = None) -> None:
    """Drop cached tokens (one registration's, or all): a 401 means the platform no longer takes ours."""
    with _tokens_lock:
        for key in [k for k in _tokens if registration_pk is None or k[0] == registration_pk]:
            del _tokens[key]


class Connector(ServiceConnector):
    """pylti1p3's connector, with the access token kept until it expires and the token
    endpoint's answer checked (pylti1p3 keeps a token for the life of the object, unchecked)."""

    def __init__(self, registration: LtiRegistration, session: BoundedSession) -> None:
        config = DjangoToolConfig()
        try:
            tool_registration = config.find_registration_by_params(registration.issuer, registration.client_id)
        except Key.DoesNotExist:
            raise PlatformRefused("the grader has no signing key yet (grader service keys)") from None
        if tool_registration is None:
            raise PlatformRefused("the LMS's registration is not active")
        super().__init__(tool_registration, requests_session=session)
        self.registration_pk = int(registration.pk)
        self.session = session

    def get_access_token(self, scopes: Iterable[str]) -> str:
        key = (self.registration_pk, tuple(sorted(set(scopes))))
        now = time.time()
        with _tokens_lock:
            cached = _tokens.get(key)
            if cached is not None and cached.expires > now:
                return cached.value
        value, lifetime = self._request_token(key[1])
        with _tokens_lock:
            _tokens[key] = _Token(value, now + lifetime - TOKEN_MARGIN_SECONDS)
        return value

    def _request_token(self, scopes: tuple[str, ...]) -> tuple[str, int]:
        registration = self._registration
        token_url, private_key = registration.get_auth_token_url(), registration.get_tool_private_key()
        if not token_url or not private_key:
            raise PlatformRefused("the LMS's registration has no token URL or the tool no key")
        client_id = str(registration.get_client_id())
        now = int(time.time())
        # RFC 7523 client assertion: issued by and about the tool, for the platform's token endpoint.
        assertion: dict[str, str | int] = {
            "iss": client_id,
            "sub": client_id,
            "aud": registration.get_auth_audience() or token_url,
            "iat": now - 5,
            "exp": now + 60,
            "jti": f"grader-{uuid.uuid4()}",
        }
        kid = registration.get_kid()
        signed = self.encode_jwt(assertion, private_key, {"kid": kid} if kid else {})
        form = {
            "grant_type": "client_credentials",
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": signed,
            "scope": " ".join(scopes),
        }
        answer = self.session.post(token_url, data=form)
        # The token endpoint's 401 is a refusal of our registration, not an expired token of ours.
        check_status(answer, "the token endpoint", retry_401=False)
        try:
            body = answer.json()
        except ValueError:
            raise PlatformRefused("the LMS's token endpoint answered something that is not JSON") from None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN_CHARS or not token.isprintable():
            raise PlatformRefused("the LMS's token endpoint gave no usable access token")
        lifetime = body.get("expires_in", 3600)
        if not isinstance(lifetime, int) or isinstance(lifetime, bool):
            lifetime = 3600
        return token, min(max(lifetime, 0), MAX_TOKEN_SECONDS)


def check_status(response: requests.Response, what: str, *, retry_401: bool = True) -> None:
    status = response.status_code
    if status >= 500 or status in (408, 429) or (status == 401 and retry_401):
        raise PlatformUnavailable(f"{what} answered {status}", status)
    if status >= 400 or status < 200 or status >= 300:
        raise PlatformRefused(f"{what} answered {status}: {_said(response)}")


def _said(response: requests.Response) -> str:
    text = response.content[:300].decode("utf-8", "replace")
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())[:200] or "(no reason given)"


@dataclass(frozen=True)
class Gradebook:
    """What a push needs to know of one LMS gradebook."""

    registration: LtiRegistration
    lineitems_url: str
    scopes: tuple[str, ...]


def _service(gradebook: Gradebook, lineitem_url: str = "") -> tuple[AssignmentsGradesService, Connector]:
    session = BoundedSession(allowed_origins(gradebook.registration))
    connector = Connector(gradebook.registration, session)
    # The scopes are the known AGS ones only (kept so at the launch).
    data: TAssignmentsGradersData = {"scope": list(gradebook.scopes), "lineitems": gradebook.lineitems_url}  # type: ignore[arg-type]
    if lineitem_url:
        data["lineitem"] = lineitem_url
    return AssignmentsGradesService(connector, data), connector


def _translated(call: Any, *args: Any, **kwargs: Any) -> Any:
    """A pylti1p3 call, its failures in our two kinds."""
    try:
        return call(*args, **kwargs)
    except LtiServiceException as error:
        check_status(error.response, "the LMS")
        raise PlatformRefused(f"the LMS answered {error.response.status_code}") from None
    except LtiException as error:
        raise PlatformRefused(f"the LMS's answer could not be used: {str(error)[:200]}") from None
    except ValueError:  # a body that is not JSON
        raise PlatformRefused("the LMS answered something that is not JSON") from None


def find_or_create_line_item(gradebook: Gradebook, resource_id: str, label: str, tag: str) -> str:
    """The URL of the gradebook's column for this resource id: found, else created (label,
    scoreMaximum 100, resourceId, tag)."""
    if not gradebook.lineitems_url:
        raise PlatformRefused("the LMS gave no line items URL and no line item for this assignment")
    if LINEITEM not in gradebook.scopes and LINEITEM_READONLY not in gradebook.scopes:
        raise PlatformRefused("the LMS does not let the grader see or create gradebook columns")
    if not on_platform(gradebook.lineitems_url, gradebook.registration):
        raise PlatformRefused("the LMS's line items URL is not on its registered host: not sent")
    service, _ = _service(gradebook)
    wanted = LineItem().set_label(label[:200]).set_score_maximum(100).set_resource_id(resource_id).set_tag(tag)
    found = _translated(service.find_or_create_lineitem, wanted, find_by="resource_id")
    url = found.get_id()
    if not on_platform(url, gradebook.registration):
        raise PlatformRefused("the LMS's line item is not on its registered host: not used")
    return str(url)


@dataclass(frozen=True)
class Score:
    user_id: str
    score_given: float | None
    score_maximum: float
    activity_progress: str
    grading_progress: str
    timestamp: str
    comment: str


def post_score(gradebook: Gradebook, lineitem_url: str, score: Score) -> None:
    """POST one score document to ``<line item>/scores``."""
    if SCORE not in gradebook.scopes:
        raise PlatformRefused("the LMS does not accept scores from the grader (no score scope)")
    if not on_platform(lineitem_url, gradebook.registration):
        raise PlatformRefused("the line item is not on the LMS's registered host: not sent")
    grade = (
        Grade()
        .set_user_id(score.user_id)
        .set_score_maximum(score.score_maximum)
        .set_activity_progress(score.activity_progress)
        .set_grading_progress(score.grading_progress)
        .set_timestamp(score.timestamp)
        .set_comment(score.comment)
    )
    if score.score_given is not None:
        grade.set_score_given(score.score_given)
    service, connector = _service(gradebook, lineitem_url)
    try:
        _translated(service.put_grade, grade)
    except PlatformUnavailable as error:
        if error.status == 401:  # our token may have been revoked: the retry asks for a new one
            forget_tokens(connector.registration_pk)
        raise
