"""A plan's speed rows read by walking each speed class in price order (issue 41): the walks choose
exactly the rows the windows over every fitting speed row chose (`tests/catalog/scan_oracle.py`), and
what they read does not grow with the fleet.

PostgreSQL only: the walks read the kept latest speeds' indexes; on SQLite the plan reads every speed
(`catalog.counting.speeds.speed_rows`), which the plan tests hold to the same answers."""
from __future__ import annotations

import copy
import itertools
import json
import random
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog.counting import latest_speeds
from catalog.counting import speeds as catalog_speeds
from catalog.models import Machine, MeasuredSpeed
from nodelodge.recommendations.answer import recommendation_for
from sizing.kinds import KindSpace
from tests.catalog import scan_oracle
from tests.differential import parse
from tests.factories import make_measured_speed

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.postgresql(reason="the walks read the kept latest speeds' indexes, which SQLite has not"),
]

# (GPUs, MiB per GPU) thresholds: 40,000 MiB and up on one GPU, 20,000 on two, 10,000 on four.
FITS = ((1, 40000), (2, 20000), (4, 10000))
# One class's machines at several memories per GPU (parts of a class, and of its bands), at prices
# that tie often, so a walk's stop falls inside a price's machines.
MEMORIES = [81559, 49152, 49152, 24576, 16384]
PRICES = [Decimal(p) for p in ("0.50", "0.50", "0.50", "0.75", "1.10", "1.10", "2.00")]


@pytest.fixture
def tied_fleet(make_machine):
    rng = random.Random(3)
    for number in range(70):
        free = rng.choice([1, 2, 4, 8])
        markets = {"interruptible": True} if rng.random() < 0.2 else (
            {"interruptible_price_per_gpu_hour": rng.choice(PRICES)} if rng.random() < 0.5 else {}
        )
        machine = make_machine(
            rng.choice(["H100 SXM 80GB", "A100 80GB"]), tier=rng.choice(["secure", "community"]),
            gpu_count=8, free_gpus=free, memory_per_gpu_mib=rng.choice(MEMORIES),
            price_per_gpu_hour=rng.choice(PRICES), provider_machine_id=f"m{number:02}", **markets,
        )
        gpus = rng.choice([1, 2])
        make_measured_speed(machine, Decimal(rng.choice(["1500", "2400"])) * gpus, gpus=gpus)


def speed_query(**fields) -> catalog_speeds.SpeedQuery:
    values = {
        "stale_cutoff": timezone.now() - timedelta(hours=1), "countries": None, "tier": "both",
        "model_slug": "llama-3-1-8b", "precision": 16, "fits": FITS, "max_price_per_hour": None,
        "budget": None, "target": Decimal("6000"), "efficiency": Decimal("75"), "redundancy": 1, "keep": 0,
    }
    return catalog_speeds.SpeedQuery(**(values | fields))


def test_the_walks_choose_the_rows_the_windows_over_every_row_chose(tied_fleet):
    asked = itertools.product(
        [None, Decimal("1500"), Decimal("6000"), Decimal("40000"), Decimal("1000000")],  # target
        [0, 1, 7, 40],  # keep
        [{}, {"per_gpu_type": True}, {"market": "interruptible"}, {"market": "any", "budget": Decimal("4")},
         {"tier": "community", "max_price_per_hour": Decimal("2.2")}, {"by_kind": KindSpace(3, 3), "redundancy": 3},
         {"countries": frozenset({"DE"})}],
    )
    compared = 0
    for target, keep, fields in asked:
        query = speed_query(target=target, keep=keep, **fields)
        walked = catalog_speeds.speed_rows_counted(query)
        assert walked == scan_oracle.speed_rows_counted(query), query
        compared += bool(walked[0])
    assert compared > 100


def statement_reads(query) -> tuple[dict[str, int], int]:
    """Rows the statement of `speed_rows_counted(query)` reads of the kept latest speeds (index entries or
    rows, those its filters left out included), by the part of the statement reading them (the CTE, or
    `answer` for the chosen rows' own), and the rows it returns."""
    captured = []

    def capture(execute, sql, params, many, context):
        captured.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        catalog_speeds.speed_rows_counted(query)
    [(sql, params)] = captured
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    reads: dict[str, int] = {}

    def visit(node, part):
        part = node["Subplan Name"] if node.get("Subplan Name", "").startswith("CTE ") else part
        if node.get("Relation Name") == latest_speeds.TABLE:
            read = node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
            reads[part] = reads.get(part, 0) + read * node["Actual Loops"]
        for child in node.get("Plans", []):
            visit(child, part)

    visit(plan[0]["Plan"], "answer")
    return reads, plan[0]["Plan"]["Actual Rows"]


