"""Refreshes run by a real Celery worker on Redis against feeds served over HTTP on loopback."""
import os
import subprocess
import sys
import time
from datetime import timedelta
from decimal import Decimal

import pytest
from celery.result import AsyncResult
from django.conf import settings as django_settings
from django.utils import timezone

from catalog.models import Machine
from nodelodge.celery import app
from nodelodge.refresh import services, tasks
from nodelodge.refresh.models import SyncRun
from tests.factories import H100_MIB, RTX_4090_MIB, make_machine
from tests.feeds import HOLD_LIMIT_SECONDS, feed, record
from tests.helpers import TEST_BROKER_URL

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker")]
TASK_TIMEOUT = 60


def run_on_worker(provider) -> SyncRun:
    outcome = tasks.refresh_provider.delay(provider.pk).get(timeout=TASK_TIMEOUT)
    return SyncRun.objects.get(pk=outcome["sync_run_id"])


def snapshot(provider) -> dict[str, tuple]:
    rows = Machine.objects.filter(provider=provider).values_list(
        "provider_machine_id", "free_gpus", "is_available", "price_per_gpu_hour", "memory_per_gpu_mib",
        "memory_flag", "last_seen_at", "gone_at", "updated_at",
    )
    return {row[0]: row[1:] for row in rows}


def test_a_good_feed_updates_the_catalog(feed_server, gpu_types, providers):
    secure = providers["secure"]
    before = timezone.now()
    make_machine(secure, gpu_types["h100"], provider_machine_id="kept", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("3.00"))
    make_machine(secure, gpu_types["h100"], provider_machine_id="same", gpu_count=8, free_gpus=2, price_per_gpu_hour=Decimal("2.49"), memory_per_gpu_mib=H100_MIB, booking_limit_hours=72)
    make_machine(secure, gpu_types["h100"], provider_machine_id="retired", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("3.00"))
    secure.feed_url = feed_server.serve_json("secure", feed(secure.slug, [
        record("kept", free_gpus=1, price_per_gpu_hour="2.19", available=False),
        record("same", free_gpus=2),
        record("new", gpu_type="RTX 4090", gpu_count=2, free_gpus=2, memory_mib=None, country=None),
    ]))
    secure.save()

    run = run_on_worker(secure)

    assert (run.status, run.received, run.added, run.updated, run.unchanged, run.gone, run.rejected) == (
        "ok", 3, 1, 1, 1, 1, 0
    )
    assert run.finished_at >= run.started_at >= before
    kept = Machine.objects.get(provider=secure, provider_machine_id="kept")
    assert (kept.free_gpus, kept.price_per_gpu_hour, kept.is_available) == (1, Decimal("2.19"), False)
    assert kept.last_seen_at >= before and kept.gone_at is None
    new = Machine.objects.get(provider=secure, provider_machine_id="new")
    # Secure without a figure in the feed: the datasheet's; the tier is copied from the provider.
    assert (new.memory_per_gpu_mib, new.memory_source, new.tier, new.country) == (
        RTX_4090_MIB, "datasheet", "secure", ""
    )
    assert Machine.objects.get(provider_machine_id="same").memory_source == "datacenter"
    retired = Machine.objects.get(provider_machine_id="retired")
    assert retired.gone_at is not None and retired.is_available is False


