"""The wizard's counts per country: where the machines that fit and meet every preference are, and
the cheapest hourly price in each."""
from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal
from typing import NamedTuple, cast

from catalog import availability, database
from catalog.counting import availability_sql, fit_sql, fleet_counts, gpu_kinds, preferences_sql
from catalog.counting.fleet_query import FleetQuery
from catalog.counting.params import named
from sizing.kinds import KindSpace
from sizing.preferences import HOURLY_OVER, MACHINE_TESTS, OTHER_TIER, price_limits, tier_chosen


class CountryCount(NamedTuple):
    """The machines in one country that fit and meet every preference."""

    country: str
    cheapest_hourly: Decimal
    machines: int


def meeting_by_country(query: FleetQuery) -> list[CountryCount]:
    """Each country holding machines that fit (at `query.fits[0]`) and meet every preference, with
    the cheapest hourly price there and how many there are, cheapest first (ties by country code).
    From the kept counts, in one statement: a shape's cheapest machine meets the price limits
    exactly when any of its machines does, and those that do are the shape's count up to the
    highest price per GPU-hour within the limits."""
    return meeting_by_country_many([query])[0]


def meeting_by_country_many(queries: list[FleetQuery]) -> list[list[CountryCount]]:
    """`meeting_by_country` of each of `queries`, all in one statement that reads the kept counts once
    (an empty answer's hints ask a dozen at once). The statement counts per country, tier and market,
    so the queries that differ only in those (the hints inside and outside the chosen countries, with
    the tier lifted, under a wider market) share one pair of aggregates, and each query takes the groups
    of its own countries, tier and market here. The availability rule's checks and each fit are worked
    out once per shape (`_SharedChecks`)."""
    if not queries:
        return []
    cutoffs = {query.stale_cutoff for query in queries}
    if len(cutoffs) > 1:  # not asked by the console (one answer, one cutoff), but answered right
        return [found for query in queries for found in meeting_by_country_many([query])]
    status, params = named(*availability_sql.status_sql(cutoffs.pop(), None), "status")
    shared = _SharedChecks()
    columns: list[str] = []
    pairs: dict[tuple, int] = {}  # a probe's SQL and values -> its pair of aggregates
    pair_of: list[int] = []
    # A probe whose fit no other probe asks shares its pair with none, so where it chooses a few
    # countries its aggregates skip the other countries' rows at once (an empty answer's smaller sizes:
    # a fit each, in the chosen countries alone).
    asking = Counter((query.fits[0], query.by_kind) for query in queries)
    for query in queries:
        alone = asking[query.fits[0], query.by_kind] == 1
        probe = _probe(query, "q", shared, alone)
        key = (*probe[:3], tuple(sorted((name, repr(value)) for name, value in probe[3].items())))
        if key not in pairs:
            pairs[key] = len(columns)
            meets, gpus, counted, values = _probe(query, f"p{len(columns)}", shared, alone)
            # Each pair is two filtered aggregates over the same rows: one pass over the shapes and one
            # expression per distinct probe, not a subquery per probe and shape.
            columns.append(f"MIN(m.prices[1] * {gpus}) FILTER (WHERE {meets}), "
                           f"SUM({counted}) FILTER (WHERE {meets})")
            params |= values
        pair_of.append(pairs[key])
    params |= shared.params
    # Only the rows of the market preferences asked (each machine is counted once per choice): the
    # kept counts are kept per market, so the scan reads those alone, and of each market only the rows
    # some probe of it may count (`_could_count`) go on to the fits.
    rows, rows_values = _rows_asked(queries)
    params |= rows_values
    # Fixed SQL and integers; every value is a parameter. The rows asked are read first, in a subquery
    # of their own (OFFSET 0), so that the rule's checks and the fits run only on the rows some probe
    # may count (the planner would check the rule first).
    sql = (
        f"SELECT m.country, m.tier, m.{fleet_counts.MARKET}, {', '.join(columns)} "  # noqa: S608  # nosec B608
        f"FROM ({rows} OFFSET 0) AS m {shared.from_sql()} "
        f"WHERE {status} = {availability.SCREENED} AND ({shared.any_fit_sql()}) "
        f"GROUP BY m.country, m.tier, m.{fleet_counts.MARKET}"
    )
    with database.reads().cursor() as cursor:
        fleet_counts.merge_pending(cursor)
        cursor.execute(sql, params)
        groups = cursor.fetchall()
    found: list[list[CountryCount]] = []
    for query, pair in zip(queries, pair_of, strict=True):
        tier = tier_chosen(query)
        by_country: dict[str, tuple[int, int]] = {}  # country -> (cheapest in units, machines)
        for country, machine_tier, market, *figures in groups:
            units, machines = figures[2 * pair], figures[2 * pair + 1]
            if (units is None or market != query.market or (tier is not None and machine_tier != tier)
                    or (query.countries is not None and country not in query.countries)):
                continue
            cheapest, counted = by_country.get(country, (units, 0))
            by_country[country] = (min(cheapest, units), counted + int(machines))
        counts = [CountryCount(country, fleet_counts.from_units(units), machines)
                  for country, (units, machines) in by_country.items()]
        # cheapest first, ties by country code (codes are ASCII: as the database orders)
        counts.sort(key=lambda count: (count.cheapest_hourly, count.country))
        found.append(counts)
    return found


