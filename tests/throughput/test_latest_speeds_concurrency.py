"""Speeds and machines written at once, on their own threads and connections to real PostgreSQL,
while a reader compares the kept latest speeds with the scan inside one snapshot each."""
from __future__ import annotations

import functools
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.utils import timezone

from catalog.counting import speeds as catalog_speeds
from catalog.models import GpuType, Machine, MeasuredSpeed, Provider
from catalog.services import drop_speeds_of_other_gpu_types, load_catalog
from tests.catalog import scan_oracle
from tests.helpers import race_together
from tests.kept_counts import assert_kept_rows_are_the_fleets, kept_rows

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgresql(reason="the kept latest speeds are written by PostgreSQL triggers (PL/pgSQL); on SQLite the plan reads every speed instead; the reader compares inside one snapshot"),
]

MACHINES = 24
SPEED_WRITERS = 2
WRITES_EACH = 12
MACHINE_WRITES = 30
READS = 10


def speed_query() -> catalog_speeds.SpeedQuery:
    return catalog_speeds.SpeedQuery(
        stale_cutoff=timezone.now() - timedelta(minutes=15), countries=None, tier="both",
        model_slug="llama-3-1-8b", precision=16, fits=((1, 20_000), (2, 10_000)), max_price_per_hour=None,
        budget=None, target=Decimal("30000"), efficiency=Decimal("75"), redundancy=1, keep=5,
    )


def test_speeds_and_machines_written_at_once_keep_the_latest_speeds_exact(db):
    load_catalog(fleet=False)
    provider = Provider.objects.create(name="Hosts Direct", slug="hosts-direct", tier="community")
    h100, a100 = GpuType.objects.get(name="H100 SXM 80GB"), GpuType.objects.get(name="A100 80GB")
    for index in range(MACHINES):
        Machine.objects.create(
            provider=provider, provider_machine_id=f"h-{index}", gpu_type=h100, gpu_count=4, free_gpus=4,
            memory_per_gpu_mib=h100.memory_mib, memory_source="host", country="DE",
            price_per_gpu_hour=Decimal("1.50") + Decimal(index % 5) / 10, last_seen_at=timezone.now(),
        )
    ids = list(Machine.objects.values_list("pk", flat=True))
    outcomes: Counter = Counter()

    def speed_writer(seed):
        rng = random.Random(seed)
        for _ in range(WRITES_EACH):
            with transaction.atomic():
                chosen = rng.sample(ids, 4)
                MeasuredSpeed.objects.bulk_create([
                    MeasuredSpeed(
                        machine_id=machine_id, gpu_type_id=Machine.objects.get(pk=machine_id).gpu_type_id,
                        model_kind="language", model_slug="llama-3-1-8b", precision=16, unit="tokens/s",
                        value=Decimal(rng.choice(["1700", "2400", "3400"])), gpus=1,
                        measured_at=datetime(2025, rng.randint(1, 12), 1, tzinfo=UTC), measured_by="bench",
                        source="feed",
                    )
                    for machine_id in chosen
                ])
                speeds = list(MeasuredSpeed.objects.filter(machine_id__in=chosen).values_list("pk", flat=True))
                MeasuredSpeed.objects.filter(pk__in=rng.sample(speeds, min(2, len(speeds)))).update(
                    measured_at=datetime(2025, rng.randint(1, 12), 2, tzinfo=UTC)
                )
                if rng.random() < 0.3:
                    MeasuredSpeed.objects.filter(pk=rng.choice(speeds)).delete()
            outcomes["speeds written"] += 1

    def machine_writer():
        rng = random.Random(3)
        for _ in range(MACHINE_WRITES):
            machine = Machine.objects.get(pk=rng.choice(ids))
            with transaction.atomic():  # one machine a transaction, as Launch, Stop and the admin write
                change = rng.choice(["free", "price", "seen", "gpu type"])
                if change == "free":
                    Machine.objects.filter(pk=machine.pk).update(free_gpus=rng.randint(0, 4))
                elif change == "price":
                    Machine.objects.filter(pk=machine.pk).update(price_per_gpu_hour=Decimal(rng.choice(["1.2", "2.5"])))
                elif change == "seen":
                    Machine.objects.filter(pk=machine.pk).update(last_seen_at=timezone.now())
                else:
                    gpu_type = a100 if machine.gpu_type_id == h100.pk else h100
                    Machine.objects.filter(pk=machine.pk).update(gpu_type=gpu_type)
                    drop_speeds_of_other_gpu_types(Machine.objects.filter(pk=machine.pk))
            outcomes["machines written"] += 1

    def reader():
        for _ in range(READS):
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                query = speed_query()
                kept = catalog_speeds.speed_rows_counted(query)
                scanned = scan_oracle.speed_rows_counted(query)
            assert kept == scanned
            outcomes["compared"] += 1

    # re-raises a thread's failure (a deadlock, a wrong row)
    race_together([machine_writer, reader] + [functools.partial(speed_writer, seed) for seed in range(SPEED_WRITERS)],
                  wait=60)
    assert outcomes == Counter({"speeds written": SPEED_WRITERS * WRITES_EACH, "machines written": MACHINE_WRITES,
                                "compared": READS})
    assert kept_rows()
    assert_kept_rows_are_the_fleets()
