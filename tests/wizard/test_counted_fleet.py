"""The wizard counts the fleet in SQL and describes only the machines it shows. On random small
fleets its answer must equal, field for field, the engine's answer over every machine."""
import random
from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.utils import timezone

from catalog.models import GpuType, Machine, Provider
from nodelodge.recommendations import fleet
from nodelodge.recommendations.answer import recommendation_for
from nodelodge.recommendations.estimate import estimate_for
from nodelodge.recommendations.query import WorkloadQuery, WorkloadQueryForm
from sizing import matching
from sizing.fit import fit_thresholds
from sizing.limits import PAGE_LIMIT
from sizing.specs import PRECISIONS

# Names that sort differently by byte and by dictionary order, so the tie-break's order is tested.
PROVIDER_NAMES = [("alpha Cloud", "secure"), ("Beta", "secure"), ("_under", "community"), ("Zeta", "community")]
PRICES = [Decimal(p) for p in ("0.25", "0.5", "0.5", "1.00", "1.25", "2.0", "3.3333", "4.10")]
COUNTRIES = ["DE", "FR", "US", "CH", "SE", ""]

QUERIES = [
    "workload=inference&model=llama-3-1-8b&precision=16&context=4096&requests=1",
    "workload=inference&model=llama-3-1-70b&precision=16&context=8192&requests=4",
    "workload=inference&model=llama-3-1-405b&precision=16&context=8192&requests=1",
    "workload=inference&model=qwen2-5-32b&precision=8&context=32768&requests=2",
    "workload=inference&model=whisper-large-v3&precision=16&context=4096&requests=4",
    "workload=finetune&model=llama-3-1-8b&precision=16&context=2048&requests=4",
    "workload=image&model=stable-diffusion-xl&precision=16&requests=1",
    "workload=notebook&memory_gib=30",
]
PREFERENCES = [
    "",
    "&tier=secure",
    "&tier=community&max_price=2",
    "&max_price=1.5&budget=3",
    "&budget=0.9",
    "&countries=EU",
    "&countries=CH&tier=secure",
    "&max_price=0.3&tier=community&countries=DE,FR,US",
    "&limit=3",
    "&max_price=10&budget=6.67",
]


def _query(query_string: str) -> WorkloadQuery:
    values = dict(part.split("=", 1) for part in query_string.split("&"))
    form = WorkloadQueryForm(values)
    assert form.is_valid(), form.errors
    return WorkloadQuery.from_form(form)


def _memory_pool() -> list[int]:
    """Datasheet figures plus every fit threshold of the queries, exactly and one MiB either side."""
    pool = set(GpuType.objects.values_list("memory_mib", flat=True))
    for query_string in QUERIES:
        query = _query(query_string)
        breakdowns = [estimate_for(query)[0]]
        if query.precision:
            breakdowns += [estimate_for(query, p)[0] for p in PRECISIONS if p < query.precision]
        for breakdown in breakdowns:
            for _, need in fit_thresholds(breakdown):
                pool |= {need - 1, need, need + 1}
    return sorted(m for m in pool if m and m > 0)


def _random_fleet(rng: random.Random, machines: int, now) -> None:
    providers = [
        Provider.objects.create(name=name, slug=f"p{index}", tier=tier)
        for index, (name, tier) in enumerate(PROVIDER_NAMES)
    ]
    gpu_type = GpuType.objects.order_by("pk").first()
    memories = _memory_pool()
    stale = now - timedelta(seconds=settings.MACHINE_STALE_AFTER_SECONDS + 60)
    rows = []
    for index in range(machines):
        count = rng.choice([1, 1, 2, 4, 8, 8, 16])
        rows.append(
            Machine(
                provider=(provider := rng.choice(providers)),
                tier=provider.tier,
                provider_machine_id=rng.choice(["a", "B", "b", "_"]) + f"-{index}",
                gpu_type=gpu_type,
                gpu_count=count,
                free_gpus=rng.choice([0, count, count, rng.randint(0, count)]),
                memory_per_gpu_mib=None if rng.random() < 0.05 else rng.choice(memories),
                memory_source=rng.choice(["datacenter", "datasheet", "host"]),
                memory_flag="Reported far from the datasheet." if rng.random() < 0.05 else "",
                country=rng.choice(COUNTRIES),
                region="somewhere",
                price_per_gpu_hour=rng.choice(PRICES),
                interruptible=rng.random() < 0.2,
                booking_limit_hours=rng.choice([None, None, 1, 24]),
                is_available=rng.random() < 0.9,
                last_seen_at=stale if rng.random() < 0.05 else now,
                gone_at=now if rng.random() < 0.03 else None,
            )
        )
    Machine.objects.bulk_create(rows)