def test_a_machine_that_comes_back_is_live_again(feed_server, gpu_types, providers):
    community = providers["community"]
    make_machine(community, gpu_types["h100"], provider_machine_id="back", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("3.00"), gone_at=timezone.now(), is_available=False)
    community.feed_url = feed_server.serve_json("c", feed(community.slug, [record("back")]))
    community.save()

    run = run_on_worker(community)

    back = Machine.objects.get(provider_machine_id="back")
    assert (run.status, run.updated, back.gone_at, back.is_available) == ("ok", 1, None, True)


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (("status", 500, b"internal error"), "Feed rejected: the feed answered HTTP 500"),
        (("status", 404, b"not here"), "Feed rejected: the feed answered HTTP 404"),
        (("status", 200, b'{"provider": "acme-secure", "machines": [{"id": '), "the feed is not valid JSON"),
        (("status", 200, b'["a", "list"]'), "the feed must be a JSON object"),
        (("status", 200, b'{"provider": "acme-secure", "machines": 7}'), 'the feed has no "machines" list'),
        (("timeout", None, None), "the feed did not answer within 0.5 seconds"),
    ],
    ids=["http-500", "http-404", "broken-json", "wrong-shape", "no-machines", "timeout"],
)
def test_a_failed_feed_changes_nothing_and_the_other_providers_go_on(
    feed_server, gpu_types, providers, settings, answer, error
):
    settings.PROVIDER_FEED_TIMEOUT_SECONDS = 0.5
    secure, community = providers["secure"], providers["community"]
    make_machine(secure, gpu_types["h100"], provider_machine_id="s-1", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("3.00"))
    make_machine(secure, gpu_types["h100"], provider_machine_id="s-2", gpu_count=8, price_per_gpu_hour=Decimal("3.00"), free_gpus=4)
    kind, status, body = answer
    if kind == "timeout":
        secure.feed_url = feed_server.serve_held("secure", feed(secure.slug, []))
    else:
        secure.feed_url = feed_server.serve_bytes("secure", body, status=status)
    secure.save()
    community.feed_url = feed_server.serve_json("community", feed(community.slug, [record("c-1")]))
    community.save()
    secure_before = snapshot(secure)

    queued = tasks.refresh_all_providers.delay().get(timeout=TASK_TIMEOUT)
    outcomes = {q["provider_id"]: AsyncResult(q["task_id"]).get(timeout=TASK_TIMEOUT) for q in queued}

    assert outcomes[secure.pk]["status"] == "failed"
    assert error in outcomes[secure.pk]["error"]
    failed = SyncRun.objects.get(pk=outcomes[secure.pk]["sync_run_id"])
    assert (failed.added, failed.updated, failed.gone, failed.finished_at is not None) == (0, 0, 0, True)
    assert snapshot(secure) == secure_before  # no good machine dropped, nothing touched
    assert outcomes[community.pk]["status"] == "ok"
    assert Machine.objects.filter(provider=community, provider_machine_id="c-1", gone_at=None).exists()


def test_bad_records_are_rejected_with_reasons_and_lose_nothing(feed_server, gpu_types, providers):
    community = providers["community"]
    make_machine(community, gpu_types["h100"], provider_machine_id="was-fine", gpu_count=8, price_per_gpu_hour=Decimal("3.00"), free_gpus=5)
    make_machine(community, gpu_types["h100"], provider_machine_id="still-fine", gpu_count=8, price_per_gpu_hour=Decimal("3.00"), free_gpus=5)
    community.feed_url = feed_server.serve_json("c", feed(community.slug, [
        record("was-fine", memory_mib=-5, free_gpus=0),
        record("absurd", memory_mib=9_999_999),
        record("mystery", gpu_type="Quantum Tensor 1"),
        record("overbooked", gpu_count=2, free_gpus=3),
        record("nowhere", country="ZZ"),
        record("still-fine", free_gpus=4),
        record("fresh"),
    ]))
    community.save()
    was_fine_before = snapshot(community)["was-fine"]

    run = run_on_worker(community)

    counts = (run.status, run.received, run.rejected, run.added, run.updated, run.gone)
    assert counts == ("partial", 7, 5, 1, 1, 0)
    reasons = {detail["id"]: detail["reason"] for detail in run.rejected_details}
    assert reasons == {
        "was-fine": "memory_mib must be positive, got -5",
        "absurd": "memory_mib 9,999,999 is absurd (above 1,048,576 MiB per GPU)",
        "mystery": "unknown GPU type 'Quantum Tensor 1'",
        "overbooked": "free_gpus (3) exceeds gpu_count (2)",
        "nowhere": "country 'ZZ' is not an ISO 3166 alpha-2 code",
    }
    # The machine whose record was bad keeps its last good state and is not marked gone.
    assert snapshot(community)["was-fine"] == was_fine_before
    assert Machine.objects.get(provider_machine_id="still-fine").free_gpus == 4
    assert not Machine.objects.filter(provider_machine_id__in=["absurd", "mystery", "overbooked", "nowhere"])


