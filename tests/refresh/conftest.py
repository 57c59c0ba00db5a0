"""Real services for the refresh tests: feeds served over HTTP on loopback, a Celery worker on Redis."""
from __future__ import annotations

import json
import os
import threading
import time
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

# The broker: the run's Redis; on the SQLite run (no REDIS_URL, as `bin/run`) the one bin/test names.
TEST_BROKER_URL = os.environ.get("REDIS_URL") or os.environ.get("TEST_REDIS_URL") or "redis://127.0.0.1:6379/3"
H100_MIB = 81_559
RTX_4090_MIB = 24_564
# How long a held answer may wait for the test to let it go; only reached if a test fails midway.
HOLD_LIMIT_SECONDS = 15
# A trickling feed sends one byte this often, as a slow or hostile provider would.
TRICKLE_INTERVAL_SECONDS = 0.2


class FeedServer:
    """An HTTP server on 127.0.0.1 answering each path as the test says: a JSON document, a status code,
    raw bytes, or an answer held back until the test releases it."""

    def __init__(self):
        self.routes: dict[str, tuple] = {}
        self.request_arrived = threading.Event()
        self.release = threading.Event()
        self.trickles_started = threading.Event()
        self.trickles_cut: list[float] = []
        feed = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server API
                route = feed.routes.get(self.path)
                if route is None:
                    self._send(404, b"no such feed")
                    return
                kind, status, body = route
                if kind == "trickle":
                    self._trickle(body)
                    return
                if kind == "trickle-headers":
                    self._trickle(b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"x" * 10_000, raw=True)
                    return
                if kind == "held":
                    feed.request_arrived.set()
                    feed.release.wait(HOLD_LIMIT_SECONDS)
                self._send(status, body)

            def _send(self, status: int, body: bytes):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (the timeout case)

            def _trickle(self, body: bytes, raw: bool = False):
                """One byte every TRICKLE_INTERVAL_SECONDS until the client hangs up or the test ends."""
                feed.trickles_started.set()
                try:
                    if not raw:
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.flush()
                    for index in range(len(body)):
                        if feed.release.is_set():
                            return
                        self.wfile.write(body[index : index + 1])
                        self.wfile.flush()
                        time.sleep(TRICKLE_INTERVAL_SECONDS)
                except (BrokenPipeError, ConnectionResetError):
                    feed.trickles_cut.append(time.monotonic())  # the client gave up

            def log_message(self, format, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # A short poll interval: shutdown() waits up to one interval for the serving loop to notice.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{name}.json"

    def serve_json(self, name: str, document) -> str:
        return self.serve_bytes(name, json.dumps(document).encode())

    def serve_bytes(self, name: str, body: bytes, status: int = 200) -> str:
        self.routes[f"/{name}.json"] = ("plain", status, body)
        return self.url(name)

    def serve_trickle(self, name: str, document) -> str:
        """A 200 answer whose body comes one byte every TRICKLE_INTERVAL_SECONDS."""
        self.routes[f"/{name}.json"] = ("trickle", 200, json.dumps(document).encode())
        return self.url(name)

    def serve_trickled_headers(self, name: str) -> str:
        """An answer whose header lines come one byte every TRICKLE_INTERVAL_SECONDS, never ending."""
        self.routes[f"/{name}.json"] = ("trickle-headers", 200, b"")
        return self.url(name)

    def serve_held(self, name: str, document) -> str:
        self.routes[f"/{name}.json"] = ("held", 200, json.dumps(document).encode())
        return self.url(name)


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker):
    """A real worker (solo pool, in a thread of this process) consuming from the Redis broker."""
    from celery.contrib.testing import tasks as _ping_task  # noqa: F401 - registers celery.ping
    from celery.contrib.testing.worker import start_worker

    from nodelodge.celery import app

    app.conf.update(
        broker_url=TEST_BROKER_URL,
        result_backend=TEST_BROKER_URL,
        task_always_eager=False,
    )
    # The result backend is built on first use and kept: on the embedded-default run (no REDIS_URL)
    # an eager task earlier in the session built the disabled one. Build it from the settings above.
    app._backend = app._get_backend()
    app.control.purge()  # leftovers of an interrupted earlier run
    with django_db_blocker.unblock():
        with start_worker(app, pool="solo", perform_ping_check=True, shutdown_timeout=30) as worker:
            yield worker


@pytest.fixture
def gpu_types(db):
    from catalog.models import GpuType

    return {
        "h100": GpuType.objects.create(
            name="H100 SXM 80GB", slug="h100-sxm-80gb", vendor="NVIDIA", memory_mib=H100_MIB
        ),
        "rtx4090": GpuType.objects.create(
            name="RTX 4090", slug="rtx-4090", vendor="NVIDIA", memory_mib=RTX_4090_MIB
        ),
    }


@pytest.fixture
def providers(db):
    from catalog.models import Provider

    return {
        "secure": Provider.objects.create(name="Acme Secure", slug="acme-secure", tier="secure"),
        "community": Provider.objects.create(name="Hosts United", slug="hosts-united", tier="community"),
    }


def record(machine_id: str, **overrides) -> dict:
    """One valid nodelodge-v1 machine record."""
    values = {
        "id": machine_id,
        "gpu_type": "H100 SXM 80GB",
        "gpu_count": 8,
        "free_gpus": 3,
        "memory_mib": H100_MIB,
        "available": True,
        "country": "DE",
        "region": "Frankfurt",
        "price_per_gpu_hour": "2.49",
        "interruptible": False,
        "booking_limit_hours": 72,
    }
    values.update(overrides)
    return values


def feed(slug: str, machines: list) -> dict:
    return {"provider": slug, "generated_at": "2025-03-01T12:00:00Z", "machines": machines}


def make_machine(provider, gpu_type, machine_id: str, **overrides):
    """A catalog machine as it stood before a refresh."""
    from django.utils import timezone

    from catalog.models import Machine

    values = dict(
        provider=provider,
        provider_machine_id=machine_id,
        gpu_type=gpu_type,
        gpu_count=8,
        free_gpus=8,
        memory_per_gpu_mib=gpu_type.memory_mib,
        memory_source="datacenter" if provider.tier == "secure" else "host",
        country="DE",
        region="Frankfurt",
        price_per_gpu_hour=Decimal("3.00"),
        is_available=True,
        last_seen_at=timezone.now(),
    )
    values.update(overrides)
    return Machine.objects.create(**values)
