"""An LMS for the grade passback tests, made of lti1p3platform's parts and served on loopback.

lti1p3platform validates the tool's client assertion against the tool's key set and signs the
access tokens (``LTI1P3PlatformConfAbstract.get_access_token``), and checks the bearer token and
its scopes on every AGS call (``AssignmentsGradesService.handle_*``). It serves no HTTP itself:
the handler here turns requests into its calls, keeps line items and scores in memory, serves
the platform's key set for launches, and can misbehave on demand (5xx, 4xx, a silent token
endpoint, a huge or malformed body).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request, TRequest
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService, TPage


class PlatformConf(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs: Any) -> None:
        self._registration = kwargs["registration"]

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        return self._registration


@dataclass
class Gradebook:
    """The platform's state, and what it should do wrong."""

    base: str = ""
    line_items: dict[str, dict[str, Any]] = field(default_factory=dict)
    scores: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (line item id, score) as taken
    answered: list[tuple[str, str, int]] = field(default_factory=list)  # (method, path, status) of every request
    tokens_issued: int = 0
    fail_scores: int = 0  # answer the next N score posts with 503
    refuse_users: set[str] = field(default_factory=set)  # score posts for these userIds get 400
    hang_token: bool = False  # the token endpoint never answers
    huge_lineitems: bool = False  # line item listing answers 50 MB
    malformed_lineitems: bool = False  # line item listing answers bad JSON
    redirect_scores: str = ""  # score posts are redirected there
    lock: threading.Lock = field(default_factory=threading.Lock)

    def taken_for(self, user_id: str) -> list[dict[str, Any]]:
        return [score for _, score in self.scores if score.get("userId") == user_id]


class _Ags(AssignmentsGradesService):
    gradebook: Gradebook

    def find_lineitems(self, page: int = 1, limit: int | None = None, **filters: Any) -> TPage:
        items = list(self.gradebook.line_items.values())
        for name, key in (("resource_id", "resourceId"), ("tag", "tag"), ("resource_link_id", "resourceLinkId")):
            if filters.get(name):
                items = [i for i in items if i.get(key) == filters[name]]
        return {"content": items, "has_next": False}

    def find_lineitem(self, line_item_id: str) -> Any:
        return self.gradebook.line_items[line_item_id]

    def create_lineitem(self, creation_data: Any) -> Any:
        item = dict(creation_data)
        item["id"] = f"{self.gradebook.base}/lineitems/{len(self.gradebook.line_items) + 1}"
        self.gradebook.line_items[item["id"]] = item
        return item

    def update_lineitem(self, update_data: Any) -> Any:
        raise NotImplementedError

    def delete_lineitem(self, line_item_id: str) -> None:
        raise NotImplementedError

    def update_score(self, line_item_id: str, score: Any) -> UpdateScoreStatus:
        earlier = [s for li, s in self.gradebook.scores if li == line_item_id and s["userId"] == score["userId"]]
        if earlier and earlier[-1]["timestamp"] >= score["timestamp"]:
            return UpdateScoreStatus.OLD_TIMESTAMP
        self.gradebook.scores.append((line_item_id, score))
        return UpdateScoreStatus.SUCCESS

    def get_results(self, line_item_id: str, page: int = 1, limit: int | None = None, user_id: Any = None) -> TPage:
        raise NotImplementedError


class _Request(Request):
    def build_metadata(self, request: Any) -> TRequest:
        handler, body = request
        parts = urlsplit(handler.path)
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()} if body and b"=" in body[:200] else {}
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        return {
            "method": handler.command,
            "form_data": form,
            "get_data": {k: v[0] for k, v in parse_qs(parts.query).items()},
            "headers": dict(handler.headers),
            "content_type": handler.headers.get("Content-Type"),
            "path": parts.path,
            "json": parsed,
        }


@dataclass
class Lms:
    base: str
    gradebook: Gradebook
    conf: PlatformConf
    key: rsa.RSAPrivateKey


