"""A large feed is applied in bulk: the number of queries does not grow per machine."""
import math
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog.models import Machine, Provider
from nodelodge.refresh import services
from tests.factories import make_machine
from tests.feeds import feed, record

SMALL, LARGE = 1_000, 10_000


def fleet(slug: str, size: int, free_gpus: int) -> dict:
    countries = ["DE", "US", "FI", None]
    return feed(slug, [
        record(f"{slug}-{index:05d}", free_gpus=(index + free_gpus) % 9, country=countries[index % 4],
               gpu_type="RTX 4090" if index % 3 else "H100 SXM 80GB", memory_mib=None)
        for index in range(size)
    ])


def refresh_counting_queries(provider) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as queries:
        run = services.refresh_provider(provider.pk)
    return len(queries), run


@pytest.mark.django_db
def test_query_count_does_not_grow_per_machine(feed_server, gpu_types):
    small = Provider.objects.create(name="Small", slug="small", tier="secure")
    large = Provider.objects.create(name="Large", slug="large", tier="community")
    counts = {}
    for provider, size in ((small, SMALL), (large, LARGE)):
        for attempt, free in (("insert", 0), ("update", 1)):
            document = fleet(provider.slug, size, free)
            provider.feed_url = feed_server.serve_json(f"{provider.slug}-{attempt}", document)
            provider.save()
            counts[provider.slug, attempt], run = refresh_counting_queries(provider)
            assert run.status == "ok", run.error
            assert run.received == size
            assert (run.added, run.updated) == ((size, 0) if attempt == "insert" else (0, size))
    assert Machine.objects.filter(provider=large, gone_at=None).count() == LARGE

    # Ten times the machines adds at most one statement per upsert batch, nothing per machine. A
    # batch is UPSERT_BATCH_SIZE rows, or fewer where the database caps a statement's parameters
    # (SQLite).
    fields = [field for field in Machine._meta.concrete_fields if not field.primary_key]
    batch = min(services.UPSERT_BATCH_SIZE, connection.ops.bulk_batch_size(fields, range(services.UPSERT_BATCH_SIZE)))

    def statements(machines: int) -> int:
        """The upsert's statements: each chunk of UPSERT_BATCH_SIZE split again into batches."""
        return sum(math.ceil(min(services.UPSERT_BATCH_SIZE, machines - start) / batch)
                   for start in range(0, machines, services.UPSERT_BATCH_SIZE))

    extra_batches = statements(LARGE) - statements(SMALL)
    for attempt in ("insert", "update"):
        assert counts["large", attempt] - counts["small", attempt] <= extra_batches
        assert counts["large", attempt] < 25 + math.ceil(LARGE / batch)


# A trigger that refuses the row named "boom", in each database's own words.
REFUSE_BOOM = {
    "postgresql": ["""
        CREATE FUNCTION refuse_boom() RETURNS trigger AS $$
        BEGIN
            IF NEW.provider_machine_id = 'boom' THEN RAISE EXCEPTION 'disk on fire'; END IF;
            RETURN NEW;
        END $$ LANGUAGE plpgsql;
        CREATE TRIGGER refuse_boom BEFORE INSERT OR UPDATE ON catalog_machine
            FOR EACH ROW EXECUTE FUNCTION refuse_boom();
    """],
    "sqlite": [
        f"""CREATE TRIGGER refuse_boom_{event.lower()} BEFORE {event} ON catalog_machine
            FOR EACH ROW WHEN NEW.provider_machine_id = 'boom'
            BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"""
        for event in ("INSERT", "UPDATE")
    ],
}


@pytest.mark.django_db
def test_a_refresh_that_crashes_midway_changes_nothing(feed_server, gpu_types, providers, monkeypatch):
    community = providers["community"]
    make_machine(community, gpu_types["h100"], provider_machine_id="a", gpu_count=8, price_per_gpu_hour=Decimal("3.00"), free_gpus=8)
    make_machine(community, gpu_types["h100"], provider_machine_id="b", gpu_count=8, price_per_gpu_hour=Decimal("3.00"), free_gpus=8)
    make_machine(community, gpu_types["h100"], provider_machine_id="missing", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("3.00"))
    # A database that refuses one row, after the first batch of the upsert has gone through.
    with connection.cursor() as cursor:
        for statement in REFUSE_BOOM[connection.vendor]:
            cursor.execute(statement)
    monkeypatch.setattr(services, "UPSERT_BATCH_SIZE", 2)
    community.feed_url = feed_server.serve_json("c", feed(community.slug, [
        record("a", free_gpus=1), record("b", free_gpus=1), record("boom"),
    ]))
    community.save()
    before = list(Machine.objects.order_by("pk").values_list("provider_machine_id", "free_gpus", "gone_at"))

    run = services.refresh_provider(community.pk)

    assert run.status == "failed"
    assert "The refresh crashed and changed nothing" in run.error and "disk on fire" in run.error
    assert (run.added, run.updated, run.gone) == (0, 0, 0)
    after = list(Machine.objects.order_by("pk").values_list("provider_machine_id", "free_gpus", "gone_at"))
    assert after == before
