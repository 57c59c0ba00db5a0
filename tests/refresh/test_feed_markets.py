"""A machine's markets (interruptible price and its terms, reserved price and term), reliability and
stock in the provider feeds: optional in the Node Lodge feed (left out: not offered, not reported),
checked like every other field (a bad value refuses that record with its reason, the others apply),
landed by a refresh over loopback HTTP with the marketplaces' units converted, and carried by the demo
feed."""
from __future__ import annotations

import json
from decimal import Decimal

import pytest

from catalog.models import Machine, Provider
from catalog.services import load_gpu_aliases, load_gpu_types
from nodelodge.refresh.feeds import adapter_for
from nodelodge.refresh.feeds.vast import RELIABILITY_MEASURES
from nodelodge.refresh.services import refresh_provider
from tests.factories import load_shipped_catalog, make_provider
from tests.feeds import GPU_TYPES, feed, offer_fixture, record

pytestmark = pytest.mark.django_db

MARKETS = {
    "interruptible_price_per_gpu_hour": "1.75", "interruption_notice_seconds": 30,
    "interruption_frequency": "rarely; on demand of the owner", "reserved_price_per_gpu_hour": "1.99",
    "reserved_term_days": 30, "reliability": 0.9981, "reliability_measures": "Uptime over the last 30 days",
    "stock": "High",
}
COLUMNS = (
    "price_per_gpu_hour", "interruptible", "interruptible_price_per_gpu_hour", "interruption_notice_seconds",
    "interruption_frequency", "reserved_price_per_gpu_hour", "reserved_term_days", "reliability",
    "reliability_measures", "stock",
)


def parse(document):
    return adapter_for("nodelodge-v1").parse(json.dumps(document).encode(), provider_slug="acme", gpu_types=GPU_TYPES)


BAD_TERMS = [
    ({"interruptible_price_per_gpu_hour": "0"}, "interruptible_price_per_gpu_hour must be above zero"),
    ({"interruptible_price_per_gpu_hour": "cheap"}, "interruptible_price_per_gpu_hour 'cheap' is not a decimal"),
    ({"interruptible_price_per_gpu_hour": True}, "interruptible_price_per_gpu_hour must be a decimal number"),
    ({"interruptible": True, "interruptible_price_per_gpu_hour": "1.00"},
     "its interruptible price is its price per GPU-hour (2.49)"),
    ({"interruption_notice_seconds": 30}, "interruption_notice_seconds: Interruption terms need an interruptible"),
    ({"interruptible_price_per_gpu_hour": "1", "interruption_notice_seconds": -1},
     "interruption_notice_seconds must be between 0 and 31,622,400"),
    ({"interruptible_price_per_gpu_hour": "1", "interruption_notice_seconds": "30"},
     "interruption_notice_seconds must be a whole number"),
    ({"interruptible_price_per_gpu_hour": "1", "interruption_frequency": "x" * 121},
     "interruption_frequency is longer than 120 characters"),
    ({"reserved_price_per_gpu_hour": "1.99"}, "reserved_term_days: A reserved price needs its term in days"),
    ({"reserved_term_days": 30}, "reserved_price_per_gpu_hour: A reserved term needs its reserved price"),
    ({"reserved_price_per_gpu_hour": "1.99", "reserved_term_days": 0}, "reserved_term_days must be between 1"),
    ({"reliability": 1.2, "reliability_measures": "uptime"}, "reliability must be between 0 and 1, got 1.2"),
    ({"reliability": "NaN", "reliability_measures": "uptime"}, "reliability must be between 0 and 1"),
    ({"reliability": 0.9}, "reliability needs reliability_measures"),
    ({"reliability_measures": "uptime"}, "reliability_measures is given without reliability"),
    ({"stock": "plenty"}, "stock 'plenty' is not a stock word"),
    ({"stock": 3}, "stock must be text"),
]


