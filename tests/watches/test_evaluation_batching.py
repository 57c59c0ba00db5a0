"""Evaluation reads many queries together: their counts in a few statements over the fleet, each
distinct sizing worked out once, the checks of unchanged watches noted in a few statements. Each
query's figures and each watch's outcome are those of asking it alone."""
import itertools
import random
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog.models import Machine
from nodelodge.recommendations import fleet
from nodelodge.recommendations.estimate import estimate_for
from nodelodge.watches import evaluation, services
from nodelodge.watches.evaluation import evaluate_watches
from nodelodge.watches.models import Firing, Watch
from nodelodge.watches.services import WatchRequest, create_watch
from tests.differential import PREFERENCES, QUERIES, parse, random_fleet
from tests.factories import make_user
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db(transaction=True)
QUERY = dict(pair.split("=") for pair in LLAMA_8B.split("&"))
MAX_PRICES = ("", "1", "2.49", "2.5", "3", "5", "10")
COUNTRIES = ("", "DE", "FR", "DE,FR", "US")
CONDITIONS = (
    {"condition": "appears"},
    {"condition": "cheapest_below", "price_per_hour": "2.50"},
    {"condition": "at_least", "machines": 2},
)


@pytest.fixture(autouse=True)
def no_delivery(monkeypatch):
    monkeypatch.setattr(evaluation, "_queue_delivery", lambda firing_id: None)


def variants(count: int) -> list[dict]:
    """`count` queries of Llama 3.1 8B differing only in their price limit and countries."""
    found = []
    for max_price, countries in itertools.product(MAX_PRICES, COUNTRIES):
        found.append({**QUERY, **({"max_price": max_price} if max_price else {}),
                      **({"countries": countries} if countries else {})})
    assert count <= len(found)
    return found[:count]


def watches_over(queries: list[dict], per_query: int = 1) -> list[Watch]:
    made, owner = [], None
    for number, (query, conditions) in enumerate(itertools.product(queries, CONDITIONS[:per_query])):
        if number % services.MAX_WATCHES_PER_USER == 0:
            owner = make_user()
        made.append(create_watch(owner, WatchRequest(query=query, email=False, **conditions)))
    return made


@pytest.mark.parametrize("seed", range(2))
def test_many_queries_counted_together_equal_each_counted_alone(models_and_gpus, seed, monkeypatch):
    """`meeting_many` (on PostgreSQL: the countries' counts, several queries a statement) gives each
    query's machines and cheapest hourly price exactly as `meeting` does for it alone, price limits
    shared out over the GPUs used included."""
    rng = random.Random(300 + seed)
    now = timezone.now()
    random_fleet(rng, 120, now)
    # Prices either side of a limit shared out over GPUs (6.67 ÷ 8, 6.67 ÷ 16, 6.67 ÷ 4, 0.9 ÷ 8, 2 ÷ 4).
    edges = [Decimal(p) for p in ("0.8337", "0.8338", "0.4168", "0.4169", "1.6675", "1.6676", "0.1125",
                                  "0.1126", "0.5", "0.5001")]
    for machine in Machine.objects.order_by("pk")[::3]:
        Machine.objects.filter(pk=machine.pk).update(price_per_gpu_hour=rng.choice(edges))
    # Some on-demand machines offered interruptible too: the queries that allow it (the engine answers them
    # on PostgreSQL too) sit among those the counts answer, and each keeps its place.
    for machine in Machine.objects.filter(interruptible=False).order_by("pk")[1::3]:
        Machine.objects.filter(pk=machine.pk).update(interruptible_price_per_gpu_hour=Decimal("0.0501"))
    asked = []
    for number, (query_string, preferences) in enumerate(itertools.product(QUERIES, PREFERENCES)):
        market = "&market=interruptible" if number % 5 == 2 else ""
        query = parse(query_string + preferences + market)
        asked.append((query, estimate_for(query)[0]))
    reader = fleet.fleet_reader()
    alone = [reader.meeting(query, breakdown, now) for query, breakdown in asked]
    monkeypatch.setattr(fleet, "MEETING_CHUNK", 7)  # chunks end inside the list and at its end

    together = reader.meeting_many(asked, now)

    assert together == alone
    assert sum(1 for total, _ in alone if total) > 20, "most queries had machines to count"
    # The market preference was read: some query is cheaper with interruptible prices allowed.
    assert any(
        cheapest is not None and reader.meeting(replace(query, market="on_demand"), breakdown, now)[1] != cheapest
        for (query, breakdown), (_, cheapest) in zip(asked, alone, strict=True) if query.market != "on_demand"
    )
    assert all((total == 0) == (cheapest is None) for total, cheapest in together)


