"""Every error under /api/ answers JSON (``{"error": ...}``), Django's own 404 and 405 included."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus

from django.http import HttpRequest, HttpResponse

from .auth import error

PREFIX = "/api/"
_KEPT = ("Allow", "Retry-After")  # what a client needs to act on the error


class ApiErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.path.startswith(PREFIX) or response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        try:
            phrase = HTTPStatus(response.status_code).phrase.lower()
        except ValueError:
            phrase = "error"
        message = {404: "no such resource", 405: f"method {request.method} not allowed here"}.get(
            response.status_code, phrase
        )
        replaced = error(response.status_code, message)
        for header in _KEPT:
            if header in response:
                replaced[header] = response[header]
        return replaced