FEW_COUNTRIES = 16


def _rows_asked(queries: list[FleetQuery]) -> tuple[str, dict]:
    """The kept-counts rows the statement reads, as a SELECT: per market asked, its rows that some probe
    of that market could count. A wider market is asked only for the few machines its cheaper prices
    bring under a price limit (an empty answer's market hint), so most of its rows leave before their
    fits and countries are worked out; a market with a probe that has no limit keeps every row."""
    by_market: dict[str, list[FleetQuery]] = {}
    for query in queries:
        by_market.setdefault(query.market, []).append(query)
    branches: list[str] = []
    params: dict[str, object] = {}
    for number, (market, asked) in enumerate(sorted(by_market.items())):
        params[f"market_{number}"] = market
        # Probes alike ask alike (a limit hint and its rounded value, say): each check once.
        alike = list(dict.fromkeys(_could_count(query) for query in asked))
        checks = []
        for probe, conditions in enumerate(alike):
            check, values = _could_count_sql(conditions, f"r{number}_{probe}")
            checks.append(check)
            params |= values
        keep = "" if "TRUE" in checks else " AND (" + " OR ".join(f"({check})" for check in checks) + ")"
        # A branch per market: its partition alone is read, and a market asked for a few rows only
        # (a wider market's hint) is not scanned whole with another market's every row.
        branches.append(
            f"SELECT * FROM {fleet_counts.SHAPES} m "  # noqa: S608  # nosec B608  # fixed SQL, values are parameters
            f"WHERE m.{fleet_counts.MARKET} = %(market_{number})s{keep}"
        )
    return " UNION ALL ".join(branches), params


def _could_count(query: FleetQuery) -> tuple[tuple[str, object], ...]:
    """What a row must pass for `query` to count any of its machines, before its fit is known (as
    `_could_count_sql` writes it): its cheapest price per GPU-hour within each hourly limit (a machine
    uses one GPU at least), and its country among the chosen where they are few (a set of hundreds, all
    but the chosen, looked up on every row costs more than it saves: the groups of those countries are
    picked after counting). Empty where the query has neither."""
    # In whole units of price, as the kept counts hold them: an integer comparison on every row.
    conditions: list[tuple[str, object]] = [
        ("price", _whole_units(limit)) for _, limit in price_limits(query)
    ]
    if query.countries is not None and len(query.countries) <= FEW_COUNTRIES:
        conditions.append(("countries", tuple(sorted(query.countries))))
    return tuple(conditions)


def _could_count_sql(conditions: tuple[tuple[str, object], ...], prefix: str) -> tuple[str, dict]:
    """`_could_count`'s conditions as SQL over a kept-counts row `m` ("TRUE" where none), with its
    values named after `prefix`."""
    checks: list[str] = []
    params: dict[str, object] = {}
    for number, (kind, value) in enumerate(conditions):
        name = f"{prefix}_{number}"
        checks.append(f"m.prices[1] <= %({name})s" if kind == "price" else f"m.country = ANY(%({name})s)")
        params[name] = list(cast(tuple, value)) if kind == "countries" else value
    return " AND ".join(checks) or "TRUE", params


