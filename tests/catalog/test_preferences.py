"""One rule for the preferences and one listing order, three forms: on random fleets with random
preferences (a tier, a minimum reliability at and around the figures machines report, price limits and
budgets at and around the prices where machines cross them),
the engine, the ORM filter and the SQL of the counting queries agree machine by machine on which
machines meet every preference, which preferences each of the others breaks, and the order they are
listed in. The fleets' machines carry interruptible and reserved prices too, which the default market
(on demand only: the listed price) never reads; under the other market choices the engine's answer is
held against each machine's market prices as the catalog's ORM expressions compute them
(`catalog.markets.market_prices`)."""
import random
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.db.models import Case, Value, When
from django.utils import timezone

from catalog import availability, rows
from catalog import preferences as catalog_preferences
from catalog.counting import availability_sql, fit_sql, preferences_sql
from catalog.counting.fleet import counted_fleet
from catalog.counting.fleet_query import FleetQuery
from catalog.markets import market_prices
from catalog.models import GpuType, Machine, Provider
from sizing.availability import unavailable_reason
from sizing.breakdown import Breakdown, Item
from sizing.fit import FitPlanner, fit_thresholds, gpus_used_by_thresholds
from sizing.markets import ANY_MARKET, INTERRUPTIBLE, MARKET_CHOICES, ON_DEMAND, RESERVED
from sizing.matching import ALTERNATIVES_SHOWN, recommend, recommend_counted
from sizing.offers import Preferences
from sizing.preferences import RULE, breaks_checker, chosen, order_key, preference_breaks
from sizing.units import GIB

pytestmark = pytest.mark.django_db

PRICES = [Decimal(p) for p in ("0.1234", "0.35", "0.5", "0.7", "1.0", "1.25", "2.0", "3.3333")]
# Figures a feed may report (None: not reported), on and between the minimums drawn: the kept counts
# round 0.9549 down to 0.95, which a minimum of 0.95 admits and one of 0.96 does not.
RELIABILITIES = [None, Decimal("0.9"), Decimal("0.95"), Decimal("0.9549"), Decimal("0.96"), Decimal("1")]
MINIMUMS = [None, None, Decimal("0"), Decimal("0.95"), Decimal("0.96")]


def need(gib: int) -> Breakdown:
    """A need split over up to 8 GPUs, so machines use 1, 2, 4 or 8 GPUs."""
    return Breakdown(
        workload="notebook", title="need",
        items=(Item("Need", "as given", gib * GIB), Item("CUDA runtime", "1 GiB per GPU", GIB, per_gpu=True)),
        assumptions=(), precision=None, splittable_over_heads=8, inputs={"memory_gib": gib},
    )


NEEDS = [need(30), need(100)]


def random_fleet(rng: random.Random, now, size: int = 70) -> None:
    gpu = GpuType.objects.create(name="Card", slug="card", vendor="NVIDIA", memory_mib=24_564, marketed_memory="24GB")
    providers = [Provider.objects.create(name=name, slug=name.lower(), tier=tier)
                 for name, tier in [("Beta", "secure"), ("Alpha", "community"), ("Gamma", "secure")]]
    for number in range(size):
        count = rng.choice([1, 2, 4, 8])
        provider = rng.choice(providers)
        Machine.objects.create(
            provider=provider,
            tier=provider.tier,
            # Ties on price and provider are common, so the machine ids decide (as text: m10 < m9).
            provider_machine_id=f"m{rng.randint(1, 12)}-{number}",
            gpu_type=gpu,
            gpu_count=count,
            free_gpus=rng.randint(0, count),
            memory_per_gpu_mib=rng.choice([24_564, 81_559]),
            memory_source="datacenter",
            country=rng.choice(["DE", "FR"]),
            price_per_gpu_hour=rng.choice(PRICES),
            is_available=rng.random() < 0.9,
            last_seen_at=now,
            **reported(rng.choice(RELIABILITIES)),
            **market_terms(number),
        )


