"""A plan the search's budget cut short says so on the page, in the API and the CLI, with the price
no plan goes below; a search that found nothing in its budget says that, not "no plan exists"."""
from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from nodelodge.recommendations import throughput
from tests.factories import make_measured_speed
from tests.helpers import LLAMA_8B, LLAMA_8B_ARGS

pytestmark = pytest.mark.django_db

QUERY = f"{LLAMA_8B}&target_tokens=7300&efficiency=75&redundancy=0"


@pytest.fixture
def mixed_fleet(make_machine):
    """Five machines of different speeds and prices: the cheapest plan needs a search past the first."""
    for price, free, speed in [("1.00", 3, "1000"), ("1.10", 2, "1500"), ("0.70", 4, "900"),
                               ("2.05", 1, "3000"), ("1.35", 3, "2450.5")]:
        machine = make_machine("RTX 4090", gpu_count=free, free_gpus=free, price_per_gpu_hour=Decimal(price))
        make_measured_speed(machine, speed)


def test_a_proven_plan_says_nothing_of_the_budget(client, mixed_fleet):
    (plan,) = client.get(f"/api/v1/recommendations?{QUERY}").json()["throughput_plan"]["plans"]
    assert plan["proven_cheapest"] is True
    assert plan["price_floor_per_hour"] is None and plan["search_text"] is None
    assert 'data-testid="plan-search-note"' not in client.get(f"/?{QUERY}").content.decode()


def test_a_plan_cut_short_says_it_is_the_best_found_and_how_far_from_the_cheapest(
    client, mixed_fleet, monkeypatch
):
    proven = client.get(f"/api/v1/recommendations?{QUERY}").json()["throughput_plan"]["plans"][0]
    monkeypatch.setattr(throughput, "MAX_PLAN_SEARCH_STEPS", 0)
    (plan,) = client.get(f"/api/v1/recommendations?{QUERY}").json()["throughput_plan"]["plans"]
    assert plan["proven_cheapest"] is False
    floor, price = Decimal(plan["price_floor_per_hour"]), Decimal(plan["price_per_hour"])
    assert floor <= Decimal(proven["price_per_hour"]) <= price
    assert plan["search_text"] == (
        "The cheapest plan found within the search's budget of 0 steps, not proven the cheapest: no plan "
        f"costs less than ${floor}/h, so this one is at most ${price - floor}/h "
        f"({((price - floor) * 100 / price).quantize(Decimal('0.01'))} %) above the cheapest."
    )
    page = client.get(f"/?{QUERY}").content.decode()
    assert 'data-testid="plan-search-note"' in page and "not proven the cheapest" in page
    out = StringIO()
    call_command("recommend", *LLAMA_8B_ARGS, "--target-tokens", "7300", "--efficiency", "75", "--redundancy", "0",
                 stdout=out)
    assert "not proven the cheapest" in out.getvalue()
    german = client.get(f"/de/?{QUERY}").content.decode()
    assert 'data-testid="plan-search-note"' in german and "not proven the cheapest" not in german


def test_a_search_that_found_nothing_within_its_budget_says_so(client, make_machine, monkeypatch):
    # The cheapest cover is the one fast copy, and a spare must be as fast as it: the first plan has
    # none to add, and only the search finds the plan (five slow copies, one of them spare).
    fast = make_machine("H100 SXM 80GB", gpu_count=1, free_gpus=1, price_per_gpu_hour=Decimal("0.50"))
    make_measured_speed(fast, "4000")
    for _ in range(3):
        slow = make_machine("RTX 4090", gpu_count=2, free_gpus=2, price_per_gpu_hour=Decimal("0.40"))
        make_measured_speed(slow, "1000")
    query = f"{LLAMA_8B}&target_tokens=4000&efficiency=100&redundancy=1"
    (found,) = client.get(f"/api/v1/recommendations?{query}").json()["throughput_plan"]["plans"]
    assert (found["price_per_hour"], found["spare_gpus"]) == ("2.00", 1)
    monkeypatch.setattr(throughput, "MAX_PLAN_SEARCH_STEPS", 0)
    plan = client.get(f"/api/v1/recommendations?{query}").json()["throughput_plan"]
    assert plan["plans"] == []
    assert plan["empty_reason"].startswith("No plan found within the search's budget of 0 steps")
