"""An empty answer names the wider market that opens machines (issue 44): interruptible allowed where
the chosen market is on demand, any market where only a reserved price does, never where any market is
chosen already. The hint is counted with the other openings, in their statement (PostgreSQL: the kept
counts of the wider market; SQLite: the engine over the fleet read once), and following it gives its
machines at its price. On both databases."""

from __future__ import annotations

import json
import random
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog.models import Machine
from nodelodge.recommendations.answer import recommendation_for
from sizing.wording import settable
from tests.differential import parse, random_fleet
from tests.factories import SmallCatalog
from tests.helpers import LLAMA_8B, LLAMA_8B_ARGS, LLAMA_8B_TOO_BIG
from tests.wizard.test_market_bounded import COPIES, grow, work

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog(db) -> SmallCatalog:
    """One-GPU machines: one listed interruptible at $0.90, two on demand also offered interruptible
    far cheaper ($0.61 and $0.7450), one on demand alone, one on demand with a cheaper reserved term."""
    small = SmallCatalog(gpus=1)
    small.machine(provider_machine_id="spot", price_per_gpu_hour=Decimal("0.90"), interruptible=True)
    small.machine(
        provider_machine_id="dual",
        price_per_gpu_hour=Decimal("2.00"),
        interruptible_price_per_gpu_hour=Decimal("0.61"),
    )
    small.machine(
        provider_machine_id="dual-dearer",
        price_per_gpu_hour=Decimal("1.80"),
        interruptible_price_per_gpu_hour=Decimal("0.7450"),
    )
    small.machine(provider_machine_id="plain", price_per_gpu_hour=Decimal("2.49"))
    small.machine(
        provider_machine_id="reserved",
        price_per_gpu_hour=Decimal("3.00"),
        reserved_price_per_gpu_hour=Decimal("1.50"),
        reserved_term_days=30,
    )
    return small


