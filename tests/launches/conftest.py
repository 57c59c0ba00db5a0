"""A small catalog for the launch tests: one language model with its published figures, one GPU
type, one provider and machines made to measure."""
from __future__ import annotations

from decimal import Decimal

import pytest

from catalog.models import Machine
from tests.factories import (
    H100_MIB,
    make_gpu_type,
    make_language_model,
    make_machine,
    make_provider,
    make_user,
)


class Catalog:
    """Llama 3.1 8B, the H100 and Alpine Compute; its machines have two free H100s at $2.49 per
    GPU-hour in DE, their memory measured in the data center."""

    def __init__(self):
        self.model = make_language_model()
        self.gpu_type = make_gpu_type()
        self.provider = make_provider()

    def machine(self, **overrides) -> Machine:
        values = {
            "gpu_count": 2, "free_gpus": 2, "memory_per_gpu_mib": H100_MIB, "memory_source": "datacenter",
            "region": "", "price_per_gpu_hour": Decimal("2.4900"),
        }
        return make_machine(self.provider, self.gpu_type, **values | overrides)


@pytest.fixture
def small_catalog(db) -> Catalog:
    return Catalog()


@pytest.fixture(name="make_user")
def make_user_fixture(db):
    return make_user
