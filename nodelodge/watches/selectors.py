"""Reads of watches: a user's list, a watch's firings, the feed."""
from __future__ import annotations

from .models import Firing, Watch

FEED_ENTRIES = 50


def watches_of(owner):
    return Watch.objects.filter(owner=owner).order_by("-created_at", "-pk")


def watch_by_feed_token(token: str) -> Watch | None:
    return Watch.objects.filter(feed_token=token).first()


def watch_by_unsubscribe_token(token: str) -> Watch | None:
    return Watch.objects.filter(unsubscribe_token=token).first()


def recent_firings(watch: Watch, limit: int = FEED_ENTRIES):
    return list(Firing.objects.filter(watch=watch).order_by("-fired_at", "-pk")[:limit])