def _handler(lms_box: list[Lms], kid: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self, status: int, body: bytes = b"", content_type: str = "application/json") -> None:
            lms = lms_box[0]
            lms.gradebook.answered.append((self.command, self.path, status))
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _flood(self) -> None:
            """50 MB of a JSON list, with no length announced: the tool must stop reading on its own."""
            lms_box[0].gradebook.answered.append((self.command, self.path, 200))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                self.wfile.write(b"[")
                for _ in range(50):
                    self.wfile.write(b" " * (1024 * 1024))
            except OSError:
                pass  # the tool hung up: as it should

        def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
            self._serve(b"")

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            self._serve(self.rfile.read(length))

        def _serve(self, body: bytes) -> None:
            lms = lms_box[0]
            book = lms.gradebook
            path = urlsplit(self.path).path
            if path == "/jwks":
                jwk = json.loads(RSAAlgorithm.to_jwk(lms.key.public_key()))
                jwk.update(kid=kid, alg="RS256", use="sig")
                return self._answer(200, json.dumps({"keys": [jwk]}).encode())
            if path == "/token":
                if book.hang_token:
                    time.sleep(30)  # longer than the tool waits; the server thread is a daemon
                    return None
                form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
                try:
                    token = lms.conf.get_access_token(form)
                except Exception as error:  # lti1p3platform raises several kinds for a bad assertion
                    return self._answer(400, json.dumps({"error": "invalid_client", "why": str(error)}).encode())
                book.tokens_issued += 1
                return self._answer(200, json.dumps(token).encode())
            service = _Ags(_Request((self, body)), lms.conf, f"{lms.base}/lineitems")
            service.gradebook = book
            with book.lock:
                if path == "/lineitems" and self.command == "GET":
                    if book.huge_lineitems:
                        return self._flood()
                    if book.malformed_lineitems:
                        return self._answer(200, b"[{not json")
                    response = service.handle_resp(service.handle_get_lineitems)
                    if response.code == 200:
                        response.result = response.result["content"]
                elif path == "/lineitems" and self.command == "POST":
                    response = service.handle_resp(service.handle_create_lineitem)
                elif path.startswith("/lineitems/") and path.endswith("/scores"):
                    line_item_id = lms.base + path.removesuffix("/scores")
                    score = json.loads(body or b"{}")
                    if book.redirect_scores:
                        self.send_response(307)
                        self.send_header("Location", book.redirect_scores)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        book.answered.append((self.command, self.path, 307))
                        return None
                    if book.fail_scores > 0:
                        book.fail_scores -= 1
                        return self._answer(503, b"down for maintenance", "text/plain")
                    if score.get("userId") in book.refuse_users:
                        return self._answer(400, b'{"error": "user not in this course"}')
                    try:
                        response = service.handle_resp(service.handle_update_score, line_item_id=line_item_id)
                    except Exception:  # a token that does not verify
                        return self._answer(401, b'{"error": "invalid token"}')
                else:
                    return self._answer(404, b"{}")
            result = b"" if response.result is None else json.dumps(response.result).encode()
            return self._answer(response.code, result, response.media_type)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            pass

    return Handler


@contextmanager
def serve_lms(
    key: rsa.RSAPrivateKey, issuer: str, client_id: str, tool_jwks: dict[str, Any], kid: str, host: str = "127.0.0.1"
) -> Iterator[Lms]:
    """The platform on a free port of ``host``, until the block ends."""
    box: list[Lms] = []
    server = ThreadingHTTPServer((host, 0), _handler(box, kid))
    server.daemon_threads = True
    base = f"http://{host}:{server.server_port}"
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    registration = (
        Registration()
        .set_iss(issuer)
        .set_client_id(client_id)
        .set_platform_private_key(pem.decode())
        .set_platform_public_key(public.decode())
        .set_tool_key_set(tool_jwks)
    )
    box.append(Lms(base, Gradebook(base=base), PlatformConf(registration=registration), key))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield box[0]
    finally:
        server.shutdown()
        server.server_close()
