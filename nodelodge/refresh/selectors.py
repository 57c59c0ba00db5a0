"""Reads for the refresh app: the demo feed's document; the price and stock history."""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.db import connection
from django.db.models import Prefetch
from django.urls import reverse

from catalog.data.demo_fleet import KEPT_WHOLE_MACHINE_IDS
from catalog.models import GpuType, Machine, MeasuredSpeed, Provider
from sizing.offers import MEASUREMENT_FIELDS
from sizing.results import RecommendedMachine

from .history import hour_of
from .models import ALL_COUNTRIES, PriceHistory

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


# --- The price and stock history ------------------------------------------------------------------

# What a history page, its API and the watches read: the last 30 days, hour by hour. One series is at
# most HISTORY_HOURS points, whatever the fleet or the history kept.
HISTORY_DAYS = 30
HISTORY_HOURS = HISTORY_DAYS * 24


@dataclass(frozen=True)
class HistoryHour:
    """One hour of a series (`PriceHistory`'s row)."""

    hour: datetime
    cheapest: Decimal
    median: Decimal
    offers: int
    offers_in_stock: int
    refreshes: int
    refreshes_with_stock: int

    @property
    def stock_share(self) -> Decimal:
        """The share of the hour's refreshes that saw a free GPU, 0 to 1 (exact: a ratio of counts)."""
        return Decimal(self.refreshes_with_stock) / Decimal(self.refreshes)


@dataclass(frozen=True)
class HistoryDay:
    """One day of a series, for the table: the lowest price of its hours, the median of its hourly
    medians, and the share of all its refreshes that saw stock."""

    day: date
    cheapest: Decimal
    median: Decimal
    refreshes: int
    refreshes_with_stock: int

    @property
    def stock_share(self) -> Decimal:
        return Decimal(self.refreshes_with_stock) / Decimal(self.refreshes)


@dataclass(frozen=True)
class GpuTypeHistory:
    """A GPU type's last 30 days in one market and country ("" for every country)."""

    gpu_type: GpuType
    market: str
    country: str
    since: datetime  # the first hour of the window
    until: datetime  # the hour now (the window's last)
    hours: tuple[HistoryHour, ...]
    countries: tuple[str, ...]  # the countries with history in the window and market, for the filter

    @property
    def median_30d(self) -> Decimal | None:
        """The median of the window's hourly medians (`median_of`)."""
        return median_of([hour.median for hour in self.hours])

    @property
    def days(self) -> list[HistoryDay]:
        by_day: dict[date, list[HistoryHour]] = {}
        for hour in self.hours:
            by_day.setdefault(hour.hour.date(), []).append(hour)
        return [
            HistoryDay(
                day, min(h.cheapest for h in hours), median_of([h.median for h in hours]) or Decimal(0),
                sum(h.refreshes for h in hours), sum(h.refreshes_with_stock for h in hours),
            )
            for day, hours in sorted(by_day.items())
        ]


def median_of(values: list[Decimal]) -> Decimal | None:
    """The median (the mean of the two middle values where their count is even); None of nothing."""
    ordered = sorted(values)
    if not ordered:
        return None
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def history_window(now: datetime) -> tuple[datetime, datetime]:
    """The first and last hour of the 30 days up to `now`: HISTORY_HOURS hours, the current one last."""
    until = hour_of(now)
    return until - timedelta(hours=HISTORY_HOURS - 1), until


def gpu_type_history(gpu_type: GpuType, *, market: str, country: str, now: datetime) -> GpuTypeHistory:
    """The GPU type's last 30 days in `market` and `country` (""), hour by hour: two statements, the
    series at most HISTORY_HOURS rows and the countries at most one per country code."""
    since, until = history_window(now)
    window = PriceHistory.objects.filter(gpu_type=gpu_type, market=market, hour__gte=since, hour__lte=until)
    rows = window.filter(country=country or ALL_COUNTRIES).order_by("hour").values_list(
        "hour", "cheapest_per_gpu_hour", "median_per_gpu_hour", "offers", "offers_in_stock", "refreshes",
        "refreshes_with_stock",
    )[:HISTORY_HOURS]
    return GpuTypeHistory(gpu_type, market, country, since, until, tuple(HistoryHour(*row) for row in rows),
                          countries_with_history(gpu_type.pk, market, since, until))


