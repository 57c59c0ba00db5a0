"""The plan search's work is bounded by its budget of steps whatever the target and the redundancy,
and a plan the budget cut short says so, with a floor no plan goes below (pure, no database)."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from sizing.limits import MAX_PLAN_SEARCH_STEPS, MAX_REDUNDANCY, MAX_TARGET_TOKENS_PER_S
from sizing.throughput_plan import SearchBudget, cheapest_plan

from .test_plan_engine import brute_force, candidate


def wide_fleet(machines: int, seed: int = 7):
    """Many machines of a few dozen speeds and prices: the shape that made the search grow with the
    target (hundreds of thousands of branch-and-bound nodes at 10 million tokens/s)."""
    rng = random.Random(seed)
    speeds = [str(900 + 37 * k) for k in range(24)]
    return [
        candidate(index, f"{rng.randint(30, 400) / 100:.2f}", rng.choice([1, 2, 4, 8]), rng.choice(speeds))
        for index in range(machines)
    ]


def first_plan_steps(candidates) -> int:
    """The work every search does before its budget counts: sorts and merges over the copies."""
    copies = sum(c.copies_free for c in candidates)
    classes = len({c.measured_tokens_per_s for c in candidates})
    return len(candidates) + copies * (4 + 2 * classes)


@pytest.mark.parametrize(
    ("target", "redundancy"),
    [(Decimal(1_000_000), 0), (Decimal(1_000_000), MAX_REDUNDANCY), (MAX_TARGET_TOKENS_PER_S, MAX_REDUNDANCY)],
)
def test_the_search_takes_at_most_its_budget_past_the_first_plan_at_the_schemas_limits(target, redundancy):
    fleet = wide_fleet(3000)
    budget = SearchBudget()
    cheapest_plan(fleet, target, Decimal(75), redundancy, budget)
    assert budget.spent <= MAX_PLAN_SEARCH_STEPS + first_plan_steps(fleet)


def test_the_work_does_not_grow_with_the_target():
    fleet = wide_fleet(3000)
    spent = []
    for target in (100_000, 1_000_000, 3_000_000):
        budget = SearchBudget()
        plan = cheapest_plan(fleet, Decimal(target), Decimal(75), 1, budget)
        assert plan is not None
        spent.append(budget.spent)
    assert max(spent) <= MAX_PLAN_SEARCH_STEPS + first_plan_steps(fleet)


def test_a_plan_cut_short_by_the_budget_says_so_and_its_floor_is_below_the_cheapest():
    fleet = [
        candidate(1, "1.00", 3, "1000"), candidate(2, "1.10", 2, "1500"), candidate(3, "0.70", 4, "900"),
        candidate(4, "2.05", 1, "3000"), candidate(5, "1.35", 3, "2450.5"),
    ]
    target, efficiency = 7300, Decimal(75)
    cheapest = brute_force(fleet, target, efficiency, 0)
    proven = cheapest_plan(fleet, Decimal(target), efficiency, 0)
    assert proven.proven_cheapest and proven.price_floor_per_hour is None
    assert int(proven.price_per_hour * 10_000) == cheapest
    cut = cheapest_plan(fleet, Decimal(target), efficiency, 0, SearchBudget(0))
    assert cut is not None and not cut.proven_cheapest
    assert cut.price_floor_per_hour * 10_000 <= cheapest <= cut.price_per_hour * 10_000
    assert cut.usable_tokens_per_s >= target


@pytest.mark.parametrize("redundancy", [1, 2])
@pytest.mark.parametrize("seed", range(40))
def test_whatever_the_budget_a_plan_serves_the_target_and_its_floor_holds(seed, redundancy):
    rng = random.Random(seed)
    fleet = [
        candidate(index, rng.choice(["0.50", "0.75", "1.00", "1.20", "2.00"]), rng.randint(0, 3),
                  rng.choice(["900", "1000", "1500", "2450.5", "3000"]))
        for index in range(5)
    ]
    target, efficiency = rng.randint(1000, 7000), Decimal(75)
    cheapest = brute_force(fleet, target, efficiency, redundancy)
    for steps in (0, 1, 3, 10, MAX_PLAN_SEARCH_STEPS):
        budget = SearchBudget(steps)
        plan = cheapest_plan(fleet, Decimal(target), efficiency, redundancy, budget)
        if cheapest is None:
            assert plan is None and not budget.gave_up
            continue
        if plan is None:  # nothing found in so few steps: said, never "impossible"
            assert budget.gave_up
            continue
        price = int(plan.price_per_hour * 10_000)
        assert price >= cheapest
        if plan.proven_cheapest:
            assert price == cheapest
        else:
            assert plan.price_floor_per_hour * 10_000 <= cheapest
