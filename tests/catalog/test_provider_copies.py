"""Machines keep copies of their provider's tier and active flag; the database keeps them in step,
whichever way a provider or machine is written (the admin, a queryset update, a bulk load)."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from catalog import availability
from catalog.models import GpuType, Machine, Provider

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet():
    gpu = GpuType.objects.create(name="Card", slug="card", vendor="NVIDIA", memory_mib=24_564, marketed_memory="24GB")
    secure = Provider.objects.create(name="Secure", slug="secure", tier="secure")
    other = Provider.objects.create(name="Other", slug="other", tier="community")
    now = timezone.now()
    for provider in (secure, other):
        Machine.objects.bulk_create([
            Machine(
                provider=provider, provider_machine_id=f"m{number}", gpu_type=gpu, gpu_count=1, free_gpus=1,
                memory_per_gpu_mib=24_564, memory_source="datacenter", country="DE",
                price_per_gpu_hour=Decimal("1"), last_seen_at=now,
                # bulk_create skips save(): the database alone gives the copies their values
                tier="community" if provider.tier == "secure" else "secure", provider_is_active=False,
            )
            for number in range(3)
        ])
    return secure, other, now - timedelta(minutes=15)


def available(cutoff, **filters) -> int:
    return Machine.objects.filter(availability.available_q(cutoff, None), **filters).count()


def test_machines_written_in_bulk_take_their_providers_figures(fleet):
    secure, other, cutoff = fleet
    assert set(Machine.objects.filter(provider=secure).values_list("tier", "provider_is_active")) == {
        ("secure", True)
    }
    assert set(Machine.objects.filter(provider=other).values_list("tier", "provider_is_active")) == {
        ("community", True)
    }
    assert available(cutoff) == 6


def test_a_provider_deactivated_by_a_queryset_update_takes_its_machines_out(fleet):
    secure, other, cutoff = fleet
    Provider.objects.filter(pk=secure.pk).update(is_active=False)
    assert available(cutoff, provider=secure) == 0
    assert available(cutoff, provider=other) == 3
    Provider.objects.filter(pk=secure.pk).update(is_active=True)
    assert available(cutoff, provider=secure) == 3


def test_a_providers_new_tier_reaches_its_machines(fleet):
    secure, other, cutoff = fleet
    Provider.objects.filter(pk=secure.pk).update(tier="community")
    assert Machine.objects.filter(tier="community").count() == 6


def test_a_machine_cannot_hold_another_figure_than_its_providers(fleet):
    secure, other, cutoff = fleet
    Machine.objects.filter(provider=secure).update(tier="community", provider_is_active=False)
    assert set(Machine.objects.filter(provider=secure).values_list("tier", "provider_is_active")) == {
        ("secure", True)
    }


def test_a_machine_moved_to_another_provider_takes_that_providers_figures(fleet):
    secure, other, cutoff = fleet
    Provider.objects.filter(pk=other.pk).update(is_active=False)
    moved = Machine.objects.filter(provider=secure).first()
    Machine.objects.filter(pk=moved.pk).update(provider=other, provider_machine_id="moved")
    moved.refresh_from_db()
    assert (moved.tier, moved.provider_is_active) == ("community", False)
