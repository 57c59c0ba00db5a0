"""Rate limits on the pages that send e-mail to an address anyone may type: sign-up and password
reset. Without them one client could make the console mail any number of strangers.

- Sign-up: `SIGNUP_RATE_LIMIT` per client address ("10/hour").
- Password reset: `PASSWORD_RESET_RATE_LIMIT` per client address ("10/hour"), and
  `PASSWORD_RESET_EMAIL_RATE_LIMIT` per e-mail address asked for ("3/hour"), so that many clients
  together cannot flood one mailbox either.

Only the POST that would send mail is counted; the forms themselves stay free to open. Past a limit
the page answers 429 in its own language, saying the limit, with `Retry-After`. The client is
`proxies.client_address`, as for the other limits; "off" turns a limit off. Counts live in the
default cache, raised atomically (add, then incr), one window per key starting at its first
request; with the cache unreachable the page answers without a limit and logs why.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import time
from typing import cast

from django.core.cache import cache
from django.utils.translation import gettext_lazy

from .proxies import client_address
from .throttling import read_rate, too_many_requests_page

logger = logging.getLogger("nodelodge.throttling")

DEFAULTS = {
    "SIGNUP_RATE_LIMIT": "10/hour",
    "PASSWORD_RESET_RATE_LIMIT": "10/hour",
    "PASSWORD_RESET_EMAIL_RATE_LIMIT": "3/hour",
}
SIGNUP_MESSAGE = gettext_lazy("Too many sign-ups from this client: at most %(count)s per %(period)s.")
RESET_CLIENT_MESSAGE = gettext_lazy(
    "Too many password reset requests from this client: at most %(count)s per %(period)s."
)
RESET_EMAIL_MESSAGE = gettext_lazy(
    "Too many password reset requests for this email address: at most %(count)s per %(period)s."
)


def rate(setting: str) -> tuple[int, int, str] | None:
    """(requests, seconds, the period as written), or None when the limit is off."""
    return read_rate(setting, DEFAULTS[setting])


def wait_before_next(scope: str, who: str, setting: str) -> float | None:
    """Counts one request of `who`; the seconds to wait when it is past the limit, else None."""
    limit = rate(setting)
    if limit is None:
        return None
    allowed, duration, _ = limit
    now = time.time()
    key = f"mail-rate:{scope}:{hashlib.sha256(who.encode('utf-8', 'replace')).hexdigest()}"
    try:
        cache.add(key, now, duration)
        start = cache.get(key) or now
        window_key = f"{key}:{start!r}"
        cache.add(window_key, 0, duration + 1)
        made = cache.incr(window_key)
    except Exception as error:  # any cache failure: serve rather than refuse
        logger.warning("%s rate limit skipped, cache unavailable: %s", scope, error)
        return None
    return None if made <= allowed else start + duration - now


def refused(request, message, setting: str, wait: float):
    limit = cast(tuple[int, int, str], rate(setting))  # a request is refused only under a limit
    return too_many_requests_page(request, message, limit, wait)


def signup_rate_limited(view):
    @functools.wraps(view)
    def limited(request, *args, **kwargs):
        if request.method == "POST":
            wait = wait_before_next("signup", client_address(request) or "unknown", "SIGNUP_RATE_LIMIT")
            if wait is not None:
                return refused(request, SIGNUP_MESSAGE, "SIGNUP_RATE_LIMIT", wait)
        return view(request, *args, **kwargs)

    return limited


def password_reset_rate_limited(view):
    @functools.wraps(view)
    def limited(request, *args, **kwargs):
        if request.method == "POST":
            client = client_address(request) or "unknown"
            wait = wait_before_next("reset-client", client, "PASSWORD_RESET_RATE_LIMIT")
            if wait is not None:
                return refused(request, RESET_CLIENT_MESSAGE, "PASSWORD_RESET_RATE_LIMIT", wait)
            email = str(request.POST.get("email", "")).strip().lower()[:254]
            if email:
                wait = wait_before_next("reset-email", email, "PASSWORD_RESET_EMAIL_RATE_LIMIT")
                if wait is not None:
                    return refused(request, RESET_EMAIL_MESSAGE, "PASSWORD_RESET_EMAIL_RATE_LIMIT", wait)
        return view(request, *args, **kwargs)

    return limited
