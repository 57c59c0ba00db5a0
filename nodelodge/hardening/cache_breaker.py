"""The Redis cache, failing fast: short socket timeouts and a circuit breaker.

A Redis that hangs (stopped, not refusing) holds every cache call until its socket times out; with
redis-py's defaults that is no timeout at all. Here each call waits at most
`REDIS_SOCKET_TIMEOUT_SECONDS` (0.25 s, to connect and to read), and a failed call opens the
breaker: for `REDIS_BREAKER_SECONDS` (5 s) every cache call in this process fails at once, without
touching Redis, with `CacheUnavailable`. After that one call tries Redis again (half-open): success
closes the breaker, failure opens it for another period. So a hung Redis costs each process one
wait per period, not one per call.

The callers already fall back on any cache error: the API's and the pages' rate limits then let
the request through (and log why); the wizard and the API need no cache to answer.
"""
from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.core.cache.backends.redis import RedisCache

logger = logging.getLogger("nodelodge.cache")

# The cache operations that reach Redis (get_or_set and decr go through get, add and incr).
OPERATIONS = (
    "add", "get", "set", "touch", "delete", "get_many", "has_key", "incr", "set_many",
    "delete_many", "clear",
)


class CacheUnavailable(ConnectionError):
    """The breaker is open: Redis failed lately and is not asked again yet."""


class Breaker:
    """Open for a while after a failure; one caller at a time probes Redis when the while is over."""

    def __init__(self):
        self.lock = threading.Lock()
        self.open_until = 0.0
        self.probing = False
        self.attempts = 0  # calls that reached Redis (the tests count them)
        self.failures = 0
        self.clock = time.monotonic

    @property
    def is_open(self) -> bool:
        return self.clock() < self.open_until

    def before(self) -> None:
        with self.lock:
            now = self.clock()
            if now < self.open_until or (self.open_until and self.probing):
                raise CacheUnavailable("Redis failed lately; the cache is skipped for a few seconds")
            if self.open_until:
                self.probing = True  # half-open: this caller alone tries Redis
            self.attempts += 1

    def succeeded(self) -> None:
        with self.lock:
            self.open_until, self.probing = 0.0, False

    def failed(self, error: Exception) -> None:
        with self.lock:
            self.failures += 1
            self.probing = False
            self.open_until = self.clock() + float(getattr(settings, "REDIS_BREAKER_SECONDS", 5))
        logger.warning("Redis cache failed, skipped for the next %ss: %s",
                       getattr(settings, "REDIS_BREAKER_SECONDS", 5), error)

    def reset(self) -> None:
        with self.lock:
            self.open_until, self.probing, self.attempts, self.failures = 0.0, False, 0, 0


_breakers: dict[str, Breaker] = {}
_breakers_lock = threading.Lock()


def breaker_for(location: str) -> Breaker:
    """The process's breaker for one Redis location (Django makes a cache object per thread)."""
    with _breakers_lock:
        return _breakers.setdefault(location, Breaker())


class BreakerRedisCache(RedisCache):
    """Django's Redis cache behind a circuit breaker, one per Redis location in a process."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self.breaker = breaker_for(",".join(self._servers))  # type: ignore[attr-defined]  # set by RedisCache


def _guarded(name):
    operation = getattr(RedisCache, name)

    def guarded(self, *args, **kwargs):
        self.breaker.before()
        try:
            result = operation(self, *args, **kwargs)
        except ValueError:
            self.breaker.succeeded()  # incr of a missing key: Redis answered
            raise
        except Exception as error:
            self.breaker.failed(error)
            raise
        self.breaker.succeeded()
        return result

    guarded.__name__ = name
    guarded.__doc__ = operation.__doc__
    return guarded


for _name in OPERATIONS:
    setattr(BreakerRedisCache, _name, _guarded(_name))
