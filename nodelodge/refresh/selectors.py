"""Reads for the refresh app: the demo feed's document."""

from __future__ import annotations

import zlib
from datetime import datetime
from decimal import Decimal

from django.db.models import Prefetch

from catalog.data.demo_fleet import KEPT_WHOLE_MACHINE_IDS
from catalog.models import Machine, MeasuredSpeed, Provider
from sizing.offers import MEASUREMENT_FIELDS

# One machine in this many is offline (or out of stock) in any given minute.
DEMO_OFFLINE_ONE_IN = 9
# The machine's fields the feed carries as they are stored (docs/feed-format.md, "Markets").
FEED_MARKET_FIELDS = (
    "interruptible_price_per_gpu_hour", "interruption_notice_seconds", "interruption_frequency",
    "reserved_price_per_gpu_hour", "reserved_term_days", "reliability", "reliability_measures", "stock",
)


def _feed_value(value):
    """A stored value as the feed writes it: prices and figures as exact decimal text."""
    return str(value.normalize()) if isinstance(value, Decimal) else value


def _spin(machine_id: str, minute: int) -> int:
    return zlib.crc32(f"{machine_id}:{minute}".encode())


def demo_feed_document(provider: Provider, now: datetime) -> dict:
    """The provider's live machines as a nodelodge-v1 feed, free GPUs and availability shifting with the
    minute (the same minute always gives the same document), so a refresh visibly changes something. The
    machines the demo keeps for clusters (`KEPT_WHOLE_MACHINE_IDS`) are always whole and online."""
    minute = int(now.timestamp() // 60)
    machines = []
    feed_speeds = MeasuredSpeed.objects.filter(source=MeasuredSpeed.Source.FEED)
    feed_speeds = feed_speeds.order_by("model_slug", "precision", "pk")
    rows = (
        Machine.objects.filter(provider=provider, gone_at__isnull=True)
        .select_related("gpu_type")
        .prefetch_related(Prefetch("measured_speeds", queryset=feed_speeds, to_attr="feed_speeds"))
        .order_by("provider_machine_id")
    )
    for machine in rows.iterator(chunk_size=2000):
        spin = _spin(machine.provider_machine_id, minute)
        kept_whole = machine.provider_machine_id in KEPT_WHOLE_MACHINE_IDS
        # The feed reports only what a provider would: the host's figure (Community) or the
        # datacenter's (Secure); a figure the catalog took from the datasheet is left for it to fill in.
        reported = machine.memory_source in (Machine.MemorySource.HOST, Machine.MemorySource.DATACENTER)
        entry = {
            "id": machine.provider_machine_id,
            "gpu_type": machine.gpu_type.name,
            "gpu_count": machine.gpu_count,
            "free_gpus": machine.gpu_count if kept_whole else spin % (machine.gpu_count + 1),
            "memory_mib": machine.memory_per_gpu_mib if reported else None,
            "available": kept_whole or spin % DEMO_OFFLINE_ONE_IN != 0,
            "country": machine.country or None,
            "region": machine.region,
            "price_per_gpu_hour": str(machine.price_per_gpu_hour.normalize()),
            "interruptible": machine.interruptible,
            "booking_limit_hours": machine.booking_limit_hours,
        }
        # The markets, reliability and stock the provider reported, so a refresh keeps them.
        entry.update({
            name: _feed_value(getattr(machine, name)) for name in FEED_MARKET_FIELDS
            if getattr(machine, name) not in (None, "")
        })
        if machine.interconnect != Machine.Interconnect.NONE or machine.site:
            entry.update(site=machine.site, interconnect=machine.interconnect,
                         interconnect_gbps=machine.interconnect_gbps)
        if machine.feed_speeds:
            # The speeds the provider reported for this machine, so a refresh keeps them.
            entry["measured_speeds"] = [speed_entry(speed) for speed in machine.feed_speeds]
        machines.append(entry)
    return {
        "provider": provider.slug,
        "generated_at": now.isoformat(),
        "machines": machines,
    }


def speed_entry(speed: MeasuredSpeed) -> dict:
    """One measured speed as the nodelodge-v1 feed's `measured_speeds` section writes it."""
    entry = {"model": speed.model_slug, "precision": speed.precision,
             "tokens_per_second": str(speed.value.normalize()), "gpus": speed.gpus}
    entry.update((field, getattr(speed, field)) for field in MEASUREMENT_FIELDS)
    entry["measured_at"] = speed.measured_at.isoformat()
    return entry
