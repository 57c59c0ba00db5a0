"""Provider feeds for the tests: nodelodge-v1 records and documents, and a real HTTP server on loopback
that answers each feed as a test says (refresh, fleet counts, kept speeds)."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from django.utils.text import slugify

from catalog.data.gpu_aliases import GPU_ALIASES
from catalog.data.gpu_types import GPU_TYPES as GPU_TYPE_ROWS
from catalog.gpu_names import gpu_name_key
from nodelodge.refresh.feeds.base import GpuTypeIndex, GpuTypeRef
from tests.factories import H100_MIB

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


# The GPU types a feed may name, as the parser is given them: the H100 alone.
GPU_TYPES = GpuTypeIndex(
    [GpuTypeRef(id=1, name="H100 SXM 80GB", datasheet_memory_mib=H100_MIB)], {"h100-sxm-80gb": 1}
)


# --- The marketplaces' formats -----------------------------------------------------------------------

# One document per format, written from each marketplace's public reference (docs/feed-format.md).
OFFER_FIXTURES = Path(__file__).parent / "refresh" / "offer_fixtures"
OFFER_FIXTURE_FILES = {
    "vast-offers": "vast_offers.json",
    "runpod-gpu-types": "runpod_gpu_types.json",
    "lambda-instance-types": "lambda_instance_types.json",
    "skypilot-catalog": "skypilot_vms.csv",
    "gpuhunt-offers": "gpuhunt_offers.csv",
    "prime-availability": "prime_availability.json",
}


def offer_fixture(feed_format: str) -> bytes:
    return (OFFER_FIXTURES / OFFER_FIXTURE_FILES[feed_format]).read_bytes()


def shipped_gpu_types() -> GpuTypeIndex:
    """The shipped GPU types and aliases as a refresh reads them from the catalog, without a database
    (ids are the types' places in the shipped list)."""
    ids = {name: index for index, (name, *_) in enumerate(GPU_TYPE_ROWS, start=1)}
    aliases: dict[str, list[int]] = {}
    for alias, gpu_type_name, _ in GPU_ALIASES:
        aliases.setdefault(gpu_name_key(alias), []).append(ids[gpu_type_name])
    return GpuTypeIndex(
        [GpuTypeRef(id=ids[name], name=name, datasheet_memory_mib=memory) for name, _, _, memory, *_ in
         GPU_TYPE_ROWS],
        {slugify(name): ids[name] for name in ids},
        aliases,
    )
