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
    """`meeting_by_country` of each of `queries`, all in one statement (an empty answer's hints ask
    several at once)."""
    if not queries:
        return []
    parts: list[str] = []
    params: dict[str, object] = {}
    for probe, query in enumerate(queries):
        sql, values = _counted_by_country(query, f"p{probe}")
        parts.append(sql.replace("SELECT ", f"SELECT {probe} AS probe, ", 1))
        params |= values
    sql = " UNION ALL ".join(f"({part})" for part in parts) + " ORDER BY 1, 3, 2"
    found: list[list[CountryCount]] = [[] for _ in queries]
    with database.reads().cursor() as cursor:
        fleet_counts.merge_pending(cursor)
        cursor.execute(sql, params)
        for probe, country, units, machines in cursor.fetchall():
            found[probe].append(CountryCount(country, fleet_counts.from_units(units), int(machines)))
    return found


def _counted_by_country(query: FleetQuery, prefix: str) -> tuple[str, dict]:
    """The statement of one query's countries (unordered), its values named after `prefix`."""
    status, params = named(
        *availability_sql.status_sql(query.stale_cutoff, query.countries), f"{prefix}_status"
    )
    gpus, gpus_values = named(*fit_sql.gpus_used_sql(query.fits[0]), f"{prefix}_fit")
    # The kept counts hold prices in units; a shape's cheapest machine on the GPUs it would use.
    meets, meets_values = named(*preferences_sql.meets_sql(
        query, "m.prices[1] * g.gpus",
        limit=lambda value: (f"%s::numeric * {fleet_counts.PRICE_UNITS}", [value]),
    ), f"{prefix}_meets")
    params |= gpus_values | meets_values
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
    # Fixed SQL and integers; every value is a parameter.
    sql = (
        f"SELECT m.country, MIN(m.prices[1] * g.gpus), SUM({counted}) FROM {fleet_counts.SHAPES} m "  # noqa: S608  # nosec B608
        f"CROSS JOIN LATERAL (SELECT {gpus} AS gpus) AS g "
        f"WHERE {status} = {availability.SCREENED} AND g.gpus IS NOT NULL AND {meets} "
        "GROUP BY m.country"
    )
    return sql, params
