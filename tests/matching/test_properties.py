"""Properties that hold for any breakdown, fleet and preferences."""

from dataclasses import dataclass
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from sizing.breakdown import Breakdown, Item
from sizing.matching import recommend
from sizing.offers import Preferences
from sizing.reasons import EXCLUDED_REASONS, LISTED_WHEN_CHOSEN
from sizing.units import GIB, MIB
from tests.factories import CARD_48GB_MIB, H200_MIB, RTX_4090_MIB, T4_MIB, offer

MEMORIES = [None, T4_MIB, RTX_4090_MIB, 40_960, CARD_48GB_MIB, 81_559, H200_MIB]


@st.composite
def breakdowns(draw):
    shared = draw(st.integers(min_value=1, max_value=400 * GIB))
    heads = draw(st.sampled_from([None, 1, 8, 12, 25, 32, 40, 64, 96]))
    return Breakdown(
        workload="inference",
        title="drawn",
        assumptions=(),
        precision=16,
        splittable_over_heads=heads,
        items=(Item("Shared", "drawn", shared), Item("CUDA runtime", "1 GiB per GPU", GIB, per_gpu=True)),
        inputs={"model": "drawn"},
    )


@st.composite
def fleets(draw):
    size = draw(st.integers(min_value=0, max_value=25))
    fleet = []
    for index in range(size):
        gpu_count = draw(st.integers(min_value=1, max_value=8))
        fleet.append(
            offer(
                id=index + 1,
                provider=draw(st.sampled_from(["Alpha", "Beta"])),
                provider_machine_id=draw(st.sampled_from(["a", "b", "c"])),
                tier=draw(st.sampled_from(["secure", "community"])),
                memory_per_gpu_mib=draw(st.sampled_from(MEMORIES)),
                gpu_count=gpu_count,
                free_gpus=draw(st.integers(min_value=0, max_value=gpu_count)),
                country=draw(st.sampled_from(["DE", "FR", "US", None])),
                price_per_gpu_hour=Decimal(draw(st.integers(min_value=1, max_value=800))) / 100,
                memory_source=draw(st.sampled_from(["datacenter", "datasheet", "host"])),
            )
        )
    return fleet


preferences_strategy = st.builds(
    Preferences,
    budget=st.one_of(st.none(), st.integers(min_value=0, max_value=500).map(Decimal)),
    max_price_per_hour=st.one_of(
        st.none(), st.integers(min_value=1, max_value=4000).map(lambda c: Decimal(c) / 100)
    ),
    tier=st.sampled_from(["secure", "community", "both"]),
    countries=st.one_of(st.none(), st.sampled_from([frozenset({"DE"}), frozenset({"DE", "FR"})])),
    min_reliability=st.one_of(st.none(), st.sampled_from([Decimal("0"), Decimal("0.9")])),
)


def _key(machine):
    return (
        machine.hourly_price,
        machine.offer.price_per_gpu_hour,
        machine.offer.provider,
        machine.offer.provider_machine_id,
        machine.offer.id,
    )


@settings(max_examples=200, deadline=None)
@given(breakdown=breakdowns(), fleet=fleets(), preferences=preferences_strategy)
def test_every_offered_machine_really_fits_and_lists_are_sorted(breakdown, fleet, preferences):
    result = recommend(breakdown, fleet, preferences)

    for machine in (*result.machines, *result.alternatives):
        fit, machine_offer = machine.fit, machine.offer
        memory = machine_offer.memory_per_gpu_mib * MIB
        assert fit.need_per_gpu_bytes == breakdown.bytes_per_gpu(fit.gpus_used)
        assert fit.need_per_gpu_bytes <= memory
        assert fit.gpus_used <= machine_offer.free_gpus
        assert fit.gpus_used == 1 or breakdown.splittable_over_heads % fit.gpus_used == 0
        # The fewest GPUs: every smaller count that divides the heads would not hold it.
        for fewer in range(1, fit.gpus_used):
            if breakdown.can_split_over(fewer):
                assert breakdown.bytes_per_gpu(fewer) > memory
        assert machine_offer.country is not None
        assert preferences.countries is None or machine_offer.country in preferences.countries
        assert machine.hourly_price == machine_offer.price_per_gpu_hour * fit.gpus_used

    for machine in result.machines:
        assert machine.breaks == ()
        assert preferences.tier in ("both", machine.offer.tier)
        assert (
            preferences.max_price_per_hour is None or machine.hourly_price <= preferences.max_price_per_hour
        )
        assert preferences.budget is None or preferences.budget >= machine.hourly_price
        reliability = machine.offer.reliability
        assert preferences.min_reliability is None or (
            reliability is not None and reliability >= preferences.min_reliability
        )
    for machine in result.alternatives:
        assert machine.breaks

    assert [_key(m) for m in result.machines] == sorted(_key(m) for m in result.machines)
    assert [_key(m) for m in result.alternatives] == sorted(_key(m) for m in result.alternatives)
    assert sum(result.excluded.values()) + len(result.machines) == len(fleet)
    # every reason, those of a preference only where it is chosen
    assert list(result.excluded) == [
        reason for reason in EXCLUDED_REASONS
        if reason not in LISTED_WHEN_CHOSEN or getattr(preferences, LISTED_WHEN_CHOSEN[reason]) is not None
    ]


@dataclass(frozen=True)
class CountingBreakdown(Breakdown):
    """Counts how often the need per GPU count is computed."""

    def bytes_per_gpu(self, gpus: int) -> int:
        CountingBreakdown.calls += 1
        return super().bytes_per_gpu(gpus)


def test_need_per_gpu_count_is_computed_once_per_call_however_large_the_fleet():
    CountingBreakdown.calls = 0
    breakdown = CountingBreakdown(
        workload="inference",
        title="big",
        assumptions=(),
        precision=16,
        splittable_over_heads=64,
        items=(Item("Shared", "", 300 * GIB), Item("CUDA runtime", "", GIB, per_gpu=True)),
    )
    fleet = [
        offer(id=index, memory_per_gpu_mib=[RTX_4090_MIB, CARD_48GB_MIB, H200_MIB][index % 3], free_gpus=8)
        for index in range(3000)
    ]
    result = recommend(breakdown, fleet, Preferences())
    assert (
        len(result.machines) == 2000
    )  # 48 GB cards split 8 ways and H200s split 4 ways; 24 GB cards too small
    assert CountingBreakdown.calls <= 8
