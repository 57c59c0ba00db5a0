"""The wizard's fleet, counted in the database (PostgreSQL)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import NamedTuple, Protocol, cast

from catalog import availability, database
from catalog.counting import availability_sql, fit_sql, fleet_counts, fleet_machines, gpu_kinds
from catalog.counting.fleet_query import FleetQuery
from sizing import fit, matching, preferences, reasons

# The matching engine decides fit from a machine's memory per GPU and free GPUs alone, through the
# thresholds of `sizing.fit.fit_thresholds`. Here those thresholds become SQL, so PostgreSQL
# counts every machine and returns only the few the answer describes (`sizing.matching.CountedFleet`).

# Memory per GPU is an integer column: no machine reaches 2^31 MiB, so every larger need fits
# nowhere alike and is counted as this one (the bands are bigint: this edge is past integer).
MEMORY_MIB_BEYOND_ANY = fit.MEMORY_BEYOND_ANY



class CountRow(NamedTuple):
    """One group of the fleet's count: machines of one status, tier, memory band, free GPUs and price
    band, with their cheapest and dearest price per GPU-hour (dollars) and their sightings."""

    status: int  # a counted reason's status number, or SCREENED (`catalog.availability`)
    tier: str | None
    memory_bucket: int | None  # the number of memory edges at or below the memory per GPU
    free_gpus: int | None
    price_bucket: int | None  # the number of price edges at or below the price (0 without edges)
    machines: int
    cheapest: Decimal
    most_memory_mib: int
    newest_seen: int | None  # microseconds since 1970 (`fleet_counts.seen_microseconds`)
    oldest_seen: int | None
    dearest: Decimal
    # Rounded down as the kept counts keep it (`fleet_counts.KEPT_AS`), None where not reported; counted
    # apart only where a minimum reliability is chosen (None for every row otherwise).
    reliability: Decimal | None = None


@dataclass
class FleetCount:
    """What one wizard query needs from the catalog: the engine's counts, the machines to describe,
    the catalog's own exclusion counts (by status constant) and the freshness of what was seen."""

    counted: matching.CountedFleet
    left_out: dict[str, int]  # reason (`sizing.reasons`) -> machines the availability rule left out
    newest: datetime | None
    oldest: datetime | None
    # place in `fits` -> the cheapest hourly price among the machines that fit and meet every
    # preference there (absent where none does)
    cheapest_meeting: dict[int, Decimal] = field(default_factory=dict)


def _breaks(query: FleetQuery, row: CountRow, gpus: int, edges: dict) -> tuple[str, ...]:
    """The preference codes the machines of a count row using `gpus` GPUs break, in the engine's
    order: their hourly price is over a limit exactly when their price band is at or past the
    limit's crossing on `gpus` GPUs."""
    return preferences.breaks(
        query, row, lambda preference, limit: row.price_bucket >= edges[(preference.code, gpus)]
    )


def counted_fleet(query: FleetQuery, counts: Counts | None = None) -> FleetCount:
    """Counts the whole fleet for a wizard query, then fetches only the machines the answer
    describes: three to five queries whatever the fleet's size.

    The counts group machines by status, tier, memory band and free GPUs (and, with a price limit
    or budget, price band), where the bands' edges are every fit threshold and every price at which
    some GPU count crosses a limit. Each group then has one fit and one set of broken preferences
    per precision, worked out here from its edges; the database only counts. They come from the
    counts the writes keep per shape of machine (`catalog.counting.fleet_counts`), a few thousand
    rows whatever the fleet's size; the tests pass `counts` that scan every machine instead (the
    reference the kept counts are tested against, `tests/catalog/scan_oracle.py`).
    """
    # Thresholds by kind are written within each kind's range already (`sizing.fit.by_kind`).
    memory_edges = sorted({
        need if query.by_kind else min(need, MEMORY_MIB_BEYOND_ANY)
        for thresholds in query.fits for _, need in thresholds
    })
    gpu_counts = sorted(
        {gpus for thresholds in query.fits for gpus, _ in thresholds if gpus != fit.NO_FIT_GPUS}
    )
    # Each limit's crossing on each GPU count, worked out once: the bands' price edges.
    crossings = {
        (preference.code, gpus): preferences.first_price_over(limit, gpus)
        for preference, limit in preferences.price_limits(query)
        for gpus in gpu_counts
    }
    price_edges = sorted(set(crossings.values()))
    # width_bucket counts the edges at or below a value: price >= edge number j <=> bucket >= j.
    price_bucket_of = {key: price_edges.index(edge) + 1 for key, edge in crossings.items()}

    status_sql, status_params = availability_sql.status_sql(query.stale_cutoff, query.countries)
    counts = KEPT_COUNTS if counts is None else counts
    groups = counts.groups(query, status_sql, status_params, memory_edges, price_edges)
    return _tally(query, groups, memory_edges, price_edges, price_bucket_of, counts)


