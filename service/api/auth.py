"""The one way an API request is authenticated: ``Authorization: Token agt_...``."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from ..accounts.models import ApiToken

View = Callable[..., HttpResponse]


def error(status: int, message: str, retry_after: int = 0) -> JsonResponse:
    response = JsonResponse({"error": message}, status=status)
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response


def token_required(view: View) -> View:
    """Only token-authenticated routes skip CSRF: no cookie ever authenticates them."""

    @csrf_exempt
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        found = ApiToken.authenticate(token.strip()) if scheme == "Token" else None
        if found is None:
            return error(401, "missing or invalid token (send Authorization: Token <token>)")
        request.user = found.user
        return view(request, *args, **kwargs)

    return wrapper
