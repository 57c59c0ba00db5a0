"""The kind of GPU a machine is fitted by, as the database works it out (`catalog.counting.gpu_kinds`):
the same as the sizing engine's rule (`mxfp4_kernel` of `gpu_architecture`) on every architecture and
any compute capability staff may enter, kept per shape, and counted again when a GPU type changes."""

from __future__ import annotations

import pytest
from django.db import connection

from catalog.counting import fleet_counts
from catalog.counting.gpu_kinds import kernel_sql
from catalog.models import GpuType, Machine
from sizing.calculators.vllm_loading import MOE_KERNELS, mxfp4_kernel
from sizing.engine_support import FAMILIES, gpu_architecture
from tests.kept_counts import assert_kept_counts_are_the_fleets

pytestmark = pytest.mark.postgresql(
    reason="the kind is kept in the fleet shapes and walked in SQL on PostgreSQL; SQLite fits by the engine"
)

CAPABILITIES = [
    "",
    " ",
    "7.0",
    "8.6",
    "9.0",
    "10.0",
    " 10.3 ",
    "10.9",
    "11.0",
    "12.0",
    "12.1",
    "10",
    "10.00",
    "x.y",
]


def kind_in_sql(family: str, capability: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {kernel_sql('g')} FROM (SELECT %s AS architecture, %s AS compute_capability) g",  # noqa: S608
            [family, capability],
        )
        return cursor.fetchone()[0]


@pytest.mark.parametrize("family", ["", "unknown", *FAMILIES])
def test_the_database_places_every_gpu_as_the_engine_does(db, family):
    for capability in CAPABILITIES:
        expected = MOE_KERNELS.index(mxfp4_kernel(gpu_architecture(family, capability)))
        assert kind_in_sql(family, capability) == expected, (family, capability)


def kept_kinds() -> dict[int | None, int]:
    with connection.cursor() as cursor:
        fleet_counts.merge_pending(cursor)
        cursor.execute(
            f"SELECT moe_kernel, SUM(cum[cardinality(cum)]) FROM {fleet_counts.SHAPES} "  # noqa: S608
            "WHERE market = 'on_demand' AND moe_kernel IS NOT NULL GROUP BY moe_kernel"
        )
        return dict(cursor.fetchall())


def test_a_gpu_type_whose_architecture_changes_moves_its_machines_to_their_new_kind(make_machine):
    """Three machines of a B200 (FlashInfer) and one of an H100: staff correct the B200 to compute
    capability 12.0 (Marlin's kind), and back; the kept counts follow, as counting every machine again."""
    for _ in range(3):
        make_machine("B200")
    make_machine("H100 SXM 80GB")
    assert kept_kinds() == {0: 1, 1: 3}
    b200 = GpuType.objects.get(name="B200")
    b200.compute_capability = "12.0"
    b200.save()
    assert kept_kinds() == {0: 4}
    assert_kept_counts_are_the_fleets()
    GpuType.objects.filter(pk=b200.pk).update(compute_capability="10.0", notes="corrected")
    assert kept_kinds() == {0: 1, 1: 3}
    GpuType.objects.filter(pk=b200.pk).update(notes="unchanged kind")  # no recount where no kind moves
    assert kept_kinds() == {0: 1, 1: 3}
    assert Machine.objects.count() == 4