@pytest.mark.parametrize(("terms", "reason"), BAD_TERMS, ids=[reason for _, reason in BAD_TERMS])
def test_a_bad_market_value_refuses_that_record_with_its_reason_and_the_others_go_on(terms, reason):
    parsed = parse(feed("acme", [record("good-1", **MARKETS), record("m-1", **terms), record("good-2")]))
    assert [r.provider_machine_id for r in parsed.records] == ["good-1", "good-2"]
    [rejected] = parsed.rejected
    assert rejected.machine_id == "m-1" and reason in rejected.reason, rejected.reason


def test_the_markets_read_into_exact_values_and_default_to_not_offered():
    first, second = parse(feed("acme", [record("m-1", **MARKETS), record("m-2")])).records
    assert (first.interruptible_price_per_gpu_hour, first.interruption_notice_seconds, first.interruption_frequency,
            first.reserved_price_per_gpu_hour, first.reserved_term_days, first.reliability,
            first.reliability_measures, first.stock) == (
        Decimal("1.7500"), 30, "rarely; on demand of the owner", Decimal("1.9900"), 30, Decimal("0.9981"),
        "Uptime over the last 30 days", "high",
    )
    assert (second.interruptible_price_per_gpu_hour, second.reserved_price_per_gpu_hour, second.reliability,
            second.stock) == (None, None, None, "")


@pytest.fixture
def acme(feed_server, gpu_types):
    return Provider.objects.create(name="Acme", slug="acme", tier="secure")


def refresh(provider, feed_server, machines):
    provider.feed_url = feed_server.serve_json("acme", feed("acme", machines))
    provider.save()
    return refresh_provider(provider.pk)


def terms(machine_id: str) -> tuple:
    return Machine.objects.filter(provider_machine_id=machine_id).values_list(*COLUMNS).get()


def test_a_refresh_stores_the_markets_changes_them_and_keeps_a_refused_machine_as_it_was(acme, feed_server):
    run = refresh(acme, feed_server, [record("m-1", **MARKETS), record("m-2"),
                                      record("spot-1", interruptible=True, price_per_gpu_hour="0.61")])
    assert (run.status, run.added, run.rejected) == ("ok", 3, 0)
    assert terms("m-1") == (
        Decimal("2.49"), False, Decimal("1.75"), 30, "rarely; on demand of the owner", Decimal("1.99"), 30,
        Decimal("0.9981"), "Uptime over the last 30 days", "high",
    )
    assert terms("m-2") == (Decimal("2.49"), False, None, None, "", None, None, None, "", "")
    # A listing that is interruptible is offered there at its price (`sizing.markets`).
    assert terms("spot-1")[:3] == (Decimal("0.61"), True, Decimal("0.61"))
    assert [m.market for m in Machine.objects.get(provider_machine_id="spot-1").market_prices()] == [
        "interruptible"
    ]

    # A change of a market alone counts as an update; a bad record leaves its machine exactly as it was.
    run = refresh(acme, feed_server, [
        record("m-1", **{**MARKETS, "interruptible_price_per_gpu_hour": "1.70", "stock": "Low"}),
        record("m-2", reserved_price_per_gpu_hour="1.99"),
        record("spot-1", interruptible=True, price_per_gpu_hour="0.61"),
    ])
    assert (run.status, run.updated, run.unchanged, run.rejected) == ("partial", 1, 1, 1)
    assert run.rejected_details == [
        {"id": "m-2", "reason": "reserved_term_days: A reserved price needs its term in days (e.g. 30)."}
    ]
    assert terms("m-1")[2] == Decimal("1.70") and terms("m-1")[-1] == "low"
    assert terms("m-2") == (Decimal("2.49"), False, None, None, "", None, None, None, "", "")

    # Left out again: not offered, not reported.
    run = refresh(acme, feed_server, [record("m-1"), record("m-2"), record("spot-1", price_per_gpu_hour="0.61")])
    assert (run.status, run.updated, run.unchanged) == ("ok", 2, 1)
    assert terms("m-1") == (Decimal("2.49"), False, None, None, "", None, None, None, "", "")
    assert terms("spot-1")[:3] == (Decimal("0.61"), False, None)


@pytest.fixture
def shipped_gpu_types(db):
    load_gpu_types()
    load_gpu_aliases()


