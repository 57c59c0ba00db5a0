"""Writes of whole fleets: the shipped demo fleet and reproducible synthetic fleets, with the measured
speeds the demo data gives them. Every loader is an idempotent upsert keyed by (provider, machine id),
one INSERT ... ON CONFLICT per batch, which PostgreSQL and SQLite both support."""
from __future__ import annotations

import random
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.text import slugify

from catalog.data import measured_speeds as speed_data
from catalog.data.demo_fleet import (
    CLUSTER_GPUS_PER_MACHINE,
    CLUSTER_SITES,
    COMMUNITY_OFFERS,
    DEMO_PROVIDERS,
    DEMO_SEED,
    DEMO_SPEEDS,
    DEMO_SPEEDS_MEASURED_AT,
    SECURE_OFFERS,
    cluster_machine_id,
)
from catalog.models import GpuType, Machine, MeasuredSpeed, Provider

FLEET_BATCH_SIZE = 5_000
# Host-reported memory further than this from the datasheet figure gets a memory_flag.
MEMORY_FLAG_TOLERANCE = 0.05

# Every Machine column a fleet upsert rewrites when the (provider, machine id) already exists.
MACHINE_UPSERT_FIELDS = [
    "tier", "provider_is_active", "gpu_type", "gpu_count", "free_gpus", "memory_per_gpu_mib", "memory_source",
    "memory_flag",
    "country", "region", "price_per_gpu_hour", "interruptible", "booking_limit_hours", "is_available",
    "last_seen_at", "gone_at", "updated_at", "site", "interconnect", "interconnect_gbps",
    # The markets besides the listed price, reliability and stock (`sizing.markets`).
    "interruptible_price_per_gpu_hour", "interruption_notice_seconds", "interruption_frequency",
    "reserved_price_per_gpu_hour", "reserved_term_days", "reliability", "reliability_measures", "stock",
]


def memory_flag_for(reported_mib: int | None, datasheet_mib: int | None, gpu_name: str) -> str:
    """A warning, in words, when reported memory is far from the datasheet; "" otherwise."""
    if not reported_mib or not datasheet_mib:
        return ""
    deviation = (reported_mib - datasheet_mib) / datasheet_mib
    if abs(deviation) <= MEMORY_FLAG_TOLERANCE:
        return ""
    return (
        f"Reported {reported_mib:,} MiB per GPU; the {gpu_name} datasheet figure is "
        f"{datasheet_mib:,} MiB ({deviation:+.1%})."
    )


# Synthetic fleets: about one Secure 8-GPU machine in CLUSTER_ONE_IN stands at one of a few sites per
# location of its provider, every machine of a site (by its name) on the same RDMA network, so a fleet
# of 1,000,000 has a few hundred sites where a cluster may be formed (three Secure providers × five
# locations × the sites each × the 8-GPU types: 252 with two or more whole free machines at seed 1).
# Drawn from the machine's id, not the fleet's random sequence, so every other figure of the fleet is
# what it was.
CLUSTER_ONE_IN = 100
CLUSTER_SITES_PER_LOCATION = 3
CLUSTER_FABRICS = (("infiniband", 400), ("infiniband", 400), ("roce", 400), ("infiniband", 200))


def _at_cluster_site(machine: Machine) -> Machine:
    """`machine`, standing at a site on an RDMA network when its id draws one (see CLUSTER_ONE_IN)."""
    key = machine.provider_machine_id
    if machine.tier != "secure" or machine.gpu_count != CLUSTER_GPUS_PER_MACHINE:
        return machine
    if zlib.crc32(f"cluster:{key}".encode()) % CLUSTER_ONE_IN:
        return machine
    number = zlib.crc32(f"site:{key}".encode()) % CLUSTER_SITES_PER_LOCATION + 1
    machine.site = f"{slugify(machine.region)}-{number}"
    fabric = zlib.crc32(f"fabric:{machine.site}".encode()) % len(CLUSTER_FABRICS)
    machine.interconnect, machine.interconnect_gbps = CLUSTER_FABRICS[fabric]
    return machine


# About one Community on-demand machine in INTERRUPTIBLE_PRICE_ONE_IN is offered interruptible too, at
# INTERRUPTIBLE_SHARE of its listed price (as a listing that is interruptible only is priced), so the
# market preference has something to choose in generated fleets. Drawn from the machine's id, not the
# fleet's random sequence, so every other figure of the fleet is what it was.
INTERRUPTIBLE_PRICE_ONE_IN = 3
INTERRUPTIBLE_SHARE = Decimal("0.6")


