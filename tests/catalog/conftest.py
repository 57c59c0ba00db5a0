import pytest

from tests.factories import load_shipped_catalog, load_shipped_models_and_gpus


@pytest.fixture
def catalog(db):
    """The shipped catalog with the demo fleet."""
    return load_shipped_catalog()


@pytest.fixture
def models_only(db):
    return load_shipped_models_and_gpus()