def market_terms(number: int) -> dict:
    """A machine's markets besides its listed price: listed interruptible, or on demand and offered
    interruptible too, a reserved term, or none. Drawn apart from the fleet's sequence (seeded by the
    machine's number), so every other figure of a fleet is what it was before markets were drawn."""
    draw = random.Random(f"markets:{number}")
    terms: dict = {}
    if draw.random() < 0.2:
        terms["interruptible"] = True
    elif draw.random() < 0.5:
        terms["interruptible_price_per_gpu_hour"] = draw.choice(PRICES)
    if draw.random() < 0.3:
        terms.update(reserved_price_per_gpu_hour=draw.choice(PRICES[:3]), reserved_term_days=30)
    return terms


def reported(reliability: Decimal | None) -> dict:
    """A machine's reliability fields as a feed gives them (a figure always with what it measures)."""
    if reliability is None:
        return {}
    return {"reliability": reliability, "reliability_measures": "share of the last 30 days online"}


def random_preferences(rng: random.Random, hourly_prices: list[Decimal]) -> Preferences:
    """A tier, a minimum reliability, and limits at, just under or just over a price some machine costs
    per hour."""
    def limit():
        if rng.random() < 0.3 or not hourly_prices:
            return None
        return max(Decimal("0.01"), rng.choice(hourly_prices) + rng.choice([Decimal("-0.01"), 0, Decimal("0.01")]))

    return Preferences(tier=rng.choice(["both", "secure", "community"]), max_price_per_hour=limit(), budget=limit(),
                       min_reliability=rng.choice(MINIMUMS))


def engine_listing(breakdown: Breakdown, preferences: Preferences, cutoff) -> list[tuple[int, tuple[str, ...]]]:
    """(machine id, preferences broken) for every available machine that fits, in the listing order."""
    planner = FitPlanner(breakdown)
    check = breaks_checker(preferences)
    found = []
    for offer in rows.machine_offers():
        if unavailable_reason(offer, stale_cutoff=cutoff, countries=None) is not None:
            continue
        fit = planner.fit(offer.memory_per_gpu_mib, offer.free_gpus)
        if fit is None:
            continue
        hourly = offer.price_per_gpu_hour * fit.gpus_used
        breaks = check(offer, hourly)
        assert breaks == preference_breaks(offer, hourly, preferences)
        found.append((order_key(hourly, offer), offer.id, breaks))
    return [(machine_id, breaks) for _, machine_id, breaks in sorted(found)]


def cases(seed: int):
    """A fleet and, for each need, several preferences around its hourly prices."""
    rng = random.Random(seed)
    now = timezone.now()
    random_fleet(rng, now)
    cutoff = now - timedelta(minutes=15)
    for breakdown in NEEDS:
        thresholds = fit_thresholds(breakdown)
        hourly_prices = sorted({
            machine.price_per_gpu_hour * gpus
            for machine in Machine.objects.all()
            if (gpus := gpus_used_by_thresholds(thresholds, machine.memory_per_gpu_mib, machine.free_gpus))
        })
        for _ in range(8):
            yield now, cutoff, breakdown, thresholds, random_preferences(rng, hourly_prices)


def gpus_by_machine(thresholds, cutoff) -> dict[int, int]:
    available = Machine.objects.filter(availability.available_q(cutoff, None))
    found = {}
    for pk, memory, free in available.values_list("pk", "memory_per_gpu_mib", "free_gpus"):
        gpus = gpus_used_by_thresholds(thresholds, memory, free)
        if gpus is not None:
            found[pk] = gpus
    return found


