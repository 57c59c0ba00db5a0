"""Fixtures for the hardening tests; what they share besides is in helpers.py."""
from decimal import Decimal

import pytest

from tests.factories import load_shipped_models_and_gpus, make_measured_speed

from .helpers import add_fleet


@pytest.fixture
def catalog_fleet(db):
    load_shipped_models_and_gpus()
    return add_fleet()


@pytest.fixture
def measured_machine(make_machine):
    """One 8 × H100 machine with a speed measured for Llama 3.1 8B: a throughput plan has a machine."""
    machine = make_machine("H100 SXM 80GB", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("2.50"))
    make_measured_speed(machine, "5000")
    return machine
