"""The counts the writes keep (catalog.counting.fleet_counts) against the scan they replace.

Every answer here is computed twice, from the kept counts and by scanning catalog_machine
(`tests/catalog/scan_oracle.py`, the old path), and must agree field for field; the whole answer is
also checked against the engine over every machine. Between checks the fleet changes through every
write path the console has: the provider refresh (bulk upserts over HTTP), Launch and Stop's
guarded updates, the admin's saves, provider (de)activation, deletes, fleet generation, and machines
crossing the stale cutoff with no write at all.
"""
from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog import availability
from catalog import rows as catalog_rows
from catalog.counting import fleet as catalog_fleet
from catalog.counting import fleet_counts
from catalog.models import GpuType, Machine, Provider
from nodelodge.recommendations import fleet
from nodelodge.recommendations.answer import recommendation_for
from nodelodge.recommendations.estimate import estimate_for
from sizing.reasons import STALE
from tests import factories
from tests.catalog import scan_oracle
from tests.differential import PREFERENCES, QUERIES, engine_over_every_machine, parse, random_fleet
from tests.kept_counts import (
    assert_kept_counts_are_the_fleets,
    cutoff_instants,
    kept_entries,
    write_once,
)

pytestmark = pytest.mark.postgresql(
    reason="the kept fleet counts are written by PostgreSQL triggers (PL/pgSQL); on SQLite the wizard scans the fleet instead"
)


@pytest.fixture
def both_ways(monkeypatch):
    """Every count the wizard asks for is made from the kept counts and by the scan, and compared."""
    real = catalog_fleet.counted_fleet
    compared = []

    def counted_fleet(fleet_query):
        kept = real(fleet_query)
        scanned = scan_oracle.counted_fleet(fleet_query)
        assert kept == scanned, fleet_query
        compared.append(fleet_query)
        return kept

    monkeypatch.setattr(catalog_fleet, "counted_fleet", counted_fleet)
    return compared


def check_answers(rng: random.Random, now, combinations: int = 10, instants: int = 4) -> None:
    """A sample of queries at a sample of instants: kept counts == scan (by `both_ways`), and the
    answer == the engine over every machine."""
    every = cutoff_instants(now)
    chosen = rng.sample(every, min(instants, len(every)))
    for at in chosen:
        for _ in range(combinations):
            query = parse(rng.choice(QUERIES) + rng.choice(PREFERENCES))
            expected = engine_over_every_machine(query, at, rng).to_dict()
            # The engine's own answer; what relaxing countries or sizes opens is tested in test_relax.py.
            assert recommendation_for(query, now=at, relax=False).recommendation.to_dict() == expected


@pytest.mark.parametrize("seed", range(3))
def test_kept_counts_equal_the_scan_through_every_write_path(models_and_gpus, both_ways, feed_server, seed):
    rng = random.Random(seed)
    now = timezone.now()
    random_fleet(rng, rng.choice([20, 60]), now)
    assert_kept_counts_are_the_fleets()
    check_answers(rng, now)
    done = []
    for _ in range(15):
        done.append(write_once(rng, feed_server, now))
        assert_kept_counts_are_the_fleets()
        check_answers(rng, timezone.now(), combinations=4, instants=3)
    assert len(both_ways) > 50, "every answer went through the comparison"
    assert len(set(done)) > 3, done


def test_shapes_holding_many_prices_are_split_at_every_price_limit_as_the_scan_splits_them(models_and_gpus, both_ways):
    """Few shapes, each with machines at hundreds of prices (more than one kept row holds), so the
    price limits and budgets cut through shapes and through the rows' chunks, not between them."""
    rng = random.Random(11)
    now = timezone.now()
    providers = [Provider.objects.create(name=name, slug=f"p{n}", tier=tier)
                 for n, (name, tier) in enumerate([("Dense Secure", "secure"), ("Dense Community", "community")])]
    gpu_type = GpuType.objects.get(name="H100 SXM 80GB")
    machines = []
    for index in range(1200):
        count = 1 if index % 3 else 8
        machines.append(Machine(
            provider=(provider := providers[index % 2]), tier=provider.tier, provider_machine_id=f"d-{index}",
            gpu_type=gpu_type, gpu_count=count, free_gpus=count, memory_per_gpu_mib=gpu_type.memory_mib,
            country="DE" if index % 5 else "US", price_per_gpu_hour=Decimal(rng.randint(500, 60_000)) / 10_000,
            last_seen_at=now,
        ))
    Machine.objects.bulk_create(machines)
    with connection.cursor() as cursor:
        fleet_counts.merge_pending(cursor)
        cursor.execute(f"SELECT max(cardinality(prices)) FROM {fleet_counts.SHAPES}")  # noqa: S608
        most_prices = cursor.fetchone()[0]
    assert most_prices == fleet_counts.CHUNK, "a shape with more prices than one row holds"
    for preferences in ("&max_price=1.5", "&budget=0.9", "&max_price=1.5&budget=3", "&tier=community&max_price=2",
                        "&max_price=0.3&countries=DE,FR,US", "&budget=40"):
        for query_string in QUERIES[:3]:
            query = parse(query_string + preferences)
            expected = engine_over_every_machine(query, now, rng).to_dict()
            assert recommendation_for(query, now=now, relax=False).recommendation.to_dict() == expected
    assert len(both_ways) >= 18


