"""Fixtures for the hardening tests; what they share besides is in helpers.py."""
import pytest

from tests.factories import load_shipped_models_and_gpus

from .helpers import add_fleet


@pytest.fixture
def catalog_fleet(db):
    load_shipped_models_and_gpus()
    return add_fleet()
