"""Settings for the test suite: the service's own, with a fixed test key. The database is a
private cluster each test session starts (tests/service/conftest.py)."""

from __future__ import annotations

import os

os.environ.setdefault("SECRET_KEY", "test-secret-key-used-only-by-the-test-suite")
os.environ.setdefault("DATABASE_URL", "postgresql://postgres@127.0.0.1:1/unset")
# The tests' platforms listen on loopback over plain http.
os.environ.setdefault("LTI_ALLOW_HTTP", "True")

from .settings import *  # noqa: E402,F403