def test_machines_crossing_the_stale_cutoff_between_writes(models_and_gpus, both_ways):
    """No write happens as machines go stale; the answer follows the clock exactly."""
    rng = random.Random(7)
    now = timezone.now()
    random_fleet(rng, 80, now)
    ids = list(Machine.objects.values_list("pk", flat=True))
    # Sightings spread around one instant, microseconds apart, so the cutoff passes them one by one.
    for offset, machine_id in enumerate(rng.sample(ids, 30)):
        Machine.objects.filter(pk=machine_id).update(last_seen_at=now - timedelta(microseconds=offset % 7))
    query = parse(QUERIES[0])
    for at in cutoff_instants(now):
        expected = engine_over_every_machine(query, at, rng).to_dict()
        assert recommendation_for(query, now=at, relax=False).recommendation.to_dict() == expected
    # With no write in between, the same kept counts gave a different answer at each step of the clock.
    stale_counts = [catalog_fleet.counted_fleet(fq).left_out[STALE] for fq in list(both_ways)]
    assert len(set(stale_counts)) > 5


def test_a_reader_inside_a_writing_transaction_counts_its_own_writes(models_and_gpus, providers_and_gpu):
    provider, gpu_type = providers_and_gpu
    query = parse(QUERIES[0])
    now = timezone.now()
    before = recommendation_for(query, now=now).recommendation.to_dict()
    with transaction.atomic():
        Machine.objects.create(
            provider=provider, provider_machine_id="inside", gpu_type=gpu_type, gpu_count=1, free_gpus=1,
            memory_per_gpu_mib=gpu_type.memory_mib, country="DE", price_per_gpu_hour=Decimal("0.5"),
            last_seen_at=now,
        )
        inside = recommendation_for(query, now=now).recommendation
    assert [m.offer.provider_machine_id for m in inside.machines] == ["inside"]
    assert before["machines"] == []


def test_an_answer_in_a_writing_transaction_folds_its_writes_once(models_and_gpus, providers_and_gpu):
    """The answer's snapshot reads the counts in several statements (an empty answer's hints among
    them); the writes before it are folded into the counts before the first, and only then."""
    provider, gpu_type = providers_and_gpu
    now = timezone.now()
    query = parse(QUERIES[0] + "&countries=CH&max_price=0.1")
    with transaction.atomic():
        Machine.objects.create(
            provider=provider, provider_machine_id="elsewhere", gpu_type=gpu_type, gpu_count=1, free_gpus=1,
            memory_per_gpu_mib=gpu_type.memory_mib, country="DE", price_per_gpu_hour=Decimal("0.5"),
            last_seen_at=now,
        )
        with CaptureQueriesContext(connection) as read:
            answer = recommendation_for(query, now=now).recommendation
    merges = [q["sql"] for q in read.captured_queries if "catalog_fleet_merge" in q["sql"]]
    counting = [q["sql"] for q in read.captured_queries if fleet_counts.SHAPES in q["sql"]]
    assert len(merges) == 1 and len(counting) >= 3
    assert not answer.machines and answer.empty.hints
    assert any("DE" in dict(hint.changes).get("countries", ()) and hint.machines == 1 for hint in answer.empty.hints)


def test_truncate_empties_the_kept_counts(models_and_gpus):
    random_fleet(random.Random(3), 30, timezone.now())
    assert kept_entries()
    with connection.cursor() as cursor:
        # Django's foreign keys are checked at commit; TRUNCATE wants none pending.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("TRUNCATE catalog_machine CASCADE")
    assert kept_entries() == Counter()


def test_the_installed_triggers_are_the_rule_as_compiled_now(db):
    """A change to the availability rule (or to how shapes are kept) needs a migration that installs
    it again: the functions in the database must be what `fleet_counts` would install today."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT proname, prosrc FROM pg_proc WHERE proname LIKE 'catalog_fleet_%%' ORDER BY proname"
        )
        installed = dict(cursor.fetchall())
    expected = {}
    for statement in fleet_counts.install_sql():
        if statement.startswith("CREATE FUNCTION "):
            name = statement.split()[2].split("(")[0]
            expected[name] = statement.split("$fn$")[1]
    assert installed == expected
    assert set(expected) == {
        "catalog_fleet_track", "catalog_fleet_merge", "catalog_fleet_merge_at_commit",
        "catalog_fleet_rebuild", "catalog_fleet_truncated", "catalog_fleet_kinds_changed", "catalog_fleet_gpu_kind",
    }


def test_every_check_of_the_rule_is_kept_or_decided_at_write_time():
    from sizing.availability import RULE

    columns = fleet_counts.key_columns()
    for check in RULE:
        if check.counted:
            assert availability.COLUMNS[check.field] in columns
    assert set(columns) <= set(fleet_counts.COLUMN_TYPES)


@pytest.fixture
def providers_and_gpu(models_and_gpus):
    provider = Provider.objects.create(name="Inside Compute", slug="inside", tier="secure")
    return provider, GpuType.objects.get(name="H100 SXM 80GB")


def test_the_consoles_database_sessions_never_compile_a_statement(db):
    """A walk of a few hundred rows can be estimated at thousands; JIT would then spend 80-300 ms
    compiling a statement that runs in a few."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"


