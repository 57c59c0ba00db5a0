"""The wizard's rows and the Launch review show a machine's markets, reliability and stock from the
catalog, on the page (English and German) and in the API, with no statement more than a machine
without them costs."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import SmallCatalog, make_user
from tests.helpers import LLAMA_8B, with_details_opened

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_catalog(db) -> SmallCatalog:
    return SmallCatalog(gpus=2)

MARKETS = {
    "interruptible_price_per_gpu_hour": Decimal("1.75"), "interruption_notice_seconds": 5,
    "reserved_price_per_gpu_hour": Decimal("1.99"), "reserved_term_days": 30,
    "reliability": Decimal("0.9981"), "reliability_measures": "Vast.ai reliability2", "stock": "low",
}


def statements(client, path: str) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    assert response.status_code == 200
    return len(captured.captured_queries), response.content.decode()


def test_a_row_prices_each_market_and_says_reliability_and_stock_at_no_extra_statement(client, small_catalog):
    plain = small_catalog.machine(provider_machine_id="plain")
    # Distinct budgets: neither answer is served from the answer cache.
    before, html = statements(client, "/?" + LLAMA_8B + "&budget=100")
    assert "reliability not reported" in html and "stock not reported" in html
    assert 'data-testid="market-price"' not in html

    small_catalog.machine(provider_machine_id="markets", price_per_gpu_hour=Decimal("2.5900"), **MARKETS)
    after, html = statements(client, "/?" + LLAMA_8B + "&budget=101")

    assert after == before
    assert '<span class="muted market" data-testid="market-price">interruptible $1.75/h</span>' in html
    assert '<span class="muted market" data-testid="market-price">reserved $1.99/h</span>' in html
    assert "reliability 99.81 % (Vast.ai reliability2)" in html and "stock: low" in html
    html = with_details_opened(client, html)  # each market's terms and budget: in the row's details
    assert "interruptible: $1.75/h (1 × $1.75 per GPU-hour); taken back with 5 seconds&#x27; notice; " \
           "$101.00 covers 57.7 hours (2.4 days) at $1.75/h" in html
    # The default answer keeps its order: cheapest listed price first.
    assert html.index(f'data-machine-id="{plain.pk}"') < html.index("interruptible $1.75/h")


def test_the_german_page_names_the_markets_in_german(client, small_catalog):
    small_catalog.machine(**MARKETS)
    html = with_details_opened(client, client.get("/de/?" + LLAMA_8B, HTTP_ACCEPT_LANGUAGE="de").content.decode())
    assert "unterbrechbar 1,75 $/h" in html and "reserviert 1,99 $/h" in html
    assert "Zuverlässigkeit 99,81 % (Vast.ai reliability2)" in html and "Bestand: niedrig" in html
    assert "wird mit 5 Sekunden Vorwarnung zurückgenommen" in html


def test_the_api_lists_each_market_of_a_machine(client, small_catalog):
    machine = small_catalog.machine(**MARKETS)
    body = client.get("/api/v1/recommendations?" + LLAMA_8B + "&budget=100").json()
    [row] = [m for m in body["machines"] if m["id"] == machine.pk]
    assert [(m["market"], m["price_per_gpu_hour"], m["price_per_hour"], m["term_days"], m["notice_seconds"])
            for m in row["markets"]] == [
        ("on_demand", "2.49", "2.49", None, None), ("interruptible", "1.75", "1.75", None, 5),
        ("reserved", "1.99", "1.99", 30, None),
    ]
    assert row["markets"][1]["budget_text"] == "$100.00 covers 57.1 hours (2.4 days) at $1.75/h"
    assert (row["reliability"], row["reliability_measures"], row["stock"], row["stock_text"]) == (
        "0.9981", "Vast.ai reliability2", "low", "stock: low"
    )
    schema = client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    assert {"market", "price_per_gpu_hour", "price_per_hour", "budget_text"} <= set(
        schema["MarketOut"]["properties"]
    )


def test_the_review_shows_the_market_launch_books_with_reliability_and_stock(client, small_catalog):
    client.force_login(make_user())
    spot = small_catalog.machine(price_per_gpu_hour=Decimal("0.61"), interruptible=True,
                                 interruption_notice_seconds=30)
    plain = small_catalog.machine(provider_machine_id="plain")
    review = "/launch/review/?machine={pk}&gpus=1&price_per_hour={price}&query=" + LLAMA_8B.replace("&", "%26")

    html = client.get(review.format(pk=spot.pk, price="0.61")).content.decode()
    assert '<dd data-testid="review-market">interruptible: taken back with 30 seconds&#x27; notice</dd>' in html
    assert '<dd data-testid="review-reliability">reliability not reported</dd>' in html
    assert '<dd data-testid="review-stock">stock not reported</dd>' in html

    html = client.get(review.format(pk=plain.pk, price="2.49")).content.decode()
    assert '<dd data-testid="review-market">on demand</dd>' in html


def test_the_command_prints_each_other_market_and_the_reported_reliability_and_stock(small_catalog, capsys):
    import json

    from django.core.management import call_command

    from tests.helpers import LLAMA_8B_ARGS

    small_catalog.machine(**MARKETS)
    call_command("recommend", *LLAMA_8B_ARGS, "--budget", "100")
    out = capsys.readouterr().out
    assert "       interruptible $1.75/h (taken back with 5 seconds' notice)" in out
    assert "       reserved $1.99/h (paid for a term of 30 days)" in out
    assert "       reliability 99.81 % (Vast.ai reliability2); stock: low" in out
    call_command("recommend", *LLAMA_8B_ARGS, "--json")
    [row] = json.loads(capsys.readouterr().out)["machines"]
    assert [market["market"] for market in row["markets"]] == ["on_demand", "interruptible", "reserved"]
