"""Per-client rate limit for the JSON API, on django-ninja's throttling.

The rate is read from `settings.API_RATE_LIMIT` on every request ("120/min"; empty or "off" turns
it off), so a deployment or a test changes it without rebuilding the API. The client is the
connecting address; `X-Forwarded-For` counts only through the proxies TRUSTED_PROXY_COUNT admits
(`proxies.client_address`), so a client cannot dodge the limit by sending the header itself.

Counts live in the default cache (Redis in production, shared by every worker). When the cache
cannot be reached the API keeps answering without a limit and logs why: the wizard's answers do
not need Redis, and a cache outage should not take the API down with it.
"""
from __future__ import annotations

import logging
import math
import threading
from typing import cast

from django.conf import settings
from django.core.cache import cache
from django.shortcuts import render
from django.utils.translation import gettext, ngettext, pgettext_lazy
from ninja.throttling import SimpleRateThrottle

from sizing.limits import API_LIMIT, MAX_LIMIT, MAX_PAGE

from .proxies import client_address

logger = logging.getLogger("nodelodge.throttling")

OFF = {"", "off", "none", "0"}
# What a throughput plan counts toward a per-address rate, in first pages: at 100,000 machines a plan
# whose search spends its whole budget takes about a second against 30 ms for a first page
# (docs/benchmarks-log.md, "Every request bounded"). Ten, not thirty: the slots (slots.py) already keep plans
# from filling the workers, and a person trying targets on the page should not meet the limit.
PLAN_REQUEST_COST = 10
SECONDS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}
# The rate's period as the message names it ("120/min": at most 120 per min).
PERIODS = {
    "s": pgettext_lazy("rate period", "s"), "sec": pgettext_lazy("rate period", "sec"),
    "m": pgettext_lazy("rate period", "m"), "min": pgettext_lazy("rate period", "min"),
    "h": pgettext_lazy("rate period", "h"), "hour": pgettext_lazy("rate period", "hour"),
    "d": pgettext_lazy("rate period", "d"), "day": pgettext_lazy("rate period", "day"),
}


def request_cost(request, first_page: int) -> int:
    """This request's count toward a per-address rate: one, or for a later page of the machine list
    (or a longer one) the first pages of `first_page` machines it costs (`listing.cost_in_first_pages`).
    Values the form refuses cost one: they are answered before any work."""
    from nodelodge.recommendations.listing import cost_in_first_pages

    try:
        page = int(request.GET.get("page") or 1)
        per_page = int(request.GET.get("limit") or first_page)
    except (TypeError, ValueError):
        return 1
    if not (1 <= page <= MAX_PAGE and 1 <= per_page <= MAX_LIMIT):
        return 1
    cost = cost_in_first_pages(page, per_page, first_page)
    if request.GET.get("target_tokens"):
        # A plan search counts as PLAN_REQUEST_COST first pages; the plans
        # on each GPU type are worth up to one more search.
        cost = max(cost, PLAN_REQUEST_COST * (2 if request.GET.get("gpu_plans") else 1))
    return cost


def read_rate(setting: str, default: str = "") -> tuple[int, int, str] | None:
    """A rate setting such as "120/min" as (requests, seconds, the period as written), or None when
    it is off (empty, "off", "none", "0"). Raises ValueError for anything else: the system check
    (`checks.rate_limits_are_readable`) names the setting at start-up."""
    value = str(getattr(settings, setting, default) or "").strip()
    if value.lower() in OFF:
        return None
    count, _, period = value.partition("/")
    if not count.isdigit() or int(count) < 1 or period not in SECONDS:
        raise ValueError(f"{setting}={value!r} is not a rate such as '120/min' or 'off'")
    return int(count), SECONDS[period], period


class ApiRateThrottle(SimpleRateThrottle):
    scope = "api"
    cache_format = "api-rate_%(ident)s"

    def __init__(self):
        # SimpleRateThrottle keeps the last decision on the instance; one instance serves every
        # request of an operation, so that state is kept per thread here.
        self._state = threading.local()

    @staticmethod
    def current_rate() -> str | None:
        rate = (getattr(settings, "API_RATE_LIMIT", "") or "").strip()
        return None if rate.lower() in OFF else rate

    def get_ident(self, request) -> str:
        return client_address(request) or "unknown"

    def get_cache_key(self, request) -> str | None:
        ident = self.get_ident(request)
        return self.cache_format % {"ident": ident}

    def allow_request(self, request) -> bool:
        rate = self.current_rate()
        if rate is None:
            return True
        num_requests, duration = cast(tuple[int, int], self.parse_rate(rate))  # a rate given: both set
        key = self.get_cache_key(request)
        now = type(self).timer()  # time.time, as SimpleRateThrottle reads it
        # One counter per client and window, the window starting at the client's first request
        # and lasting the rate's period; counted with the cache's atomic add and incr (Redis INCR;
        # the local cache's lock on the embedded run), so concurrent requests never read the same
        # count: exactly `num_requests` are admitted per window. A later page counts as the first
        # pages it costs (`request_cost`).
        try:
            cache.add(key, now, duration)
            start = cache.get(key) or now
            window_key = f"{key}:{start!r}"
            cache.add(window_key, 0, duration + 1)
            cost = min(request_cost(request, API_LIMIT), num_requests)  # admissible in a fresh window
            try:
                count = cache.incr(window_key, cost)
            except ValueError:  # the counter expired between add and incr: start it again
                cache.add(window_key, 0, duration + 1)
                count = cache.incr(window_key, cost)
            if count > num_requests:
                self._state.wait = start + duration - now
                return False
        except Exception as error:  # any cache backend failure: serve rather than refuse
            logger.warning("API rate limit skipped, cache unavailable: %s", error)
        return True

    def wait(self) -> float | None:
        wait = getattr(self._state, "wait", None)
        return None if wait is None else max(1, math.ceil(wait))


def throttled_message(wait: float | None) -> str:
    rate = ApiRateThrottle.current_rate() or ""
    count, _, period = rate.partition("/")
    message = gettext("Too many requests from this client: at most %(count)s per %(period)s.") % {
        "count": count, "period": PERIODS.get(period, period)
    }
    if wait:
        seconds = math.ceil(wait)
        message += " " + ngettext(
            "Try again in %(seconds)d second.", "Try again in %(seconds)d seconds.", seconds
        ) % {"seconds": seconds}
    return message


def too_many_requests_page(request, message, limit: tuple[int, int, str], wait: float):
    """The 429 page past a per-address limit (the wizard's pages, sign-up, password reset): `message`
    with the limit's count and period, when to try again, and Retry-After."""
    allowed, _, period = limit
    seconds = max(1, math.ceil(wait))
    text = str(message) % {"count": allowed, "period": PERIODS.get(period, period)}
    retry = ngettext(
        "Try again in %(seconds)d second.", "Try again in %(seconds)d seconds.", seconds
    ) % {"seconds": seconds}
    response = render(request, "hardening/too_many_requests.html", {"message": text, "retry": retry},
                      status=429)
    response["Retry-After"] = str(seconds)
    return response
