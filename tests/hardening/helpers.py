"""What the hardening tests share: the query fields every 400 names, a few machines on the shipped
models and GPU types (so fuzzing computes real results and stays fast), and production processes."""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

from django.conf import settings

from catalog.models import Machine
from tests.factories import make_machine, make_provider

REPO = Path(settings.BASE_DIR)

# The query parameters of the wizard and the API; every 400 must name one of them.
QUERY_FIELDS = (
    "workload", "model", "precision", "context", "requests", "memory_gib",
    "budget", "max_price", "tier", "countries", "limit", "kv_cache",
    "sort", "gpu", "min_memory_gib", "confidence", "group", "page",
    "target_tokens", "efficiency", "redundancy",
)


def add_fleet() -> dict[str, Machine]:
    secure = make_provider("Harbor Compute", slug="harbor", tier="secure")
    community = make_provider("Attic Hosts", slug="attic", tier="community")
    return {
        "rtx4090": make_machine(secure, "RTX 4090", provider_machine_id="fra-4090", price_per_gpu_hour=Decimal("0.40")),
        "rtx3090": make_machine(community, "RTX 3090", provider_machine_id="attic-3090",
                                price_per_gpu_hour=Decimal("0.30"), country="PL"),
        "a100": make_machine(secure, "A100 80GB", provider_machine_id="us-a100", price_per_gpu_hour=Decimal("1.60"),
                             country="US"),
        "h100x8": make_machine(secure, "H100 SXM 80GB", provider_machine_id="par-h100", gpu_count=8, free_gpus=8,
                               price_per_gpu_hour=Decimal("2.50"), country="FR", booking_limit_hours=24),
    }


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
