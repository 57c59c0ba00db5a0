"""The few machines a wizard answer describes, fetched by id once the fleet is counted
(`catalog.counting.fleet.counted_fleet`): each band of GPUs used walked in price order through the
price indexes, only between the prices the counts found there."""
from __future__ import annotations

from decimal import Decimal

from catalog import availability, database, rows
from catalog.counting import availability_sql, fit_sql, fleet_counts, gpu_kinds, preferences_sql
from catalog.counting.fleet_query import FleetQuery
from catalog.market_columns import MARKET_PRICE_COLUMNS
from sizing import offers
from sizing.preferences import HOURLY_PRICE

# A band holding at most this many machines is read at the prices the kept counts list for it
# (an index probe per price) rather than by walking every machine between its cheapest and dearest.
SPARSE_BAND_MACHINES = 256
# Up to this many chosen countries, a band is read country by country (`shown_ids_sql`).
COUNTRY_WALKS = 3
# A machine's provider by its place in the providers' name order (names are unique; "C" compares
# them as Python sorts them): a walk reads no provider rows, and plans a join fewer per band.
PROVIDER_PLACE = (
    'array_position((SELECT array_agg(p.id ORDER BY p.name COLLATE "C") FROM catalog_provider p), '
    "m.provider_id)"
)


def walk_order(price: str) -> dict[str, str]:
    """The listing order's columns in a band's walk (its hourly price follows its price per GPU-hour,
    `price`: the column of the query's market preference)."""
    return {
        "price_per_gpu_hour": price,
        "provider": PROVIDER_PLACE,
        "provider_machine_id": 'm.provider_machine_id COLLATE "C"',
        "id": "m.id",
    }


# The listing order's columns in the merge of the walks.
MERGED_ORDER = {
    "hourly_price": "hourly", "price_per_gpu_hour": "price", "provider": "provider",
    "provider_machine_id": "machine", "id": "id",
}


def band_prices(
    query: FleetQuery, bands: dict[tuple[int, int, bool], tuple[Decimal, Decimal]], sparse: set
) -> dict[tuple[int, int, bool], list[Decimal]]:
    """For each sparse band, every price per GPU-hour at which the kept counts hold one of its
    machines (those the rule lets through, of the band's GPUs used, meeting every preference or not
    as the band says): one statement for all of them."""
    status_sql, status_params = availability_sql.status_sql(query.stale_cutoff, query.countries)
    parts, params, keys = [], [], sorted(sparse)
    for number, (fit_index, band, meets) in enumerate(keys):
        thresholds = query.fits[fit_index]
        gpus = thresholds[band][0]
        band_sql, band_params = fit_sql.band_sql(thresholds, band, gpu_kinds.shape_memory_sql(query.by_kind))
        # The kept counts hold prices in units: the limits are compared in units too.
        meets_sql, meets_params = preferences_sql.meets_sql(
            query, f"u.p * {int(gpus)}", limit=lambda value: ("%s", [fleet_counts.to_units(value)])
        )
        if not meets:
            meets_sql = f"NOT ({meets_sql})"
        low, high = bands[fit_index, band, meets]
        parts.append(
            f"SELECT {int(number)} AS band, u.p FROM {fleet_counts.SHAPES} m "  # noqa: S608  # nosec B608
            "CROSS JOIN LATERAL unnest(m.prices) AS u(p) "
            f"WHERE m.{fleet_counts.MARKET} = %s AND {status_sql} = {availability.SCREENED} AND {band_sql} "
            f"AND u.p >= %s AND u.p <= %s AND {meets_sql}"
        )
        params += [query.market, *status_params, *band_params, fleet_counts.to_units(low),
                   fleet_counts.to_units(high), *meets_params]
    prices: dict[tuple[int, int, bool], set] = {key: set() for key in keys}
    with database.reads().cursor() as cursor:
        cursor.execute(" UNION ".join(parts), params)
        for number, units in cursor.fetchall():
            prices[keys[number]].add(fleet_counts.from_units(units))
    return {key: sorted(found) for key, found in prices.items()}


def describe(
    query: FleetQuery,
    bands: dict[tuple[int, int, bool], tuple[Decimal, Decimal]],
    band_prices: dict[tuple[int, int, bool], list[Decimal]],
) -> list[offers.MachineOffer]:
    """The offers of the machines the answer describes (`shown_ids_sql`), in id order, with their
    measured speeds: one statement that walks the bands and reads each machine found with its provider,
    GPU type and speeds (`catalog.rows.offers_from_joined`)."""
    shown = shown_ids_sql(query, bands, band_prices)
    if shown is None:
        return []
    sql, params = shown
    with database.reads().cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.OFFERS_SELECT_SQL} FROM ({sql}) AS shown "  # noqa: S608  # nosec B608
            f"JOIN catalog_machine m ON m.id = shown.id {rows.OFFERS_JOINS_SQL} "
            f"ORDER BY {rows.OFFERS_ORDER_SQL}",
            params,
        )
        return rows.offers_from_joined(cursor.fetchall())