class Counts(Protocol):
    """Where the groups come from: the kept counts (`KeptCounts`), or a test's reference."""

    # Whether a sparse band may be read at the prices the kept counts list for it.
    lists_prices: bool

    def groups(self, query: FleetQuery, status_sql: str, status_params: list, memory_edges: list[int],
               price_edges: list[Decimal]) -> list[CountRow]: ...

    def count_at_cheapest(self, query: FleetQuery, only_cheapest: dict[str, Decimal]) -> dict[str, int]: ...


class KeptCounts:
    """The counts the writes keep per shape of machine (`catalog.counting.fleet_counts`)."""

    lists_prices = True

    def groups(self, query, status_sql, status_params, memory_edges, price_edges) -> list[CountRow]:
        sql, params = fleet_counts.grouped_sql(
            status_sql, status_params, memory_edges, price_edges, availability.SCREENED,
            by_reliability=query.min_reliability is not None, market=query.market, by_kind=query.by_kind,
        )
        with database.reads().cursor() as cursor:
            fleet_counts.merge_pending(cursor)
            cursor.execute(sql, params)
            return [_from_units(count_row(row, bool(price_edges))) for row in cursor.fetchall()]

    def count_at_cheapest(self, query, only_cheapest) -> dict[str, int]:
        return _count_at_cheapest_kept(query, only_cheapest)


KEPT_COUNTS = KeptCounts()


def count_row(row: tuple, priced: bool) -> CountRow:
    """A row of either counting statement (its price band column only with price edges)."""
    keys = 5 if priced else 4
    return CountRow._make((*row[:4], row[4] if priced else 0, *row[keys:]))


def _from_units(row: CountRow) -> CountRow:
    """A row of the kept counts with its prices in dollars, as the scan gives them."""
    return row._replace(cheapest=fleet_counts.from_units(row.cheapest),
                        dearest=fleet_counts.from_units(row.dearest))