def test_a_record_without_an_id_keeps_every_missing_machine(feed_server, gpu_types, providers):
    community = providers["community"]
    make_machine(community, gpu_types["h100"], provider_machine_id="unlisted", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("3.00"))
    community.feed_url = feed_server.serve_json("c", feed(community.slug, [record(None), record("listed")]))
    community.save()

    run = run_on_worker(community)

    assert (run.status, run.rejected, run.gone) == ("partial", 1, 0)
    assert "no machine was marked gone" in run.error
    assert Machine.objects.get(provider_machine_id="unlisted").gone_at is None


def test_host_memory_far_from_the_datasheet_is_kept_but_flagged(feed_server, gpu_types, providers):
    community = providers["community"]
    community.feed_url = feed_server.serve_json("c", feed(community.slug, [
        record("odd", gpu_type="RTX 4090", gpu_count=1, free_gpus=1, memory_mib=20_000),
        record("close", gpu_type="RTX 4090", gpu_count=1, free_gpus=1, memory_mib=24_000),
        record("silent", gpu_type="RTX 4090", gpu_count=1, free_gpus=1, memory_mib=None),
    ]))
    community.save()

    run = run_on_worker(community)

    assert run.status == "ok"
    odd = Machine.objects.get(provider_machine_id="odd")
    assert (odd.memory_per_gpu_mib, odd.memory_source) == (20_000, "host")
    assert "20,000 MiB" in odd.memory_flag and "24,564 MiB" in odd.memory_flag
    close = Machine.objects.get(provider_machine_id="close")  # 2.3 % off: within tolerance
    assert (close.memory_per_gpu_mib, close.memory_source, close.memory_flag) == (24_000, "host", "")
    silent = Machine.objects.get(provider_machine_id="silent")  # Community, nothing reported: unknown
    assert (silent.memory_per_gpu_mib, silent.memory_source) == (None, "unknown")


def test_two_overlapping_refreshes_of_one_provider_do_not_both_run(feed_server, gpu_types, providers):
    secure = providers["secure"]
    secure.feed_url = feed_server.serve_held("secure", feed(secure.slug, [record("s-1")]))
    secure.save()

    first = tasks.refresh_provider.delay(secure.pk)
    assert feed_server.request_arrived.wait(TASK_TIMEOUT), "the worker never fetched the feed"
    # The worker's refresh holds the lock while it waits for the feed: this one must not run.
    second = services.refresh_provider(secure.pk)
    feed_server.release.set()
    first_outcome = first.get(timeout=TASK_TIMEOUT)

    assert second.status == "skipped"
    assert second.error == "Another refresh of this provider was running."
    assert first_outcome["status"] == "ok" and first_outcome["added"] == 1
    statuses = SyncRun.objects.filter(provider=secure).values_list("status", flat=True)
    assert sorted(statuses) == ["ok", "skipped"]
    # Once the first is done, the lock is free again.
    assert services.refresh_provider(secure.pk).status == "ok"


def test_a_silent_machine_drops_out_of_the_wizard_answer(feed_server, gpu_types, providers, settings):
    from nodelodge.recommendations.answer import recommendation_for
    from nodelodge.recommendations.query import WorkloadQuery, WorkloadQueryForm

    settings.MACHINE_STALE_AFTER_SECONDS = 15 * 60
    secure, community = providers["secure"], providers["community"]
    long_ago = timezone.now() - timedelta(hours=2)
    make_machine(secure, gpu_types["h100"], provider_machine_id="talking", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("3.00"), last_seen_at=long_ago)
    make_machine(community, gpu_types["h100"], provider_machine_id="silent", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("3.00"), last_seen_at=long_ago)
    secure.feed_url = feed_server.serve_json("secure", feed(secure.slug, [record("talking")]))
    secure.save()
    community.feed_url = feed_server.serve_bytes("community", b"down for maintenance", status=503)
    community.save()

    queued = tasks.refresh_all_providers.delay().get(timeout=TASK_TIMEOUT)
    statuses = {
        q["provider_id"]: AsyncResult(q["task_id"]).get(timeout=TASK_TIMEOUT)["status"] for q in queued
    }
    assert statuses == {secure.pk: "ok", community.pk: "failed"}

    form = WorkloadQueryForm({"workload": "notebook", "memory_gib": "20", "tier": "both"})
    assert form.is_valid(), form.errors
    result = recommendation_for(WorkloadQuery.from_form(form))

    offered = {m.offer.provider_machine_id for m in result.recommendation.machines}
    assert offered == {"talking"}
    assert result.recommendation.excluded.get("not heard from recently") == 1
    # The silent machine is still in the catalog (a failed fetch drops nothing), only no longer offered.
    assert Machine.objects.get(provider_machine_id="silent").gone_at is None
    assert result.freshness["newest"] == Machine.objects.get(provider_machine_id="talking").last_seen_at
    assert result.stale_after_minutes == 15


