"""The wizard's counts per country: where the machines that fit and meet every preference are, and
the cheapest hourly price in each."""
from __future__ import annotations

from decimal import Decimal
from typing import NamedTuple

from catalog import availability, database
from catalog.counting import availability_sql, fit_sql, fleet_counts, preferences_sql
from catalog.counting.fleet_query import FleetQuery
from catalog.counting.params import named
from sizing.preferences import price_limits


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
    (an empty answer's hints ask a dozen at once): the availability rule's checks but the countries
    are tested once per shape, and each query adds its countries, fit and preferences."""
    if not queries:
        return []
    cutoffs = {query.stale_cutoff for query in queries}
    if len(cutoffs) > 1:  # not asked by the console (one answer, one cutoff), but answered right
        return [found for query in queries for found in meeting_by_country_many([query])]
    status, params = named(*availability_sql.status_sql(cutoffs.pop(), None), "status")
    probes = []
    for probe, query in enumerate(queries):
        sql, values = _probe(query, f"p{probe}")
        probes.append(sql.replace("SELECT ", f"SELECT {probe} AS probe, ", 1))
        params |= values
    # Fixed SQL and integers; every value is a parameter.
    sql = (
        "SELECT q.probe, m.country, MIN(m.prices[1] * q.gpus), SUM(q.machines) "  # noqa: S608  # nosec B608
        f"FROM {fleet_counts.SHAPES} m CROSS JOIN LATERAL ({' UNION ALL '.join(probes)}) AS q "
        f"WHERE {status} = {availability.SCREENED} GROUP BY q.probe, m.country ORDER BY 1, 3, 2"
    )
    found: list[list[CountryCount]] = [[] for _ in queries]
    with database.reads().cursor() as cursor:
        fleet_counts.merge_pending(cursor)
        cursor.execute(sql, params)
        for probe, country, units, machines in cursor.fetchall():
            found[probe].append(CountryCount(country, fleet_counts.from_units(units), int(machines)))
    return found


def _probe(query: FleetQuery, prefix: str) -> tuple[str, dict]:
    """One query's part of the statement, over a kept-counts row `m` the rule's other checks let
    through: the GPUs it would use there and how many of its machines count, where it fits, in the
    query's countries and meeting its preferences (its values named after `prefix`)."""
    gpus, params = named(*fit_sql.gpus_used_sql(query.fits[0]), f"{prefix}_fit")
    # The kept counts hold prices in units; a shape's cheapest machine on the GPUs it would use.
    meets, meets_values = named(*preferences_sql.meets_sql(
        query, "m.prices[1] * g.gpus",
        limit=lambda value: (f"%s::numeric * {fleet_counts.PRICE_UNITS}", [value]),
    ), f"{prefix}_meets")
    params |= meets_values
    highest = []
    for number, (_, limit) in enumerate(price_limits(query)):
        # price × GPUs within the limit: in whole units of price, at most limit ÷ GPUs, rounded down
        highest.append(
            f"FLOOR(%({prefix}_limit_{number})s::numeric * {fleet_counts.PRICE_UNITS} / g.gpus)::bigint"
        )
        params[f"{prefix}_limit_{number}"] = limit
    if highest:
        counted = f"COALESCE(m.cum[width_bucket(LEAST({', '.join(highest)}), m.prices)], 0)"
    else:
        counted = "m.cum[cardinality(m.cum)]"
    inside = ""
    if query.countries is not None:
        inside = f" AND m.country = ANY(%({prefix}_countries)s)"
        params[f"{prefix}_countries"] = sorted(query.countries)
    # Fixed SQL and integers; every value is a parameter.
    sql = (
        f"SELECT g.gpus, {counted} AS machines FROM (SELECT {gpus} AS gpus) AS g "  # noqa: S608  # nosec B608
        f"WHERE g.gpus IS NOT NULL{inside} AND {meets}"
    )
    return sql, params