def interruptible_price_for(
    machine_id: str, tier: str, interruptible: bool, price: Decimal
) -> Decimal | None:
    """The interruptible price a generated machine is offered at besides its listed one (None: none)."""
    if tier != "community" or interruptible:
        return None
    if zlib.crc32(f"interruptible:{machine_id}".encode()) % INTERRUPTIBLE_PRICE_ONE_IN:
        return None
    return max((price * INTERRUPTIBLE_SHARE).quantize(Decimal("0.001")), Decimal("0.01"))


@dataclass(frozen=True)
class _ProviderPlan:
    provider: Provider
    locations: tuple[tuple[str, str], ...]


def _random_machine(
    rng: random.Random, plan: _ProviderPlan, machine_id: str, gpu_types: dict[str, GpuType], now: datetime
) -> Machine:
    """One realistic machine; every special case the wizard must handle occurs at a steady rate."""
    secure = plan.provider.tier == "secure"
    gpu_name, counts, list_price = rng.choice(SECURE_OFFERS if secure else COMMUNITY_OFFERS)
    gpu_type = gpu_types[gpu_name]
    gpu_count = rng.choice(counts)
    datasheet_mib = gpu_type.memory_mib

    roll = rng.random()
    flag = ""
    if secure:
        if roll < 0.02:
            memory, source = None, Machine.MemorySource.UNKNOWN
        elif roll < 0.30:
            memory, source = datasheet_mib, Machine.MemorySource.DATASHEET
        else:
            memory, source = datasheet_mib, Machine.MemorySource.DATACENTER
    else:
        source = Machine.MemorySource.HOST
        if roll < 0.07:
            memory, source = None, Machine.MemorySource.UNKNOWN
        elif roll < 0.15:  # a misreporting host (partitioned card, wrong driver, wrong label)
            memory = round(datasheet_mib * rng.choice((0.5, 0.75, 0.83, 1.33)))
            flag = memory_flag_for(memory, datasheet_mib, gpu_name)
        elif roll < 0.30:  # small driver/ECC differences, within tolerance
            memory = datasheet_mib - rng.choice((12, 256, 512))
        else:
            memory = datasheet_mib

    is_available = rng.random() < (0.88 if secure else 0.8)
    if not is_available:
        free_gpus = 0
    elif rng.random() < 0.7:
        free_gpus = gpu_count
    else:
        free_gpus = rng.randint(0, gpu_count)

    interruptible = rng.random() < (0.05 if secure else 0.3)
    booking_limit = None
    if rng.random() < (0.05 if secure else 0.25):
        booking_limit = 720 if secure else rng.choice((12, 24, 48, 72, 168))

    if not secure and rng.random() < 0.06:
        country, region = "", ""
    else:
        country, region = rng.choice(plan.locations)

    price = Decimal(list_price) * Decimal(str(round(rng.uniform(0.85, 1.25), 3)))
    if interruptible:
        price *= Decimal("0.6")
    price = max(price.quantize(Decimal("0.001")), Decimal("0.01"))

    return Machine(
        provider=plan.provider, provider_machine_id=machine_id, tier=plan.provider.tier,
        provider_is_active=plan.provider.is_active, gpu_type=gpu_type,
        gpu_count=gpu_count, free_gpus=free_gpus, memory_per_gpu_mib=memory, memory_source=source,
        memory_flag=flag, country=country, region=region, price_per_gpu_hour=price,
        interruptible=interruptible, booking_limit_hours=booking_limit, is_available=is_available,
        last_seen_at=now, gone_at=None,
        interruptible_price_per_gpu_hour=interruptible_price_for(
            machine_id, plan.provider.tier, interruptible, price
        ),
    )


def _upsert_machines(machines: Iterator[Machine], batch_size: int = FLEET_BATCH_SIZE) -> int:
    total = 0
    batch: list[Machine] = []
    for machine in machines:
        batch.append(machine)
        if len(batch) >= batch_size:
            total += _flush(batch)
            batch = []
    if batch:
        total += _flush(batch)
    return total


def _flush(batch: list[Machine]) -> int:
    Machine.objects.bulk_create(
        batch,
        batch_size=len(batch),
        update_conflicts=True,
        unique_fields=["provider", "provider_machine_id"],
        update_fields=MACHINE_UPSERT_FIELDS,
    )
    return len(batch)


def _upsert_providers(rows: list[dict]) -> dict[str, Provider]:
    """Providers by name in one statement; returns them by name."""
    Provider.objects.bulk_create(
        [Provider(**row) for row in rows],
        update_conflicts=True,
        unique_fields=["name"],
        update_fields=["slug", "tier", "notes", "is_active", "feed_url"],
    )
    return {p.name: p for p in Provider.objects.filter(name__in=[row["name"] for row in rows])}


