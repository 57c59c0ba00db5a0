"""Refreshing a provider from its feed (fetched by `fetching`): validate, upsert in bulk, mark the
missing gone.

One refresh of one provider at a time (a lock); the catalog changes in one transaction per feed, so a
refresh that fails or crashes midway leaves the provider's machines exactly as they were.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from datetime import datetime

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from catalog import database
from catalog.fleets import MACHINE_UPSERT_FIELDS, memory_flag_for
from catalog.models import GpuAlias, GpuType, LanguageModel, Machine, MeasuredSpeed, Provider, Tier
from catalog.services import drop_speeds_of_other_gpu_types
from nodelodge.launches.holding import cap_free_gpus_by_bookings, gpus_held
from sizing.markets import interruptible_price
from sizing.offers import MEASUREMENT_FIELDS

from .conflicts import SHAPE_FIELDS, Shape, keep_booked_shapes
from .feeds import adapter_for
from .feeds.base import FeedError, GpuTypeIndex, GpuTypeRef, MachineRecord, ParsedFeed, stock_level
from .fetching import fetch_feed, seconds
from .history import sample_price_history
from .models import SyncRun

logger = logging.getLogger(__name__)

# Rows per upsert statement: the number of statements grows with the feed in steps of this size,
# never per machine.
UPSERT_BATCH_SIZE = 2_000
# PostgreSQL advisory lock keys are one bigint: this namespace in the high half, the provider id below.
ADVISORY_LOCK_NAMESPACE = 0x4E4C52  # "NLR"


# --- Locking --------------------------------------------------------------------------------------


@contextmanager
def provider_lock(provider_id: int) -> Iterator[bool]:
    """Yields whether this process now holds the provider's refresh lock (never waits): the
    database's session lock where it has one, else a cache entry that expires (`database.try_lock`)."""
    with database.try_lock(
        (ADVISORY_LOCK_NAMESPACE << 32) | provider_id,
        f"refresh:provider-lock:{provider_id}",
        int(settings.PROVIDER_FEED_TIMEOUT_SECONDS * 3 + 600),
    ) as acquired:
        yield acquired


# --- Applying a feed ------------------------------------------------------------------------------


def gpu_type_index() -> GpuTypeIndex:
    """The catalog's GPU types by name, slug and staff's aliases, as feeds name them."""
    rows = list(GpuType.objects.values_list("id", "name", "slug", "memory_mib"))
    aliases: dict[str, list[int]] = {}
    for key, gpu_type_id in GpuAlias.objects.order_by("key", "gpu_type_id").values_list("key", "gpu_type_id"):
        aliases.setdefault(key, []).append(gpu_type_id)
    return GpuTypeIndex(
        [GpuTypeRef(id=pk, name=name, datasheet_memory_mib=memory) for pk, name, _, memory in rows],
        {slug: pk for pk, _, slug, _ in rows},
        aliases,
    )


def language_model_slugs() -> frozenset[str]:
    """The models a feed's measured speeds may name."""
    return frozenset(LanguageModel.objects.filter(is_active=True).values_list("slug", flat=True))


def _apply_speeds(provider: Provider, parsed: ParsedFeed, held_back: Collection[str] = frozenset()) -> None:
    """Measured speeds from the feed: a measurement holds for the GPU type it ran on, so a machine
    that changed GPU type loses its speeds; a machine whose record has the `measured_speeds` section
    gets exactly those as its feed-reported speeds (staff-entered ones stay); a record without the
    section keeps what the machine has, and so does one whose GPU type was held back (`held_back`:
    its speeds were measured on a GPU type the machine does not have in the catalog)."""
    machines = Machine.objects.filter(provider=provider)
    drop_speeds_of_other_gpu_types(machines)
    reported = {
        r.provider_machine_id: r for r in parsed.records
        if r.measured_speeds is not None and r.provider_machine_id not in held_back
    }
    if not reported:
        return
    ids = dict(
        machines.filter(provider_machine_id__in=list(reported)).values_list("provider_machine_id", "pk")
    )
    MeasuredSpeed.objects.filter(machine_id__in=list(ids.values()), source=MeasuredSpeed.Source.FEED).delete()
    rows = [
        MeasuredSpeed(
            machine_id=ids[key], gpu_type_id=record.gpu_type.id, model_kind=MeasuredSpeed.ModelKind.LANGUAGE,
            model_slug=speed.model_slug, precision=speed.precision, unit=MeasuredSpeed.Unit.TOKENS_PER_SECOND,
            value=speed.tokens_per_second, gpus=speed.gpus, source=MeasuredSpeed.Source.FEED,
            **{field: getattr(speed, field) for field in MEASUREMENT_FIELDS}
            | {"measured_by": speed.measured_by or provider.name},
        )
        for key, record in reported.items()
        for speed in record.measured_speeds or ()  # reported: each has the section
    ]
    MeasuredSpeed.objects.bulk_create(rows, batch_size=UPSERT_BATCH_SIZE)


