"""Per-client rate limit for the wizard's pages (the page and its HTMX partials).

`PAGE_RATE_LIMIT` ("240/min"; empty or "off" turns it off) is read on every request. A person's
busiest minute, typing a model's name (each key a search) and turning pages, stays well under 60
requests; 240 leaves room for several people behind one office address, while one client looping on
pages makes 400 or more a minute. A later page of the machine list counts as the first pages it costs
(`throttling.request_cost`): page 40 counts 40. Past it the page answers 429 in its own language with
`Retry-After`. The client is `proxies.client_address`, as for the API's limit.

Counts live in the default cache, one counter per address and window, raised atomically
(`add` then `incr`), so concurrent requests cannot slip past it. When the cache cannot be reached
(or its circuit breaker is open, `cache_breaker.py`) the page answers without a limit and logs why.
"""
from __future__ import annotations

import functools
import logging
import time
from typing import cast

from django.core.cache import cache
from django.utils.translation import gettext_lazy

from sizing.limits import PAGE_LIMIT

from .proxies import client_address
from .throttling import read_rate, request_cost, too_many_requests_page

logger = logging.getLogger("nodelodge.throttling")

def current_rate() -> tuple[int, int, str] | None:
    """(requests, seconds, the period as written) or None when the limit is off."""
    return read_rate("PAGE_RATE_LIMIT")


def wait_before_next(request) -> float | None:
    """Counts this request; the seconds to wait when it is past the limit, else None."""
    rate = current_rate()
    if rate is None:
        return None
    allowed, duration, _ = rate
    now = time.time()
    window = int(now // duration)
    key = f"page-rate:{client_address(request) or 'unknown'}:{window}"
    try:
        cache.add(key, 0, duration + 1)
        # A page that costs more than the whole rate is still let through in a fresh window.
        made = cache.incr(key, min(request_cost(request, PAGE_LIMIT), allowed))
    except Exception as error:  # any cache failure: serve rather than refuse
        logger.warning("page rate limit skipped, cache unavailable: %s", error)
        return None
    if made <= allowed:
        return None
    return (window + 1) * duration - now


PAGE_MESSAGE = gettext_lazy("Too many requests from this client: at most %(count)s per %(period)s.")


def too_many_requests(request, wait: float):
    limit = cast(tuple[int, int, str], current_rate())  # a request is refused only under a limit
    return too_many_requests_page(request, PAGE_MESSAGE, limit, wait)


def page_rate_limited(view):
    """Answers 429 past PAGE_RATE_LIMIT for this client, before the view computes anything."""

    @functools.wraps(view)
    def limited(request, *args, **kwargs):
        wait = wait_before_next(request)
        if wait is not None:
            return too_many_requests(request, wait)
        return view(request, *args, **kwargs)

    return limited
