"""Requests a visitor can send without an account, each with its parameters at the schema's limits:
the slowest of each operation is what one request can cost the console (docs/benchmarks-log.md,
"Every request bounded"). `python -m tests.bench.hostile` times them in process over the database that
DATABASE_URL names; the benchmark runner (`--hostile`) times them through nginx and gunicorn and loops
the dearest from two addresses beside a normal API call."""
from __future__ import annotations

import os
import sys
import time
from urllib.parse import urlencode

from sizing.limits import (
    MAX_CONTEXT,
    MAX_LIMIT,
    MAX_REDUNDANCY,
    MAX_REQUESTS,
    MAX_TARGET_TOKENS_PER_S,
    PAGE_MAX_LIMIT,
)

BIG = "workload=inference&model=deepseek-r1&precision=16&kv_cache=16"
BIG_CONTEXT = 163_840  # DeepSeek-R1's longest context: past it the answer is a 422 in words
SMALL = "workload=inference&model=llama-3-1-8b&precision=16&context=4096&requests=1"
EVERY_COUNTRY = ",".join(["EU", "US", "DE", "FR", "NL", "SE", "NO", "FI", "PL", "CA", "JP", "SG"] * 25)
TARGET = format(MAX_TARGET_TOKENS_PER_S, "f")

# (operation, path): the operation names a row of the table; each path is one request.
HOSTILE: list[tuple[str, str]] = [
    ("recommendations: throughput plan", f"/api/v1/recommendations?{SMALL}&target_tokens={TARGET}"
     f"&redundancy={MAX_REDUNDANCY}&gpu_plans=1&efficiency=1"),
    ("recommendations: throughput plan", f"/api/v1/recommendations?{SMALL}&target_tokens=10000000"
     f"&redundancy={MAX_REDUNDANCY}&gpu_plans=1"),
    ("recommendations: throughput plan", f"/api/v1/recommendations?{SMALL}&target_tokens=3000000"
     f"&redundancy={MAX_REDUNDANCY}&gpu_plans=1&limit={MAX_LIMIT}"),
    ("recommendations: throughput plan", f"/api/v1/recommendations?workload=inference&model=llama-3-1-70b"
     f"&precision=16&context=8192&requests=1&target_tokens=1000000&redundancy={MAX_REDUNDANCY}&gpu_plans=1"),
    ("recommendations: price per million tokens", f"/api/v1/recommendations?{SMALL}"
     f"&sort=price_per_million_tokens&limit={MAX_LIMIT}"),
    ("recommendations: price per million tokens", f"/api/v1/recommendations?{SMALL}"
     f"&sort=price_per_million_tokens&limit=100&page=10"),
    ("recommendations: longest list", f"/api/v1/recommendations?{SMALL}&limit={MAX_LIMIT}"),
    ("recommendations: longest list", f"/api/v1/recommendations?{SMALL}&limit=100&page=10&group=gpu"),
    ("recommendations: longest list", f"/api/v1/recommendations?{SMALL}&limit={MAX_LIMIT}"
     f"&countries={EVERY_COUNTRY}&confidence=medium"),
    # The market preference: every machine at its price under the choice, from the kept counts too.
    ("recommendations: longest list", f"/api/v1/recommendations?{SMALL}&limit={MAX_LIMIT}&market=any"
     f"&countries={EVERY_COUNTRY}"),
    ("recommendations: clusters", f"/api/v1/recommendations?{BIG}&context={BIG_CONTEXT}"
     f"&requests={MAX_REQUESTS}&clusters=show&limit={MAX_LIMIT}"),
    ("recommendations: clusters", f"/api/v1/recommendations?{BIG}&context=131072&requests=64"
     f"&clusters=show&limit={MAX_LIMIT}"),
    ("recommendations: empty answer and its hints", f"/api/v1/recommendations?{BIG}&context={BIG_CONTEXT}"
     f"&requests={MAX_REQUESTS}&countries=IS&tier=secure&max_price=0.01"),
    ("recommendations: empty answer and its hints", f"/api/v1/recommendations?{BIG}&context={BIG_CONTEXT}"
     f"&requests={MAX_REQUESTS}&countries=IS&tier=secure&max_price=0.01&market=interruptible"),
    ("result page: throughput plan", f"/?{SMALL}&target_tokens=10000000&redundancy={MAX_REDUNDANCY}"
     f"&gpu_plans=1&plan_rows=all"),
    ("result page: throughput plan", f"/?{SMALL}&target_tokens={TARGET}&redundancy={MAX_REDUNDANCY}"
     f"&gpu_plans=1&plan_rows=all"),
    ("result page: clusters", f"/?{BIG}&context=131072&requests=64&clusters=show&limit={PAGE_MAX_LIMIT}"),
    ("result page: longest list", f"/?{SMALL}&limit={PAGE_MAX_LIMIT}&sort=price_per_million_tokens"),
    ("result page: longest list", f"/?{SMALL}&limit={PAGE_MAX_LIMIT}&group=gpu&page=5"),
    ("estimate", f"/api/v1/estimate?{BIG}&context={BIG_CONTEXT}&requests={MAX_REQUESTS}"),
    ("estimate", f"/api/v1/estimate?{BIG}&context={MAX_CONTEXT}&requests={MAX_REQUESTS}"),
    ("estimate", "/api/v1/estimate?workload=finetune&model=llama-3-1-405b&precision=16&context=131072"
     f"&requests={MAX_REQUESTS}&lora_rank=1024&optimizer=adamw"),
    ("capacity (vLLM what-if)", "/api/v1/capacity?" + urlencode({
        "model": "deepseek-r1", "precision": 16, "gpu": "H100 SXM 80GB", "tensor_parallel": 128,
        "pipeline_parallel": 1024, "max_model_len": BIG_CONTEXT, "max_num_batched_tokens": MAX_CONTEXT,
        "max_num_seqs": MAX_REQUESTS})),
    ("calculators page", "/calculators/?" + urlencode({
        "target": "1000000000000", "measured": "1", "efficiency": "1", "redundancy": 10000,
        "parameters": "1000000000000000", "precision": "32", "model": "deepseek-r1", "gpu": "H100 SXM 80GB",
        "gpu_memory_gib": "10000", "tensor_parallel": 128, "pipeline_parallel": 1024,
        "max_model_len": BIG_CONTEXT, "max_num_seqs": MAX_REQUESTS})),
    ("cluster page", f"/cluster/?{BIG}&context=131072&requests=64&machines=" + ",".join(
        str(n) for n in range(1, 65))),
    ("models", "/api/v1/models"),
    ("tiers page", "/secure-and-community/"),
]


def slowest_per_operation(get, runs: int = 2) -> list[tuple[str, float, int, str]]:
    """(operation, slowest ms, its status, its path) for each operation: every path run `runs` times
    through `get(path) -> status`, its slowest time kept."""
    slowest: dict[str, tuple[float, int, str]] = {}
    for operation, path in HOSTILE:
        for _ in range(runs):
            started = time.perf_counter()
            status = get(path)
            elapsed = (time.perf_counter() - started) * 1000
            if operation not in slowest or elapsed > slowest[operation][0]:
                slowest[operation] = (elapsed, status, path)
    return [(operation, *figures) for operation, figures in slowest.items()]


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nodelodge.settings")
    import django

    django.setup()
    from django.test import Client

    client = Client()
    for operation, ms, status, path in slowest_per_operation(lambda path: client.get(path).status_code):
        print(f"{ms:9.1f} ms  {status}  {operation}  {path[:140]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