def demo_feed_url(slug: str) -> str:
    """The console serves the demo providers' feeds itself, so the embedded run can refresh them."""
    return f"{settings.DEMO_FEED_BASE_URL.rstrip('/')}/feeds/demo/{slug}.json"


def gpu_types_by_shipped_name(names: Iterable[str]) -> dict[str, GpuType]:
    """The row of each shipped GPU type named (those present): the row of that name or, where staff
    renamed it in the admin, the row still holding the slug it was created with (a rename keeps it)."""
    rows = list(GpuType.objects.all())
    by_name = {gpu.name: gpu for gpu in rows}
    by_slug = {gpu.slug: gpu for gpu in rows}
    found = {}
    for name in names:
        row = by_name.get(name) or by_slug.get(slugify(name))
        if row is not None:
            found[name] = row
    return found


def _gpu_types_by_name() -> dict[str, GpuType]:
    needed = {name for name, _, _ in SECURE_OFFERS + COMMUNITY_OFFERS}
    gpu_types = gpu_types_by_shipped_name(needed)
    missing = needed - gpu_types.keys()
    if missing:
        raise RuntimeError(f"GPU types missing from the catalog (run load_catalog first): {sorted(missing)}")
    return gpu_types


def _measured(provider_machine_id: str) -> bool:
    """About one machine in MEASURED_ONE_IN carries measured speeds (the same ones on every load)."""
    return zlib.crc32(provider_machine_id.encode()) % speed_data.MEASURED_ONE_IN == 0


def fleet_speeds(machines, skip: frozenset[int] = frozenset()) -> list[MeasuredSpeed]:
    """The measured speeds the demo data gives `machines` (rows of id, provider machine id, GPU type id,
    GPU type name, GPU count, provider name): one machine in five, per `catalog.data.measured_speeds`.
    Each is reported as by the provider's feed."""
    measured_at = datetime.fromisoformat(speed_data.MEASURED_AT)
    speeds = []
    for machine_id, machine_key, gpu_type_id, gpu_name, gpu_count, provider_name in machines:
        if machine_id in skip or not _measured(machine_key):
            continue
        spreads = speed_data.SPREAD
        spread = Decimal(spreads[zlib.crc32(f"spread:{machine_key}".encode()) % len(spreads)])
        for (model_slug, precision), (per_gpu, gpus) in speed_data.PER_GPU.get(gpu_name, {}).items():
            if gpus > gpu_count:
                continue
            concurrency, input_tokens, output_tokens = speed_data.WORKLOADS[(model_slug, precision)]
            speeds.append(
                MeasuredSpeed(
                    machine_id=machine_id, gpu_type_id=gpu_type_id, model_slug=model_slug,
                    model_kind=MeasuredSpeed.ModelKind.LANGUAGE, precision=precision,
                    unit=MeasuredSpeed.Unit.TOKENS_PER_SECOND, gpus=gpus,
                    value=(Decimal(per_gpu) * gpus * spread).quantize(Decimal("0.001")),
                    engine=speed_data.ENGINE, engine_version=speed_data.ENGINE_VERSION,
                    concurrency=concurrency, input_tokens=input_tokens, output_tokens=output_tokens,
                    measured_at=measured_at, measured_by=provider_name, source=MeasuredSpeed.Source.FEED,
                )
            )
    return speeds


def _replace_fleet_speeds(machines: QuerySet[Machine], skip: frozenset[int] = frozenset()) -> int:
    """Replace the feed-reported speeds of `machines` with the demo data's, in bulk."""
    rows = list(
        machines.values_list(
            "id", "provider_machine_id", "gpu_type_id", "gpu_type__name", "gpu_count", "provider__name"
        )
    )
    MeasuredSpeed.objects.filter(machine__in=machines, source=MeasuredSpeed.Source.FEED).delete()
    speeds = fleet_speeds(rows, skip)
    MeasuredSpeed.objects.bulk_create(speeds, batch_size=FLEET_BATCH_SIZE)
    return len(speeds)


