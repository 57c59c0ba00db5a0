"""Migration 0026 (the market preference counted): each machine's price under the interruptible-allowed
and any-market choices are columns the database computes, by `sizing.markets.priced_in`'s rule; on
PostgreSQL the fleet shapes count each machine once per choice, and undoing the migration puts the counts
back at the listed price alone."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from catalog.counting import fleet_counts
from catalog.models import GpuType, Machine, Provider
from sizing.markets import ANY_MARKET, INTERRUPTIBLE, MARKET_CHOICES, ON_DEMAND, offer_price
from tests.helpers import migrate
from tests.kept_counts import assert_kept_counts_are_the_fleets

BEFORE = ("catalog", "0025_cluster_index_carries_reliability")
# (listed, listed interruptible, interruptible price, reserved price) -> price under each choice.
MACHINES = {
    "plain": ("2.49", False, None, None),
    "spot cheaper": ("2.49", False, "0.99", None),
    "spot dearer": ("1.00", False, "1.50", None),
    "spot tie": ("1.00", False, "1.00", None),
    "reserved cheapest": ("2.49", False, "1.99", "1.50"),
    "reserved dearer": ("2.49", False, "0.99", "3.00"),
    "listed interruptible": ("0.61", True, "0.61", "0.40"),
}


def shape_columns() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s", [fleet_counts.SHAPES]
        )
        return [name for (name,) in cursor.fetchall()]


@pytest.mark.django_db(transaction=True)
def test_the_migration_computes_each_market_price_and_undoing_it_counts_the_listed_price_alone(db):
    """On both databases (SQLite rebuilds the table for the stored columns, so its triggers are put back);
    the kept counts are PostgreSQL's."""
    provider = Provider.objects.create(name="Old", slug="old", tier="community")
    gpu = GpuType.objects.create(name="H100 SXM 80GB", slug="h100", vendor="NVIDIA", memory_mib=81559)
    try:
        for name, (listed, listed_interruptible, spot, reserved) in MACHINES.items():
            Machine.objects.create(
                provider=provider, gpu_type=gpu, provider_machine_id=name, gpu_count=1, free_gpus=1,
                memory_per_gpu_mib=81559, price_per_gpu_hour=Decimal(listed), interruptible=listed_interruptible,
                interruptible_price_per_gpu_hour=None if spot is None else Decimal(spot),
                reserved_price_per_gpu_hour=None if reserved is None else Decimal(reserved),
                reserved_term_days=None if reserved is None else 30,
            )
        old = migrate([BEFORE])
        old_machines = old.get_model("catalog", "Machine").objects
        assert old_machines.count() == len(MACHINES)
        if connection.vendor == "postgresql":
            assert "market" not in shape_columns()
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT SUM(cum[cardinality(cum)]) FROM {fleet_counts.SHAPES}")  # noqa: S608
                assert cursor.fetchone()[0] == len(MACHINES)  # once each, at the listed price
        # A machine written while the columns are gone is priced when they come back.
        old_machines.filter(provider_machine_id="plain").update(interruptible_price_per_gpu_hour=Decimal("2.00"))
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("catalog"))
    from catalog import rows

    for offer in rows.machine_offers(Machine.objects.all()):
        machine = Machine.objects.get(pk=offer.id)
        assert machine.interruptible_allowed_price == offer_price(offer, INTERRUPTIBLE)[1], machine
        assert machine.any_market_price == offer_price(offer, ANY_MARKET)[1], machine
        assert offer_price(offer, ON_DEMAND)[1] == machine.price_per_gpu_hour
    priced = {m.provider_machine_id: (m.interruptible_allowed_price, m.any_market_price) for m in Machine.objects.all()}
    assert priced["plain"] == (Decimal("2.00"), Decimal("2.00"))
    assert priced["spot dearer"] == (Decimal("1.00"), Decimal("1.00"))
    assert priced["reserved cheapest"] == (Decimal("1.99"), Decimal("1.50"))
    assert priced["listed interruptible"] == (Decimal("0.61"), Decimal("0.40"))
    if connection.vendor == "postgresql":
        assert "market" in shape_columns()
        assert_kept_counts_are_the_fleets()  # each machine once per choice, as counting again gives
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT market, SUM(cum[cardinality(cum)]) FROM {fleet_counts.SHAPES} GROUP BY market"  # noqa: S608
            )
            assert dict(cursor.fetchall()) == {choice: len(MACHINES) for choice in MARKET_CHOICES}
    else:
        # The provider's copies on the machine are still kept by the database after SQLite's rebuild.
        Provider.objects.filter(pk=provider.pk).update(tier="secure")
        assert set(Machine.objects.values_list("tier", flat=True)) == {"secure"}
    Machine.objects.all().delete()
    Provider.objects.all().delete()
    GpuType.objects.filter(pk=gpu.pk).delete()
