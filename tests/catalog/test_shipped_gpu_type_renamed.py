"""A shipped GPU type staff renamed in the admin: loading the catalog again keeps staff's name and finds the
row by the slug it was created with, so the load neither fails on that slug nor adds the type twice."""
from __future__ import annotations

import pytest
from django.core.management import call_command

from catalog.data.gpu_types import GPU_TYPES
from catalog.models import GpuAlias, GpuType, Machine

pytestmark = pytest.mark.django_db

SHIPPED = "H100 SXM 80GB"


def test_loading_again_after_a_rename_keeps_the_name_and_adds_no_second_type(catalog):
    renamed = GpuType.objects.get(name=SHIPPED)
    machines = Machine.objects.filter(gpu_type=renamed).count()
    renamed.name = "H100 SXM5 80GB (our racks)"
    renamed.memory_mib = 1  # a shipped figure: the load sets it again
    renamed.save()

    call_command("load_catalog")

    assert GpuType.objects.count() == len(GPU_TYPES)
    assert not GpuType.objects.filter(name=SHIPPED).exists()
    row = GpuType.objects.get(pk=renamed.pk)
    assert row.name == "H100 SXM5 80GB (our racks)" and row.slug == renamed.slug
    assert row.memory_mib == next(memory for name, _, _, memory, *_ in GPU_TYPES if name == SHIPPED)
    # its aliases and the demo fleet's machines still point at it
    assert GpuAlias.objects.filter(gpu_type=row).exists()
    assert Machine.objects.filter(gpu_type=row).count() == machines
