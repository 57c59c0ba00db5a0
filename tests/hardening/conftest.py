"""Shared setup for the hardening tests: the shipped models and GPU types plus a few machines, so
the fuzzing requests compute real results and stay fast."""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from catalog.models import GpuType, Machine, Provider
from catalog.services import load_catalog

REPO = Path(settings.BASE_DIR)

# The query parameters of the wizard and the API; every 400 must name one of them.
QUERY_FIELDS = (
    "workload", "model", "precision", "context", "requests", "memory_gib",
    "budget", "max_price", "tier", "countries", "limit", "kv_cache",
    "sort", "gpu", "min_memory_gib", "confidence", "group", "page",
    "target_tokens", "efficiency", "redundancy",
)


def add_fleet() -> dict[str, Machine]:
    secure = Provider.objects.create(name="Harbor Compute", slug="harbor", tier="secure")
    community = Provider.objects.create(name="Attic Hosts", slug="attic", tier="community")
    now = timezone.now()

    def machine(gpu, provider, provider_machine_id, **fields):
        gpu_type = GpuType.objects.get(name=gpu)
        values = {
            "provider": provider, "provider_machine_id": provider_machine_id, "gpu_type": gpu_type,
            "gpu_count": 1, "free_gpus": 1, "memory_per_gpu_mib": gpu_type.memory_mib,
            "memory_source": "datacenter" if provider.tier == "secure" else "host",
            "country": "DE", "region": "Frankfurt", "price_per_gpu_hour": Decimal("1.00"),
            "is_available": True, "last_seen_at": now,
        }
        values.update(fields)
        return Machine.objects.create(**values)

    return {
        "rtx4090": machine("RTX 4090", secure, "fra-4090", price_per_gpu_hour=Decimal("0.40")),
        "rtx3090": machine("RTX 3090", community, "attic-3090", price_per_gpu_hour=Decimal("0.30"),
                           country="PL"),
        "a100": machine("A100 80GB", secure, "us-a100", price_per_gpu_hour=Decimal("1.60"), country="US"),
        "h100x8": machine("H100 SXM 80GB", secure, "par-h100", gpu_count=8, free_gpus=8,
                          price_per_gpu_hour=Decimal("2.50"), country="FR", booking_limit_hours=24),
    }


@pytest.fixture
def catalog_fleet(db):
    load_catalog(fleet=False)
    return add_fleet()


def production_env(**extra) -> dict[str, str]:
    """The environment of a production process: DEBUG off, a real-looking secret, one host."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    env.update(
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(64),
        ALLOWED_HOSTS="example.com",
        DJANGO_SETTINGS_MODULE="nodelodge.settings",
    )
    env.update(extra)
    return env


def run_python(code: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )
