"""The catalog rows the refresh tests' feeds name. The Celery worker on Redis is tests/celery_worker.py's;
the feeds and their server are in tests/feeds.py."""
from __future__ import annotations

import pytest

from tests.factories import H100_MIB, RTX_4090_MIB, make_gpu_type, make_provider


@pytest.fixture
def gpu_types(db):
    return {
        "h100": make_gpu_type("H100 SXM 80GB", memory_mib=H100_MIB),
        "rtx4090": make_gpu_type("RTX 4090", memory_mib=RTX_4090_MIB),
    }


@pytest.fixture
def providers(db):
    return {
        "secure": make_provider("Acme Secure", tier="secure"),
        "community": make_provider("Hosts United", tier="community"),
    }