def _cluster_site_machines(
    providers: dict[str, Provider], gpu_types: dict[str, GpuType], now: datetime
) -> Iterator[Machine]:
    """The demo's cluster sites (`CLUSTER_SITES`): whole, free 8-GPU machines at one site each."""
    for spec in CLUSTER_SITES:
        provider, gpu_type = providers[spec["provider"]], gpu_types[spec["gpu_type"]]
        for index, price in enumerate(spec["prices"]):
            yield Machine(
                provider=provider, provider_machine_id=cluster_machine_id(spec, index), tier=provider.tier,
                provider_is_active=provider.is_active, gpu_type=gpu_type, gpu_count=CLUSTER_GPUS_PER_MACHINE,
                free_gpus=CLUSTER_GPUS_PER_MACHINE, memory_per_gpu_mib=gpu_type.memory_mib,
                memory_source=Machine.MemorySource.DATACENTER, memory_flag="", country=spec["country"],
                region=spec["region"], site=spec["site"], interconnect=spec["interconnect"],
                interconnect_gbps=spec["gbps"], price_per_gpu_hour=Decimal(price), interruptible=False,
                booking_limit_hours=None, is_available=True, last_seen_at=now, gone_at=None,
            )


def load_demo_fleet(now: datetime | None = None) -> int:
    """The shipped demo fleet: the same providers, machine ids and figures on every load."""
    now = now or timezone.now()
    gpu_types = _gpu_types_by_name()
    providers = _upsert_providers(
        [
            {
                "name": spec["name"], "slug": slugify(spec["name"]), "tier": spec["tier"],
                "notes": spec["notes"], "feed_url": demo_feed_url(slugify(spec["name"])),
            }
            for spec in DEMO_PROVIDERS
        ]
    )
    rng = random.Random(DEMO_SEED)

    def machines() -> Iterator[Machine]:
        for spec in DEMO_PROVIDERS:
            plan = _ProviderPlan(providers[spec["name"]], tuple(spec["locations"]))
            for index in range(spec["machines"]):
                yield _random_machine(rng, plan, f"{spec['prefix']}-{index:04d}", gpu_types, now)
        # After the random machines and drawing nothing, so those stay as they were.
        yield from _cluster_site_machines(providers, gpu_types, now)

    count = _upsert_machines(machines())
    prefixes = {spec["prefix"]: providers[spec["name"]] for spec in DEMO_PROVIDERS}
    measured_at = datetime.fromisoformat(DEMO_SPEEDS_MEASURED_AT)
    hand_entered = set()
    for prefix, index, kind, model_slug, precision, value, unit in DEMO_SPEEDS:
        machine = Machine.objects.get(provider=prefixes[prefix], provider_machine_id=f"{prefix}-{index:04d}")
        hand_entered.add(machine.pk)
        MeasuredSpeed.objects.update_or_create(
            machine=machine, model_slug=model_slug, precision=precision, unit=unit,
            defaults={
                "model_kind": kind, "value": Decimal(value), "measured_at": measured_at,
                "gpu_type_id": machine.gpu_type_id, "measured_by": "Node Lodge staff",
                "source": MeasuredSpeed.Source.STAFF,
            },
        )
    demo = Machine.objects.filter(provider__in=list(providers.values()))
    _replace_fleet_speeds(demo, skip=frozenset(hand_entered))
    return count


def generate_fleet(
    machines: int, seed: int, provider_prefix: str = "Synthetic", now: datetime | None = None
) -> int:
    """A reproducible synthetic fleet of `machines` machines over six providers (three per tier).

    The same seed and prefix give the same rows; running it again updates them in place. Rows go
    in with one INSERT ... ON CONFLICT per batch of FLEET_BATCH_SIZE, so the query count does not
    grow with the number of machines.
    """
    if machines < 0:
        raise ValueError("machines must not be negative")
    now = now or timezone.now()
    gpu_types = _gpu_types_by_name()
    rng = random.Random(seed)
    all_locations = sorted({loc for spec in DEMO_PROVIDERS for loc in spec["locations"]})
    rows, locations = [], {}
    for tier in ("secure", "community"):
        for number in (1, 2, 3):
            name = f"{provider_prefix} {tier.title()} {number}"
            rows.append({"name": name, "slug": slugify(name), "tier": tier, "notes": "Synthetic fleet."})
            locations[name] = tuple(rng.sample(all_locations, 5))
    providers = _upsert_providers(rows)
    plans = [_ProviderPlan(providers[row["name"]], locations[row["name"]]) for row in rows]

    def generated() -> Iterator[Machine]:
        for index in range(machines):
            plan = plans[index % len(plans)]
            yield _at_cluster_site(_random_machine(rng, plan, f"s{seed}-{index:07d}", gpu_types, now))

    with transaction.atomic():
        count = _upsert_machines(generated())
        _replace_fleet_speeds(Machine.objects.filter(provider__in=list(providers.values())))
        return count