def _engine_over_every_machine(query: WorkloadQuery, now, rng: random.Random) -> matching.Recommendation:
    """The reference: the pure engine over every machine the catalog may offer, counted by the ORM."""
    breakdown, _ = estimate_for(query)
    lower = {}
    if query.precision:
        for precision in PRECISIONS:
            if precision < query.precision:
                lower[precision] = estimate_for(query, precision)[0]
    recommendation, _ = fleet.recommend_over_every_machine(
        query, breakdown, lower, now, query.limit or PAGE_LIMIT, shuffle=rng.shuffle
    )
    return recommendation


@pytest.mark.parametrize("seed", range(6))
def test_the_counted_answer_equals_the_engine_over_every_machine(models_and_gpus, seed):
    rng = random.Random(seed)
    now = timezone.now()
    _random_fleet(rng, rng.choice([0, 5, 40, 120]), now)
    for query_string in QUERIES:
        for preferences in PREFERENCES:
            query = _query(query_string + preferences)
            expected = _engine_over_every_machine(query, now, rng).to_dict()
            # The engine's own answer; what relaxing countries or sizes opens is tested in test_relax.py.
            actual = recommendation_for(query, now=now, relax=False).recommendation.to_dict()
            assert actual == expected, query_string + preferences


def test_an_empty_answer_counts_what_relaxing_each_preference_adds(models_and_gpus):
    now = timezone.now()
    rng = random.Random(99)
    _random_fleet(rng, 60, now)
    # Tight limits leave nothing recommended, so the empty reason's counts come from the database.
    for preferences in ("&max_price=0.01", "&budget=0.01", "&max_price=0.01&budget=0.01&tier=secure"):
        query = _query(QUERIES[0] + preferences)
        actual = recommendation_for(query, now=now, relax=False).recommendation
        expected = _engine_over_every_machine(query, now, rng)
        assert actual.machines == ()
        assert actual.empty_reason == expected.empty_reason
        assert "adds" in actual.empty_reason or "more than one preference" in actual.empty_reason


@pytest.mark.postgresql(reason="the countries hint is one statement over the kept fleet counts, kept by PostgreSQL triggers")
@pytest.mark.parametrize("seed", range(3))
def test_each_countrys_machines_and_cheapest_price_equal_that_countrys_own_count(models_and_gpus, seed):
    """The countries hint reads every country's machines meeting every preference, and the cheapest
    hourly price there, in one statement over the kept counts; each must equal the count for that
    country alone."""
    from dataclasses import replace

    from catalog.counting import countries as catalog_countries
    from catalog.counting import fleet as catalog_fleet

    rng = random.Random(100 + seed)
    now = timezone.now()
    _random_fleet(rng, 150, now)
    # Prices either side of a limit shared out over GPUs (6.67 ÷ 8 = 0.83375, 6.67 ÷ 16, 6.67 ÷ 4, 0.9 ÷ 8).
    edges = [Decimal(p) for p in ("0.8337", "0.8338", "0.4168", "0.4169", "1.6675", "1.6676", "0.1125", "0.1126")]
    for machine in Machine.objects.order_by("pk")[::3]:
        Machine.objects.filter(pk=machine.pk).update(price_per_gpu_hour=rng.choice(edges))
    # And machines that use exactly 8 GPUs for the 405B query: $6.6696/h is within a $6.67 budget,
    # $6.6704/h is not.
    big = _query(QUERIES[2])
    need = dict(fit_thresholds(estimate_for(big)[0]))[8]
    template = Machine.objects.filter(country="DE").first()
    for index, price in enumerate(("0.8337", "0.8338", "0.8338")):
        Machine.objects.create(
            provider=template.provider, tier=template.provider.tier, provider_machine_id=f"edge-{index}",
            gpu_type=template.gpu_type, gpu_count=8, free_gpus=8, memory_per_gpu_mib=need,
            memory_source="datacenter", country="DE", region="", price_per_gpu_hour=Decimal(price),
            is_available=True, last_seen_at=now,
        )
    compared = 0
    for query_string in QUERIES:
        for preferences in PREFERENCES:
            query = _query(query_string + preferences)
            breakdown, _ = estimate_for(query)
            fleet_query = fleet.fleet_query(query, [breakdown], now)
            found = {country: (cheapest, machines)
                     for country, cheapest, machines in catalog_countries.meeting_by_country(fleet_query)}
            for country in sorted({c for c in COUNTRIES if c}):
                if query.countries is not None and country not in query.countries:
                    assert country not in found
                    continue
                alone = catalog_fleet.counted_fleet(replace(fleet_query, countries=frozenset({country})))
                expected = (alone.cheapest_meeting[0], alone.counted.fitting) if alone.counted.fitting else None
                assert found.get(country) == expected, (query_string + preferences, country)
                compared += bool(expected)
    assert compared > 50, "most comparisons had machines to count"