def memory_fields(tier: str, record: MachineRecord) -> tuple[int | None, str, str]:
    """(memory per GPU, where it comes from, flag) as SPEC §4 reads them for the machine's tier."""
    datasheet = record.gpu_type.datasheet_memory_mib
    source = Machine.MemorySource
    if tier == Tier.SECURE:
        if record.memory_mib is not None:
            return record.memory_mib, source.DATACENTER, ""
        return datasheet, source.DATASHEET, ""
    if record.memory_mib is None:
        return None, source.UNKNOWN, ""
    return record.memory_mib, source.HOST, memory_flag_for(record.memory_mib, datasheet, record.gpu_type.name)


# The columns of a machine's markets, reliability and stock a feed sets (`market_columns`).
MARKET_COLUMNS = (
    "interruptible_price_per_gpu_hour", "interruption_notice_seconds", "interruption_frequency",
    "reserved_price_per_gpu_hour", "reserved_term_days", "reliability", "reliability_measures", "stock",
)


def market_columns(record: MachineRecord) -> dict:
    """The machine's market, reliability and stock columns from its record: a listing that is
    interruptible is offered there at its listed price (`sizing.markets.interruptible_price`), and
    the feed's stock word becomes the console's level."""
    return {
        "interruptible_price_per_gpu_hour": interruptible_price(
            record.price_per_gpu_hour, record.interruptible, record.interruptible_price_per_gpu_hour
        ),
        "interruption_notice_seconds": record.interruption_notice_seconds,
        "interruption_frequency": record.interruption_frequency,
        "reserved_price_per_gpu_hour": record.reserved_price_per_gpu_hour,
        "reserved_term_days": record.reserved_term_days,
        "reliability": record.reliability,
        "reliability_measures": record.reliability_measures,
        "stock": stock_level(record.stock),
    }


# The columns a feed sets, in the order compared to tell "updated" from "unchanged".
_COMPARED = (
    "gpu_type_id", "gpu_count", "free_gpus", "memory_per_gpu_mib", "memory_source", "memory_flag",
    "country", "region", "price_per_gpu_hour", "interruptible", "booking_limit_hours", "is_available",
    "site", "interconnect", "interconnect_gbps", *MARKET_COLUMNS,
)
# Where the booked shape's columns are among them.
_SHAPE_AT = tuple(_COMPARED.index(name) for name in SHAPE_FIELDS)


def bookable(record: MachineRecord, held: dict[str, int]) -> int:
    """The free GPUs the record reports, less any its machine's running bookings hold beyond them."""
    return min(record.free_gpus, max(0, record.gpu_count - held.get(record.provider_machine_id, 0)))


