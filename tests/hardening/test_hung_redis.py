"""A Redis that hangs (stopped, not refusing) costs the console one short wait, not one per call:
the cache's calls time out quickly and a circuit breaker then skips Redis for a while."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid

import pytest
from django.core.cache import cache
from django.test import override_settings

from tests.helpers import LLAMA_8B

# The per-address limits on at their production values; each test sets the one it tests.
pytestmark = [pytest.mark.django_db, pytest.mark.rate_limits]

PERIOD = 60  # the breaker stays open this long in the test, so no probe happens while Redis hangs


@pytest.fixture
def redis_server(tmp_path):
    """A real redis-server on a free loopback port, stopped and resumed by the test with signals."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(  # noqa: S603 - a fixed command line, the port is ours
        [shutil.which("redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    break
        except OSError:
            pass
        assert time.monotonic() < deadline, "redis-server did not start"
        time.sleep(0.05)  # waiting for a real server to listen
    yield server, port
    os.kill(server.pid, signal.SIGCONT)
    server.terminate()
    server.wait(timeout=10)


def breaker_cache_settings(port):
    from django.conf import settings

    return {"default": {
        "BACKEND": "nodelodge.hardening.cache_breaker.BreakerRedisCache",
        "LOCATION": f"redis://127.0.0.1:{port}/0",
        "OPTIONS": {"socket_connect_timeout": settings.REDIS_SOCKET_TIMEOUT_SECONDS,
                    "socket_timeout": settings.REDIS_SOCKET_TIMEOUT_SECONDS},
    }}


def answered(client, address, requests):
    return [client.get(path, REMOTE_ADDR=address).status_code for path in requests]


def test_a_hung_redis_costs_one_wait_then_pages_and_the_api_answer_without_it(
    client, catalog_fleet, redis_server
):
    server, port = redis_server
    address = f"203.0.113.{uuid.uuid4().int % 250 + 1}"
    api, page = f"/api/v1/recommendations?{LLAMA_8B}", f"/?{LLAMA_8B}"
    with override_settings(CACHES=breaker_cache_settings(port), API_RATE_LIMIT="2/min",
                           PAGE_RATE_LIMIT="2/min", REDIS_BREAKER_SECONDS=PERIOD):
        breaker = cache.breaker
        breaker.reset()
        # Redis counts: the third call of each kind is refused.
        assert answered(client, address, [api, api, api, page, page, page]) == [200, 200, 429, 200, 200, 429]
        assert breaker.failures == 0 and not breaker.is_open

        os.kill(server.pid, signal.SIGSTOP)
        before = breaker.attempts
        statuses = answered(client, address + "-hung", [page, api] * 5)

        # Every answer arrives; the rate limits let them through while Redis cannot count.
        assert statuses == [200] * 10
        # Only the first cache call waited on Redis; the breaker skipped it for every other call.
        assert breaker.attempts - before == 1 and breaker.failures == 1 and breaker.is_open

        os.kill(server.pid, signal.SIGCONT)
        real = breaker.clock
        breaker.clock = lambda: real() + PERIOD + 1  # the breaker's period has passed
        try:
            assert answered(client, address + "-back", [api, api, api]) == [200, 200, 429]
            assert not breaker.is_open and breaker.failures == 1
        finally:
            breaker.clock = real
