"""The signed-in user of a request, typed (views behind login or a token only)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import Http404, HttpRequest


def signed_in(request: HttpRequest) -> User:
    user = request.user
    if not isinstance(user, User) or not user.is_active:
        raise Http404  # never reached behind login_required or token_required
    return user
