"""The kept tables PostgreSQL's triggers write (the fleet counts, the latest speeds) read back and
rebuilt from scratch, and the console's write paths that change them, one at a time at random."""
from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.db.models.functions import Least

from catalog.counting import fleet_counts, latest_speeds
from catalog.fleets import generate_fleet
from catalog.models import GpuType, Machine, Provider
from catalog.services import save_provider
from nodelodge.refresh.services import refresh_provider
from sizing.markets import MARKET_CHOICES
from tests.differential import memory_pool
from tests.factories import COUNTRIES, PRICES

WINDOW = timedelta(seconds=settings.MACHINE_STALE_AFTER_SECONDS)
MICROSECOND = timedelta(microseconds=1)


def kept_entries() -> Counter:
    """(shape, price) -> machines, as the kept counts hold them; also checks the rows' form."""
    entries: Counter = Counter()
    with connection.cursor() as cursor:
        fleet_counts.merge_pending(cursor)
        cursor.execute(f"SELECT shape, chunk, prices, cum FROM {fleet_counts.SHAPES}")  # noqa: S608
        for shape, _chunk, prices, cum in cursor.fetchall():
            assert 0 < len(prices) == len(cum) <= fleet_counts.CHUNK
            assert prices == sorted(set(prices)), "prices in order, each once"
            previous = 0
            for price, total in zip(prices, cum, strict=True):
                assert total > previous, "every price holds at least one machine"
                assert (shape, price) not in entries
                entries[shape, price] = total - previous
                previous = total
    return entries


def assert_kept_counts_are_the_fleets():
    """The kept counts equal counting every machine again from scratch."""
    kept = kept_entries()
    with transaction.atomic():
        fleet_counts.rebuild()
        rebuilt = kept_entries()
        transaction.set_rollback(True)
    assert kept == rebuilt
    # Each machine counted once under each market preference.
    assert sum(kept.values()) == len(MARKET_CHOICES) * Machine.objects.filter(gone_at__isnull=True).count()


def kept_rows() -> list[tuple]:
    columns = ", ".join(["machine_id", "speed_id", *latest_speeds.SPEED_COLUMNS, *latest_speeds.MACHINE_COLUMNS])
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {latest_speeds.TABLE} ORDER BY 1, 3, 4")  # noqa: S608
        return cursor.fetchall()


def assert_kept_rows_are_the_fleets():
    """The kept table equals working every row out again from scratch."""
    kept = kept_rows()
    with transaction.atomic():
        latest_speeds.rebuild()
        rebuilt = kept_rows()
        transaction.set_rollback(True)
    assert kept == rebuilt
    assert len({(row[0], row[2], row[3]) for row in kept}) == len(kept), "one row per machine, model, precision"


def cutoff_instants(now) -> list:
    """`now`, and every instant at which some machine reaches the stale cutoff, and just after."""
    instants = {now}
    for seen in Machine.objects.exclude(last_seen_at=None).values_list("last_seen_at", flat=True).distinct():
        instants |= {seen + WINDOW, seen + WINDOW + MICROSECOND}
    return sorted(instants)


def feed_of(provider: Provider, rng: random.Random, gpu_names: list[str], memories: list[int]) -> dict:
    """A feed for the provider: most of its machines, some changed, some new (the rest go missing)."""
    records = []
    for machine in Machine.objects.filter(provider=provider, gone_at=None):
        if rng.random() < 0.2:
            continue  # missing from this feed: marked gone
        count = machine.gpu_count
        records.append({
            "id": machine.provider_machine_id,
            "gpu_type": machine.gpu_type.name,
            "gpu_count": count,
            "free_gpus": rng.randint(0, count) if rng.random() < 0.4 else machine.free_gpus,
            "memory_mib": rng.choice(memories) if rng.random() < 0.2 else machine.memory_per_gpu_mib,
            "available": rng.random() < 0.9,
            "country": rng.choice([c for c in COUNTRIES if c]) if rng.random() < 0.2 else machine.country,
            "region": "somewhere",
            "price_per_gpu_hour": str(rng.choice(PRICES) if rng.random() < 0.3 else machine.price_per_gpu_hour),
            "interruptible": False,
            "booking_limit_hours": None,
        })
    for number in range(rng.randint(0, 5)):
        count = rng.choice([1, 2, 8])
        records.append({
            "id": f"new-{rng.random():.8f}-{number}", "gpu_type": rng.choice(gpu_names), "gpu_count": count,
            "free_gpus": rng.randint(0, count), "memory_mib": rng.choice(memories + [None]),
            "available": True, "country": rng.choice(COUNTRIES), "region": "",
            "price_per_gpu_hour": str(rng.choice(PRICES)), "interruptible": False, "booking_limit_hours": None,
        })
    return {"provider": provider.slug, "generated_at": "2026-11-30T12:00:00Z", "machines": records}


