"""Makers of what the tests build, in one place: catalog rows (provider, GPU type, language model,
machine, measured speed), users, a random fleet, and the engine's own values (machine offers and
hand-built breakdowns, no database).

Each maker has one set of defaults; a test that needs another value passes it. A machine's defaults:
one free GPU of its type's datasheet memory, $1.00 per GPU-hour, in Frankfurt, DE, available and seen
just now, its memory source following its provider's tier."""
from __future__ import annotations

import math
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import count

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.color import no_style
from django.db import connection
from django.utils import timezone

from catalog.data.gpu_types import architecture as gpu_architecture_of
from catalog.models import (
    GpuType,
    ImageComponent,
    ImagePipeline,
    LanguageModel,
    Machine,
    MeasuredSpeed,
    Provider,
    SpeechModel,
)
from catalog.services import load_catalog
from sizing.breakdown import Breakdown, Item
from sizing.offers import MachineOffer
from sizing.units import GIB

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
# When the measured speeds were taken, unless a test says otherwise.
MEASURED_AT = datetime(2025, 5, 1, tzinfo=UTC)

H100_MIB = 81_559
H200_MIB = 143_771
CARD_48GB_MIB = 49_140
RTX_4090_MIB = 24_564
T4_MIB = 15_360

PASSWORD = "a-long-test-passphrase"

_numbers = count(1)


# Catalog rows ------------------------------------------------------------------------------------

# What load_catalog writes, parents first: the shipped models and GPU types, then the demo fleet.
SHIPPED_MODELS = (LanguageModel, ImagePipeline, ImageComponent, SpeechModel, GpuType)
DEMO_FLEET = (Provider, Machine, MeasuredSpeed)
_loaded: dict[bool, tuple] = {}


def _rows(models) -> list[tuple[type, list[dict]]]:
    return [
        (model, [{field.attname: getattr(row, field.attname) for field in model._meta.concrete_fields}
                 for row in model.objects.order_by("pk")])
        for model in models
    ]


def load_shipped_catalog(fleet: bool = True) -> dict[str, int]:
    """The shipped catalog, as `load_catalog(fleet)` loads it now (and its counts).

    The first call of a run is load_catalog itself; later calls copy the rows it wrote, ids included,
    in one statement per table, with the demo machines seen now as a load now would see them
    (load_catalog asks and writes each of some 120 models and 200 machines one by one, seconds per
    test that needs the catalog; it is tested as such in tests/catalog)."""
    models = SHIPPED_MODELS + (DEMO_FLEET if fleet else ())
    if fleet not in _loaded:
        loaded_at = timezone.now()
        counts = load_catalog(fleet=fleet, now=loaded_at)
        _loaded[fleet] = (counts, _rows(models), loaded_at)
        return counts
    counts, rows, loaded_at = _loaded[fleet]
    later = timezone.now() - loaded_at
    for model, values in rows:
        if model is Machine:
            # Seen when loaded (load_catalog's now), moved to this load's now; created and updated now.
            values = [row | {"last_seen_at": row["last_seen_at"] and row["last_seen_at"] + later,
                             "gone_at": row["gone_at"] and row["gone_at"] + later} for row in values]
        model.objects.bulk_create([model(**row) for row in values])
    # Later rows get ids after the copied ones, as after a load (PostgreSQL keeps them in sequences).
    with connection.cursor() as cursor:
        for statement in connection.ops.sequence_reset_sql(no_style(), models):
            cursor.execute(statement)
    return dict(counts)


def load_shipped_models_and_gpus() -> dict[str, int]:
    """The shipped models and GPU types, as `load_catalog(fleet=False)` loads them."""
    return load_shipped_catalog(fleet=False)


def make_provider(name: str = "Alpine Compute", tier: str = "secure", slug: str | None = None, **fields) -> Provider:
    return Provider.objects.create(name=name, slug=slug or name.lower().replace(" ", "-"), tier=tier, **fields)


def make_gpu_type(name: str = "H100 SXM 80GB", slug: str | None = None, memory_mib: int = H100_MIB,
                  vendor: str = "NVIDIA", **fields) -> GpuType:
    """A GPU type; a shipped type's name brings its architecture and compute capability along."""
    family, compute_capability = gpu_architecture_of(name)
    fields = {"architecture": family, "compute_capability": compute_capability, **fields}
    return GpuType.objects.create(
        name=name, slug=slug or name.lower().replace(" ", "-"), vendor=vendor, memory_mib=memory_mib, **fields
    )


def make_language_model(**fields) -> LanguageModel:
    """Llama 3.1 8B with its published figures."""
    values = dict(
        slug="llama-3-1-8b", name="Llama 3.1 8B", parameters=8_030_261_248, parameters_published="8.03B",
        layers=32, attention_heads=32, kv_heads=8, head_dim=128, hidden_size=4096,
        intermediate_size=14336, vocab_size=128256, max_context=131072, license="llama3.1",
    )
    return LanguageModel.objects.create(**values | fields)


def build_machine(provider: Provider, gpu_type: GpuType | str, **overrides) -> Machine:
    """An unsaved machine (for validation tests); `gpu_type` may be a shipped GPU type's name."""
    if isinstance(gpu_type, str):
        gpu_type = GpuType.objects.get(name=gpu_type)
    values = {
        "provider": provider,
        "provider_machine_id": f"m-{next(_numbers):04d}",
        "gpu_type": gpu_type,
        "gpu_count": 1,
        "free_gpus": 1,
        "memory_per_gpu_mib": gpu_type.memory_mib,
        "memory_source": "datacenter" if provider.tier == "secure" else "host",
        "country": "DE",
        "region": "Frankfurt",
        "price_per_gpu_hour": Decimal("1.00"),
        "is_available": True,
        "last_seen_at": timezone.now(),
    }
    values.update(overrides)
    return Machine(**values)