def refreshed(feed_server, feed_format: str, tier: str) -> Provider:
    provider = make_provider(f"{feed_format} cloud", tier=tier, feed_format=feed_format)
    provider.feed_url = feed_server.serve_bytes(feed_format, offer_fixture(feed_format))
    provider.save()
    refresh_provider(provider.pk)
    return provider


def landed(provider) -> list[tuple]:
    return list(Machine.objects.filter(provider=provider).order_by("provider_machine_id").values_list(
        "provider_machine_id", "price_per_gpu_hour", "interruptible_price_per_gpu_hour", "reliability",
        "reliability_measures", "stock",
    ))


def test_vast_offers_land_their_bid_floor_per_gpu_and_reliability2_with_what_it_measures(
    feed_server, shipped_gpu_types
):
    """dph_total and min_bid are per offer (every GPU): divided by num_gpus, exact to the cent as Vast's
    console shows them per GPU; reliability2 as given. Vast does not say a notice: left empty."""
    provider = refreshed(feed_server, "vast-offers", tier="community")
    assert landed(provider) == [
        ("8123401", Decimal("0.4006"), Decimal("0.2500"), Decimal("0.9981"), RELIABILITY_MEASURES, ""),
        ("8123402", Decimal("2.4933"), Decimal("1.5000"), Decimal("0.9995"), RELIABILITY_MEASURES, ""),
        ("8123403", Decimal("1.2000"), None, Decimal("0.9700"), RELIABILITY_MEASURES, ""),
    ]
    assert not Machine.objects.filter(provider=provider, interruption_notice_seconds__isnull=False).exists()


def test_runpod_gpu_types_land_their_spot_price_and_stock_level_and_no_reliability(feed_server, shipped_gpu_types):
    """RunPod gives no reliability figure: none is invented. stockStatus null means none left."""
    provider = refreshed(feed_server, "runpod-gpu-types", tier="secure")
    found = {row[0]: row[1:] for row in landed(provider)}
    assert found["NVIDIA GeForce RTX 4090"] == (Decimal("0.69"), Decimal("0.35"), None, "", "high")
    assert found["NVIDIA H100 80GB HBM3"] == (Decimal("2.99"), None, None, "", "low")
    assert found["NVIDIA A100-SXM4-80GB"] == (Decimal("1.89"), Decimal("1.05"), None, "", "out")
    assert found["AMD Instinct MI300X OAM"] == (Decimal("2.49"), None, None, "", "medium")


def test_the_demo_feed_carries_the_markets_so_a_refresh_keeps_them(client, feed_server, db):
    load_shipped_catalog()
    machine = Machine.objects.filter(interruptible=False, gone_at__isnull=True).order_by("pk").first()
    Machine.objects.filter(pk=machine.pk).update(
        interruptible_price_per_gpu_hour=Decimal("0.5"), interruption_notice_seconds=5,
        reserved_price_per_gpu_hour=Decimal("1.25"), reserved_term_days=365, reliability=Decimal("0.98"),
        reliability_measures="uptime", stock="medium",
    )
    body = client.get(f"/feeds/demo/{machine.provider.slug}.json").json()
    [entry] = [m for m in body["machines"] if m["id"] == machine.provider_machine_id]
    assert {name: entry.get(name) for name in COLUMNS[2:]} == {
        "interruptible_price_per_gpu_hour": "0.5", "interruption_notice_seconds": 5,
        "interruption_frequency": None, "reserved_price_per_gpu_hour": "1.25", "reserved_term_days": 365,
        "reliability": "0.98", "reliability_measures": "uptime", "stock": "medium",
    }
    provider = machine.provider
    provider.feed_url = feed_server.serve_json(provider.slug, body)
    provider.save()
    refresh_provider(provider.pk)
    assert Machine.objects.filter(pk=machine.pk).values_list(*COLUMNS[2:]).get() == (
        Decimal("0.5"), 5, "", Decimal("1.25"), 365, Decimal("0.98"), "uptime", "medium",
    )
