"""The kind of GPU a machine is fitted by, as the database works it out (`catalog.counting.gpu_kinds`):
the same as the sizing engine's rules (`mxfp4_kernel` of `gpu_architecture` on every architecture and any
compute capability staff may enter; `interconnect_of_gpu` on every GPU type of the catalog and names
staff may enter), kept on each GPU type and per shape, and counted again when a GPU type changes (in the
admin, by a catalog load, by any update)."""

from __future__ import annotations

from collections import Counter
from itertools import product

import pytest
from django.db import DatabaseError, connection, transaction
from django.urls import reverse

from catalog.counting import fleet_counts
from catalog.counting.gpu_kinds import (
    CATALOG_KINDS,
    GPU_KIND_FUNCTION,
    KIND_COLUMN,
    catalog_kind_sql,
    fabric_sql,
    kernel_sql,
    kind_sql,
)
from catalog.data.gpu_aliases import GPU_ALIASES
from catalog.data.gpu_types import GPU_TYPES
from catalog.models import GpuType, Machine
from catalog.services import load_gpu_types
from sizing.calculators.vllm_interconnect import INTERCONNECTS, NVSWITCH, PCIE, PCIE_P2P, interconnect_of_gpu
from sizing.calculators.vllm_loading import MOE_KERNELS, mxfp4_kernel
from sizing.engine_support import FAMILIES, gpu_architecture
from sizing.kinds import KindSpace
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


# Names staff may enter beside the catalog's: other spellings, white space and case, and names near the
# rule's words that are not them.
NAMES = [
    "", " ", "GeForce RTX 4090", "NVIDIA GeForce RTX 3090", " rtx 3090 ti ", "RTX 3090 Ti", "RTX 4080 SUPER",
    "RTX 4070D", "NVIDIA RTX 5090", "rtx3090", "RTX 30900", "\tRTX 3090\n", "RTX 3090 (24GB)", "RTX A6000",
    "RTX PRO 6000", "Quadro RTX 8000", "A10G", "A100 PCIe 40GB", "A100 SXM4 80GB", "H100 NVL", "NVIDIA L4",
    "L40", "L40S", "AL4X", "Tesla T4", "T40", "A2", "A40", "A400", "RTX 6000 Ada", "Adamant", "MI300X",
    "GB200 NVL72", "pcie", "PCIe-H100",
]


