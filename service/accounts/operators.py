"""What a fresh machine needs before an LMS can be registered: the tool's signing key, and a
site operator's account for the admin (``grader service keys`` and ``grader service admin``)."""

from __future__ import annotations

import io
import secrets

from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import transaction
from lti_tool.models import Key

from ..lti.claims import LTI_PREFIX
from .throttle import unlock


class OperatorError(Exception):
    """A refusal, in words for the command line."""


def rotate_signing_key() -> tuple[str, int]:
    """A new active key through django-lti's rotate_keys; (its key id, keys now retired).

    rotate_keys reports a database error only on its output, so the outcome is checked here."""
    before = Key.objects.filter(is_active=True).count()
    newest = Key.objects.order_by("-datetime_created", "-pk").values_list("pk", flat=True).first()
    said = io.StringIO()
    call_command("rotate_keys", stdout=said)
    key = Key.objects.order_by("-datetime_created", "-pk").first()
    if key is None or key.pk == newest or not key.is_active:
        raise OperatorError(f"no new signing key was made: {said.getvalue().strip() or 'rotate_keys said nothing'}")
    retired = before + 1 - Key.objects.filter(is_active=True).count()
    return str(key), retired


def set_operator(username: str, *, promote: bool = False) -> tuple[bool, str]:
    """Create superuser ``username`` or reset its password: (created, the new password).

    An account that exists and is not a superuser (a student's, an instructor's) is refused
    unless ``promote`` says to make it an operator: a typo must not hand a student the admin."""
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError as error:
        raise OperatorError(f"{username!r}: {' '.join(error.messages)}") from None
    if len(username) > 150:
        raise OperatorError("a username has at most 150 characters")
    if username.startswith(LTI_PREFIX):
        raise OperatorError(f"{LTI_PREFIX}... names belong to accounts made by LMS launches")
    password = secrets.token_urlsafe(18)
    with transaction.atomic():
        user = User.objects.select_for_update().filter(username=username).first()
        made = user is None
        if user is None:
            user = User(username=username)
        elif not user.is_superuser and not promote:
            raise OperatorError(f"{username} exists and is not a site operator: not touched (--promote makes it one)")
        try:
            validate_password(password, user)
        except ValidationError as error:  # a drawn password always passes; the validators are the operator's
            raise OperatorError(" ".join(error.messages)) from None
        user.is_staff = user.is_superuser = user.is_active = True
        user.set_password(password)
        user.save()
    unlock(username)  # a reset is for an operator who cannot sign in: failed attempts are forgotten too
    return made, password