def apply_feed(provider: Provider, parsed: ParsedFeed, run: SyncRun, now: datetime) -> None:
    """Upserts the feed's machines, marks the missing ones gone and finishes the run, all in one
    transaction. Machines whose records were rejected are left exactly as they were.

    A feed's free GPUs never undo a console booking: each machine offers at most its GPUs less those
    its running bookings hold (`nodelodge.launches.holding.cap_free_gpus_by_bookings`). Nor does a
    feed change a booked machine's shape under its running bookings: a record that contradicts them
    is applied but for that part, which is held back and flagged (`conflicts.keep_booked_shapes`)."""
    existing_rows = list(
        Machine.objects.filter(provider=provider).values_list(
            "pk", "provider_machine_id", *_COMPARED, "gone_at"
        )
    )
    existing = {row[1]: row[2:] for row in existing_rows}
    # Read here for the counts; the statement after the upsert is what guarantees the cap.
    held_by_id = gpus_held(Machine.objects.filter(provider=provider))
    keys = {row[0]: row[1] for row in existing_rows} if held_by_id else {}
    held = {keys[pk]: gpus for pk, gpus in held_by_id.items() if pk in keys}
    machines: dict[str, Machine] = {}
    for record in parsed.records:
        memory, memory_source, memory_flag = memory_fields(provider.tier, record)
        machines[record.provider_machine_id] = Machine(
            provider=provider,
            provider_machine_id=record.provider_machine_id,
            tier=provider.tier,
            provider_is_active=provider.is_active,
            gpu_type_id=record.gpu_type.id,
            gpu_count=record.gpu_count,
            free_gpus=bookable(record, held),
            memory_per_gpu_mib=memory,
            memory_source=memory_source,
            memory_flag=memory_flag,
            country=record.country,
            region=record.region,
            price_per_gpu_hour=record.price_per_gpu_hour,
            interruptible=record.interruptible,
            booking_limit_hours=record.booking_limit_hours,
            is_available=record.available,
            site=record.site,
            interconnect=record.interconnect,
            interconnect_gbps=record.interconnect_gbps,
            **market_columns(record),
            last_seen_at=now,
            gone_at=None,
        )
        _count(run, machines[record.provider_machine_id], existing)

    rejected_ids = sorted({r.machine_id for r in parsed.rejected if r.machine_id is not None})
    # A record without a usable id may be any of the provider's machines: then nobody is marked gone.
    sweep = all(r.machine_id is not None for r in parsed.rejected)

    # Rows are written (and so locked) in the order of their ids, new machines last: the order in which
    # Launch locks a cluster's or plan's machines, so a refresh and a group booking never wait on
    # each other in a cycle.
    row_ids = {row[1]: row[0] for row in existing_rows}
    ordered = sorted(machines.values(), key=lambda machine: (machine.provider_machine_id not in row_ids,
                                                             row_ids.get(machine.provider_machine_id, 0),
                                                             machine.provider_machine_id))
    with transaction.atomic():
        for start in range(0, len(ordered), UPSERT_BATCH_SIZE):
            Machine.objects.bulk_create(
                ordered[start : start + UPSERT_BATCH_SIZE],
                update_conflicts=True,
                unique_fields=["provider", "provider_machine_id"],
                update_fields=MACHINE_UPSERT_FIELDS,
            )
        # Bookings that committed after the read above are counted here: the upsert holds the rows.
        cap_free_gpus_by_bookings(Machine.objects.filter(provider=provider, last_seen_at=now), now)
        if sweep:
            # Everything in this feed now carries last_seen_at == now; any other live machine is missing.
            live = Machine.objects.filter(provider=provider, gone_at__isnull=True)
            missing = live.exclude(last_seen_at=now)
            if rejected_ids:
                missing = missing.exclude(provider_machine_id__in=rejected_ids)
            run.gone = missing.update(gone_at=now, is_available=False, updated_at=now)
        conflicts = keep_booked_shapes(
            provider, reported=machines, booked=lambda key: _shape_before(existing, key),
            untouched=rejected_ids, now=now,
        )
        for conflict in conflicts:
            if conflict.reported is not None:  # counted by what the refresh left: the booked shape, no GPU
                machine = machines[conflict.machine_id]
                _count(run, machine, existing, -1)
                for name in SHAPE_FIELDS:
                    setattr(machine, name, getattr(conflict.booked, name))
                machine.free_gpus = 0
                _count(run, machine, existing)
        _apply_speeds(provider, parsed, held_back={c.machine_id for c in conflicts if c.gpu_type_held_back})
        # The fleet as this refresh leaves it goes into the hour's history (with the feed or not at all),
        # unless another refresh sampled it lately: a sample reads every machine.
        sample_price_history(now)
        run.held_back = len(conflicts)
        run.held_back_details = [
            {"machine_id": conflict.machine_id, "reason": conflict.reason}
            for conflict in conflicts[: SyncRun.REJECTED_DETAILS_LIMIT]
        ]
        partial = parsed.rejected or parsed.rejected_speeds or conflicts
        _finish(run, SyncRun.Status.PARTIAL if partial else SyncRun.Status.OK)


def _shape_before(existing: dict[str, tuple], key: str) -> Shape | None:
    before = existing.get(key)
    return None if before is None else Shape(*(before[at] for at in _SHAPE_AT))


def _count(run: SyncRun, machine: Machine, existing: dict[str, tuple], step: int = 1) -> None:
    """Counts `machine` as added, updated or unchanged against what the refresh found (`step` -1:
    takes it back)."""
    before = existing.get(machine.provider_machine_id)
    if before is None:
        run.added += step
    elif before != (*(getattr(machine, name) for name in _COMPARED), None):
        run.updated += step
    else:
        run.unchanged += step


def refuse_an_unexplained_empty_feed(provider: Provider) -> None:
    """An empty machine list from a provider with live machines is more likely a broken export than
    every machine withdrawn at once: FeedError, so nothing is marked gone. Its machines keep their
    last state and leave the recommendations once stale, as after any failed refresh."""
    live = Machine.objects.filter(provider=provider, gone_at__isnull=True).count()
    if live:
        raise FeedError(
            f"the feed lists no machines while {live} of the provider's machines are live; nothing was "
            'marked gone (a provider whose machines are all withdrawn says so with "empty": true)'
        )


def _record_rejections(run: SyncRun, parsed: ParsedFeed) -> None:
    run.received = parsed.received
    # Refused measured speeds count too; their machines were applied (the reason says which speed).
    refused = parsed.rejected + parsed.rejected_speeds
    run.rejected = len(refused)
    run.rejected_details = [r.as_dict() for r in refused[: SyncRun.REJECTED_DETAILS_LIMIT]]
    if parsed.rejected and not all(r.machine_id is not None for r in parsed.rejected):
        run.error = "Some records had no usable id, so no machine was marked gone this time."


