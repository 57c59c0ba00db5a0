"""A small catalog for the watch tests (Llama 3.1 8B, the H100, one provider), and the query they
watch."""
from __future__ import annotations

from decimal import Decimal

import pytest

from catalog.models import Machine
from tests.factories import H100_MIB, make_gpu_type, make_language_model, make_machine, make_provider


class Catalog:
    def __init__(self):
        self.model = make_language_model()
        self.gpu_type = make_gpu_type()
        self.provider = make_provider()

    def machine(self, **overrides) -> Machine:
        values = {
            "gpu_count": 1, "free_gpus": 1, "memory_per_gpu_mib": H100_MIB, "memory_source": "datacenter",
            "region": "", "price_per_gpu_hour": Decimal("2.4900"),
        }
        return make_machine(self.provider, self.gpu_type, **values | overrides)


@pytest.fixture
def catalog(db) -> Catalog:
    return Catalog()
