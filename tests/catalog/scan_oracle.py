"""The reference the counting engine's kept tables are tested against: the same answers worked out by
scanning every machine (and every measured speed) at request time, the way the wizard counted before
the writes kept counts. Test code only: the product reads the kept tables.

`counted_fleet` and `speed_rows_counted` take the place of `catalog.counting.fleet.counted_fleet` and
`catalog.counting.speeds.speed_rows_counted`, and must agree with them field for field."""
from __future__ import annotations

from decimal import Decimal

from django.db import connection

from catalog import availability
from catalog.counting import availability_sql, fit_sql, fleet, fleet_counts, gpu_kinds, latest_speeds, speeds

# Bound here: a test may stand a comparing wrapper in for the modules' functions.
from catalog.counting.fleet import counted_fleet as kept_counted_fleet
from catalog.counting.fleet_query import FleetQuery
from catalog.market_columns import MARKET_PRICE_COLUMNS
from sizing import reasons


class ScannedCounts:
    """`fleet.Counts` over catalog_machine itself: one grouped scan of every machine."""

    lists_prices = False  # the kept counts' prices are what is under test

    def groups(
        self, query: FleetQuery, status_sql: str, status_params: list, memory_edges: list[int],
        price_edges: list[Decimal],
    ) -> list[fleet.CountRow]:
        """Every machine counted in one grouped scan, at its price under the query's market preference."""
        price = f"m.{MARKET_PRICE_COLUMNS[query.market]}"
        in_fleet = availability_sql.in_fleet_sql()
        memory = gpu_kinds.machine_memory_sql(query.by_kind)
        details = ["m.tier", f"width_bucket({memory}::bigint, %s::bigint[])", "m.free_gpus"]
        detail_params: list = [memory_edges or [0]]
        if price_edges:
            details.append(f"width_bucket({price}, %s::numeric[])")
            detail_params.append(price_edges)
        keys = 1 + len(details)
        # The reliability as the kept counts keep it (rounded down), apart only with a minimum chosen.
        reliability = (
            fleet_counts.KEPT_AS["reliability"] if query.min_reliability is not None else "NULL::numeric"
        )
        aggregates = (
            f"COUNT(*), MIN({price}), MAX(m.memory_per_gpu_mib), "
            f"{fleet_counts.seen_microseconds('MAX(m.last_seen_at)')}, "
            f"{fleet_counts.seen_microseconds('MIN(m.last_seen_at)')}, MAX({price})"
        )
        group_by = ", ".join(str(n) for n in [*range(1, keys + 1), keys + 7])
        # Built from fixed SQL only; every value travels as a parameter.
        if query.countries is None:
            sql = (
                f"SELECT {status_sql}, {', '.join(details)}, {aggregates}, {reliability} "  # noqa: S608  # nosec B608
                f"FROM catalog_machine m WHERE {in_fleet} GROUP BY {group_by}"
            )
            params = status_params + detail_params
        else:
            # With a choice of countries most machines are left out; they need only a count, so the
            # status is worked out once per machine (OFFSET 0 keeps the subquery apart) and the
            # detail keys only for the machines screened in.
            screened = availability.SCREENED
            guarded = ", ".join(f"CASE WHEN m.status = {screened} THEN {detail} END" for detail in details)
            sql = (
                f"SELECT m.status, {guarded}, {aggregates}, "  # noqa: S608  # nosec B608
                f"CASE WHEN m.status = {screened} THEN {reliability} END FROM ("
                f"SELECT {status_sql} AS status, m.tier, m.memory_per_gpu_mib, m.gpu_type_id, m.free_gpus, "
                "m.reliability, "
                f"{price} AS {MARKET_PRICE_COLUMNS[query.market]}, m.last_seen_at "
                f"FROM catalog_machine m WHERE {in_fleet} "
                f"OFFSET 0) AS m GROUP BY {group_by}"
            )
            params = detail_params + status_params
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return [fleet.count_row(row, bool(price_edges)) for row in cursor.fetchall()]

    def count_at_cheapest(self, query: FleetQuery, only_cheapest: dict[str, Decimal]) -> dict[str, int]:
        """For the empty answer's hints: machines that break only the price limit (or only the budget)
        and cost exactly the cheapest such hourly price, counted over the machines (at their prices under
        the query's market preference)."""
        price = f"m.{MARKET_PRICE_COLUMNS[query.market]}"
        screened, params = availability_sql.available_sql(query.stale_cutoff, query.countries)
        thresholds = query.fits[0]
        gpus_sql, gpus_params = fit_sql.gpus_used_sql(thresholds, gpu_kinds.machine_memory_sql(query.by_kind))
        tier_ok = "TRUE" if query.tier == "both" else "m.tier = %s"
        tier_params = [] if query.tier == "both" else [query.tier]
        if query.min_reliability is not None:
            tier_ok += " AND m.reliability >= %s"
            tier_params.append(query.min_reliability)
        filters, filter_params = [], []
        for code, limit, other in (
            (reasons.BREAK_MAX_PRICE, query.max_price_per_hour, query.budget),
            (reasons.BREAK_BUDGET, query.budget, query.max_price_per_hour),
        ):
            if code not in only_cheapest:
                continue
            other_ok = "TRUE" if other is None else f"{price} * {gpus_sql} <= %s"
            other_params = [] if other is None else [*gpus_params, other]
            filters.append(
                f"COUNT(*) FILTER (WHERE {tier_ok} AND {other_ok} "
                f"AND {price} * {gpus_sql} > %s AND {price} * {gpus_sql} = %s)"
            )
            filter_params += [*tier_params, *other_params, *gpus_params, limit, *gpus_params, only_cheapest[code]]
        codes = [code for code in (reasons.BREAK_MAX_PRICE, reasons.BREAK_BUDGET) if code in only_cheapest]
        # Fixed SQL and integers; every value is a parameter.
        sql = (
            f"SELECT {', '.join(filters)} FROM catalog_machine m "  # noqa: S608  # nosec B608
            f"WHERE {screened} AND {gpus_sql} IS NOT NULL"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, filter_params + params + gpus_params)
            values = cursor.fetchone()
        return dict(zip(codes, values, strict=True))


