"""Throughput plans under the market preference: each machine is weighed at the cheapest of the markets
the choice lets in (the rule single rows are priced by), the cheapest plan at those prices is found, the
price limit is judged on them, and each machine names its market. A plan with interruptible machines says
what happens when one is taken back (only its copies stop; the plan serves that much less until they are
replaced), on the page, in the API and in the command, in English and German. On both databases
(PostgreSQL weighs the kept latest speeds at the market's price, SQLite every speed)."""
from __future__ import annotations

import json
import random
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.utils import timezone

from nodelodge.recommendations import estimate
from nodelodge.recommendations import fleet as fleet_reader
from nodelodge.recommendations.query import parse_query
from nodelodge.recommendations.throughput import cheapest_per_million, speed_candidates, throughput_answer
from tests.factories import make_measured_speed
from tests.helpers import LLAMA_8B, LLAMA_8B_ARGS

pytestmark = pytest.mark.django_db

# 180,000 tokens/s at 75 % of 75,000 per GPU, one spare: five one-GPU copies.
TARGET = LLAMA_8B + "&target_tokens=180000&efficiency=75&redundancy=1"
NOTE = ("1 of its 2 machines is interruptible: if the provider takes it back, only its copies stop, and the "
        "plan serves that much less until they are replaced; the other machines keep serving.")


@pytest.fixture
def fleet(make_machine) -> dict:
    """Three 4 × H100 machines at one measured speed: "spot" on demand at $2.50 also offered
    interruptible at $1.00, "cheap" on demand at $2.00, "next" on demand at $2.20."""
    machines = {
        "spot": make_machine("H100 SXM 80GB", gpu_count=4, free_gpus=4, price_per_gpu_hour=Decimal("2.50"),
                             interruptible_price_per_gpu_hour=Decimal("1.00"), interruption_notice_seconds=30),
        "cheap": make_machine("H100 SXM 80GB", gpu_count=4, free_gpus=4, price_per_gpu_hour=Decimal("2.00")),
        "next": make_machine("H100 SXM 80GB", gpu_count=4, free_gpus=4, price_per_gpu_hour=Decimal("2.20")),
    }
    for machine in machines.values():
        make_measured_speed(machine, "75000")
    return machines


def plan_of(client, query: str, **headers) -> dict:
    response = client.get(f"/api/v1/recommendations?{query}", **headers)
    assert response.status_code == 200, response.content
    return response.json()["throughput_plan"]


def parts(plan: dict) -> list[tuple]:
    return [(m["id"], m["gpus"], m["market"], m["price_per_gpu_hour"], m["price_per_hour"]) for m in plan["machines"]]


def test_on_demand_only_plans_at_the_listed_prices_and_says_nothing_of_interruption(client, fleet):
    (cheapest,) = plan_of(client, TARGET)["plans"]
    assert cheapest["price_per_hour"] == "10.20"
    assert parts(cheapest) == [
        (fleet["cheap"].id, 4, "on_demand", "2.00", "8.00"), (fleet["next"].id, 1, "on_demand", "2.20", "2.20"),
    ]
    assert (cheapest["interruptible_machines"], cheapest["interruption_note"]) == (0, None)


def test_interruptible_allowed_weighs_each_machine_at_its_cheaper_price(client, fleet):
    (cheapest,) = plan_of(client, TARGET + "&market=interruptible")["plans"]
    assert cheapest["price_per_hour"] == "6.00"
    assert parts(cheapest) == [
        (fleet["spot"].id, 4, "interruptible", "1.00", "4.00"), (fleet["cheap"].id, 1, "on_demand", "2.00", "2.00"),
    ]
    assert [m["market_text"] for m in cheapest["machines"]] == ["interruptible", "on demand"]
    assert (cheapest["interruptible_machines"], cheapest["interruption_note"]) == (1, NOTE)
    assert cheapest["price_per_million_tokens_at_target"] == "0.0093"  # $6.00/h over 180,000 tokens/s
    assert plan_of(client, TARGET + "&market=any")["plans"][0]["price_per_hour"] == "6.00"


def test_the_price_limit_is_judged_on_the_price_used(client, fleet):
    # $2.10 per machine-hour (one GPU a copy): on demand only the $2.00 machine's four copies, too few.
    assert plan_of(client, TARGET + "&max_price=2.10")["plans"] == []
    (cheapest,) = plan_of(client, TARGET + "&max_price=2.10&market=interruptible")["plans"]
    assert cheapest["price_per_hour"] == "6.00"


