"""The fit thresholds the catalog turns into SQL decide exactly what the engine's own fit decides."""
import random

import pytest

from sizing.breakdown import Breakdown, Item
from sizing.fit import FitPlanner, fit_thresholds, gpus_used_by_thresholds
from sizing.units import GIB, MIB


def _random_breakdown(rng: random.Random) -> Breakdown:
    heads = rng.choice([None, 1, 2, 3, 8, 12, 14, 16, 20, 24, 28, 32, 40, 48, 64, 96, 128])
    return Breakdown(
        workload="inference",
        title="random",
        items=(
            Item("weights", "w", rng.randint(1, 900 * GIB)),
            Item("runtime", "r", rng.choice([0, 1, 500 * MIB, rng.randint(1, 2 * GIB)]), per_gpu=True),
        ),
        assumptions=(),
        precision=16,
        splittable_over_heads=heads,
    )


@pytest.mark.parametrize("seed", range(40))
def test_thresholds_give_the_planners_gpu_count_on_every_machine_shape(seed):
    rng = random.Random(seed)
    breakdown = _random_breakdown(rng)
    planner = FitPlanner(breakdown)
    thresholds = fit_thresholds(breakdown)
    edges = [need for _, need in thresholds]
    memories = {rng.randint(1, 200_000) for _ in range(150)}
    memories |= {max(1, edge + delta) for edge in edges for delta in (-1, 0, 1)}
    for memory in sorted(memories):
        for free in range(0, 17):
            fit = planner.fit(memory, free)
            expected = fit.gpus_used if fit else None
            assert gpus_used_by_thresholds(thresholds, memory, free) == expected, (memory, free, thresholds)


def test_thresholds_keep_only_gpu_counts_that_lower_the_need():
    breakdown = Breakdown(
        workload="inference", title="t", items=(Item("weights", "w", 100 * GIB),), assumptions=(),
        splittable_over_heads=8,
    )
    assert fit_thresholds(breakdown) == ((1, 102400), (2, 51200), (4, 25600), (8, 12800))


def test_an_unsplittable_workload_has_one_threshold():
    breakdown = Breakdown(workload="image", title="t", items=(Item("weights", "w", GIB + 1),), assumptions=())
    assert fit_thresholds(breakdown) == ((1, 1025),)
