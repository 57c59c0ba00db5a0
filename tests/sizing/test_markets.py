"""The markets a machine is offered in (`sizing.markets`): which ones, at what price and terms, and the
rules their fields keep (the admin and the feeds say these words)."""
from decimal import Decimal

import pytest

from sizing.markets import (
    INTERRUPTIBLE,
    MARKETS,
    ON_DEMAND,
    RESERVED,
    MarketPrice,
    interruptible_price,
    market_prices,
    market_problems,
    reliability_problem,
)

NO_TERMS = {
    "interruptible_price_per_gpu_hour": None, "interruption_notice_seconds": None, "interruption_frequency": "",
    "reserved_price_per_gpu_hour": None, "reserved_term_days": None,
}


def test_the_market_names_are_those_the_price_history_keys_by():
    assert MARKETS == ("on_demand", "interruptible", "reserved")


def test_a_plain_listing_is_on_demand_only():
    assert market_prices(price_per_gpu_hour=Decimal("2.49"), interruptible=False) == (
        MarketPrice(ON_DEMAND, Decimal("2.49")),
    )


def test_a_machine_in_all_three_markets_lists_them_in_order_with_their_terms():
    found = market_prices(
        price_per_gpu_hour=Decimal("2.49"), interruptible=False, interruptible_price_per_gpu_hour=Decimal("1.75"),
        interruption_notice_seconds=5, interruption_frequency="rarely", reserved_price_per_gpu_hour=Decimal("1.99"),
        reserved_term_days=30,
    )
    assert found == (
        MarketPrice(ON_DEMAND, Decimal("2.49")),
        MarketPrice(INTERRUPTIBLE, Decimal("1.75"), notice_seconds=5, frequency="rarely"),
        MarketPrice(RESERVED, Decimal("1.99"), term_days=30),
    )


def test_a_listing_that_is_interruptible_is_offered_there_at_its_price_and_not_on_demand():
    """As every machine flagged interruptible before markets became one (migration 0022)."""
    found = market_prices(price_per_gpu_hour=Decimal("0.61"), interruptible=True)
    assert found == (MarketPrice(INTERRUPTIBLE, Decimal("0.61")),)
    assert interruptible_price(Decimal("0.61"), True, None) == Decimal("0.61")
    assert interruptible_price(Decimal("0.61"), True, Decimal("0.50")) == Decimal("0.61")
    assert interruptible_price(Decimal("0.61"), False, None) is None


@pytest.mark.parametrize(
    ("terms", "field", "words"),
    [
        ({"interruptible": True, "interruptible_price_per_gpu_hour": Decimal("0.50")},
         "interruptible_price_per_gpu_hour", "its interruptible price is its price per GPU-hour (2.49)"),
        ({"interruption_notice_seconds": 30}, "interruption_notice_seconds", "need an interruptible price"),
        ({"interruption_frequency": "weekly"}, "interruption_frequency", "need an interruptible price"),
        ({"reserved_price_per_gpu_hour": Decimal("1.99")}, "reserved_term_days", "needs its term in days"),
        ({"reserved_term_days": 30}, "reserved_price_per_gpu_hour", "needs its reserved price"),
    ],
)
def test_terms_that_disagree_are_named_beside_their_field(terms, field, words):
    problems = market_problems(**{**NO_TERMS, "price_per_gpu_hour": Decimal("2.49"), "interruptible": False, **terms})
    assert list(problems) == [field] and words in problems[field]


def test_terms_that_agree_have_no_problem():
    good = {**NO_TERMS, "price_per_gpu_hour": Decimal("2.49"), "interruptible": False,
            "interruptible_price_per_gpu_hour": Decimal("1.75"), "interruption_notice_seconds": 0,
            "reserved_price_per_gpu_hour": Decimal("1.99"), "reserved_term_days": 365}
    assert market_problems(**good) == {}
    listed = {**NO_TERMS, "price_per_gpu_hour": Decimal("0.61"), "interruptible": True,
              "interruptible_price_per_gpu_hour": Decimal("0.61"), "interruption_frequency": "on outbid"}
    assert market_problems(**listed) == {}


def test_a_reliability_figure_is_kept_only_with_what_it_measures():
    assert reliability_problem(Decimal("0.99"), "Vast.ai reliability2") == ""
    assert reliability_problem(None, "") == ""
    assert "Say what the reliability figure measures" in reliability_problem(Decimal("0.99"), "  ")
    assert "no reliability figure" in reliability_problem(None, "uptime")


@pytest.mark.parametrize(
    ("price", "shown"),
    [("2.4900", "2.49"), ("0.4006", "0.4006"), ("3", "3.00"), ("0.6100", "0.61"), ("1.5000", "1.50")],
)
def test_a_price_is_shown_to_the_cent_with_more_places_only_where_it_has_them(price, shown):
    from sizing.markets import price_text

    assert price_text(Decimal(price)) == shown
