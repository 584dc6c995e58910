"""System checks for LTI launches (run by manage.py migrate and check)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Tags, Warning, register

# Backends that cull at MAX_ENTRIES. A day of launches keeps about five rows per launch.
_CULLING = ("DatabaseCache", "LocMemCache", "FileBasedCache")
_ENOUGH = 10_000


@register(Tags.caches)
def launch_state_fits_in_the_cache(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[CheckMessage]:
    default: dict[str, object] = dict(settings.CACHES.get("default", {}))
    backend = str(default.get("BACKEND", ""))
    if backend.endswith(("LocMemCache", "DummyCache")):
        return [
            Warning(
                "LTI launch state is kept in a per-process (or no) cache: a launch fails whenever its two "
                "requests reach different web processes.",
                hint="Use the database cache for CACHES['default'].",
                id="service_lti.W001",
            )
        ]
    options = default.get("OPTIONS")
    limit = options.get("MAX_ENTRIES", 300) if isinstance(options, dict) else 300  # Django's default
    if backend.endswith(_CULLING) and int(limit) < _ENOUGH:
        return [
            Warning(
                "The default cache culls at fewer than 10000 entries; LTI launches in flight would be dropped.",
                hint="Set CACHES['default']['OPTIONS']['MAX_ENTRIES'] (CACHE_MAX_ENTRIES) to 10000 or more.",
                id="service_lti.W002",
            )
        ]
    return []