@pytest.mark.parametrize("seed", range(4))
def test_engine_and_orm_apply_the_same_preferences_and_order(seed):
    codes_seen = set()
    for _, cutoff, breakdown, thresholds, preferences in cases(seed):
        engine = engine_listing(breakdown, preferences, cutoff)
        gpus_of = gpus_by_machine(thresholds, cutoff)
        assert sorted(gpus_of) == sorted(machine_id for machine_id, _ in engine)
        orm_breaks: dict[int, list[str]] = {pk: [] for pk in gpus_of}
        for gpus in sorted(set(gpus_of.values())):
            band = [pk for pk, used in gpus_of.items() if used == gpus]
            machines = Machine.objects.filter(pk__in=band)
            for preference, value in chosen(preferences):
                broken = machines.exclude(catalog_preferences.meets_one_q(preference, value, gpus))
                for pk in broken.values_list("pk", flat=True):
                    orm_breaks[pk].append(preference.code)
            meeting = set(machines.filter(catalog_preferences.meets_q(preferences, gpus)).values_list("pk", flat=True))
            assert meeting == {pk for pk in band if not orm_breaks[pk]}
            # Within a band of GPUs used, the ORM's order is the engine's.
            ordered = list(machines.order_by(*catalog_preferences.band_order_by()).values_list("pk", flat=True))
            assert ordered == [machine_id for machine_id, _ in engine if machine_id in set(band)]
        assert {pk: tuple(codes) for pk, codes in orm_breaks.items()} == dict(engine)
        codes_seen.update(code for _, breaks in engine for code in breaks)
    # Every preference is broken somewhere in the cases drawn, so a form that skipped one would fail.
    assert codes_seen == {preference.code for preference in RULE}


def sql_listing(preferences, thresholds, cutoff) -> list[tuple[int, tuple[str, ...]]]:
    """The same as `engine_listing`, by the compiled SQL fragments over catalog_machine."""
    screened, screened_params = availability_sql.available_sql(cutoff, None)
    gpus_sql, gpus_params = fit_sql.gpus_used_sql(thresholds)
    broken = preferences_sql.breaks_sql(preferences, "m.price_per_gpu_hour * g.gpus")
    columns = "".join(f", {sql}" for _, sql, _ in broken)
    order = preferences_sql.order_by_sql({
        "hourly_price": "m.price_per_gpu_hour * g.gpus", "price_per_gpu_hour": "m.price_per_gpu_hour",
        "provider": 'p.name COLLATE "C"', "provider_machine_id": 'm.provider_machine_id COLLATE "C"',
        "id": "m.id",
    })
    sql = (
        f"SELECT m.id{columns} FROM catalog_machine m JOIN catalog_provider p ON p.id = m.provider_id "  # noqa: S608
        f"CROSS JOIN LATERAL (SELECT {gpus_sql} AS gpus) AS g "
        f"WHERE {screened} AND g.gpus IS NOT NULL ORDER BY {order}"
    )
    params = [*(p for _, _, found in broken for p in found), *gpus_params, *screened_params]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [
            (row[0], tuple(code for (code, _, _), is_broken in zip(broken, row[1:], strict=True) if is_broken))
            for row in cursor.fetchall()
        ]


@pytest.mark.postgresql(reason="the counting statements (COLLATE \"C\", kept counts) are PostgreSQL's")
@pytest.mark.parametrize("seed", range(4))
def test_engine_and_counting_sql_apply_the_same_preferences_and_order(seed):
    priced_apart = 0
    for now, cutoff, breakdown, thresholds, preferences in cases(seed):
        engine = engine_listing(breakdown, preferences, cutoff)
        assert sql_listing(preferences, thresholds, cutoff) == engine
        # The kept counts and the machines fetched for the answer: the same answer as the engine's
        # over every machine, every machine listed and every alternative fetched, under each market
        # preference (the counts and the walks at each machine's price under the choice).
        for market in MARKET_CHOICES:
            chosen_market = replace(preferences, market=market)
            query = FleetQuery(
                stale_cutoff=cutoff, countries=None, fits=(thresholds,), tier=preferences.tier,
                max_price_per_hour=preferences.max_price_per_hour, budget=preferences.budget,
                machines_shown=len(engine) + 1, alternatives_shown=len(engine) + 1,
                min_reliability=preferences.min_reliability, market=market,
            )
            fleet = counted_fleet(query)
            assert sorted(offer.id for offer in fleet.counted.offers) == sorted(
                machine_id for machine_id, _ in engine
            )
            counted = recommend_counted(breakdown, fleet.counted, chosen_market, excluded_before=fleet.left_out)
            everything = recommend(breakdown, rows.machine_offers(), chosen_market, now=now)
            assert counted.to_dict() == everything.to_dict(), market
            listed = [machine.offer.id for machine in everything.machines]
            if market == ON_DEMAND:
                assert listed == [machine_id for machine_id, breaks in engine if not breaks]
            else:
                priced_apart += sum(m.price_per_gpu_hour != m.offer.price_per_gpu_hour for m in everything.machines)
    # Some answers listed machines below their listed price (so counts at the listed price would fail).
    assert priced_apart