SCANNED_COUNTS = ScannedCounts()


def counted_fleet(query: FleetQuery) -> fleet.FleetCount:
    """`fleet.counted_fleet` with every machine scanned instead of the kept counts."""
    return kept_counted_fleet(query, SCANNED_COUNTS)


def speed_rows_counted(query: speeds.SpeedQuery) -> tuple[list[speeds.SpeedRow], int]:
    """`speeds.speed_rows_counted` worked out as it was before the class walks: windows over every
    fitting speed row, each machine's latest speed worked out from the speeds and machines (the
    statement the kept table's triggers run) instead of read from the kept table."""
    source = f"({latest_speeds.latest_sql('s.model_slug = %s AND s.precision = %s')})"
    fitting, fitting_params = speeds.fitting_sql(query, source, (query.model_slug, query.precision))
    counted = f"(SELECT *, COUNT(*) OVER () AS counted FROM {fitting}) AS f"
    chosen, chosen_params = speeds.chosen_sql(query, counted, "counted")
    if not chosen:
        return [], 0
    # Each part reads the fitting rows with their own values.
    params: list = []
    parts = iter(chosen_params)
    if query.target is not None:
        params += [next(parts), next(parts), next(parts), *fitting_params]
    if query.keep > 0:
        params += [*fitting_params, next(parts)]
    sql = (
        f"SELECT {speeds.CHOSEN_SELECT} FROM ({' UNION '.join(chosen)}) AS r "  # noqa: S608  # nosec B608
        f"{speeds.CHOSEN_JOINS} ORDER BY r.machine_id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return speeds.as_speed_rows(cursor.fetchall())
