"""Hand-built breakdowns and machine offers for the matching tests (no calculators, no database)."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

from sizing.breakdown import Breakdown, Item
from sizing.offers import MachineOffer
from sizing.units import GIB

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)

H200_MIB = 143_771
CARD_48GB_MIB = 49_140
RTX_4090_MIB = 24_564
T4_MIB = 15_360


def language_inference(
    *,
    parameters: int,
    layers: int,
    kv_heads: int,
    head_dim: int,
    attention_heads: int,
    precision: int = 16,
    context: int = 4096,
    requests: int = 1,
    model: str = "test-model",
) -> Breakdown:
    """The SPEC §3 language-inference items, computed here by hand."""
    bytes_per_parameter = {16: 2.0, 8: 1.0, 4: 0.5}[precision]
    weights = math.ceil(parameters * bytes_per_parameter)
    kv_cache = 2 * layers * kv_heads * head_dim * 2 * context * requests
    margin = math.ceil(0.2 * (weights + kv_cache))
    return Breakdown(
        workload="inference",
        title=f"{model} at {precision}-bit",
        items=(
            Item("Model weights", "parameters × bytes", weights),
            Item("KV cache", "2 × layers × KV heads × head dim × 2 × context × requests", kv_cache),
            Item("Safety margin", "20 % of the above", margin),
            Item("CUDA runtime", "1 GiB per GPU", GIB, per_gpu=True),
        ),
        assumptions=("hand-built for tests",),
        precision=precision,
        splittable_over_heads=attention_heads,
        inputs={
            "model": model,
            "model_name": model,
            "precision": precision,
            "context": context,
            "requests": requests,
        },
    )


def llama_70b(precision: int = 16, context: int = 4096, requests: int = 1) -> Breakdown:
    return language_inference(
        parameters=70_553_706_496,
        layers=80,
        kv_heads=8,
        head_dim=128,
        attention_heads=64,
        precision=precision,
        context=context,
        requests=requests,
        model="llama-3.1-70b",
    )


def llama_8b(precision: int = 16, context: int = 4096, requests: int = 1) -> Breakdown:
    return language_inference(
        parameters=8_030_261_248,
        layers=32,
        kv_heads=8,
        head_dim=128,
        attention_heads=32,
        precision=precision,
        context=context,
        requests=requests,
        model="llama-3.1-8b",
    )


def fixed_need(
    gib: float, *, workload: str = "notebook", precision: int | None = None, heads: int | None = None
) -> Breakdown:
    """A breakdown of one shared item (plus runtime when splittable), for workloads sized elsewhere."""
    items = [Item("Need", "as given", int(gib * GIB))]
    if heads is not None:
        items.append(Item("CUDA runtime", "1 GiB per GPU", GIB, per_gpu=True))
    return Breakdown(
        workload=workload,
        title="fixed need",
        items=tuple(items),
        assumptions=(),
        precision=precision,
        splittable_over_heads=heads,
        inputs={"memory_gib": gib},
    )


_BASE_OFFER = MachineOffer(
    id=1,
    provider="Alpha Cloud",
    tier="secure",
    provider_machine_id="m-1",
    gpu_type="H200",
    gpu_count=8,
    free_gpus=8,
    memory_per_gpu_mib=H200_MIB,
    memory_source="datacenter",
    country="DE",
    region="Frankfurt",
    price_per_gpu_hour=Decimal("3.00"),
    interruptible=False,
    booking_limit_hours=None,
    last_seen=NOW,
)


def offer(**changes) -> MachineOffer:
    if "id" in changes and "provider_machine_id" not in changes:
        changes["provider_machine_id"] = f"m-{changes['id']}"
    if "price_per_gpu_hour" in changes and not isinstance(changes["price_per_gpu_hour"], Decimal):
        changes["price_per_gpu_hour"] = Decimal(str(changes["price_per_gpu_hour"]))
    if "free_gpus" in changes and "gpu_count" not in changes:
        changes["gpu_count"] = max(changes["free_gpus"], 1)
    return replace(_BASE_OFFER, **changes)
