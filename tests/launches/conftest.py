"""A small catalog for the launch tests: one language model with its published figures, one GPU
type, one provider and machines made to measure."""
from __future__ import annotations

from decimal import Decimal
from itertools import count

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from catalog.models import GpuType, LanguageModel, Machine, Provider

# Llama 3.1 8B at 16-bit, 4,096 tokens, one request: about 19.8 GiB, one 80 GB GPU holds it.
QUERY = "workload=inference&model=llama-3-1-8b&precision=16&context=4096&requests=1"
H100_MIB = 81_559
_machine_numbers = count(1)


def make_language_model() -> LanguageModel:
    return LanguageModel.objects.create(
        slug="llama-3-1-8b", name="Llama 3.1 8B", parameters=8_030_261_248, parameters_published="8.03B",
        layers=32, attention_heads=32, kv_heads=8, head_dim=128, hidden_size=4096,
        intermediate_size=14336, vocab_size=128256, max_context=131072, license="llama3.1",
    )


def make_gpu_type() -> GpuType:
    return GpuType.objects.create(
        name="H100 SXM 80GB", slug="h100-sxm-80gb", vendor="NVIDIA", memory_mib=H100_MIB,
        marketed_memory="80GB",
    )


def make_provider(name="Alpine Compute", tier="secure") -> Provider:
    return Provider.objects.create(name=name, slug=name.lower().replace(" ", "-"), tier=tier)


def make_machine(provider, gpu_type, **overrides) -> Machine:
    values = {
        "provider": provider,
        "provider_machine_id": f"m-{next(_machine_numbers):04d}",
        "gpu_type": gpu_type,
        "gpu_count": 2,
        "free_gpus": 2,
        "memory_per_gpu_mib": H100_MIB,
        "memory_source": "datacenter",
        "country": "DE",
        "price_per_gpu_hour": Decimal("2.4900"),
        "is_available": True,
        "last_seen_at": timezone.now(),
    }
    values.update(overrides)
    return Machine.objects.create(**values)


class Catalog:
    def __init__(self):
        self.model = make_language_model()
        self.gpu_type = make_gpu_type()
        self.provider = make_provider()

    def machine(self, **overrides) -> Machine:
        return make_machine(self.provider, self.gpu_type, **overrides)


@pytest.fixture
def small_catalog(db) -> Catalog:
    return Catalog()


@pytest.fixture
def make_user(db):
    numbers = count(1)

    def make(username=None, password="a-long-test-passphrase", **extra):
        username = username or f"user{next(numbers)}"
        return get_user_model().objects.create_user(
            username=username, email=f"{username}@example.com", password=password, **extra
        )

    return make