def _finish(run: SyncRun, status: str, error: str = "") -> SyncRun:
    run.status = status
    run.finished_at = timezone.now()
    if error:
        run.error = error
    run.save()
    return run


# --- The refresh ----------------------------------------------------------------------------------


def refresh_provider(provider_id: int) -> SyncRun:
    """Refreshes one provider from its feed and returns the run's record.

    Never raises for a bad feed: the run says "failed" with the reason and nothing changes.
    """
    provider = Provider.objects.get(pk=provider_id)

    def fetch() -> bytes:
        if not provider.feed_url:
            raise FeedError("the provider has no feed URL")
        return fetch_feed(provider.feed_url, settings.PROVIDER_FEED_TIMEOUT_SECONDS)

    return sync_provider(provider, fetch, feed_format=provider.feed_format, source=provider.feed_url)


def import_offers(provider: Provider, body: bytes, *, feed_format: str, source: str) -> SyncRun:
    """Applies a document in `feed_format` (a file staff import once) to the provider's machines as a
    refresh applies its feed: the same checks, the same run in the sync history (its feed URL `source`),
    and the provider's machines missing from it marked gone."""
    return sync_provider(provider, lambda: body, feed_format=feed_format, source=source)


def read_offers(body: bytes, *, feed_format: str, provider: Provider | None = None) -> ParsedFeed:
    """The records a document in `feed_format` gives, each checked, changing nothing: what a refresh
    or an import would apply and refuse. Without a provider, it is read as a Secure provider's."""
    return adapter_for(feed_format).parse(
        body,
        provider_slug=provider.slug if provider else "",
        tier=provider.tier if provider else Tier.SECURE,
        gpu_types=gpu_type_index(),
        models=language_model_slugs(),
    )


def sync_provider(provider: Provider, read: Callable[[], bytes], *, feed_format: str, source: str) -> SyncRun:
    """One run of the provider's sync: reads the document (`read`: the fetch, or a file's bytes), parses
    it as `feed_format` and applies it, under the provider's refresh lock. Records the run; never
    raises for a bad document (the run says "failed" with the reason and nothing changes)."""
    started_at = timezone.now()
    source = source[: SyncRun._meta.get_field("feed_url").max_length]
    with provider_lock(provider.pk) as acquired:
        if not acquired:
            return SyncRun.objects.create(
                provider=provider,
                feed_url=source,
                started_at=started_at,
                finished_at=started_at,
                status=SyncRun.Status.SKIPPED,
                error="Another refresh of this provider was running.",
            )
        # Holding the lock, any run still marked running was cut off (its process died).
        SyncRun.objects.filter(provider=provider, status=SyncRun.Status.RUNNING).update(
            status=SyncRun.Status.FAILED, finished_at=started_at, error="Interrupted before it finished."
        )
        run = SyncRun.objects.create(provider=provider, feed_url=source, started_at=started_at)
        try:
            adapter_for(feed_format)  # an unknown format fails before anything is fetched
            parsed = read_offers(read(), feed_format=feed_format, provider=provider)
            _record_rejections(run, parsed)
            if not parsed.received and not parsed.declared_empty:
                refuse_an_unexplained_empty_feed(provider)
            apply_feed(provider, parsed, run, now=timezone.now())
        except FeedError as error:
            _reset_counts(run)
            return _finish(run, SyncRun.Status.FAILED, error=f"Feed rejected: {error}.")
        except SoftTimeLimitExceeded:  # the task's time limit (settings): the transaction rolled back
            logger.warning("Refresh of provider %s ran past its time limit", provider.slug)
            _reset_counts(run)
            limit = seconds(settings.CELERY_TASK_SOFT_TIME_LIMIT)
            return _finish(
                run, SyncRun.Status.FAILED,
                error=f"The refresh ran past its time limit of {limit} (TASK_SOFT_TIME_LIMIT_SECONDS) "
                "and changed nothing.",
            )
        except Exception as error:  # a crash midway: the transaction rolled back, the catalog is as it was
            logger.exception("Refresh of provider %s crashed", provider.slug)
            _reset_counts(run)
            return _finish(
                run, SyncRun.Status.FAILED, error=f"The refresh crashed and changed nothing: {error!r}"
            )
        return run


def _reset_counts(run: SyncRun) -> None:
    # Nothing was applied: counts of a feed that was not applied would mislead.
    run.added = run.updated = run.unchanged = run.gone = run.held_back = 0
    run.held_back_details = []


def providers_to_refresh() -> list[int]:
    return list(
        Provider.objects.filter(is_active=True)
        .exclude(feed_url="")
        .order_by("pk")
        .values_list("pk", flat=True)
    )