# The countries of a GPU type's market, one index probe each (a loose index scan over the unique index's
# gpu_type, market, country): the next country after the last found, kept where it has a row in the
# window. "*" (every country) and "" (unknown) sort before every code, so "> '*'" skips both.
_COUNTRIES_SQL = """
    WITH RECURSIVE found(country) AS (
        SELECT (SELECT MIN(country) FROM {table} WHERE gpu_type_id = %s AND market = %s AND country > %s)
        UNION ALL
        SELECT (SELECT MIN(h.country) FROM {table} h
                WHERE h.gpu_type_id = %s AND h.market = %s AND h.country > found.country)
        FROM found WHERE found.country IS NOT NULL
    )
    SELECT country FROM found
    WHERE country IS NOT NULL AND EXISTS (
        SELECT 1 FROM {table} h WHERE h.gpu_type_id = %s AND h.market = %s AND h.country = found.country
                                  AND h.hour >= %s AND h.hour <= %s)
    ORDER BY country
"""


def countries_with_history(gpu_type_id: int, market: str, since: datetime,
                           until: datetime) -> tuple[str, ...]:
    """The countries with a row of the GPU type's market between `since` and `until`: one statement of
    two index probes per country code at most, however many hours are kept."""
    adapt = connection.ops.adapt_datetimefield_value
    params = (gpu_type_id, market, ALL_COUNTRIES, gpu_type_id, market, gpu_type_id, market, adapt(since),
              adapt(until))
    with connection.cursor() as cursor:
        cursor.execute(_COUNTRIES_SQL.format(table=PriceHistory._meta.db_table), params)  # nosec B608
        return tuple(row[0] for row in cursor.fetchall())


def thirty_day_median(gpu_type_name: str, market: str, now: datetime) -> Decimal | None:
    """The median of a GPU type's (by name) hourly median prices in `market`, every country, over the
    last 30 days: one statement of at most HISTORY_HOURS values. None without history."""
    since, until = history_window(now)
    medians = PriceHistory.objects.filter(
        gpu_type__name=gpu_type_name, market=market, country=ALL_COUNTRIES, hour__gte=since, hour__lte=until,
    ).order_by("hour").values_list("median_per_gpu_hour", flat=True)[:HISTORY_HOURS]
    return median_of(list(medians))


def gpu_history_paths(machines: Iterable[RecommendedMachine]) -> dict[str, str]:
    """The history page of each shown machine's GPU type, by GPU name (the page's language's
    address). The walk read each machine's GPU slug with it: no statement."""
    slugs = {machine.offer.gpu_type: machine.offer.gpu_slug for machine in machines}
    return {name: reverse("wizard:gpu_history", args=[slug]) for name, slug in sorted(slugs.items()) if slug}


def history_document(history: GpuTypeHistory) -> dict:
    """The history as the API and the command write it (money as exact decimal strings)."""
    median = history.median_30d
    return {
        "gpu_type": history.gpu_type.name, "slug": history.gpu_type.slug, "market": history.market,
        "country": history.country, "since": history.since.isoformat(), "until": history.until.isoformat(),
        "median_30d_per_gpu_hour": None if median is None else str(median),
        "countries": list(history.countries),
        "hours": [
            {"hour": hour.hour.isoformat(), "cheapest_per_gpu_hour": str(hour.cheapest),
             "median_per_gpu_hour": str(hour.median), "offers": hour.offers,
             "offers_in_stock": hour.offers_in_stock, "refreshes": hour.refreshes,
             "refreshes_with_stock": hour.refreshes_with_stock}
            for hour in history.hours
        ],
        "page_url": reverse("wizard:gpu_history", args=[history.gpu_type.slug]),
    }
