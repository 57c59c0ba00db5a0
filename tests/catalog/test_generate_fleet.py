import hashlib
import io
import math
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils.text import slugify

from catalog.fleets import generate_fleet
from catalog.models import Machine, MeasuredSpeed, Provider
from catalog.services import load_gpu_types
from sizing.cluster_sites import can_join_cluster

pytestmark = pytest.mark.django_db

COMPARED_FIELDS = (
    "provider__name", "provider_machine_id", "tier", "gpu_type__name", "gpu_count", "free_gpus",
    "memory_per_gpu_mib", "memory_source", "memory_flag", "country", "region", "price_per_gpu_hour",
    "interruptible", "booking_limit_hours", "is_available", "site", "interconnect", "interconnect_gbps",
)


def snapshot(prefix):
    rows = Machine.objects.filter(provider__name__startswith=prefix)
    rows = rows.order_by("provider__name", "provider_machine_id")
    return list(rows.values_list(*COMPARED_FIELDS))


@pytest.fixture
def gpu_types(db):
    load_gpu_types()


def test_the_same_seed_gives_the_same_fleet(gpu_types):
    generate_fleet(500, seed=11, provider_prefix="A")
    generate_fleet(500, seed=11, provider_prefix="B")
    fleet_a = [row[1:] for row in snapshot("A ")]
    fleet_b = [row[1:] for row in snapshot("B ")]
    assert len(fleet_a) == 500
    assert fleet_a == fleet_b


def test_another_seed_gives_another_fleet(gpu_types):
    generate_fleet(300, seed=1, provider_prefix="A")
    generate_fleet(300, seed=2, provider_prefix="B")
    assert [row[2:] for row in snapshot("A ")] != [row[2:] for row in snapshot("B ")]


def test_rerunning_updates_in_place(gpu_types):
    generate_fleet(400, seed=5)
    first = snapshot("Synthetic")
    assert generate_fleet(400, seed=5) == 400
    assert Machine.objects.count() == 400
    assert snapshot("Synthetic") == first
    assert set(Provider.objects.values_list("tier", flat=True)) == {"secure", "community"}


def inserts_for(model, rows: int) -> int:
    """INSERT statements a bulk write of `rows` rows takes: one on PostgreSQL; SQLite caps a
    statement's parameters, so there as many as that cap needs."""
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    return math.ceil(rows / connection.ops.bulk_batch_size(fields, range(rows))) if rows else 0


def test_generation_is_bulk_so_queries_do_not_grow_per_machine(gpu_types):
    with CaptureQueriesContext(connection) as queries:
        assert generate_fleet(2_000, seed=3) == 2_000
    assert Machine.objects.count() == 2_000
    speeds = MeasuredSpeed.objects.count()
    assert speeds > 0
    # A fixed handful of statements, plus the bulk INSERTs of the machines and of their speeds.
    assert len(queries) <= 13 + inserts_for(Machine, 2_000) + inserts_for(MeasuredSpeed, speeds)


def test_a_few_secure_8_gpu_machines_stand_at_sites_on_one_rdma_network_each(gpu_types):
    generate_fleet(4_000, seed=7)
    at_sites = Machine.objects.exclude(site="")
    assert 0 < at_sites.count() < Machine.objects.filter(tier="secure", gpu_count=8).count() / 20
    assert not Machine.objects.filter(site="").exclude(interconnect="none").exists()
    fabrics = {}
    for machine in at_sites:
        assert can_join_cluster(tier=machine.tier, site=machine.site, interconnect=machine.interconnect,
                                interconnect_gbps=machine.interconnect_gbps)
        assert machine.gpu_count == 8 and machine.site.startswith(slugify(machine.region))
        fabric = fabrics.setdefault((machine.provider_id, machine.site),
                                    (machine.interconnect, machine.interconnect_gbps))
        assert fabric == (machine.interconnect, machine.interconnect_gbps)


def test_generated_machines_pass_model_validation(gpu_types):
    generate_fleet(300, seed=9)
    for machine in Machine.objects.select_related("provider", "gpu_type"):
        # The constraints (Meta.constraints) are the database's own: it checked each row as it took it.
        # Asked again here, Django would send a statement per constraint and machine (12 × every row).
        machine.full_clean(validate_constraints=False)


def test_the_command_writes_the_fleet(gpu_types, capsys):
    call_command("generate_fleet", "--machines", "120", "--seed", "4", "--provider-prefix", "Cmd")
    assert Machine.objects.filter(provider__name__startswith="Cmd ").count() == 120
    assert "120 machines written" in capsys.readouterr().out


def _machine_statistics():
    """When the machine table's statistics were last gathered by ANALYZE (PostgreSQL), or the
    rows SQLite's ANALYZE wrote for it."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT last_analyze FROM pg_stat_user_tables WHERE relname = %s",
                [Machine._meta.db_table],
            )
            return cursor.fetchone()[0]
        cursor.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'")
        if cursor.fetchone() is None:
            return None
        cursor.execute("SELECT stat FROM sqlite_stat1 WHERE tbl = %s", [Machine._meta.db_table])
        return cursor.fetchall() or None


@pytest.mark.parametrize("command", ["generate_fleet", "load_catalog"])
def test_loading_a_fleet_leaves_the_planner_statistics_of_what_it_loaded(gpu_types, command):
    before = _machine_statistics()
    if command == "generate_fleet":
        call_command("generate_fleet", machines=40, seed=3, provider_prefix="Stats", stdout=io.StringIO())
    else:
        call_command("load_catalog", stdout=io.StringIO())

    after = _machine_statistics()

    assert after is not None, "no statistics for the machine table after loading"
    if connection.vendor == "postgresql":
        assert before is None or after > before


# sha256 of `snapshot` of generate_fleet(300, seed=7) as it was before any generated machine had an
# interruptible price: giving some one leaves every other value of the fleet as it was.
FLEET_SEVEN_DIGEST = "6653c2288d2cf90db497282c681271b4493b56c4e2f915d532b6322acbebe15b"


def _digest(rows) -> str:
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def test_an_interruptible_price_on_some_community_machines_leaves_every_other_value_as_it_was(gpu_types):
    generate_fleet(300, seed=7)
    assert _digest(snapshot("Synthetic")) == FLEET_SEVEN_DIGEST
    machines = list(Machine.objects.order_by("provider_machine_id"))
    priced = [machine for machine in machines if machine.interruptible_price_per_gpu_hour is not None]
    on_demand_community = [m for m in machines if m.tier == "community" and not m.interruptible]
    assert 0 < len(priced) < len(on_demand_community)
    for machine in priced:
        assert machine.tier == "community" and not machine.interruptible
        assert machine.interruptible_price_per_gpu_hour == max(
            (machine.price_per_gpu_hour * Decimal("0.6")).quantize(Decimal("0.001")), Decimal("0.01")
        )
