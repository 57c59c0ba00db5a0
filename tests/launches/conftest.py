"""A small catalog for the launch tests: one language model with its published figures, one GPU
type, one provider and machines made to measure."""
from __future__ import annotations

import pytest

from tests.factories import (
    SmallCatalog,
    make_user,
)


@pytest.fixture
def small_catalog(db) -> SmallCatalog:
    return SmallCatalog(gpus=2)


@pytest.fixture(name="make_user")
def make_user_fixture(db):
    return make_user
