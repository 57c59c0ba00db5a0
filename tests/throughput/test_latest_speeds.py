"""The latest speeds the writes keep (catalog.counting.latest_speeds) against the scan they replace.

Every speed-row answer a plan or the price-per-million sort asks for is computed twice, from the kept
table and by working the latest speed of each machine out of the speeds and machines
(`tests/catalog/scan_oracle.py`), and must agree row for row; the kept table must also equal
working every row out again. Between checks the fleet changes through every write path the console
has (those of the fleet-count tests, and speeds added, changed and dropped), and machines cross the
stale cutoff with no write at all. The plans themselves are checked against every speed of every
machine read by the ORM (`every_one`).
"""
from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.utils import timezone

from catalog.counting import latest_speeds
from catalog.counting import speeds as catalog_speeds
from catalog.models import GpuType, Machine, MeasuredSpeed
from catalog.services import drop_speeds_of_other_gpu_types, save_machine
from nodelodge.recommendations import answer, estimate, fleet
from nodelodge.recommendations.query import parse_query
from nodelodge.recommendations.throughput import cheapest_per_million, speed_candidates, throughput_answer
from sizing.limits import PAGE_LIMIT
from tests.catalog import scan_oracle
from tests.differential import random_fleet
from tests.kept_counts import assert_kept_rows_are_the_fleets, cutoff_instants, kept_rows, write_once

pytestmark = pytest.mark.django_db

# The tests of the kept table itself; the plans over every speed are compared on both databases.
KEPT = pytest.mark.postgresql(
    reason="the kept latest speeds are written by PostgreSQL triggers (PL/pgSQL); on SQLite the plan reads every speed instead"
)

MODELS = [("llama-3-1-8b", 16), ("llama-3-1-8b", 8), ("llama-3-1-70b", 16)]
SPEEDS = [Decimal(v) for v in ("900", "1200", "1200", "1700", "2400", "3400", "5100.5", "24500")]
MEASURED = [datetime(2025, month, 1, tzinfo=UTC) for month in (3, 5, 5, 7)]
BASE = {
    "llama-3-1-8b": "workload=inference&model=llama-3-1-8b&precision={p}&context=4096&requests=1",
    "llama-3-1-70b": "workload=inference&model=llama-3-1-70b&precision={p}&context=8192&requests=1",
}
PLANS = [
    "&target_tokens=3000&gpu_plans=1",
    "&target_tokens=20000&redundancy=2&gpu_plans=1",
    "&target_tokens=60000&efficiency=80&redundancy=0",
    "&sort=price_per_million_tokens",
    "&sort=price_per_million_tokens&page=2&limit=5",
    "&target_tokens=9000&sort=price_per_million_tokens&limit=3",
]
PREFERENCES = ["", "&tier=secure", "&tier=community&max_price=3", "&max_price=1.5&budget=6", "&countries=EU",
               "&countries=DE,US&budget=12", "&market=interruptible", "&market=any&max_price=1.5&budget=6"]


@pytest.fixture
def both_ways(monkeypatch):
    """Every speed-row answer is made from the kept table and by the scan, and compared."""
    real = catalog_speeds.speed_rows_counted
    compared = []

    def speed_rows_counted(query):
        kept = real(query)
        scanned = scan_oracle.speed_rows_counted(query)
        assert kept == scanned, query
        compared.append((query, len(kept[0]), kept[1]))
        return kept

    monkeypatch.setattr(catalog_speeds, "speed_rows_counted", speed_rows_counted)
    return compared


def add_speeds(rng: random.Random, machine_ids: list[int]) -> int:
    """Speeds on some of these machines: several models and precisions, ties on time and speed per
    GPU, some on another GPU type (never used) and some in another unit."""
    gpu_types = list(GpuType.objects.values_list("pk", flat=True))
    rows = []
    for machine in Machine.objects.filter(pk__in=machine_ids):
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            model, precision = rng.choice(MODELS)
            gpus = rng.choice([1, 1, 2])
            rows.append(MeasuredSpeed(
                machine=machine, model_kind="language", model_slug=model, precision=precision,
                gpu_type_id=machine.gpu_type_id if rng.random() < 0.85 else rng.choice(gpu_types),
                unit="tokens/s" if rng.random() < 0.95 else "images/min",
                value=rng.choice(SPEEDS) * gpus, gpus=gpus, measured_at=rng.choice(MEASURED),
                engine=rng.choice(["vLLM", "SGLang"]), engine_version="1", measured_by="bench", source="feed",
            ))
    MeasuredSpeed.objects.bulk_create(rows)
    return len(rows)


