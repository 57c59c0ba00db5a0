"""The throughput plan engine (pure): the documentation's example, optimality against brute force,
the rules every plan keeps, and the price per million tokens."""

from __future__ import annotations

import itertools
import random
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sizing.calculators import gpus_for_throughput
from sizing.errors import SizingError
from sizing.speeds import price_per_million_tokens
from sizing.throughput_plan import (
    PlanCandidate,
    cheapest_plan,
    copy_price_units,
    copy_speed,
)


def candidate(machine_id, price, free, speed, *, per_copy=1, measured_gpus=1):
    return PlanCandidate(
        machine_id=machine_id,
        order_key=(Decimal(price), "p", f"m{machine_id}", machine_id),
        price_per_gpu_hour=Decimal(price),
        free_gpus=free,
        gpus_per_copy=per_copy,
        measured_tokens_per_s=Decimal(speed),
        measured_gpus=measured_gpus,
    )


def test_the_documentation_example_reproduces():
    # 180,000 tokens/s at 75,000 measured per GPU and 75 % → 4 productive + 1 redundancy = 5.
    doc = gpus_for_throughput(180_000, 75_000, 75, 1)
    assert (doc.productive_gpus, doc.total_gpus) == (4, 5)
    plan = cheapest_plan([candidate(1, "2.00", 8, "75000")], Decimal(180_000), Decimal(75), 1)
    assert (plan.productive_gpus, plan.spare_gpus, plan.gpus) == (4, 1, 5)
    assert plan.price_per_hour == Decimal("10.00")
    assert "Usable per GPU on machine 1 = 75,000 tokens/s measured × 75 % = 56,250 tokens/s" in plan.steps[0]
    assert "Productive GPUs = ceil(180,000 ÷ 56,250) = 4" in plan.steps
    assert plan.steps[-2].startswith("Redundancy GPUs = 1 on machine 1")
    assert plan.steps[-1] == "Total GPUs = 4 productive + 1 redundancy = 5"


def test_a_machine_with_too_few_free_gpus_is_joined_by_others_and_never_overbooked():
    fleet = [candidate(1, "1.00", 3, "75000"), candidate(2, "1.50", 8, "75000")]
    plan = cheapest_plan(fleet, Decimal(180_000), Decimal(75), 1)
    used = {part.candidate.machine_id: part.gpus for part in plan.parts}
    assert used == {1: 3, 2: 2}
    assert all(part.gpus <= part.candidate.free_gpus for part in plan.parts)
    assert plan.price_per_hour == Decimal("6.00")


def test_tensor_parallel_copies_use_whole_groups_of_gpus():
    # A model needing 4 GPUs per copy on an 8-GPU machine with 6 free: one copy only.
    fleet = [
        candidate(1, "2.00", 6, "4000", per_copy=4, measured_gpus=4),
        candidate(2, "3.00", 8, "4000", per_copy=4, measured_gpus=4),
    ]
    plan = cheapest_plan(fleet, Decimal(5000), Decimal(100), 0)
    assert [(p.candidate.machine_id, p.gpus) for p in plan.parts] == [(1, 4), (2, 4)]
    assert plan.productive_gpus == 8


def test_no_plan_when_the_fleet_cannot_serve_the_target():
    assert cheapest_plan([candidate(1, "1.00", 2, "1000")], Decimal(5000), Decimal(75), 0) is None
    # Enough for the target but not for a spare copy as fast as the others.
    assert cheapest_plan([candidate(1, "1.00", 2, "1000")], Decimal(1500), Decimal(75), 1) is None


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("target", {"target_tokens_per_s": Decimal(0)}),
        ("efficiency", {"efficiency_percent": Decimal(101)}),
        ("redundancy", {"redundancy": -1}),
        ("redundancy", {"redundancy": 65}),
    ],
)
def test_bad_inputs_are_refused_with_the_field(field, kwargs):
    arguments = {
        "target_tokens_per_s": Decimal(100),
        "efficiency_percent": Decimal(75),
        "redundancy": 1,
        **kwargs,
    }
    with pytest.raises(SizingError) as error:
        cheapest_plan([candidate(1, "1", 1, "100")], **arguments)
    assert error.value.field == field


def brute_force(candidates, target, efficiency, redundancy):
    """Every choice of copies on every machine; the cheapest whose target holds with any R copies down."""
    options = [range(c.copies_free + 1) for c in candidates]
    best = None
    for counts in itertools.product(*options):
        speeds = sorted(
            (
                copy_speed(c, Fraction(efficiency))
                for c, n in zip(candidates, counts, strict=True)
                for _ in range(n)
            ),
            reverse=True,
        )
        if len(speeds) < redundancy or sum(speeds[redundancy:]) < target:
            continue
        price = sum(copy_price_units(c) * n for c, n in zip(candidates, counts, strict=True))
        if best is None or price < best:
            best = price
    return best


machines = st.lists(
    st.tuples(
        st.sampled_from(["0.50", "0.75", "1.00", "1.20", "2.00", "2.49"]),
        st.integers(0, 4),
        st.sampled_from(["900", "1000", "1500", "2450.5", "3000"]),
        st.sampled_from([1, 1, 2]),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(
    fleet=machines,
    target=st.integers(1, 9000),
    efficiency=st.sampled_from([Decimal(50), Decimal(75), Decimal("87.5"), Decimal(100)]),
    redundancy=st.integers(0, 2),
)
def test_the_cheapest_plan_is_optimal_against_brute_force(fleet, target, efficiency, redundancy):
    candidates = [
        candidate(index, price, free, speed, per_copy=per_copy, measured_gpus=per_copy)
        for index, (price, free, speed, per_copy) in enumerate(fleet)
    ]
    expected = brute_force(candidates, target, efficiency, redundancy)
    plan = cheapest_plan(candidates, Decimal(target), efficiency, redundancy)
    if expected is None:
        assert plan is None
        return
    assert plan is not None
    assert int(plan.price_per_hour * 10_000) == expected
    # The plan keeps every rule: free GPUs, whole copies, the target with any R copies down.
    speeds = []
    for part in plan.parts:
        assert part.gpus <= part.candidate.free_gpus
        speeds += [copy_speed(part.candidate, Fraction(efficiency))] * part.copies
    speeds.sort(reverse=True)
    assert sum(speeds[redundancy:]) >= target
    assert plan.usable_tokens_per_s >= target
    # The same fleet in another order gives the same plan.
    shuffled = list(candidates)
    random.Random(target).shuffle(shuffled)
    again = cheapest_plan(shuffled, Decimal(target), efficiency, redundancy)
    assert [(p.candidate.machine_id, p.productive_copies, p.spare_copies) for p in again.parts] == [
        (p.candidate.machine_id, p.productive_copies, p.spare_copies) for p in plan.parts
    ]


def test_price_per_million_tokens_arithmetic():
    # $2.49 per GPU-hour at 2,450 tokens/s: 2.49 ÷ (2,450 × 3,600) × 10^6 = 0.28231… → $0.2823.
    assert price_per_million_tokens(Decimal("2.49"), Decimal("2450"), 1) == Decimal("0.2823")
    # Measured on 4 GPUs together: the price of the 4 GPUs over their joint speed.
    assert price_per_million_tokens(Decimal("2.00"), Decimal("4800"), 4) == Decimal("0.4630")
    assert price_per_million_tokens(Decimal("0.098"), Decimal("1000"), 1) == Decimal("0.0272")
