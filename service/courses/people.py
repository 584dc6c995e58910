"""How staff pages name a person: first and last name (from the LMS's launch or roster), the
username kept beside it (on hover, and in its own column where there is room)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser


def full_name(user: AbstractBaseUser) -> str:
    """ "First Last", or the username when the account has no name."""
    first, last = getattr(user, "first_name", ""), getattr(user, "last_name", "")
    return f"{first} {last}".strip() or user.get_username()


def labelled(user: AbstractBaseUser) -> str:
    """ "First Last (username)" for text without hover (audit entries, reports), the username
    alone when that is all there is."""
    name = full_name(user)
    return name if name == user.get_username() else f"{name} ({user.get_username()})"