COPIES = 9  # the fleet grown tenfold: each machine again, with its speeds, under other ids


def spread(price: Decimal, rng: random.Random) -> Decimal:
    """A price a little above `price` (up to a cent): machines alike, but seldom at the very same price."""
    return price + Decimal(rng.randrange(100)) / 10000


def grow(copies: int, rng: random.Random) -> None:
    """Each machine `copies` times more, at the same figures and speeds under other ids at its provider,
    each at a price of its own a little above the machine's (`spread`)."""
    machines = list(Machine.objects.all())
    speeds = list(MeasuredSpeed.objects.all())
    for number in range(copies):
        twins = {}
        for machine in machines:
            twin = copy.copy(machine)
            twin.pk = None
            twin.provider_machine_id = f"{machine.provider_machine_id}-{number}"
            twin.price_per_gpu_hour = spread(machine.price_per_gpu_hour, rng)
            twins[machine.pk] = twin
        Machine.objects.bulk_create(twins.values())
        copied = []
        for speed in speeds:
            twin_speed = copy.copy(speed)
            twin_speed.pk, twin_speed.machine_id = None, twins[speed.machine_id].pk
            copied.append(twin_speed)
        MeasuredSpeed.objects.bulk_create(copied)


def alike_fleet(make_machine, machines: int, rng: random.Random) -> None:
    """`machines` machines of two GPU types, each measured at one of two speeds: a few speed classes of
    many machines each, at prices spread a little (`spread`), some of them unavailable."""
    for number in range(machines):
        machine = make_machine(
            rng.choice(["H100 SXM 80GB", "A100 80GB"]), tier=rng.choice(["secure", "community"]),
            gpu_count=8, free_gpus=rng.choice([1, 2, 8]), is_available=rng.random() < 0.8,
            price_per_gpu_hour=spread(rng.choice(PRICES), rng), provider_machine_id=f"m{number:03}",
        )
        make_measured_speed(machine, rng.choice(["1500", "2400"]))


# 6,000 tokens/s at 75 %: a few copies of each class; the first page of five by price per million tokens.
PLAN = ("workload=inference&model=llama-3-1-8b&precision=16&context=4096&requests=1"
        "&target_tokens=6000&gpu_plans=1")
PER_MILLION = ("workload=inference&model=llama-3-1-8b&precision=16&context=4096&requests=1"
               "&sort=price_per_million_tokens&limit=5")


def planned_query(query_string: str, now) -> tuple[catalog_speeds.SpeedQuery, int]:
    """The speed query an answer asks (`speed_rows_counted`'s argument), and the statements it took."""
    asked = []
    real = catalog_speeds.speed_rows_counted

    def recorded(query):
        asked.append(query)
        return real(query)

    catalog_speeds.speed_rows_counted = recorded
    try:
        with CaptureQueriesContext(connection) as statements:
            recommendation_for(parse(query_string), now=now, relax=False)
    finally:
        catalog_speeds.speed_rows_counted = real
    [query] = asked
    return query, len(statements)


def test_a_plan_at_ten_times_the_fleet_walks_the_same_rows_in_as_many_statements(make_machine):
    now = timezone.now()
    rng = random.Random(4)
    alike_fleet(make_machine, 150, rng)
    sizes = []
    for grown in (False, True):
        if grown:
            grow(COPIES, rng)
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {latest_speeds.TABLE}")
        work = {}
        for name, text in (("plan", PLAN), ("per million", PER_MILLION)):
            planned_query(text, now)  # what an answer reads once per process (the models, the GPU types)
            query, statements = planned_query(text, now)
            work[name] = (statements, statement_reads(query), catalog_speeds.speed_rows_counted(query)[1])
        sizes.append(work)
    small, large = sizes
    for name in ("plan", "per million"):
        (statements, (reads, _), total) = small[name]
        (statements_10, (reads_10, _), total_10) = large[name]
        assert total_10 == 10 * total > 50, name
        # No statement more (a plan's 8 at most; with fewer machines the wizard reads a sparse band's
        # prices apart, `fleet_machines.SPARSE_BAND_MACHINES`), and the classes found in as many probes.
        assert statements_10 <= statements <= 8 + (name == "per million"), name
        assert reads_10["CTE parts"] == reads["CTE parts"], name
        # Each class walked to its wanted copies (or the first page) and left: about as many entries
        # with ten times the machines, never ten times as many.
        assert reads_10["CTE walked"] < 2 * reads["CTE walked"], name
        # The chosen rows are read with the walk: nothing after.
        assert "answer" not in reads_10, name
        # What remains of issue 41: the count reads every fitting entry of the index.
        assert reads_10["CTE counted"] >= total_10, name
