"""A provider feed (format nodelodge-v1) of any size, served from a thread on loopback."""
from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from catalog.data.demo_fleet import SECURE_OFFERS

LOCATIONS = [("DE", "Frankfurt"), ("NL", "Amsterdam"), ("FR", "Paris"), ("US", "Virginia"), ("SE", "Stockholm")]


def feed_document(provider_slug: str, machines: int, seed: int, changed_fraction: float = 0.0) -> bytes:
    """The same machines for the same seed; `changed_fraction` of them with other free GPUs and price."""
    from catalog.models import GpuType

    memory = dict(GpuType.objects.values_list("name", "memory_mib"))
    rng = random.Random(seed)
    change = random.Random(seed + 1)
    records = []
    for index in range(machines):
        gpu_name, counts, list_price = rng.choice(SECURE_OFFERS)
        count = rng.choice(counts)
        free = rng.randint(0, count)
        price = float(list_price) * rng.uniform(0.9, 1.2)
        if change.random() < changed_fraction:
            free = change.randint(0, count)
            price *= 1.05
        country, region = rng.choice(LOCATIONS)
        records.append({
            "id": f"feed-{index:07d}", "gpu_type": gpu_name, "gpu_count": count, "free_gpus": free,
            "memory_mib": memory.get(gpu_name), "available": free > 0, "country": country, "region": region,
            "price_per_gpu_hour": f"{price:.3f}", "interruptible": False, "booking_limit_hours": None,
        })
    document = {"provider": provider_slug, "generated_at": "2025-03-01T12:00:00Z", "machines": records}
    return json.dumps(document).encode()


class FeedServer:
    """Serves `body` at `url` until the block ends."""

    def __init__(self):
        self.body = b"{}"
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the standard library's name
                body = owner.body
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/feed.json"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FeedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
