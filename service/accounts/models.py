"""API tokens and the token bucket behind every rate limit."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

TOKEN_PREFIX = "agt_"  # grep-able when a token leaks
LOOKUP_CHARS = 8
TOKEN_SHAPE = re.compile(rf"{TOKEN_PREFIX}[A-Za-z0-9_-]{{{LOOKUP_CHARS},96}}")  # secrets.token_urlsafe's alphabet


def _digest(token: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), token.encode(), hashlib.sha256).hexdigest()


class ApiToken(models.Model):
    """A per-user API token. Only a lookup prefix and an HMAC are stored; the token itself is
    shown once, when made."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    lookup = models.CharField(max_length=LOOKUP_CHARS, unique=True)
    digest = models.CharField(max_length=64)
    created = models.DateTimeField(default=timezone.now)
    last_used = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{TOKEN_PREFIX}{self.lookup}… ({self.user})"

    @classmethod
    def issue(cls, user: models.Model) -> str:
        """A new token for ``user``; the only time its text exists outside the client."""
        while True:
            body = secrets.token_urlsafe(30)
            token = TOKEN_PREFIX + body
            if not cls.objects.filter(lookup=body[:LOOKUP_CHARS]).exists():
                cls.objects.create(user=user, lookup=body[:LOOKUP_CHARS], digest=_digest(token))
                return token

    @classmethod
    def authenticate(cls, token: str) -> ApiToken | None:
        if not TOKEN_SHAPE.fullmatch(token):
            return None  # what issue() never makes is looked up nowhere
        body = token[len(TOKEN_PREFIX) :]
        found = cls.objects.select_related("user").filter(lookup=body[:LOOKUP_CHARS]).first()
        if found is None or not hmac.compare_digest(found.digest, _digest(token)):
            return None
        if not found.user.is_active:
            return None
        cls.objects.filter(pk=found.pk).update(last_used=timezone.now())
        return found


class TokenBucket(models.Model):
    """One bucket per key: ``tokens`` left at ``updated``, refilled continuously."""

    key = models.CharField(max_length=120, primary_key=True)
    tokens = models.FloatField()
    updated = models.DateTimeField()

    @classmethod
    def take(cls, key: str, capacity: int, window: timedelta) -> float:
        """Take one token; 0 when allowed, else the seconds until one is back. Under a row
        lock: the limit is a policy students can see, so races must not exceed it."""
        now = timezone.now()
        rate = capacity / window.total_seconds()
        with transaction.atomic():
            bucket, _ = cls.objects.select_for_update().get_or_create(
                key=key, defaults={"tokens": float(capacity), "updated": now}
            )
            tokens = min(float(capacity), bucket.tokens + (now - bucket.updated).total_seconds() * rate)
            if tokens < 1.0:
                return (1.0 - tokens) / rate
            bucket.tokens, bucket.updated = tokens - 1.0, now
            bucket.save(update_fields=["tokens", "updated"])
            return 0.0

    @staticmethod
    def submit_key(user_id: int, assignment_id: int) -> str:
        return f"submit:{assignment_id}:{user_id}"

    @staticmethod
    def self_check_key(user_id: int, assignment_id: int) -> str:
        # Per student and assignment: the limit that staff announce ("10 self-checks per 10 minutes").
        return f"selfcheck:{assignment_id}:{user_id}"