def test_a_requested_refresh_is_queued_for_the_worker_and_lands_in_the_history(feed_server, gpu_types, providers):
    community = providers["community"]
    community.feed_url = feed_server.serve_json("c", feed(community.slug, [record("c-1")]))
    community.save()

    outcome = tasks.request_refresh([community.pk])

    assert (outcome.requested, outcome.queued, outcome.runs, outcome.broker_error) == (1, 1, [], "")
    result = AsyncResult(outcome.task_ids[0]).get(timeout=TASK_TIMEOUT)
    run = SyncRun.objects.get(pk=result["sync_run_id"])
    assert (run.provider_id, run.status, run.added) == (community.pk, "ok", 1)


def test_a_refresh_past_the_task_time_limit_is_cut_off_and_records_why(feed_server, gpu_types, providers):
    """A real prefork worker (the pool that enforces time limits) in its own process, with a soft
    limit of 2 s and a feed deadline of 60 s: a feed that holds its answer is cut off by the limit."""
    secure = providers["secure"]
    make_machine(secure, gpu_types["h100"], provider_machine_id="s-1", gpu_count=8, price_per_gpu_hour=Decimal("3.00"), free_gpus=4)
    secure.feed_url = feed_server.serve_held("secure", feed(secure.slug, [record("s-1", free_gpus=1)]))
    secure.save()
    database = django_settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3"):
        database_url = f"sqlite:///{database['NAME']}"
    else:
        password = f":{database['PASSWORD']}" if database.get("PASSWORD") else ""
        database_url = (f"postgres://{database['USER']}{password}@{database['HOST'] or '127.0.0.1'}:"
                        f"{database['PORT'] or 5432}/{database['NAME']}")
    queue = f"time-limit-{os.getpid()}"
    environment = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": TEST_BROKER_URL,
                   "TASK_SOFT_TIME_LIMIT_SECONDS": "2", "TASK_TIME_LIMIT_SECONDS": "10",
                   "PROVIDER_FEED_TIMEOUT_SECONDS": "60", "DJANGO_SETTINGS_MODULE": "nodelodge.settings"}
    worker = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "celery", "-A", "nodelodge", "worker", "--pool=prefork", "--concurrency=1",
         "-Q", queue, "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=WARNING"],
        env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        started = time.monotonic()
        # A task's limits travel in its message, from the settings of the process that sends it.
        outcome = tasks.refresh_provider.apply_async(
            (secure.pk,), queue=queue, soft_time_limit=2, time_limit=10
        ).get(timeout=TASK_TIMEOUT)
        assert feed_server.request_arrived.is_set()
        assert outcome["status"] == "failed"
        assert outcome["error"] == (
            "The refresh ran past its time limit of 2 seconds (TASK_SOFT_TIME_LIMIT_SECONDS) and changed nothing."
        )
        run = SyncRun.objects.get(pk=outcome["sync_run_id"])
        assert run.duration_seconds < HOLD_LIMIT_SECONDS  # cut off, not answered at last
        assert Machine.objects.get(provider=secure).free_gpus == 4
        assert time.monotonic() - started < TASK_TIMEOUT
        assert (app.conf.task_soft_time_limit, app.conf.task_time_limit) == (120, 150)  # the defaults
    finally:
        worker.terminate()
        worker.wait(timeout=30)