def random_speed_fleet(rng: random.Random, machines: int, now) -> None:
    random_fleet(rng, machines, now)
    gpu_types = list(GpuType.objects.order_by("pk").values_list("pk", flat=True)[:6])
    for machine_id in Machine.objects.values_list("pk", flat=True):
        if rng.random() < 0.5:
            Machine.objects.filter(pk=machine_id).update(gpu_type_id=rng.choice(gpu_types))
    add_speeds(rng, list(Machine.objects.values_list("pk", flat=True)))


def write_speeds_once(rng: random.Random, feed_server, now) -> str:
    """One write, through a machine write path (as the fleet counts are tested) or to the speeds."""
    kind = rng.choice(["machine", "machine", "add speeds", "change speeds", "drop speeds", "gpu type"])
    ids = list(Machine.objects.values_list("pk", flat=True))
    speeds = list(MeasuredSpeed.objects.values_list("pk", flat=True))
    if kind == "machine":
        return write_once(rng, feed_server, now)
    if kind == "add speeds" and ids:
        add_speeds(rng, rng.sample(ids, min(len(ids), 6)))
    elif kind == "change speeds" and speeds:
        chosen = rng.sample(speeds, min(len(speeds), 4))
        MeasuredSpeed.objects.filter(pk__in=chosen[:2]).update(measured_at=rng.choice(MEASURED))
        for speed in MeasuredSpeed.objects.filter(pk__in=chosen[2:]):  # as the admin saves one
            speed.value = rng.choice(SPEEDS) * speed.gpus
            speed.save()
    elif kind == "drop speeds" and speeds:
        MeasuredSpeed.objects.filter(pk__in=rng.sample(speeds, min(len(speeds), 3))).delete()
    elif kind == "gpu type" and ids:
        machine = Machine.objects.get(pk=rng.choice(ids))
        machine.gpu_type = GpuType.objects.order_by("?").first()
        save_machine(machine)
        drop_speeds_of_other_gpu_types(Machine.objects.filter(pk=machine.pk))
    return kind


def check_answers(rng: random.Random, now, combinations: int = 8, instants: int = 3) -> None:
    """A sample of plan and price-per-million queries at a sample of instants: kept == scan (by
    `both_ways`), and the plans and first page equal those over every speed of every machine."""
    every = cutoff_instants(now)
    for at in rng.sample(every, min(instants, len(every))):
        for _ in range(combinations):
            model, precision = rng.choice(MODELS)
            text = BASE[model].format(p=precision) + rng.choice(PLANS) + rng.choice(PREFERENCES)
            query = parse_query(dict(part.split("=", 1) for part in text.split("&")))
            result = answer.recommendation_for(query, now=at, relax=False)
            breakdown, _ = estimate.estimate_for(query)
            cutoff, preferences = fleet.stale_cutoff(at), fleet.preferences_for(query)
            keep = 0 if query.sort != "price_per_million_tokens" else (query.limit or PAGE_LIMIT) * query.page
            cut, total = speed_candidates(query, breakdown, cutoff, preferences, keep=keep)
            every_one, every_total = speed_candidates(query, breakdown, cutoff, preferences, every_one=True)
            assert total == every_total, text
            if keep:
                assert cheapest_per_million(cut, keep) == cheapest_per_million(every_one, keep), text
            if query.target_tokens is not None:
                machines_total = result.recommendation.machines_total
                assert result.throughput.to_dict() == throughput_answer(
                    query, breakdown, every_one, machines_total, result.model.name, every_total
                ).to_dict(), text


@KEPT
@pytest.mark.parametrize("seed", range(3))
def test_kept_latest_speeds_equal_the_scan_through_every_write_path(models_and_gpus, both_ways, feed_server, seed):
    rng = random.Random(seed)
    now = timezone.now()
    random_speed_fleet(rng, rng.choice([30, 60]), now)
    assert_kept_rows_are_the_fleets()
    assert kept_rows(), "the random fleet has speeds to keep"
    check_answers(rng, now)
    done = []
    for _ in range(14):
        done.append(write_speeds_once(rng, feed_server, now))
        assert_kept_rows_are_the_fleets()
        check_answers(rng, timezone.now(), combinations=4, instants=2)
    assert len(both_ways) > 40, "every answer went through the comparison"
    assert sum(1 for _, rows, total in both_ways if rows and total) > 10, "most answers had machines to compare"
    assert len(set(done)) > 3, done


