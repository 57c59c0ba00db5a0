"""A small, hand-made fleet on top of the shipped models and GPU types, so every expected
figure in these tests can be worked out by hand."""
from decimal import Decimal
from itertools import count

import pytest
from django.utils import timezone

from catalog.models import GpuType, Machine, Provider
from catalog.services import load_catalog

_ids = count(1)


@pytest.fixture
def models_and_gpus(db):
    return load_catalog(fleet=False)


@pytest.fixture
def providers(models_and_gpus):
    secure = Provider.objects.create(name="Harbor Compute", slug="harbor", tier="secure")
    community = Provider.objects.create(name="Attic Hosts", slug="attic", tier="community")
    return {"secure": secure, "community": community}


@pytest.fixture
def make_machine(providers):
    def make(gpu="RTX 4090", tier="secure", **fields):
        gpu_type = GpuType.objects.get(name=gpu)
        values = {
            "provider": providers[tier],
            "provider_machine_id": f"m-{next(_ids):04d}",
            "gpu_type": gpu_type,
            "gpu_count": 1,
            "free_gpus": 1,
            "memory_per_gpu_mib": gpu_type.memory_mib,
            "memory_source": "datacenter" if tier == "secure" else "host",
            "country": "DE",
            "region": "Frankfurt",
            "price_per_gpu_hour": Decimal("1.00"),
            "is_available": True,
            "last_seen_at": timezone.now(),
        }
        values.update(fields)
        return Machine.objects.create(**values)

    return make


@pytest.fixture
def small_fleet(make_machine):
    """Six machines that matter for Llama 3.1 8B at 16-bit (19.55 GiB) and four that never count."""
    return {
        "cheap_4090": make_machine("RTX 4090", price_per_gpu_hour=Decimal("0.40")),
        "community_3090": make_machine("RTX 3090", tier="community", price_per_gpu_hour=Decimal("0.30")),
        "a100": make_machine("A100 80GB", price_per_gpu_hour=Decimal("1.60"), country="US"),
        "h100x8": make_machine("H100 SXM 80GB", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("2.50"),
                               country="FR", booking_limit_hours=24),
        "t4": make_machine("T4", price_per_gpu_hour=Decimal("0.20")),
        "l40s": make_machine("L40S", price_per_gpu_hour=Decimal("0.90"), interruptible=True, country="NL"),
        # never offered, not even as alternatives:
        "no_memory": make_machine("RTX 4090", memory_per_gpu_mib=None, memory_source="unknown",
                                  price_per_gpu_hour=Decimal("0.10")),
        "no_country": make_machine("RTX 4090", country="", price_per_gpu_hour=Decimal("0.11")),
        "offline": make_machine("RTX 4090", is_available=False, price_per_gpu_hour=Decimal("0.12")),
        "stale": make_machine("RTX 4090", last_seen_at=timezone.now() - timezone.timedelta(hours=2),
                              price_per_gpu_hour=Decimal("0.13")),
    }


LLAMA_8B = "workload=inference&model=llama-3-1-8b&precision=16&context=4096&requests=1"