def shown_ids_sql(
    query: FleetQuery,
    bands: dict[tuple[int, int, bool], tuple[Decimal, Decimal]],
    band_prices: dict[tuple[int, int, bool], list[Decimal]],
) -> tuple[str, list] | None:
    """The statement (SQL, parameters) of the ids of the machines the answer describes, None where
    there are none: the first `machines_shown` meeting every preference, the first alternatives, and
    the cheapest meeting every preference at each lower precision, all in the engine's order (hourly
    price, price per GPU-hour, provider name, machine id, our id). Within a band of GPUs used, hourly
    price is a fixed multiple of the price per GPU-hour, so each band is read in price order from the
    price index, between the band's cheapest and dearest price (big GPUs cost more; the index would
    otherwise walk past every cheaper machine first, and past every dearer one when the band holds
    fewer machines than it may show), and the bands are merged by a window over the few rows they
    return."""
    screened, screened_params = availability_sql.available_sql(query.stale_cutoff, query.countries)
    parts, params = [], []
    limits = {}
    # A choice of a few countries: each band is walked country by country (the index by country and
    # price), so the walk never passes the other countries' machines. With more, one walk over all.
    countries = sorted(query.countries) if query.countries is not None else []
    by_country = " AND m.country = c.code" if 0 < len(countries) <= COUNTRY_WALKS else ""
    cheapest_bands = _cheapest_bands(query, bands)
    # Each band walked in the price order of the query's market preference, on that price's index.
    price = f"m.{MARKET_PRICE_COLUMNS[query.market]}"
    machine_memory = gpu_kinds.machine_memory_sql(query.by_kind)
    for (fit_index, band, meets), (cheapest_price, dearest_price) in sorted(bands.items()):
        if fit_index == 0:
            kind = 0 if meets else 1
            limit = query.machines_shown if meets else query.alternatives_shown
        elif meets:
            kind, limit = fit_index + 1, query.lower_shown  # the cheapest at a lower precision
            if limit == 1 and (fit_index, band) not in cheapest_bands:
                continue  # its cheapest machine costs more per hour than another band's
        else:
            continue
        if limit <= 0:
            continue
        limits[kind] = limit
        thresholds = query.fits[fit_index]
        gpus = thresholds[band][0]
        band_sql, band_params = fit_sql.band_sql(thresholds, band, machine_memory)
        meets_sql, meets_params = preferences_sql.meets_sql(query, f"{price} * %s", [gpus])
        if not meets:
            meets_sql = f"NOT ({meets_sql})"
        at_prices, price_params = "", []
        if (fit_index, band, meets) in band_prices:
            # A sparse band: only the prices its machines have, each an index probe.
            at_prices, price_params = f" AND {price} = ANY(%s::numeric[])", [
                band_prices[fit_index, band, meets]
            ]
        # Fixed SQL and integers; every value is a parameter.
        walk = (
            f"SELECT m.id, {int(kind)} AS kind, {price} * {int(gpus)} AS hourly, "  # noqa: S608  # nosec B608
            f"{price} AS price, {PROVIDER_PLACE} AS provider, "
            'm.provider_machine_id COLLATE "C" AS machine FROM catalog_machine m '
            f"WHERE {screened} AND {band_sql} AND {meets_sql}{by_country} "
            f"AND {price} >= %s AND {price} <= %s{at_prices} "
            f"ORDER BY {preferences_sql.order_by_sql(walk_order(price), implied=(HOURLY_PRICE,))} "
            f"LIMIT {int(limit)}"
        )
        walk_params = [
            *screened_params, *band_params, *meets_params, cheapest_price, dearest_price, *price_params
        ]
        if by_country:
            # The band's cheapest in each chosen country, each walk in that country's price order.
            parts.append(
                f"(SELECT w.* FROM unnest(%s::varchar[]) AS c(code) CROSS JOIN LATERAL ({walk}) AS w)"  # noqa: S608  # nosec B608
            )
            params += [countries, *walk_params]
        else:
            parts.append(f"({walk})")
            params += walk_params
    if not parts:
        return None
    keep = " OR ".join(
        f"(kind = {int(kind)} AND place <= {int(limit)})" for kind, limit in sorted(limits.items())
    )
    sql = (
        "SELECT DISTINCT id FROM (SELECT id, kind, ROW_NUMBER() OVER (PARTITION BY kind "  # noqa: S608  # nosec B608
        f"ORDER BY {preferences_sql.order_by_sql(MERGED_ORDER)}) AS place FROM ("
        + " UNION ALL ".join(parts)
        + f") AS banded) AS placed WHERE {keep}"
    )
    return sql, params


def _cheapest_bands(
    query: FleetQuery, bands: dict[tuple[int, int, bool], tuple[Decimal, Decimal]]
) -> set[tuple[int, int]]:
    """(precision index, band) of the bands, per lower precision, whose cheapest machine meeting every
    preference costs the least per hour there (the counts know each band's cheapest price per GPU-hour):
    the cheapest machine at that precision is in one of them, so only they are walked for it (several
    where they tie on the hour; the walk's order then decides, as always)."""
    hourly: dict[tuple[int, int], Decimal] = {
        (fit_index, band): cheapest * query.fits[fit_index][band][0]
        for (fit_index, band, meets), (cheapest, _) in bands.items()
        if fit_index and meets
    }
    least: dict[int, Decimal] = {}
    for (fit_index, _), price in hourly.items():
        least[fit_index] = min(price, least.get(fit_index, price))
    return {key for key, price in hourly.items() if price == least[key[0]]}