def test_a_glance_at_many_queries_gives_each_ones_whole_answers_figures(catalog):
    catalog.machine(price_per_gpu_hour=Decimal("2.4900"), country="DE")
    catalog.machine(price_per_gpu_hour=Decimal("1.9000"), country="FR", gpu_count=2, free_gpus=2)
    catalog.machine(price_per_gpu_hour=Decimal("4.1000"), country="DE", tier="secure")
    catalog.machine(price_per_gpu_hour=Decimal("2.5000"), country="US")
    queries = [services.watch_query(made) for made in watches_over(variants(35))]
    now = timezone.now()

    glanced = evaluation.glances([(query, estimate_for(query)[0]) for query in queries], now)

    whole = [evaluation.find(query, now) for query in queries]
    assert [(g.machines_total, g.cheapest) for g in glanced] == [(w.machines_total, w.cheapest) for w in whole]
    assert {g.machines_total for g in glanced} == {0, 1, 2, 3, 4}, "the variants count differently"


def test_evaluating_many_queries_fires_the_watches_asking_each_alone_fires(catalog):
    now = timezone.now()
    catalog.machine(price_per_gpu_hour=Decimal("2.4900"), country="DE")
    catalog.machine(price_per_gpu_hour=Decimal("1.9000"), country="FR")
    catalog.machine(price_per_gpu_hour=Decimal("4.1000"), country="US")
    made = watches_over(variants(35), per_query=3)
    expected = {}
    for watch in made:
        found = evaluation.find(services.watch_query(watch), now)
        if evaluation.condition_holds(watch, found):
            expected[watch.pk] = (found.machines_total, found.cheapest)

    checked = evaluate_watches(now=now)

    fired = {f.watch_id: (f.machines_total, f.cheapest_price_per_hour) for f in Firing.objects.all()}
    assert (checked.queries, checked.watches) == (35, 105)
    assert fired == expected and len(checked.fired) == len(expected)
    assert 0 < len(expected) < len(made)
    assert set(Watch.objects.filter(matching=True).values_list("pk", flat=True)) == set(expected)
    assert evaluate_watches(now=now + timedelta(minutes=1)).fired == []  # each fires once


def test_each_sizing_is_worked_out_once_per_evaluation(catalog, monkeypatch):
    watches_over(variants(20))
    watches_over([{**QUERY, "precision": "8"}, {**QUERY, "precision": "8", "countries": "DE"}])
    worked_out = []

    def counted(query, *args, **kwargs):
        worked_out.append(query.precision)
        return estimate_for(query, *args, **kwargs)

    monkeypatch.setattr(evaluation, "estimate_for", counted)

    assert evaluate_watches().queries == 22
    assert sorted(worked_out) == [8, 16]


def statements_of_a_quiet_check(queries: int) -> int:
    """Statements of the check after the first, which fires nothing, over `queries` distinct queries."""
    Watch.objects.all().delete()
    watches_over(variants(queries), per_query=2)
    now = timezone.now()
    evaluate_watches(now=now)
    with CaptureQueriesContext(connection) as statements:
        checked = evaluate_watches(now=now + timedelta(minutes=1))
    assert checked.fired == [] and checked.watches == 2 * queries
    return len(statements)


@pytest.mark.postgresql(reason="the counts of many queries are a few statements over the fleet counts "
                               "PostgreSQL keeps; the embedded run's engine reads the machines per query")
def test_a_check_that_fires_nothing_costs_as_many_statements_whatever_the_number_of_queries(
    catalog, monkeypatch
):
    catalog.machine(country="DE")
    monkeypatch.setattr(fleet, "MEETING_CHUNK", 50)
    monkeypatch.setattr(evaluation, "UNCHANGED_CHUNK", 500)

    assert statements_of_a_quiet_check(3) == statements_of_a_quiet_check(35)


def test_the_checks_of_unchanged_watches_are_noted_a_chunk_a_statement(catalog, monkeypatch):
    catalog.machine(country="DE")
    made = watches_over(variants(7), per_query=2)
    monkeypatch.setattr(evaluation, "UNCHANGED_CHUNK", 3)
    now = timezone.now()
    evaluate_watches(now=now)
    later = now + timedelta(minutes=1)

    with CaptureQueriesContext(connection) as statements:
        checked = evaluate_watches(now=later)

    assert checked.fired == [] and checked.watches == len(made) == 14
    updates = [s["sql"] for s in statements if s["sql"].startswith("UPDATE") and "watches_watch" in s["sql"]]
    assert len(updates) == 5  # 14 watches, 3 a statement
    assert set(Watch.objects.values_list("last_checked_at", "next_check_at")) == {
        (later, later + evaluation.check_interval())
    }