def _tally(
    query: FleetQuery,
    groups: list[CountRow],
    memory_edges: list[int],
    price_edges: list[Decimal],
    price_bucket_of: dict,
    counts: Counts,
) -> FleetCount:
    left_out = dict.fromkeys(availability.COUNTED_REASONS, 0)
    not_fresh = {availability.STATUS_OF_REASON[reasons.OFFLINE], availability.STATUS_OF_REASON[reasons.STALE]}
    newest = oldest = None
    considered = too_small = fitting = 0
    largest = None
    first: dict[str, int] = {}
    only: dict[str, int] = {}
    only_cheapest: dict[str, Decimal] = {}
    lower_fitting = [0] * (len(query.fits) - 1)
    # (precision index, band index, meets every preference) -> cheapest and dearest price per
    # GPU-hour there, to fetch only from bands that hold machines, and only within their prices
    bands: dict[tuple[int, int, bool], tuple[Decimal, Decimal]] = {}
    band_sizes: dict[tuple[int, int, bool], int] = {}
    fits_of: dict[tuple[int | None, int | None], list[int | None]] = {}
    for row in groups:
        status, memory_bucket, free_gpus = row.status, row.memory_bucket, row.free_gpus
        count, cheapest_price, most_memory = row.machines, row.cheapest, row.most_memory_mib
        seen_max, seen_min, dearest_price = row.newest_seen, row.oldest_seen, row.dearest
        if status not in not_fresh:
            newest = seen_max if newest is None else max(newest, cast(int, seen_max))  # fresh: seen
            oldest = seen_min if oldest is None else min(oldest, cast(int, seen_min))
        if status != availability.SCREENED:
            left_out[availability.REASON_OF_STATUS[status]] += count
            continue
        considered += count
        largest = most_memory if largest is None else max(largest, most_memory)
        shape = (memory_bucket, free_gpus)
        if shape not in fits_of:
            # Any memory in the bucket fits like its lower edge: every threshold is an edge.
            memory = memory_edges[memory_bucket - 1] if memory_bucket else 0
            fits_of[shape] = [
                fit.band_of(thresholds, memory, cast(int, free_gpus))  # screened: known
                for thresholds in query.fits
            ]
        for fit_index, band in enumerate(fits_of[shape]):
            if band is None:
                if fit_index == 0:
                    too_small += count
                continue
            gpus = query.fits[fit_index][band][0]
            breaks = _breaks(query, row, gpus, price_bucket_of)
            key = (fit_index, band, not breaks)
            low, high = bands.get(key, (cheapest_price, dearest_price))
            bands[key] = (min(low, cheapest_price), max(high, dearest_price))
            band_sizes[key] = band_sizes.get(key, 0) + count
            if fit_index:
                if not breaks:
                    lower_fitting[fit_index - 1] += count
                continue
            if not breaks:
                fitting += count
                continue
            first[breaks[0]] = first.get(breaks[0], 0) + count
            if len(breaks) == 1:
                code = breaks[0]
                only[code] = only.get(code, 0) + count
                hourly = cheapest_price * gpus
                if code not in only_cheapest or hourly < only_cheapest[code]:
                    only_cheapest[code] = hourly

    only_at_cheapest = (
        counts.count_at_cheapest(query, only_cheapest) if not fitting and only_cheapest else {}
    )
    sparse = {key for key, size in band_sizes.items() if size <= fleet_machines.SPARSE_BAND_MACHINES}
    band_prices = {}
    if counts.lists_prices and sparse:
        band_prices = fleet_machines.band_prices(query, bands, sparse)
    counted = matching.CountedFleet(
        offers=tuple(fleet_machines.describe(query, bands, band_prices)),
        considered=considered,
        largest_memory_mib=largest,
        too_small=too_small,
        fitting=fitting,
        breaking_first=first,
        breaking_only=only,
        breaking_only_cheapest=only_cheapest,
        breaking_only_at_cheapest=only_at_cheapest,
        lower_precisions={
            index: matching.PrecisionCount(count) for index, count in enumerate(lower_fitting, start=1)
        },
    )
    cheapest_meeting: dict[int, Decimal] = {}
    for (fit_index, band, meets), (cheapest_price, _) in bands.items():
        if meets:
            hourly = cheapest_price * query.fits[fit_index][band][0]
            if fit_index not in cheapest_meeting or hourly < cheapest_meeting[fit_index]:
                cheapest_meeting[fit_index] = hourly
    return FleetCount(
        counted=counted, left_out=left_out, newest=_seen_at(newest), oldest=_seen_at(oldest),
        cheapest_meeting=cheapest_meeting,
    )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _seen_at(microseconds: int | None) -> datetime | None:
    """A sighting the counts returned as microseconds since 1970, as the date and time it was."""
    return None if microseconds is None else _EPOCH + timedelta(microseconds=microseconds)


def _count_at_cheapest_kept(query: FleetQuery, only_cheapest: dict[str, Decimal]) -> dict[str, int]:
    """For the empty answer's hints: machines that break only the price limit (or only the budget)
    and cost exactly the cheapest such hourly price, from the kept counts. Such a machine costs
    exactly that hourly price, so whether it keeps the other limit and breaks this one is decided by
    that price alone."""
    status_sql, status_params = availability_sql.status_sql(query.stale_cutoff, query.countries)
    gpus_sql, gpus_params = fit_sql.gpus_used_sql(query.fits[0], gpu_kinds.shape_memory_sql(query.by_kind))
    counts = {}
    for preference, _ in preferences.price_limits(query):
        code = preference.code
        if code not in only_cheapest:
            continue
        hourly = only_cheapest[code]
        # Those machines break this price preference alone at that price (their tier is met).
        if preferences.preference_breaks(None, hourly, query) != (code,):
            counts[code] = 0
            continue
        sql, params = fleet_counts.count_at_price_sql(
            status_sql, status_params, availability.SCREENED, gpus_sql, gpus_params, query, hourly
        )
        with database.reads().cursor() as cursor:
            cursor.execute(sql, params)
            counts[code] = cursor.fetchone()[0]
    return counts
