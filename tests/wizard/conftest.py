"""What the wizard's tests share."""
import pytest

from tests.factories import load_shipped_catalog


@pytest.fixture
def shipped_catalog(transactional_db):
    """The shipped catalog with its demo fleet, committed, for a live server and a browser to read."""
    load_shipped_catalog()
