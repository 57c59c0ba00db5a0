"""A feed that trickles (one byte every 0.2 s, from a real server on loopback) is cut off at the
fetch's deadline with the reason recorded, whichever part of the answer trickles (TLS handshake,
headers, body), and the other providers' refresh goes on."""
from __future__ import annotations

import socket
import threading
import time
from decimal import Decimal

import pytest

from catalog.models import Machine
from nodelodge.refresh import fetching, services
from nodelodge.refresh.feeds.base import FeedError
from tests.factories import make_machine
from tests.feeds import TRICKLE_INTERVAL_SECONDS, feed, record

DEADLINE = 1.0
# Past the deadline: one trickled byte, and room for a busy machine; far below what the trickle lasts.
MARGIN = 0.8


def test_a_trickling_body_is_cut_off_at_the_deadline(feed_server):
    # 43 bytes at one per 0.2 s: the whole answer would take about 9 s.
    url = feed_server.serve_trickle("slow", {"provider": "acme-secure", "machines": []})
    started = time.monotonic()

    with pytest.raises(FeedError, match=r"did not arrive whole within 1 second\b"):
        fetching.fetch_feed(url, DEADLINE)

    elapsed = time.monotonic() - started
    assert DEADLINE <= elapsed < DEADLINE + MARGIN


def test_trickling_headers_are_cut_off_at_the_deadline(feed_server):
    # The status line and headers come one byte every 0.2 s (a valid answer after about 8 s).
    url = feed_server.serve_trickled_headers("slow-headers")
    started = time.monotonic()

    with pytest.raises(FeedError, match=r"did not answer within 1 second\b"):
        fetching.fetch_feed(url, DEADLINE)

    assert time.monotonic() - started < DEADLINE + MARGIN


@pytest.fixture
def trickling_tls_server():
    """A server on loopback that answers a TLS client's hello with the start of a 16 KiB handshake
    record, one byte every TRICKLE_INTERVAL_SECONDS: the handshake never completes in time."""
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve():
        connection, _ = listener.accept()
        with connection:
            connection.recv(4096)  # the client's hello
            for byte in b"\x16\x03\x03\x40\x00" + b"\x02" * 60:
                if done.is_set():
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return  # the client gave up
                time.sleep(TRICKLE_INTERVAL_SECONDS)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{listener.getsockname()[1]}/feed.json"
    done.set()
    listener.close()
    thread.join(timeout=5)


def test_a_trickling_tls_handshake_is_cut_off_at_the_deadline(trickling_tls_server):
    # The handshake comes before the connection reports to the deadline; Python bounds a TLS
    # handshake by the socket's timeout as a whole, which is the same number of seconds.
    started = time.monotonic()

    with pytest.raises(FeedError, match=r"did not answer within 1 second\b"):
        fetching.fetch_feed(trickling_tls_server, DEADLINE)

    assert time.monotonic() - started < DEADLINE + MARGIN


@pytest.mark.django_db
def test_a_trickling_provider_fails_with_its_reason_and_the_next_one_is_refreshed(
    feed_server, gpu_types, providers, settings
):
    settings.PROVIDER_FEED_TIMEOUT_SECONDS = DEADLINE
    slow, good = providers["secure"], providers["community"]
    make_machine(slow, gpu_types["h100"], provider_machine_id="slow-1", gpu_count=8, price_per_gpu_hour=Decimal("3.00"), free_gpus=8)
    slow.feed_url = feed_server.serve_trickle("slow", feed(slow.slug, [record("slow-1", free_gpus=1)]))
    slow.save()
    good.feed_url = feed_server.serve_json("good", feed(good.slug, [record("good-1", free_gpus=2)]))
    good.save()
    started = time.monotonic()

    runs = [services.refresh_provider(provider.pk) for provider in (slow, good)]

    elapsed = time.monotonic() - started
    assert [run.status for run in runs] == ["failed", "ok"]
    assert runs[0].error == (
        "Feed rejected: the feed did not arrive whole within 1 second (it was still arriving at the "
        "deadline, PROVIDER_FEED_TIMEOUT_SECONDS)."
    )
    assert runs[0].duration_seconds < DEADLINE + MARGIN
    assert elapsed < DEADLINE + MARGIN + 1.0
    assert Machine.objects.get(provider=slow).free_gpus == 8  # nothing changed for the slow provider
    assert Machine.objects.get(provider=good).free_gpus == 2