@pytest.mark.parametrize("seed", range(2))
def test_plans_equal_those_over_every_speed_through_every_write_path(models_and_gpus, feed_server, seed):
    """The plans and the first page sorted by price per million, as the wizard reads its speed
    candidates (the kept table on PostgreSQL, every speed on the embedded run), equal those over every
    speed of every machine, through every write path."""
    rng = random.Random(20 + seed)
    now = timezone.now()
    random_speed_fleet(rng, rng.choice([30, 60]), now)
    check_answers(rng, now)
    done = []
    for _ in range(10):
        done.append(write_speeds_once(rng, feed_server, now))
        check_answers(rng, timezone.now(), combinations=4, instants=2)
    assert len(set(done)) > 3, done


@KEPT
def test_machines_crossing_the_stale_cutoff_between_writes(models_and_gpus, both_ways):
    """No write happens as machines go stale; the kept rows' answer follows the clock exactly."""
    machines_crossing_the_stale_cutoff()


def test_the_plan_follows_the_clock_as_machines_go_stale(models_and_gpus):
    """The same, as the wizard reads speeds on either database."""
    machines_crossing_the_stale_cutoff()


def machines_crossing_the_stale_cutoff() -> None:
    rng = random.Random(11)
    now = timezone.now()
    random_speed_fleet(rng, 120, now)
    text = BASE["llama-3-1-8b"].format(p=8) + "&target_tokens=5000"
    query = parse_query(dict(part.split("=", 1) for part in text.split("&")))
    breakdown, _ = estimate.estimate_for(query)
    counted, _ = speed_candidates(query, breakdown, fleet.stale_cutoff(now), fleet.preferences_for(query),
                                  every_one=True)
    assert len(counted) >= 5, "the fleet has machines to go stale"
    # Sightings a microsecond apart, so the cutoff passes the machines one by one.
    for offset, candidate in enumerate(counted):
        Machine.objects.filter(pk=candidate.row.machine_id).update(
            last_seen_at=now - timedelta(microseconds=offset)
        )
    totals = [
        answer.recommendation_for(query, now=at, relax=False).throughput.with_speed
        for at in cutoff_instants(now)
    ]
    # With no write in between, the same kept rows gave a different answer at each step of the clock.
    assert set(range(len(counted) + 1)) <= set(totals), totals


def test_a_reader_inside_a_writing_transaction_sees_its_own_speeds(make_machine):
    machine = make_machine("H100 SXM 80GB")
    text = BASE["llama-3-1-8b"].format(p=16) + "&target_tokens=10000&redundancy=0"
    query = parse_query(dict(part.split("=", 1) for part in text.split("&")))
    assert answer.recommendation_for(query).throughput.with_speed == 0
    with transaction.atomic():
        MeasuredSpeed.objects.create(
            machine=machine, model_kind="language", model_slug="llama-3-1-8b", precision=16, unit="tokens/s",
            value=Decimal("24500"), gpus=1, measured_at=timezone.now(), measured_by="staff", source="staff",
        )
        inside = answer.recommendation_for(query).throughput
        assert inside.with_speed == 1 and inside.plans
        transaction.set_rollback(True)
    assert answer.recommendation_for(query).throughput.with_speed == 0


@KEPT
def test_truncate_empties_the_kept_rows(models_and_gpus):
    random_speed_fleet(random.Random(5), 30, timezone.now())
    assert kept_rows()
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("TRUNCATE catalog_machine CASCADE")
    assert kept_rows() == []


@KEPT
def test_the_installed_functions_are_what_latest_speeds_installs_now(db):
    """A change to what is kept (or to the availability rule's columns) needs a migration that
    installs it again: the functions in the database must be what `latest_speeds` would install."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT proname, prosrc FROM pg_proc WHERE proname LIKE 'catalog_latest_speed_%%'")
        installed = dict(cursor.fetchall())
        cursor.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s", [latest_speeds.TABLE]
        )
        columns = {row[0] for row in cursor.fetchall()}
    expected = {}
    for statement in latest_speeds.functions_sql():
        expected[statement.split()[4].split("(")[0]] = statement.split("$fn$")[1]
    assert set(expected) == {"catalog_latest_speed_" + name for name in ("machines", "speeds", "truncated", "rebuild")}
    assert installed == expected
    assert columns == {"machine_id", "speed_id", *latest_speeds.SPEED_COLUMNS, *latest_speeds.MACHINE_COLUMNS}
