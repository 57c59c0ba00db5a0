"""A shown machine's markets, reliability and stock on its row (`sizing.results.machine_row`): the
price per market at the GPUs used, exact to the cent as the marketplaces' consoles show it, what the
budget covers in each, the terms in words; reliability and stock as reported, "not reported" where the
feed says nothing (never estimated). English and German."""
from decimal import Decimal

from django.utils import translation

from sizing.matching import recommend
from sizing.offers import Preferences
from sizing.results import machine_row
from tests.factories import fixed_need, offer

THREE_MARKETS = offer(
    id=1, price_per_gpu_hour="2.49", interruptible_price_per_gpu_hour=Decimal("1.75"),
    interruption_notice_seconds=5, interruption_frequency="when demand returns",
    reserved_price_per_gpu_hour=Decimal("1.99"), reserved_term_days=30, reliability=Decimal("0.9981"),
    reliability_measures="Vast.ai reliability2", stock="high",
)


def row_of(machine_offer, preferences=Preferences(), gpus_needed=2):
    """The row of `machine_offer` (an H200) under a need that takes `gpus_needed` GPUs (1 or 2)."""
    need = fixed_need(100) if gpus_needed == 1 else fixed_need(200, workload="inference", heads=8)
    [machine] = recommend(need, [machine_offer], preferences).machines
    assert machine.fit.gpus_used == gpus_needed
    return machine_row(machine)


def test_each_market_is_priced_at_the_gpus_used_with_its_terms_and_budget():
    row = row_of(THREE_MARKETS, Preferences(budget=Decimal("100")), gpus_needed=1)
    assert [(m["market"], m["price_per_gpu_hour"], m["price_per_hour"]) for m in row["markets"]] == [
        ("on_demand", "2.49", "2.49"), ("interruptible", "1.75", "1.75"), ("reserved", "1.99", "1.99"),
    ]
    on_demand, interruptible, reserved = row["markets"]
    assert on_demand["budget_text"] == row["budget_text"] == (
        "$100.00 covers 40.2 hours (1.7 days) at $2.49/h"
    )
    assert interruptible["budget_text"] == "$100.00 covers 57.1 hours (2.4 days) at $1.75/h"
    assert interruptible["terms_text"] == (
        "taken back with 5 seconds' notice; how often, as the provider says: when demand returns"
    )
    assert (interruptible["notice_seconds"], interruptible["frequency"]) == (5, "when demand returns")
    assert (reserved["term_days"], reserved["terms_text"]) == (30, "paid for a term of 30 days")
    assert on_demand["terms_text"] is None
    assert (row["reliability"], row["reliability_text"], row["stock"], row["stock_text"]) == (
        "0.9981", "reliability 99.81 % (Vast.ai reliability2)", "high", "stock: high"
    )


def test_a_plain_machine_shows_its_one_market_and_says_reliability_and_stock_are_not_reported():
    row = row_of(offer(id=2, price_per_gpu_hour="0.4006"), gpus_needed=1)
    assert [(m["market"], m["price_per_hour"]) for m in row["markets"]] == [("on_demand", "0.4006")]
    assert (row["reliability"], row["reliability_text"], row["stock"], row["stock_text"]) == (
        None, "reliability not reported", None, "stock not reported"
    )


def test_a_listing_that_is_interruptible_is_shown_in_that_market_only_at_its_price():
    row = row_of(offer(id=3, price_per_gpu_hour="0.61", interruptible=True))
    assert [(m["market"], m["price_per_gpu_hour"], m["price_per_hour"]) for m in row["markets"]] == [
        ("interruptible", "0.61", "1.22")
    ]
    assert row["markets"][0]["terms_text"] == "notice before it is taken back: not said by the provider"


def test_the_markets_read_in_german():
    with translation.override("de"):
        row = row_of(THREE_MARKETS, Preferences(budget=Decimal("100")), gpus_needed=1)
    assert [m["market_text"] for m in row["markets"]] == ["auf Abruf", "unterbrechbar", "reserviert"]
    assert row["markets"][1]["terms_text"] == (
        "wird mit 5 Sekunden Vorwarnung zurückgenommen; wie oft, laut Anbieter: when demand returns"
    )
    assert row["markets"][2]["terms_text"] == "für eine Laufzeit von 30 Tagen bezahlt"
    assert row["reliability_text"] == "Zuverlässigkeit 99,81 % (Vast.ai reliability2)"
    assert row["stock_text"] == "Bestand: hoch"