def fabric_in_sql(name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {fabric_sql('g')} FROM (SELECT %s::text AS name) g", [name])  # noqa: S608
        return cursor.fetchone()[0]


def test_the_database_reads_every_gpu_types_interconnect_as_the_engine_does(db):
    names = {row[0] for row in GPU_TYPES} | {alias for alias, _type, _source in GPU_ALIASES} | set(NAMES)
    names |= set(GpuType.objects.values_list("name", flat=True))
    found = {interconnect_of_gpu(name) for name in names}
    assert found == {NVSWITCH, PCIE_P2P, PCIE}  # every place is met
    for name in sorted(names):
        assert fabric_in_sql(name) == INTERCONNECTS.index(interconnect_of_gpu(name)), name


@pytest.mark.parametrize(
    ("space", "expected"),
    [
        (KindSpace(), [0] * 9),
        (KindSpace(kernels=3), [0, 0, 0, 1, 1, 1, 2, 2, 2]),
        (KindSpace(fabrics=3), [0, 1, 2] * 3),
        (KindSpace(3, 3), list(range(9))),
    ],
)
def test_a_querys_kind_is_read_from_the_catalogs_as_the_engine_numbers_it(db, space, expected):
    with connection.cursor() as cursor:
        for stored in range(CATALOG_KINDS.size):
            cursor.execute(f"SELECT {kind_sql(space, 's.k')} FROM (SELECT %s::smallint AS k) s", [stored])  # noqa: S608
            kind = cursor.fetchone()[0]
            assert kind == expected[stored] == space.index(*CATALOG_KINDS.places(stored)), (space, stored)


def engine_kind(name: str, architecture: str, capability: str) -> int:
    """The catalog's kind of a GPU type as the sizing engine's rules place it."""
    kernel = MOE_KERNELS.index(mxfp4_kernel(gpu_architecture(architecture, capability)))
    return CATALOG_KINDS.index(kernel, INTERCONNECTS.index(interconnect_of_gpu(name)))


def stored_kinds() -> dict[str, int]:
    """Each GPU type's kind as its row keeps it."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT name, {KIND_COLUMN} FROM catalog_gputype")  # noqa: S608
        return dict(cursor.fetchall())


def test_every_gpu_type_of_the_catalog_is_kept_at_both_of_its_places(db, models_and_gpus):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT g.name, {catalog_kind_sql('g')} FROM catalog_gputype g")  # noqa: S608
        kinds = dict(cursor.fetchall())
    for gpu in GpuType.objects.all():
        assert kinds[gpu.name] == engine_kind(gpu.name, gpu.architecture, gpu.compute_capability), gpu.name
    assert kinds["RTX 3090"] == PCIE_PLACE and kinds["B200"] == 3 and kinds["L40S"] == 1
    assert stored_kinds() == kinds


def test_the_kept_kind_is_the_engines_on_every_name_architecture_and_capability(db, models_and_gpus):
    """The function the GPU types' column is generated by, over every name of the catalog, its aliases and
    names staff may enter, with every architecture and any compute capability staff may enter."""
    names = sorted({row[0] for row in GPU_TYPES} | {alias for alias, _type, _source in GPU_ALIASES} | set(NAMES))
    fields = list(product(names, ["", "unknown", *FAMILIES], CAPABILITIES))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {GPU_KIND_FUNCTION}(n, a, c) FROM unnest(%s::varchar[], %s::varchar[], %s::varchar[]) "
            "WITH ORDINALITY AS t(n, a, c, i) ORDER BY i",
            [list(column) for column in zip(*fields, strict=True)],
        )
        kept = [row[0] for row in cursor.fetchall()]
    assert kept == [engine_kind(*row) for row in fields]


def test_no_write_sets_a_gpu_types_kind_but_its_fields(db, models_and_gpus):
    with pytest.raises(DatabaseError, match="generated column"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE catalog_gputype SET {KIND_COLUMN} = 0")  # noqa: S608
    GpuType.objects.create(name="H100 SXM 80GB NVL board", slug="h100-nvl-board", vendor="NVIDIA", memory_mib=81559)
    assert stored_kinds()["H100 SXM 80GB NVL board"] == INTERCONNECTS.index(PCIE_P2P)


PCIE_PLACE = INTERCONNECTS.index(PCIE)


def kept_kinds() -> dict[int | None, int]:
    with connection.cursor() as cursor:
        fleet_counts.merge_pending(cursor)
        cursor.execute(
            f"SELECT gpu_kind, SUM(cum[cardinality(cum)]) FROM {fleet_counts.SHAPES} "  # noqa: S608
            "WHERE market = 'on_demand' AND gpu_kind IS NOT NULL GROUP BY gpu_kind"
        )
        return dict(cursor.fetchall())


def test_a_gpu_type_whose_architecture_changes_moves_its_machines_to_their_new_kind(make_machine):
    """Three machines of a B200 (FlashInfer, kind 3 on NVSwitch) and one of an H100: staff correct the B200
    to compute capability 12.0 (Marlin's kind), and back; the kept counts follow, as counting every machine
    again."""
    for _ in range(3):
        make_machine("B200")
    make_machine("H100 SXM 80GB")
    assert kept_kinds() == {0: 1, 3: 3}
    b200 = GpuType.objects.get(name="B200")
    b200.compute_capability = "12.0"
    b200.save()
    assert kept_kinds() == {0: 4}
    assert_kept_counts_are_the_fleets()
    GpuType.objects.filter(pk=b200.pk).update(compute_capability="10.0", notes="corrected")
    assert kept_kinds() == {0: 1, 3: 3}
    GpuType.objects.filter(pk=b200.pk).update(notes="unchanged kind")  # no recount where no kind moves
    assert kept_kinds() == {0: 1, 3: 3}
    assert Machine.objects.count() == 4


def test_a_gpu_type_renamed_to_another_interconnect_moves_its_machines(make_machine):
    """Two RTX 3090 machines (PCIe without peer-to-peer) and an H100 SXM: staff rename the H100 type to its
    PCIe card's name (peer-to-peer), and the 3090's to a data-center name; the kept counts follow."""
    make_machine("RTX 3090")
    make_machine("RTX 3090")
    make_machine("H100 SXM 80GB")
    assert kept_kinds() == {PCIE_PLACE: 2, 0: 1}
    GpuType.objects.filter(name="H100 SXM 80GB").update(name="H100 SXM 80GB (PCIe)")
    assert kept_kinds() == {PCIE_PLACE: 2, INTERCONNECTS.index(PCIE_P2P): 1}
    GpuType.objects.filter(name="RTX 3090").update(name="RTX 3090 HGX")
    assert kept_kinds() == {0: 2, INTERCONNECTS.index(PCIE_P2P): 1}
    assert_kept_counts_are_the_fleets()


def engine_kinds() -> dict[int, int]:
    """Machines per kind, as the engine places each machine's GPU type today."""
    return dict(Counter(
        engine_kind(machine.gpu_type.name, machine.gpu_type.architecture, machine.gpu_type.compute_capability)
        for machine in Machine.objects.select_related("gpu_type")
    ))


def saved_in_the_admin(client, gpu_type: GpuType, **changes) -> None:
    """Staff's change of a GPU type through its admin page, every other field as the page shows it."""
    url = reverse("admin:catalog_gputype_change", args=[gpu_type.pk])
    page = client.get(url).context
    form = page["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    for inline in page["inline_admin_formsets"]:
        formset = inline.formset
        data |= {f"{formset.prefix}-{key}": value for key, value in formset.management_form.initial.items()}
        data[f"{formset.prefix}-TOTAL_FORMS"] = len(formset.initial_forms)
        for alias_form in formset.initial_forms:
            data |= {alias_form.add_prefix(name): alias_form[name].value() for name in alias_form.fields
                     if name != "DELETE"}
    data |= changes
    response = client.post(url, {key: "" if value is None else value for key, value in data.items()})
    assert response.status_code == 302, response.context["adminform"].form.errors


def test_gpu_type_edits_in_the_admin_and_by_a_catalog_load_move_their_machines(make_machine, admin_client):
    """Staff rename the H100 SXM to a PCIe card's name in the admin, and set the B200's architecture wrong;
    the catalog's next load puts the architecture back. The kept counts follow each edit, at the kinds the
    engine places the machines at, as counting every machine again gives them."""
    for gpu in ["H100 SXM 80GB", "H100 SXM 80GB", "B200", "RTX 3090", "L40S"]:
        make_machine(gpu)
    assert kept_kinds() == engine_kinds() == {0: 2, 3: 1, PCIE_PLACE: 1, 1: 1}

    saved_in_the_admin(admin_client, GpuType.objects.get(name="H100 SXM 80GB"), name="H100 80GB PCIe board",
                       slug="h100-80gb-pcie-board")
    assert GpuType.objects.filter(name="H100 80GB PCIe board",
                       slug="h100-80gb-pcie-board").exists()
    assert kept_kinds() == engine_kinds() == {INTERCONNECTS.index(PCIE_P2P): 3, 3: 1, PCIE_PLACE: 1}
    assert_kept_counts_are_the_fleets()

    GpuType.objects.filter(name="B200").update(architecture="hopper", compute_capability="9.0")
    assert kept_kinds() == engine_kinds() == {1: 3, 0: 1, PCIE_PLACE: 1}
    load_gpu_types()  # the shipped architecture again; the renamed type is left as staff named it
    assert kept_kinds() == engine_kinds() == {1: 3, 3: 1, PCIE_PLACE: 1}
    assert stored_kinds()["B200"] == 3 and stored_kinds()["H100 SXM 80GB"] == 0
    assert_kept_counts_are_the_fleets()
