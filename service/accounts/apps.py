from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "service.accounts"
    label = "accounts"
