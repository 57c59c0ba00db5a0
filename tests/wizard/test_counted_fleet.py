"""The wizard counts the fleet in SQL and describes only the machines it shows. On random small
fleets its answer must equal, field for field, the engine's answer over every machine."""
import random
from decimal import Decimal

import pytest
from django.utils import timezone

from catalog.counting import countries as catalog_countries
from catalog.counting import fleet as catalog_fleet
from catalog.models import Machine
from nodelodge.recommendations import fleet
from nodelodge.recommendations.answer import recommendation_for
from nodelodge.recommendations.estimate import estimate_for
from sizing.fit import fit_thresholds
from tests.differential import PREFERENCES, QUERIES, engine_over_every_machine, parse, random_fleet
from tests.factories import COUNTRIES


@pytest.mark.parametrize("seed", range(6))
def test_the_counted_answer_equals_the_engine_over_every_machine(models_and_gpus, seed):
    rng = random.Random(seed)
    now = timezone.now()
    random_fleet(rng, rng.choice([0, 5, 40, 120]), now)
    for query_string in QUERIES:
        for preferences in PREFERENCES:
            query = parse(query_string + preferences)
            expected = engine_over_every_machine(query, now, rng).to_dict()
            # The engine's own answer; what relaxing countries or sizes opens is tested in test_relax.py.
            actual = recommendation_for(query, now=now, relax=False).recommendation.to_dict()
            assert actual == expected, query_string + preferences


def test_an_empty_answer_counts_what_relaxing_each_preference_adds(models_and_gpus):
    now = timezone.now()
    rng = random.Random(99)
    random_fleet(rng, 60, now)
    # Tight limits leave nothing recommended, so the empty reason's counts come from the database.
    for preferences in ("&max_price=0.01", "&budget=0.01", "&max_price=0.01&budget=0.01&tier=secure"):
        query = parse(QUERIES[0] + preferences)
        actual = recommendation_for(query, now=now, relax=False).recommendation
        expected = engine_over_every_machine(query, now, rng)
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

    rng = random.Random(100 + seed)
    now = timezone.now()
    random_fleet(rng, 150, now)
    # Prices either side of a limit shared out over GPUs (6.67 ÷ 8 = 0.83375, 6.67 ÷ 16, 6.67 ÷ 4, 0.9 ÷ 8).
    edges = [Decimal(p) for p in ("0.8337", "0.8338", "0.4168", "0.4169", "1.6675", "1.6676", "0.1125", "0.1126")]
    for machine in Machine.objects.order_by("pk")[::3]:
        Machine.objects.filter(pk=machine.pk).update(price_per_gpu_hour=rng.choice(edges))
    # And machines that use exactly 8 GPUs for the 405B query: $6.6696/h is within a $6.67 budget,
    # $6.6704/h is not.
    big = parse(QUERIES[2])
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
            query = parse(query_string + preferences)
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


@pytest.mark.postgresql(reason="the counts per country of many queries are one statement over the kept counts")
@pytest.mark.parametrize("seed", range(2))
def test_many_queries_counted_at_once_equal_each_counted_alone(models_and_gpus, seed):
    """An empty answer's openings are counted in one statement that groups by country, tier and market
    and lets the openings differing only in those share their aggregates: every query of a batch holding
    all of them at once (each workload under every preference, in each market) is counted as it is alone."""
    from dataclasses import replace

    rng = random.Random(300 + seed)
    now = timezone.now()
    random_fleet(rng, 150, now)
    batch = []
    for query_string in QUERIES:
        for preferences in PREFERENCES:
            query = parse(query_string + preferences)
            breakdown, _ = estimate_for(query)
            for market in ("on_demand", "interruptible", "any"):
                batch.append(replace(fleet.fleet_query(query, [breakdown], now), market=market))
    together = catalog_countries.meeting_by_country_many(batch)
    assert together == [catalog_countries.meeting_by_country(query) for query in batch]
    assert sum(map(bool, together)) > len(batch) // 2, "most queries had machines to count"


@pytest.mark.parametrize("seed", range(2))
def test_the_countries_hint_equals_the_engine_country_by_country(models_and_gpus, seed):
    """The countries hint (every country's machines meeting every preference and its cheapest
    hourly price: one statement over the kept counts on PostgreSQL, the engine on the embedded run)
    equals the engine over every machine asked for each country alone."""
    from dataclasses import replace

    rng = random.Random(200 + seed)
    now = timezone.now()
    random_fleet(rng, 120, now)
    compared = 0
    for query_string in QUERIES:
        for preferences in PREFERENCES:
            query = parse(query_string + preferences)
            breakdown, _ = estimate_for(query)
            total, countries = fleet.fleet_reader().meeting_by_country(query, breakdown, now)
            expected, machines = [], 0
            for country in sorted({c for c in COUNTRIES if c} & (query.countries or set(COUNTRIES))):
                alone, _ = fleet.recommend_over_every_machine(
                    replace(query, countries=frozenset({country})), breakdown, {}, now, None
                )
                if alone.machines_total:
                    expected.append((country, min(machine.hourly_price for machine in alone.machines)))
                    machines += alone.machines_total
                    compared += 1
            assert countries == sorted(expected, key=lambda item: (item[1], item[0])), query_string + preferences
            assert total == machines, query_string + preferences
    assert compared > 50, "most comparisons had machines to count"



@pytest.mark.postgresql(reason="the kept counts, whose sightings this checks, are PostgreSQL's; SQLite reads every machine")
def test_the_counted_answers_newest_and_oldest_report_are_every_machines_to_the_microsecond(models_and_gpus):
    """The counts return sightings as microseconds since 1970; the answer's newest and oldest report are
    the very dates and times the reading of every machine gives, microseconds included."""
    from datetime import timedelta

    rng = random.Random(7)
    now = timezone.now()
    random_fleet(rng, 40, now)
    for number, machine in enumerate(Machine.objects.order_by("pk")[:12]):
        Machine.objects.filter(pk=machine.pk).update(
            last_seen_at=now - timedelta(seconds=30 + number * 7, microseconds=123_457 * (number + 1) % 999_999)
        )
    query = parse(QUERIES[0])
    breakdown, _ = estimate_for(query)
    _, counted = fleet.KEPT_COUNTS.recommend(query, breakdown, {}, now, 25)
    _, every = fleet.recommend_over_every_machine(query, breakdown, {}, now, 25)
    assert counted["newest"] is not None and counted["oldest"] is not None
    assert (counted["newest"], counted["oldest"]) == (every["newest"], every["oldest"])
    assert counted["oldest"].microsecond == every["oldest"].microsecond != 0
