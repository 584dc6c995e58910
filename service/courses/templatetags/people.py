"""``{% person user %}``: a person's name, their username on hover."""

from __future__ import annotations

from django import template
from django.contrib.auth.models import AbstractBaseUser
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..people import full_name

register = template.Library()


@register.simple_tag
def person(user: AbstractBaseUser) -> SafeString:
    return format_html('<span title="{}">{}</span>', user.get_username(), full_name(user))
