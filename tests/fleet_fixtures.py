"""Fixtures for a small, hand-made fleet on top of the shipped models and GPU types, so every expected
figure can be worked out by hand (the wizard's, throughput and hardening tests). Registered for the
whole suite by tests/conftest.py; a package may define its own `providers` (tests/refresh does)."""
from decimal import Decimal

import pytest
from django.utils import timezone

from tests import factories


@pytest.fixture
def models_and_gpus(db):
    return factories.load_shipped_models_and_gpus()


@pytest.fixture
def providers(models_and_gpus):
    return {
        "secure": factories.make_provider("Harbor Compute", slug="harbor", tier="secure"),
        "community": factories.make_provider("Attic Hosts", slug="attic", tier="community"),
    }


@pytest.fixture
def make_machine(providers):
    """A machine of a shipped GPU type (by name) at the secure or the community provider."""

    def make(gpu="RTX 4090", tier="secure", **fields):
        return factories.make_machine(providers[tier], gpu, **fields)

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


def _cluster_node(make_machine, gpu, site, price):
    return make_machine(gpu, gpu_count=8, free_gpus=8, site=site, interconnect="infiniband",
                        interconnect_gbps=400, country="US", region="Virginia", price_per_gpu_hour=Decimal(price))


@pytest.fixture
def h100_site(small_fleet, make_machine):
    """Beside the small fleet, three whole 8 × H100 machines at one site (iad-1) on 400 Gb/s InfiniBand,
    $20, $20 and $24 per hour: the clusters' tests."""
    return [_cluster_node(make_machine, "H100 SXM 80GB", "iad-1", price) for price in ("2.50", "2.50", "3.00")]


@pytest.fixture
def h200_site(make_machine):
    """Two whole 8 × H200 machines at another site (iad-2), $28 per hour each."""
    return [_cluster_node(make_machine, "H200", "iad-2", "3.50") for _ in range(2)]
