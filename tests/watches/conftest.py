"""A small catalog for the watch tests: Llama 3.1 8B, the H100, one provider, one-GPU machines."""
from __future__ import annotations

import pytest

from tests.factories import SmallCatalog


@pytest.fixture
def catalog(db) -> SmallCatalog:
    return SmallCatalog(gpus=1)
