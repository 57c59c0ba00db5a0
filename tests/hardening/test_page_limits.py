"""The wizard's pages are rate-limited per client address: a loop meets the limit, others do not."""
from __future__ import annotations

import time
import uuid
from types import SimpleNamespace

import pytest

from nodelodge.hardening import page_limit
from tests.helpers import LLAMA_8B

# The per-address limits on at their production values; each test sets the one it tests.
pytestmark = [pytest.mark.django_db, pytest.mark.rate_limits]


@pytest.fixture
def address(monkeypatch):
    """A fresh address per test, so counts left in the shared cache by other runs never matter. The
    page limit counts in windows of the clock's minutes: the limiter's clock stands still a second
    into the current minute, so a test's few requests all fall in one window whenever it runs."""
    standing = time.time() // 60 * 60 + 1
    monkeypatch.setattr(page_limit, "time", SimpleNamespace(time=lambda: standing))
    return f"198.51.100.{uuid.uuid4().int % 250 + 1}-{uuid.uuid4().hex[:8]}"


def page(client, address, path="/", query=""):
    return client.get(f"{path}?{query}", REMOTE_ADDR=address)


def test_a_page_past_the_limit_answers_429_with_a_reason_and_retry_after(client, settings, address):
    settings.PAGE_RATE_LIMIT = "3/min"
    assert [page(client, address, query=LLAMA_8B).status_code for _ in range(3)] == [200, 200, 200]

    refused = page(client, address, query=LLAMA_8B)

    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    html = refused.content.decode()
    assert "Too many requests from this client: at most 3 per min." in html and "Try again in" in html
    assert '<html lang="en">' in html


def test_the_429_page_speaks_the_pages_language(client, settings, address):
    settings.PAGE_RATE_LIMIT = "1/min"
    assert page(client, address, "/de/").status_code == 200
    refused = page(client, address, "/de/")
    assert refused.status_code == 429
    html = refused.content.decode()
    assert '<html lang="de">' in html
    assert "Zu viele Anfragen von diesem Client: höchstens 1 pro min." in html


def test_the_page_limit_is_per_address(client, settings, address):
    settings.PAGE_RATE_LIMIT = "2/min"
    for _ in range(2):
        assert page(client, address).status_code == 200
    assert page(client, address).status_code == 429
    assert page(client, address + "-other").status_code == 200
    assert page(client, address + "-other").status_code == 200


def test_the_htmx_partial_counts_toward_the_same_limit(client, settings, address):
    settings.PAGE_RATE_LIMIT = "2/min"
    headers = {"HX-Request": "true", "HX-Target": "result"}
    assert client.get("/?" + LLAMA_8B, REMOTE_ADDR=address, headers=headers).status_code == 200
    assert page(client, address).status_code == 200
    assert client.get("/?" + LLAMA_8B, REMOTE_ADDR=address, headers=headers).status_code == 429


def test_a_later_page_counts_the_first_pages_it_costs(client, settings, address):
    settings.PAGE_RATE_LIMIT = "60/min"
    # Page 40 of 25 describes the cheapest 1,000 machines: 40 first pages' worth.
    assert page(client, address, query=LLAMA_8B + "&page=40").status_code == 200
    assert page(client, address, query=LLAMA_8B + "&page=40").status_code == 429
    assert page(client, address + "-b", query=LLAMA_8B).status_code == 200


def test_pages_refused_before_any_work_count_one(client, settings, address):
    settings.PAGE_RATE_LIMIT = "3/min"
    # Past the window, or not a page number: answered in words at once, counted as one request each.
    for query in ("&page=41", "&page=abc", "&page=0"):
        assert page(client, address, query=LLAMA_8B + query).status_code == 200
    assert page(client, address, query=LLAMA_8B).status_code == 429


def test_a_page_dearer_than_the_whole_rate_is_let_through_in_a_fresh_window(client, settings, address):
    settings.PAGE_RATE_LIMIT = "10/min"
    assert page(client, address, query=LLAMA_8B + "&page=40").status_code == 200
    assert page(client, address, query=LLAMA_8B).status_code == 429
