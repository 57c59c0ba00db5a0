"""What the hardening tests share: the query fields every 400 names, a few machines on the shipped
models and GPU types (so fuzzing computes real results and stays fast), and production processes."""
from __future__ import annotations

import gzip
import os
import re
import secrets
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import brotli
from django.conf import settings

from catalog.models import Machine
from nodelodge.recommendations.parameters import PARAMETERS
from tests.factories import make_machine, make_provider

REPO = Path(settings.BASE_DIR)

# The query's parameters as it declares them (workload first); every 400 names one of them.
QUERY_FIELDS = tuple(parameter.name for parameter in PARAMETERS)


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


SCHEMATHESIS_CONFIG = REPO / "schemathesis.toml"  # which statuses schema-valid data may get


def schemathesis_run(schema: str, folder: Path, *, headers: dict[str, str], url: str | None = None,
                     tls_verify: bool = True) -> subprocess.CompletedProcess:
    """`schemathesis run <schema> --checks all`, bounded (40 examples an operation, a fixed seed), with
    these headers on every request (a token, so the operations behind sign-in are tested too);
    `url`: where the calls go, when the schema is a file."""
    cli = Path(sys.executable).with_name("schemathesis")
    command = [str(cli), "--config-file", str(SCHEMATHESIS_CONFIG), "run", schema, "--checks", "all",
               "--max-examples", "40", "--seed", "20250301", "--no-color"]
    if url:
        command += ["--url", url]
    if not tls_verify:
        command += ["--tls-verify", "false"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    # Its cache stays in `folder`.
    return subprocess.run(command, capture_output=True, text=True, timeout=900, check=False, cwd=folder)


def api_token() -> str:
    """A new user's API token, as a script sends it."""
    from nodelodge.accounts.tokens import create_token
    from tests.factories import make_user

    return create_token(make_user())[1]


STATIC_NAMES = re.compile(r'(?:href|src)="(/static/[^"]+)"')
HASHED_NAME = re.compile(r"\.[0-9a-f]{12}\.(?:css|js|svg)$")
A_YEAR = "max-age=31536000, public, immutable"


def check_static_files_served_like_a_product(page: str, get: Callable[[str, str], tuple[dict, bytes]]) -> int:
    """The stylesheet, scripts and icon a page names: hashed names, a year's cache, gzip and Brotli
    where asked for, each the same bytes as the file sent plain. `get(path, accept_encoding)` ->
    (headers, body). Returns how many files were checked."""
    names = STATIC_NAMES.findall(page)
    assert len(names) >= 3, names  # the stylesheet, htmx and the console's script at least
    for name in names:
        assert HASHED_NAME.search(name), f"{name} is not named by its content"
        plain = None
        for encoding, decode in (("identity", bytes), ("gzip", gzip.decompress), ("br", brotli.decompress)):
            headers, body = get(name, encoding)
            headers = {key.lower(): value for key, value in headers.items()}
            assert headers.get("cache-control") == A_YEAR, (name, headers)
            assert headers.get("content-encoding", "identity") == encoding, (name, encoding, headers)
            assert "accept-encoding" in headers.get("vary", "").lower()
            plain = decode(body) if plain is None else plain
            assert decode(body) == plain and plain
    return len(names)
