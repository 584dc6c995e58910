"""Refuse an oversized or unsized request body before anything reads it.

Django's CSRF check reads the whole form, files included, spooling them to disk, before any
view runs; so the cap must come first, on the declared length alone."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

FORM_OVERHEAD = 64 * 1024  # multipart boundaries and the other fields of the largest form
ROSTER_BYTES = 1024 * 1024


def body_cap() -> int:
    return max(settings.MAX_UPLOAD_BYTES, ROSTER_BYTES) + FORM_OVERHEAD


class BodyLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        declared = request.META.get("CONTENT_LENGTH") or ""
        chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not declared:
            return self._refuse(request, 411, "send the upload with a Content-Length")
        if declared:
            try:
                length = int(declared)
            except ValueError:
                return self._refuse(request, 400, "the Content-Length is not a number")
            if length > body_cap():
                kib = settings.MAX_UPLOAD_BYTES // 1024
                return self._refuse(request, 413, f"the upload is larger than {kib} KiB")
        return self.get_response(request)

    @staticmethod
    def _refuse(request: HttpRequest, status: int, message: str) -> HttpResponse:
        if request.path.startswith("/api/"):
            return JsonResponse({"error": message}, status=status)
        return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
