"""Refuse text no page can use before anything reads it: bytes that are not UTF-8 in the path,
the query string or a urlencoded form, and a NUL character there or in a header or cookie.

PostgreSQL cannot store or compare a NUL in a text column (it answers an error, which would be
a 500), and Django silently turns broken UTF-8 into replacement characters. Each form field's
own length and type are still checked where it is read; this is the floor under them.
Multipart bodies are left to their views (their files are data, their other fields are
compared with fixed choices), so an API upload is not parsed before its token is checked.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

URLENCODED = "application/x-www-form-urlencoded"


def _text_problem(raw: bytes, where: str) -> str:
    """What is wrong with these bytes as text ("" if nothing)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return f"the {where} is not UTF-8 text"
    if "\x00" in text:
        return f"the {where} contains a NUL character"
    return ""


def _form_bytes(encoded: bytes) -> bytes:
    """A query string or urlencoded form as the bytes its escapes stand for."""
    return unquote_to_bytes(encoded.replace(b"+", b" "))


def problem(request: HttpRequest) -> str:
    """Why this request cannot be served ("" if it can). WSGI gives every environ string as
    Latin-1, one character per byte received, so encoding back gives the bytes sent."""
    meta = request.META
    path = str(meta.get("PATH_INFO", "")).encode("latin-1", "replace")
    said = _text_problem(path, "address")
    if not said:
        query = str(meta.get("QUERY_STRING", "")).encode("latin-1", "replace")
        said = _text_problem(_form_bytes(query), "query string")
    if not said:
        # Headers may be Latin-1 by HTTP's old rules (a browser's User-Agent, a Referer), so
        # only a NUL is refused there; what a header carries is checked where it is used.
        headers = (name[5:] for name, value in meta.items() if name.startswith("HTTP_") and "\x00" in str(value))
        said = next((f"the {name.replace('_', '-').title()} header contains a NUL character" for name in headers), "")
    if not said and any("\x00" in key + value for key, value in request.COOKIES.items()):
        said = "a cookie contains a NUL character"
    if not said and request.method == "POST" and request.content_type == URLENCODED:
        said = _text_problem(_form_bytes(request.body), "form")
    return said


class RequestShapeMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        said = problem(request)
        if not said:
            return self.get_response(request)
        if request.path_info.startswith("/api/"):
            return JsonResponse({"error": said}, status=400)
        page = render_to_string("bad_request.html", {"message": said}, request)
        return HttpResponse(page, status=400)