def answer(client, query: str, language: str = "en") -> dict:
    response = client.get("/api/v1/recommendations?" + query, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200, response.content
    return response.json()


def market_hints(body: dict) -> list[dict]:
    assert body["machines"] == []
    return [hint for hint in body["relax"] if "market" in hint["changes"]]


def test_an_empty_on_demand_answer_names_the_interruptible_market_with_its_machines_and_price(
    client, catalog
):
    body = answer(client, LLAMA_8B + "&max_price=0.80")
    [hint] = market_hints(body)
    assert hint["changes"] == {"market": "interruptible"}
    assert (hint["machines"], hint["cheapest_price_per_hour"]) == (2, "0.61")
    assert hint["text"] == "allowing interruptible machines opens 2 machines from $0.61/h"
    assert "allowing interruptible machines opens 2 machines from $0.61/h" in body["empty_reason"]
    # the other hints stay: raising the price limit to the cheapest listed price
    assert any(hint["changes"] == {"max_price": "0.90"} for hint in body["relax"])


def test_following_the_market_hint_gives_its_machines_cheapest_at_its_price(client, catalog):
    for query in (LLAMA_8B + "&max_price=0.80", LLAMA_8B + "&budget=0.75"):
        [hint] = market_hints(answer(client, query))
        followed = answer(client, hint["query"])
        assert "market=interruptible" in hint["query"]
        assert followed["machines_total"] == hint["machines"] > 0
        cheapest = followed["machines"][0]
        assert (cheapest["price_per_hour"], cheapest["market"]) == (
            hint["cheapest_price_per_hour"],
            "interruptible",
        )


def test_a_budget_names_the_market_too_at_the_price_it_covers_an_hour_of(client, catalog):
    [hint] = market_hints(answer(client, LLAMA_8B + "&budget=0.75"))
    # $0.75 covers an hour at $0.61 and at $0.7450, not at the listed $0.90
    assert (hint["changes"], hint["machines"], hint["cheapest_price_per_hour"]) == (
        {"market": "interruptible"},
        2,
        "0.61",
    )


@pytest.mark.parametrize("market", ["on_demand", "interruptible"])
def test_where_no_market_opens_a_machine_none_is_named(client, catalog, market):
    body = answer(client, LLAMA_8B + f"&market={market}&max_price=0.55")  # nothing under $0.55 anywhere
    assert body["relax"]
    assert market_hints(body) == []


@pytest.fixture
def reserved_only(db) -> SmallCatalog:
    """A machine on demand at $3.00 with a reserved term at $1.50, and one on demand alone at $2.49:
    nothing is offered interruptible."""
    small = SmallCatalog(gpus=1)
    small.machine(
        provider_machine_id="reserved",
        price_per_gpu_hour=Decimal("3.00"),
        reserved_price_per_gpu_hour=Decimal("1.50"),
        reserved_term_days=30,
    )
    small.machine(provider_machine_id="plain", price_per_gpu_hour=Decimal("2.49"))
    return small


@pytest.mark.parametrize("market", ["on_demand", "interruptible"])
def test_where_only_a_reserved_price_opens_the_hint_switches_to_any_market(client, reserved_only, market):
    query = LLAMA_8B + f"&market={market}&max_price=2"
    [hint] = market_hints(answer(client, query))
    assert (hint["changes"], hint["machines"], hint["cheapest_price_per_hour"]) == (
        {"market": "any"},
        1,
        "1.50",
    )
    assert hint["text"] == "allowing any market, reserved terms too, opens 1 machine from $1.50/h"
    followed = answer(client, hint["query"])
    assert followed["machines_total"] == 1
    assert (followed["machines"][0]["price_per_hour"], followed["machines"][0]["market"]) == (
        "1.50",
        "reserved",
    )


def test_with_any_market_chosen_no_market_is_named(client, catalog):
    body = answer(client, LLAMA_8B + "&market=any&max_price=0.50")
    assert body["relax"]  # the price limit's hint is there
    assert market_hints(body) == []
    assert "allowing" not in body["empty_reason"]


def test_without_a_price_limit_or_budget_no_market_is_named(client, catalog):
    """A wider market prices the same machines: with neither a price limit nor a budget it opens none."""
    body = answer(client, LLAMA_8B_TOO_BIG)
    assert body["relax"]
    assert market_hints(body) == []


def test_the_interruptible_market_is_named_before_any_market_when_both_open(client, catalog):
    # Under $0.85 nothing on demand (the listed $0.90 is the cheapest); $0.61 and $0.7450 under
    # interruptible and under any market alike: the narrower choice is named.
    [hint] = market_hints(answer(client, LLAMA_8B + "&max_price=0.85"))
    assert (hint["changes"], hint["machines"]) == ({"market": "interruptible"}, 2)


def test_the_german_answer_names_the_market_in_german(client, catalog):
    body = answer(client, LLAMA_8B + "&max_price=0.80", language="de")
    [hint] = market_hints(body)
    assert hint["text"] == "unterbrechbare Maschinen zuzulassen erschließt 2 Maschinen ab 0,61 $/h"
    html = client.get("/de/?" + LLAMA_8B + "&max_price=0.80", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    link = '<a href="?' + hint["query"].replace("&", "&amp;") + '">'
    assert link + "Unterbrechbare Maschinen zuzulassen erschließt 2 Maschinen ab 0,61 $/h</a>" in html


def test_the_page_links_the_market_hint(client, catalog):
    body = answer(client, LLAMA_8B + "&max_price=0.80")
    [hint] = market_hints(body)
    html = client.get("/?" + LLAMA_8B + "&max_price=0.80").content.decode()
    link = '<a href="?' + hint["query"].replace("&", "&amp;") + '">'
    assert link + "Allowing interruptible machines opens 2 machines from $0.61/h</a>" in html


def test_the_command_prints_the_market_hint(catalog, capsys):
    call_command("recommend", *LLAMA_8B_ARGS, "--max-price", "0.80")
    assert "allowing interruptible machines opens 2 machines from $0.61/h" in capsys.readouterr().out
    call_command("recommend", *LLAMA_8B_ARGS, "--max-price", "0.80", "--json")
    printed = json.loads(capsys.readouterr().out)
    assert {"market": "interruptible"} in [hint["changes"] for hint in printed["relax"]]


def statements(client, query: str) -> tuple[int, list[dict]]:
    with CaptureQueriesContext(connection) as captured:
        body = client.get("/api/v1/recommendations?" + query).json()
    return len(captured.captured_queries), body["relax"]


def test_the_market_hint_costs_no_statement_of_its_own(client, catalog):
    """The same empty answer asked under any market (no wider market to count) and on demand (two to
    count): as many statements, on PostgreSQL because the wider markets are openings of the statement
    that counts the others, on SQLite because the engine weighs them over the fleet already read for
    those."""
    wide, wide_hints = statements(client, LLAMA_8B + "&market=any&max_price=0.50")
    narrow, narrow_hints = statements(client, LLAMA_8B + "&max_price=0.50")
    assert not any("market" in hint["changes"] for hint in wide_hints)
    assert narrow == wide
    # under $0.50 no market opens; under $0.80 the interruptible one does, at the same cost
    opened, opened_hints = statements(client, LLAMA_8B + "&max_price=0.80")
    assert any(hint["changes"] == {"market": "interruptible"} for hint in opened_hints)
    assert opened == narrow


@pytest.mark.postgresql(reason="the hints read the kept fleet counts, partitioned by market choice")
def test_the_wider_markets_are_openings_of_the_one_counting_statement(client, catalog):
    with CaptureQueriesContext(connection) as captured:
        body = client.get("/api/v1/recommendations?" + LLAMA_8B + "&max_price=0.80").json()
    assert any(hint["changes"] == {"market": "interruptible"} for hint in body["relax"])
    by_country = [q["sql"] for q in captured.captured_queries if ") FILTER (WHERE" in q["sql"]]
    # The first counts every opening as it is (the wider markets among them), reading the kept counts of
    # the three choices; the second those with the limits found to set, on demand alone.
    assert len(by_country) == 2
    # A branch per market, each reading its own partition: the wider markets' rows only where their
    # cheapest price is within the limit, every on-demand row.
    assert "WHERE m.market = 'any' AND ((m.prices[1] <= 8000))" in by_country[0]  # $0.80 in whole units
    assert "WHERE m.market = 'interruptible' AND ((m.prices[1] <= 8000))" in by_country[0]
    assert "WHERE m.market = 'on_demand' UNION ALL" in by_country[0] or (
        by_country[0].count("UNION ALL") == 2 and "WHERE m.market = 'on_demand' OFFSET 0" in by_country[0])
    assert "UNION ALL" not in by_country[1] and "FROM catalog_fleetshape m WHERE m.market = 'on_demand'" in by_country[1]
    # Limits compared in whole units of price: integers on every row, no numeric arithmetic.
    assert "::numeric" not in by_country[0]


def test_the_api_schema_says_a_hint_may_set_the_market(client, db):
    schema = client.get("/api/v1/openapi.json").json()
    assert "market" in schema["components"]["schemas"]["RelaxHintOut"]["description"]


@pytest.mark.postgresql(reason="the kept counts answer on PostgreSQL; on SQLite the engine reads the fleet")
def test_the_market_hint_reads_as_much_whatever_the_fleet(models_and_gpus):
    """An empty on-demand answer whose interruptible market opens machines, over a random fleet and the
    same fleet ten times over: the market hint is there at either size, counting every copy, in as many
    statements as an empty answer under any market (no wider market to count), and the rows its
    openings read do not grow with the fleet."""
    now = timezone.now()
    random_fleet(random.Random(2), 60, now)
    on_demand = recommendation_for(parse(LLAMA_8B), now=now).recommendation.machines[0].hourly_price
    interruptible = recommendation_for(parse(LLAMA_8B + "&market=interruptible"), now=now)
    cheapest = interruptible.recommendation.machines[0].hourly_price
    limit = settable(cheapest)
    assert limit < on_demand  # some interruptible price is under every on-demand one
    opened = LLAMA_8B + f"&max_price={limit}"
    # under a cent nothing opens in any market: an empty answer with no wider market to count
    widest = LLAMA_8B + "&market=any&max_price=0.01"

    def market_hint(query: str):
        empty = recommendation_for(parse(query), now=now).recommendation.empty
        found = [
            (h.machines, h.cheapest_hourly)
            for h in empty.hints
            if h.changes == (("market", "interruptible"),)
        ]
        return found[0]

    small = {"hint": market_hint(opened), "opened": work(opened, now), "widest": work(widest, now)}
    grow(COPIES)
    large = {"hint": market_hint(opened), "opened": work(opened, now), "widest": work(widest, now)}
    machines, price = small["hint"]
    assert price == cheapest and machines > 0
    assert large["hint"] == ((COPIES + 1) * machines, cheapest)
    followed = recommendation_for(parse(opened + "&market=interruptible"), now=now).recommendation
    assert (followed.machines_total, followed.machines[0].hourly_price) == large["hint"]
    # as many statements at either size, and as the answer with no wider market
    assert small["opened"][0] == large["opened"][0] == small["widest"][0] == large["widest"][0]
    # the hint's openings add as many rows at either size (rows per country, not per machine); the
    # answer's own machines described may change by a few as bands fill, alike with or without it
    assert large["opened"][1] - large["widest"][1] == small["opened"][1] - small["widest"][1]
    available = Machine.objects.filter(gone_at__isnull=True, is_available=True).count()
    assert large["opened"][1] < available // 4