def test_the_page_names_the_markets_and_the_note_in_both_languages(client, fleet):
    page = client.get("/?" + TARGET + "&market=interruptible").content.decode()
    plan = page[page.index('data-testid="plan-1"'):page.index('id="machines"')]
    assert f'<p class="notice" data-testid="plan-interruption">{NOTE}</p>' in plan
    assert plan.count('data-testid="plan-market"') == 1
    assert '<span class="badge market-used" data-testid="plan-market">interruptible</span>' in plan
    default = client.get("/?" + TARGET).content.decode()
    assert 'data-testid="plan-interruption"' not in default and 'data-testid="plan-market"' not in default
    german = plan_of(client, TARGET + "&market=interruptible", HTTP_ACCEPT_LANGUAGE="de")["plans"][0]
    assert german["interruption_note"].startswith(
        "1 seiner 2 Maschinen ist unterbrechbar: Nimmt der Anbieter sie zurück, stoppen nur ihre Kopien")
    assert german["machines"][0]["market_text"] == "unterbrechbar"


def test_the_command_prints_the_market_of_each_machine_and_the_note(fleet, capsys):
    args = [*LLAMA_8B_ARGS, "--target-tokens", "180000", "--efficiency", "75", "--redundancy", "1",
            "--market", "interruptible"]
    call_command("recommend", *args)
    out = capsys.readouterr().out
    assert NOTE in out
    assert "$4.00/h interruptible" in out and "$2.00/h\n" in out
    call_command("recommend", *args, "--json")
    plan = json.loads(capsys.readouterr().out)["throughput_plan"]["plans"][0]
    assert [m["market"] for m in plan["machines"]] == ["interruptible", "on_demand"]


def test_the_schema_documents_each_plan_machines_market_and_the_note(client, db):
    schemas = client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    assert {"market", "market_text"} <= set(schemas["PlanMachineOut"]["properties"])
    assert {"interruptible_machines", "interruption_note"} <= set(schemas["PlanOut"]["properties"])


@pytest.mark.postgresql(reason="compares the kept latest speeds, weighed at each market's column in SQL, with every "
                               "speed weighed by the market rule in Python; SQLite reads every speed either way")
@pytest.mark.parametrize("market", ["interruptible", "any"])
def test_the_kept_speeds_under_a_market_plan_as_every_speed_does(make_machine, market):
    rng = random.Random(7)
    for number in range(40):
        markets: dict = {}
        draw = rng.random()
        if draw < 0.15:
            markets["interruptible"] = True
        elif draw < 0.6:
            markets["interruptible_price_per_gpu_hour"] = rng.choice([Decimal("0.90"), Decimal("1.60"), Decimal("3.00")])
        if rng.random() < 0.3:
            markets.update(reserved_price_per_gpu_hour=rng.choice([Decimal("1.10"), Decimal("2.20")]),
                           reserved_term_days=30)
        gpus = rng.choice([1, 2, 4])
        machine = make_machine(rng.choice(["H100 SXM 80GB", "A100 80GB"]), gpu_count=gpus, free_gpus=gpus,
                               price_per_gpu_hour=rng.choice([Decimal("1.50"), Decimal("2.00"), Decimal("2.50")]),
                               provider_machine_id=f"m{number}", **markets)
        make_measured_speed(machine, rng.choice(["40000", "75000"]))
    now = timezone.now()
    for text in (TARGET, TARGET + "&max_price=2", LLAMA_8B + "&sort=price_per_million_tokens",
                 TARGET.replace("redundancy=1", "redundancy=2") + "&gpu_plans=true"):
        query = parse_query(dict(part.split("=", 1) for part in f"{text}&market={market}".split("&")))
        breakdown, model_row = estimate.estimate_for(query)
        cutoff, preferences = fleet_reader.stale_cutoff(now), fleet_reader.preferences_for(query)
        cut, total = speed_candidates(query, breakdown, cutoff, preferences, keep=20)
        every_one, every_total = speed_candidates(query, breakdown, cutoff, preferences, every_one=True)
        assert total == every_total and total > 10, text
        assert cheapest_per_million(cut, 20) == cheapest_per_million(every_one, 20), text
        if query.target_tokens is not None:
            planned = [throughput_answer(query, breakdown, found, total, model_row.name, total).to_dict()
                       for found in (cut, every_one)]
            assert planned[0] == planned[1] and planned[0]["plans"], text
            assert any(m["market"] != "on_demand" for m in planned[0]["plans"][0]["machines"]), text


def test_naming_each_machines_market_costs_no_statement_of_its_own(client, fleet):
    """The market of each plan machine comes with its measured speed, in the one statement that reads
    those: a plan under interruptible takes as many statements as on demand, and as many as the answer
    takes without a target (one speeds statement and one measurements statement more)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = {}
    for name, query in (("plain", LLAMA_8B), ("on_demand", TARGET), ("interruptible", TARGET + "&market=interruptible")):
        client.get(f"/api/v1/recommendations?{query}")  # warm: the first answer reads the catalog's caches
        with CaptureQueriesContext(connection) as captured:
            response = client.get(f"/api/v1/recommendations?{query}")
        assert response.status_code == 200
        counts[name] = len(captured.captured_queries)
    interruptible = plan_of(client, TARGET + "&market=interruptible")["plans"][0]
    assert {m["market"] for m in interruptible["machines"]} == {"interruptible", "on_demand"}
    assert counts["interruptible"] == counts["on_demand"] == counts["plain"] + 2