class _SharedChecks:
    """The checks several probes of one statement ask alike, each worked out once per shape: the GPUs
    a fit uses there (`k.fit_N`). An empty answer's dozen hints ask three fits at most."""

    def __init__(self) -> None:
        self.params: dict = {}
        self._fits: dict[tuple, tuple[str, str]] = {}  # (fit, kinds) -> (its column, its CASE expression)

    def gpus(self, fit: tuple[tuple[int, int], ...], by_kind: KindSpace) -> str:
        key = (fit, by_kind)  # the same pairs read in two spaces are two fits
        if key not in self._fits:
            name = f"fit_{len(self._fits)}"
            sql, values = named(*fit_sql.gpus_used_sql(fit, gpu_kinds.shape_memory_sql(by_kind)), f"k_{name}")
            self.params |= values
            self._fits[key] = (name, sql)
        return f"k.{self._fits[key][0]}"

    def from_sql(self) -> str:
        """The fits' lateral after the kept counts `m`: OFFSET 0 keeps it a subquery of its own (not
        folded into every probe that reads it)."""
        fits = ", ".join(f"{sql} AS {name}" for name, sql in self._fits.values()) or "NULL AS fit_none"
        return f"CROSS JOIN LATERAL (SELECT {fits} OFFSET 0) AS k"

    def any_fit_sql(self) -> str:
        """Some fit uses the shape: the others (most, for a large model on one GPU) are not grouped."""
        return " OR ".join(f"k.{name} IS NOT NULL" for name, _sql in self._fits.values()) or "FALSE"


def _probe(
    query: FleetQuery, prefix: str, shared: _SharedChecks, alone: bool = False
) -> tuple[str, str, str, dict]:
    """One query's part of the statement, over a kept-counts row `m` the rule's other checks let
    through: (whether it counts: it fits and meets the preferences that read the row's price and
    reliability; the GPUs it would use there; how many of its machines count; the values, named after
    `prefix`). Its countries, tier and market are the groups it takes (`meeting_by_country_many`);
    the fit comes from `shared`. `alone`: no other probe asks its fit, so a few countries it chooses
    are checked here as well (its pair is its own anyway)."""
    gpus = shared.gpus(query.fits[0], query.by_kind)
    # The kept counts hold prices in whole units, and a limit is compared in whole units too (rounded
    # down: price × GPUs, an integer, is within the limit exactly when it is within its whole part), so
    # every row's comparisons are integer ones, not numeric.
    meets, params = named(*preferences_sql.meets_sql(
        query, f"m.prices[1] * {gpus}", limit=lambda value: ("%s", [_whole_units(value)]),
        tests=tuple(test for test in (*MACHINE_TESTS, HOURLY_OVER) if test != OTHER_TIER),
    ), f"{prefix}_meets")
    highest = []
    for number, (_, limit) in enumerate(price_limits(query)):
        # price × GPUs within the limit: at most the limit's whole units ÷ GPUs, rounded down (integer
        # division of the rounded-down units rounds the same as of the exact ones)
        highest.append(f"(%({prefix}_limit_{number})s::bigint / {gpus})")
        params[f"{prefix}_limit_{number}"] = _whole_units(limit)
    if highest:
        counted = f"COALESCE(m.cum[width_bucket(LEAST({', '.join(highest)}), m.prices)], 0)"
    else:
        counted = "m.cum[cardinality(m.cum)]"
    within = ""
    if alone and query.countries is not None and len(query.countries) <= FEW_COUNTRIES:
        within = f"m.country = ANY(%({prefix}_countries)s) AND "
        params[f"{prefix}_countries"] = sorted(query.countries)
    return f"{within}{gpus} IS NOT NULL AND {meets}", gpus, counted, params


def _whole_units(limit: Decimal) -> int:
    """A price limit in the kept counts' whole units of price, rounded down."""
    return math.floor(limit * fleet_counts.PRICE_UNITS)
