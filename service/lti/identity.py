"""The Django user behind a launch: found through django-lti's LtiUser, else made once from the
platform's issuer and the user's ``sub``."""

from __future__ import annotations

from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from lti_tool.models import LtiUser

from .claims import Claims, email, names, username_for


class AccountRefused(Exception):
    """A launch for an account that a platform may not sign in."""


def user_for_launch(lti_user: LtiUser, issuer: str, sub: str, claims: Claims) -> User:
    """The user for this platform identity, created on its first launch; name and email follow the
    platform's latest claims. Call inside a transaction.

    An operator may link an LtiUser to an existing account in the admin (its auth user); it is then
    honoured. Staff and superuser accounts are never signed in by a platform: a registered LMS
    vouches for its course members, not for the operators of this service.
    """
    user: User | None = lti_user.auth_user
    if user is None:
        user, _ = User.objects.get_or_create(
            username=username_for(issuer, lti_user.registration.client_id, sub),
            defaults={"password": make_password(None)},  # unusable: this account signs in through the LMS
        )
        lti_user.auth_user = user
        lti_user.save(update_fields=["auth_user", "datetime_modified"])
    if not user.is_active or user.is_staff or user.is_superuser:
        raise AccountRefused("This account cannot be signed in from an LMS; sign in with its password instead.")
    first, last = names(claims)
    wanted = {"first_name": first, "last_name": last, "email": email(claims)}
    changed = [field for field, value in wanted.items() if value and getattr(user, field) != value]
    for field in changed:
        setattr(user, field, wanted[field])
    if changed:
        user.save(update_fields=changed)
    return user
