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


# One site of identical machines that may form a cluster: 8 × H100 each, InfiniBand at 400 Gb/s.
CLUSTER_MACHINE = {
    "gpu_count": 8, "free_gpus": 8, "site": "fra-1", "interconnect": "infiniband", "interconnect_gbps": 400,
}


@pytest.fixture
def cluster_catalog(db) -> SmallCatalog:
    """The small catalog whose `cluster_machine()` makes a machine at the cluster site."""
    catalog = SmallCatalog(gpus=8)
    catalog.cluster_machine = lambda **overrides: catalog.machine(**CLUSTER_MACHINE | overrides)
    return catalog