def orm_market_listing(breakdown: Breakdown, preferences: Preferences, cutoff):
    """(machine id, market, price per GPU-hour, hourly price, preferences broken) of every available
    machine that fits, in the listing order, each priced at the cheapest market the choice lets in: its
    markets' prices as the database computes them from the ORM expressions, the listed price's market
    first on a tie (then the markets' order)."""
    prices = market_prices()
    allowed = {ON_DEMAND: (), INTERRUPTIBLE: (INTERRUPTIBLE,), ANY_MARKET: (INTERRUPTIBLE, RESERVED)}[
        preferences.market
    ]
    machines = Machine.objects.select_related("provider").filter(availability.available_q(cutoff, None)).annotate(
        **{f"offered_{each.market}": Case(When(each.where, then=Value(True)), default=Value(False))
           for each in prices},
        **{f"price_{each.market}": each.price for each in prices},
    )
    offers = {offer.id: offer for offer in rows.machine_offers()}
    planner = FitPlanner(breakdown)
    found = []
    for machine in machines:
        fit = planner.fit(machine.memory_per_gpu_mib, machine.free_gpus)
        if fit is None:
            continue
        offered = [(each.market, getattr(machine, f"price_{each.market}")) for each in prices
                   if getattr(machine, f"offered_{each.market}")]
        market, price = offered[0]  # the listed price's market: on demand, or interruptible for a listing so
        for other, other_price in offered[1:]:
            if other in allowed and other_price < price:
                market, price = other, other_price
        hourly = price * fit.gpus_used
        offer = offers[machine.pk]
        key = (hourly, price, machine.provider.name, machine.provider_machine_id, machine.pk)
        found.append((key, (machine.pk, market, price, hourly, preference_breaks(offer, hourly, preferences))))
    return [row for _, row in sorted(found)]


@pytest.mark.parametrize("seed", range(3))
def test_the_engine_prices_each_machine_in_the_cheapest_market_the_choice_lets_in(seed):
    markets_seen = set()
    for now, cutoff, breakdown, _, preferences in cases(seed):
        for market in MARKET_CHOICES:
            chosen_market = replace(preferences, market=market)
            answer = recommend(breakdown, rows.machine_offers(), chosen_market, now=now)
            oracle = orm_market_listing(breakdown, chosen_market, cutoff)
            meeting = [row for row in oracle if not row[4]]
            breaking = [row for row in oracle if row[4]]
            assert [
                (m.offer.id, m.market, m.price_per_gpu_hour, m.hourly_price, m.breaks) for m in answer.machines
            ] == meeting
            assert [
                (m.offer.id, m.market, m.price_per_gpu_hour, m.hourly_price, m.breaks) for m in answer.alternatives
            ] == breaking[:ALTERNATIVES_SHOWN]
            assert (answer.machines_total, answer.alternatives_total) == (len(meeting), len(breaking))
            if market == ON_DEMAND:  # the default reads the listed price alone, as before markets
                listed = dict(Machine.objects.values_list("pk", "price_per_gpu_hour"))
                assert [row[2] for row in oracle] == [listed[row[0]] for row in oracle]
            markets_seen.update((market, row[1]) for row in oracle)
    # Each choice met machines priced in each market it lets in (so a form that skipped one would fail).
    assert {(INTERRUPTIBLE, INTERRUPTIBLE), (INTERRUPTIBLE, ON_DEMAND), (ANY_MARKET, RESERVED),
            (ON_DEMAND, INTERRUPTIBLE), (ON_DEMAND, ON_DEMAND)} <= markets_seen
    assert (ON_DEMAND, RESERVED) not in markets_seen and (INTERRUPTIBLE, RESERVED) not in markets_seen