def some_machine(rng: random.Random, **filters) -> Machine | None:
    ids = list(Machine.objects.filter(gone_at=None, **filters).values_list("pk", flat=True))
    return Machine.objects.get(pk=rng.choice(ids)) if ids else None


def write_once(rng: random.Random, feed_server, now) -> str:
    """One write through one of the console's write paths, chosen at random; returns its name."""
    providers = list(Provider.objects.order_by("pk"))
    gpu_names = list(GpuType.objects.values_list("name", flat=True))
    memories = memory_pool()
    kind = rng.choice([
        "refresh", "launch", "stop", "admin edit", "provider switch", "delete", "stale update",
        "tier change", "generate", "gpu type edit",
    ])
    if kind == "refresh":
        provider = rng.choice(providers)
        provider.feed_url = feed_server.serve_json(provider.slug, feed_of(provider, rng, gpu_names, memories))
        provider.save()
        run = refresh_provider(provider.pk)
        assert run.status in ("ok", "partial"), (run.status, run.error)
    elif kind == "launch" and (machine := some_machine(rng, free_gpus__gte=1)):
        taken = rng.randint(1, machine.free_gpus)
        assert Machine.objects.filter(pk=machine.pk, free_gpus__gte=taken).update(
            free_gpus=F("free_gpus") - taken
        ) == 1
    elif kind == "stop" and (machine := some_machine(rng)):
        Machine.objects.filter(pk=machine.pk).update(free_gpus=Least(F("free_gpus") + 1, F("gpu_count")))
    elif kind == "admin edit" and (machine := some_machine(rng)):
        field = rng.choice(["country", "price", "memory", "available", "seen", "free"])
        if field == "country":
            machine.country = rng.choice(COUNTRIES)
        elif field == "price":
            machine.price_per_gpu_hour = rng.choice(PRICES) + Decimal("0.0001") * rng.randint(0, 3)
        elif field == "memory":
            machine.memory_per_gpu_mib = rng.choice(memories + [None])
        elif field == "available":
            machine.is_available = not machine.is_available
        elif field == "seen":
            machine.last_seen_at = rng.choice([None, now - WINDOW, now - WINDOW - MICROSECOND, now])
        else:
            machine.free_gpus = rng.randint(0, machine.gpu_count)
        machine.save()
    elif kind == "provider switch":
        provider = rng.choice(providers)
        provider.is_active = not provider.is_active
        save_provider(provider)
    elif kind == "delete" and (machine := some_machine(rng)):
        machine.delete()
    elif kind == "stale update":
        # Machines pushed to either side of the cutoff by a bulk update, as a sweep or import would.
        ids = list(Machine.objects.values_list("pk", flat=True))
        chosen = rng.sample(ids, min(len(ids), 5))
        Machine.objects.filter(pk__in=chosen).update(last_seen_at=now - WINDOW + rng.choice([-1, 0, 1]) * MICROSECOND)
    elif kind == "tier change":
        provider = rng.choice(providers)
        provider.tier = "community" if provider.tier == "secure" else "secure"
        save_provider(provider)
    elif kind == "generate":
        generate_fleet(rng.randint(1, 12), seed=rng.randint(1, 3), provider_prefix="Generated")
    elif kind == "gpu type edit":
        # Staff correct a GPU type, as the admin saves it: a name that moves its interconnect (an SXM
        # board's name given its PCIe card's, and back), or a compute capability that moves its kernel.
        gpu_type = GpuType.objects.get(name=rng.choice(gpu_names))
        if rng.random() < 0.5:
            suffix = " PCIe"
            gpu_type.name = gpu_type.name.removesuffix(suffix) if gpu_type.name.endswith(suffix) else gpu_type.name + suffix
        else:
            gpu_type.compute_capability = rng.choice(["", "8.9", "9.0", "10.0", "12.0"])
        gpu_type.save()
    return kind
