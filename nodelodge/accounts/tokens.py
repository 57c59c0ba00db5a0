"""API tokens for scripts: made in My launches, shown once, stored as their SHA-256 only."""
from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone

from .models import ApiToken

PREFIX = "nlt_"
MAX_TOKENS_PER_USER = 10


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(owner) -> tuple[ApiToken, str]:
    """A new token for `owner`: the row and the token itself (shown once, never stored)."""
    token = PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(owner=owner, digest=digest(token), prefix=token[:10])
    for old in ApiToken.objects.filter(owner=owner).order_by("-created_at", "-pk")[MAX_TOKENS_PER_USER:]:
        old.delete()
    return row, token


def revoke(owner, token_id: int) -> bool:
    return ApiToken.objects.filter(owner=owner, pk=token_id).delete()[0] > 0


def user_for(token: str):
    """The active user a token belongs to, or None."""
    if not token.startswith(PREFIX) or len(token) > 100:
        return None
    row = ApiToken.objects.select_related("owner").filter(digest=digest(token)).first()
    if row is None or not row.owner.is_active:
        return None
    ApiToken.objects.filter(pk=row.pk).update(last_used_at=timezone.now())
    return row.owner