def test_the_consoles_database_sessions_start_no_parallel_workers(db):
    """Workers cost more to start than the kept counts take to read, on cores other requests need."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW max_parallel_workers_per_gather")
        assert cursor.fetchone()[0] == "0"


@pytest.mark.django_db(transaction=True)
def test_two_databases_holding_the_same_counts_have_different_states():
    """A database copied from another holds the same counts under the same transaction ids: their
    states still differ, so a cache shared by both never serves one's answers for the other's."""
    import psycopg

    settings = connection.settings_dict
    server = {"host": settings["HOST"] or "127.0.0.1", "port": settings["PORT"] or 5432, "user": settings["USER"]}
    original, copy = f"{settings['NAME']}_state_a", f"{settings['NAME']}_state_b"
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
        for name in (original, copy):
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{original}"')
        try:
            with psycopg.connect(dbname=original, autocommit=True, **server) as database:
                database.execute(f"CREATE TABLE {fleet_counts.SHAPES} (id int)")
                database.execute(f"INSERT INTO {fleet_counts.SHAPES} SELECT generate_series(1, 5)")
            admin.execute(f'CREATE DATABASE "{copy}" TEMPLATE "{original}"')
            states = []
            for name in (original, copy):
                with psycopg.connect(dbname=name, **server) as database, database.cursor() as cursor:
                    cursor.execute(f"SELECT count(*), sum(xmin::text::bigint) FROM {fleet_counts.SHAPES}")
                    states.append((cursor.fetchone(), fleet_counts.state(cursor)))
        finally:
            for name in (original, copy):
                admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    (counts_a, state_a), (counts_b, state_b) = states
    assert counts_a == counts_b == (5, counts_a[1])  # the same rows under the same transaction ids
    assert state_a != state_b


def test_the_machines_shown_are_read_with_their_speeds_in_the_walks_one_statement(models_and_gpus):
    """The walk that finds the machines an answer shows reads their columns and measured speeds in the
    same statement: the offers equal those read machine by machine (`machine_offers`), speeds in order."""
    rng = random.Random(7)
    now = timezone.now()
    factories.random_fleet(rng, 60, now, [81_559, 24_564, 46_068])
    query = parse("workload=inference&model=llama-3-1-8b&precision=16&context=4096&requests=1")
    breakdown, _ = estimate_for(query)
    counted_query = fleet.fleet_query(query, [breakdown], now, 100, alternatives_shown=20, lower_shown=1)
    first, second = (Machine.objects.get(pk=offer.id)
                     for offer in catalog_fleet.counted_fleet(counted_query).counted.offers[:2])
    # one machine with several speeds (two precisions of one model, another model), one with one
    for precision, model, value in ((16, "llama-3-1-8b", "2500.5"), (8, "llama-3-1-8b", "3100"),
                                    (16, "llama-3-1-70b", "410.25")):
        factories.make_measured_speed(first, value, model=model, precision=precision)
    factories.make_measured_speed(second, "1999.75")
    with CaptureQueriesContext(connection) as statements:
        shown = catalog_fleet.counted_fleet(counted_query).counted.offers
    reading_machines = [s["sql"] for s in statements if "catalog_machine m" in s["sql"]]
    # the counts (and the sparse bands' prices), then the one walk with the machines and their speeds
    counting = [s for s in statements if "catalog_fleet_merge" not in s["sql"]]  # this test's own writes folded
    assert len(counting) <= 3 and len(reading_machines) == 1
    assert "ROW_NUMBER()" in reading_machines[0] and "catalog_measuredspeed" in reading_machines[0]
    assert len(shown) > 2
    ids = [offer.id for offer in shown]
    assert ids == sorted(ids)
    assert list(shown) == catalog_rows.machine_offers(Machine.objects.filter(pk__in=ids).order_by("pk"))
    speeds = {offer.id: offer.measured_speeds for offer in shown}
    assert [(s.model_slug, s.precision) for s in speeds[first.pk]] == [
        ("llama-3-1-70b", 16), ("llama-3-1-8b", 8), ("llama-3-1-8b", 16)
    ]
    assert [s.value for s in speeds[second.pk]] == [Decimal("1999.75")]