def make_machine(provider: Provider, gpu_type: GpuType | str, **overrides) -> Machine:
    machine = build_machine(provider, gpu_type, **overrides)
    machine.save()
    return machine


def make_measured_speed(machine: Machine, value, *, model="llama-3-1-8b", precision=16, gpus=1,
                        **fields) -> MeasuredSpeed:
    """A vLLM measurement of Llama 3.1 8B on the machine, in tokens per second."""
    return MeasuredSpeed.objects.create(
        machine=machine, model_kind="language", model_slug=model, precision=precision, unit="tokens/s",
        value=Decimal(value), gpus=gpus, measured_at=fields.pop("measured_at", MEASURED_AT), engine="vLLM",
        engine_version="0.6.3", concurrency=64, input_tokens=1024, output_tokens=128, measured_by="bench", **fields,
    )


def make_user(username: str | None = None, password: str = PASSWORD, **extra):
    username = username or f"user{next(_numbers)}"
    return get_user_model().objects.create_user(
        username=username, email=f"{username}@example.com", password=password, **extra
    )


# A random fleet ----------------------------------------------------------------------------------

# Names that sort differently by byte and by dictionary order, so the tie-break's order is tested.
PROVIDER_NAMES = [("alpha Cloud", "secure"), ("Beta", "secure"), ("_under", "community"), ("Zeta", "community")]
PRICES = [Decimal(p) for p in ("0.25", "0.5", "0.5", "1.00", "1.25", "2.0", "3.3333", "4.10")]
COUNTRIES = ["DE", "FR", "US", "CH", "SE", ""]


def random_fleet(rng: random.Random, machines: int, now, memories: list[int]) -> None:
    """Four providers (PROVIDER_NAMES) and `machines` machines of the first GPU type drawn from `rng`:
    every reason a machine may not count occurs (no memory, offline, stale, gone, no country), with
    memories drawn from `memories`, prices from PRICES and countries from COUNTRIES."""
    providers = [
        Provider.objects.create(name=name, slug=f"p{index}", tier=tier)
        for index, (name, tier) in enumerate(PROVIDER_NAMES)
    ]
    gpu_type = GpuType.objects.order_by("pk").first()
    stale = now - timedelta(seconds=settings.MACHINE_STALE_AFTER_SECONDS + 60)
    rows = []
    for index in range(machines):
        gpus = rng.choice([1, 1, 2, 4, 8, 8, 16])
        rows.append(
            Machine(
                provider=(provider := rng.choice(providers)),
                tier=provider.tier,
                provider_machine_id=rng.choice(["a", "B", "b", "_"]) + f"-{index}",
                gpu_type=gpu_type,
                gpu_count=gpus,
                free_gpus=rng.choice([0, gpus, gpus, rng.randint(0, gpus)]),
                memory_per_gpu_mib=None if rng.random() < 0.05 else rng.choice(memories),
                memory_source=rng.choice(["datacenter", "datasheet", "host"]),
                memory_flag="Reported far from the datasheet." if rng.random() < 0.05 else "",
                country=rng.choice(COUNTRIES),
                region="somewhere",
                price_per_gpu_hour=rng.choice(PRICES),
                interruptible=rng.random() < 0.2,
                booking_limit_hours=rng.choice([None, None, 1, 24]),
                is_available=rng.random() < 0.9,
                last_seen_at=stale if rng.random() < 0.05 else now,
                gone_at=now if rng.random() < 0.03 else None,
            )
        )
    Machine.objects.bulk_create(rows)


# The engine's values: breakdowns and offers, no database -----------------------------------------

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
        parameters=70_553_706_496, layers=80, kv_heads=8, head_dim=128, attention_heads=64,
        precision=precision, context=context, requests=requests, model="llama-3.1-70b",
    )


def llama_8b(precision: int = 16, context: int = 4096, requests: int = 1) -> Breakdown:
    return language_inference(
        parameters=8_030_261_248, layers=32, kv_heads=8, head_dim=128, attention_heads=32,
        precision=precision, context=context, requests=requests, model="llama-3.1-8b",
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
    gpu_architecture="hopper",
    gpu_compute_capability="9.0",
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
    """A machine offer: eight free H200s at $3.00 per GPU-hour in Frankfurt, changed as asked."""
    if "id" in changes and "provider_machine_id" not in changes:
        changes["provider_machine_id"] = f"m-{changes['id']}"
    if "price_per_gpu_hour" in changes and not isinstance(changes["price_per_gpu_hour"], Decimal):
        changes["price_per_gpu_hour"] = Decimal(str(changes["price_per_gpu_hour"]))
    if "free_gpus" in changes and "gpu_count" not in changes:
        changes["gpu_count"] = max(changes["free_gpus"], 1)
    return replace(_BASE_OFFER, **changes)


class SmallCatalog:
    """Llama 3.1 8B, the H100 and one provider; its machines have `gpus` free H100s at $2.49 per
    GPU-hour, their memory measured in the data center (what a test changes it passes)."""

    def __init__(self, gpus: int = 2):
        self.gpus = gpus
        self.model = make_language_model()
        self.gpu_type = make_gpu_type()
        self.provider = make_provider()

    def machine(self, **overrides) -> Machine:
        values = {
            "gpu_count": self.gpus, "free_gpus": self.gpus, "memory_per_gpu_mib": H100_MIB,
            "memory_source": "datacenter", "region": "", "price_per_gpu_hour": Decimal("2.4900"),
        }
        return make_machine(self.provider, self.gpu_type, **values | overrides)
