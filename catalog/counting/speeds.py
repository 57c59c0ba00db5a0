"""Measured speeds of one model, for the throughput plan and the price-per-million sort: the machines
with a tokens/s speed for a model and precision, with the latest one of each."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import NamedTuple, cast

from django.db.models import F

from catalog import availability, database
from catalog import preferences as catalog_preferences
from catalog.counting import availability_sql, fit_sql, gpu_kinds, latest_speeds, preferences_sql
from catalog.market_columns import MARKET_PRICE_COLUMNS
from catalog.markets import priced
from catalog.models import MARKET_FIELDS, Machine, MeasuredSpeed
from catalog.rows import SPEED_FIELDS
from sizing import offers
from sizing.fit import lowest_memory
from sizing.markets import DEFAULT_MARKET, MarketPrice
from sizing.preferences import HOURLY_OVER, HOURLY_PRICE
from sizing.speeds import speed_for


class SpeedRow(NamedTuple):
    """A machine the availability rule lets through, with the latest tokens/s speed measured on it (on
    its own GPU type) for one model and precision: what a plan and the price-per-million sort weigh.
    Thousands of these make a large plan's search, so the measurement's details are read apart, for
    the machines an answer shows (`measured_speeds`)."""

    speed_id: int
    machine_id: int
    # Under the market preference: the cheapest of the markets it lets in (`sizing.markets.priced_in`).
    price_per_gpu_hour: Decimal
    free_gpus: int
    memory_per_gpu_mib: int
    tier: str
    provider: str
    provider_machine_id: str
    gpu_type: str
    country: str | None
    region: str
    value: Decimal  # tokens/s as measured
    gpus: int  # GPUs the measurement ran on
    # As the feed reports it (read by the embedded run, whose rows the engine screens by the preferences;
    # the counted rows met them in SQL and leave it None).
    reliability: Decimal | None = None


def speed_rows(
    *,
    stale_cutoff: datetime,
    countries: frozenset[str] | None,
    tier: str,
    model_slug: str,
    precision: int,
    min_memory_mib: int,
    min_reliability: Decimal | None = None,
    market: str = DEFAULT_MARKET,
) -> list[SpeedRow]:
    """Each machine available now in the chosen countries and tier, with at least `min_memory_mib`
    per GPU, that carries a tokens/s speed for this model and precision, with its latest one
    (`sizing.throughput_plan.speed_for`), in machine order, at its price under the market preference
    `market`. One query, driven by the speeds' index: a fraction of the fleet has any."""
    machines = Machine.objects.filter(availability.available_q(stale_cutoff, countries))
    # a tier the query checked
    asked = offers.Preferences(tier=cast(offers.TierChoice, tier), min_reliability=min_reliability)
    machines = machines.filter(catalog_preferences.tier_q(asked))
    machines = machines.filter(memory_per_gpu_mib__gte=min_memory_mib)
    rows = (
        MeasuredSpeed.objects.filter(
            model_slug=model_slug,
            precision=precision,
            unit=MeasuredSpeed.Unit.TOKENS_PER_SECOND,
            machine__in=machines,
            gpu_type_id=F("machine__gpu_type_id"),
        )
        .order_by("machine_id", "pk")
        .values_list(
            "pk", "machine_id", "machine__price_per_gpu_hour", "machine__free_gpus",
            "machine__memory_per_gpu_mib", "machine__tier", "machine__provider__name",
            "machine__provider_machine_id", "machine__gpu_type__name", "machine__country", "machine__region",
            "value", "gpus", "measured_at", "machine__reliability",
            *(f"machine__{name}" for name in MARKET_FIELDS),
        )
    )
    by_machine: dict[int, list[tuple]] = {}
    for row in rows:
        by_machine.setdefault(row[1], []).append(row)
    found = []
    for measured in by_machine.values():
        speeds = [
            offers.MeasuredSpeed(model_slug=model_slug, precision=precision, value=row[11],
                                 unit="tokens/s", measured_at=row[13], gpus=row[12])
            for row in measured
        ]
        latest = speed_for(speeds, model_slug, precision)
        row = measured[speeds.index(cast(offers.MeasuredSpeed, latest))]  # speeds is never empty
        price = priced(dict(zip(MARKET_FIELDS, row[15:], strict=True)), market).price_per_gpu_hour
        found.append(SpeedRow._make((*row[:2], price, *row[3:9], row[9] or None, *row[10:13], row[14])))
    return found


def measured_speeds(
    speed_ids, choice: str
) -> tuple[dict[int, offers.MeasuredSpeed], dict[int, MarketPrice]]:
    """The measurements behind these speed ids, with everything a plan's rows show of them, and the
    market and price each one's machine is priced at under the market preference `choice`
    (`catalog.markets.priced`), by machine id: one statement for both."""
    speed_ids = list(speed_ids)
    if not speed_ids:
        return {}, {}
    machine_fields = [f"machine__{name}" for name in MARKET_FIELDS]
    rows = MeasuredSpeed.objects.filter(pk__in=speed_ids).values_list(
        "pk", "machine_id", *SPEED_FIELDS, *machine_fields
    )
    speeds, markets = {}, {}
    split = 2 + len(SPEED_FIELDS)
    for row in rows:
        speeds[row[0]] = offers.MeasuredSpeed(**dict(zip(SPEED_FIELDS, row[2:split], strict=True)))
        markets[row[1]] = priced(dict(zip(MARKET_FIELDS, row[split:], strict=True)), choice)
    return speeds, markets


# A chosen row: what `SpeedRow` holds (the GPU type by id until the last join), and the count.
ROW_COLUMNS = (
    "speed_id, machine_id, price, free, memory_per_gpu_mib, tier, provider, machine_key, gpu_type_id, "
    "country, region, value, gpus, total"
)


# The listing order's columns over the fitting speed rows.
SPEED_ORDER = {
    "hourly_price": "price * fit_gpus", "price_per_gpu_hour": "price", "provider": "provider",
    "provider_machine_id": "machine_key", "id": "machine_id",
}


@dataclass(frozen=True)
class SpeedQuery:
    """The machines with a speed for one model and precision that a plan or the price-per-million sort
    may use: available now in the chosen countries and tier (with the minimum reliability), fitting
    (`fits`: `sizing.fit` thresholds), within the price limit and budget, the latest measurement of each."""

    stale_cutoff: datetime
    countries: frozenset[str] | None
    tier: str
    model_slug: str
    precision: int
    fits: tuple[tuple[int, int], ...]
    max_price_per_hour: Decimal | None
    budget: Decimal | None
    # Per speed class (same figure, same GPUs measured and used), keep the cheapest machines: enough
    # copies for the target alone (target ÷ (usable speed of a copy)) plus the spares, and `keep`.
    target: Decimal | None
    efficiency: Decimal
    redundancy: int
    keep: int
    # The plans wanted on each GPU type too: a copy is then weighed against its own type's plans.
    per_gpu_type: bool = False
    min_reliability: Decimal | None = None  # 0 to 1, two places; None: any
    # The market preference (`sizing.markets.MARKET_CHOICES`): the price each machine is weighed at.
    market: str = DEFAULT_MARKET
    # Whether `fits` are by kind of GPU (`sizing.fit.by_kind`; `catalog.counting.gpu_kinds`).
    by_kind: bool = False


def speed_rows_counted(
    query: SpeedQuery, source: str = latest_speeds.TABLE, source_params: tuple = ()
) -> tuple[list[SpeedRow], int]:
    """PostgreSQL: the rows a plan can need and how many machines qualify, in one statement.

    Within a speed class every copy serves the same, so a cheaper machine is never worse: a plan
    uses at most as many copies of a class as reach the target alone plus the spare copies, so the
    class's cheapest machines up to that many copies are enough (per GPU type, for the plans on
    one GPU type). Those copies alone are a plan, so the cheapest of these one-class plans bounds
    the cheapest plan (on each GPU type, when those plans are asked for), and a copy whose class's
    copies up to and including it cost more is left out too. The `keep` machines with the lowest
    price per million tokens come as well (the sorted list's first page). The rest are counted,
    not fetched.

    The latest speed of each machine comes from the table the writes keep
    (`catalog.counting.latest_speeds`); the tests pass as `source` a statement that works it out from
    the speeds and machines instead, with its values (the reference the kept table is tested against,
    `tests/catalog/scan_oracle.py`). Either way the availability rule, fit and preferences apply at
    request time.

    Under another market preference than on demand only, each machine's price is the column the database
    keeps for that choice on catalog_machine (`catalog.market_columns`), joined by its key."""
    screened, screened_params = availability_sql.available_sql(query.stale_cutoff, query.countries)
    if query.market == DEFAULT_MARKET:
        price, priced_join = "m.price_per_gpu_hour", ""
    else:
        price = f"priced.{MARKET_PRICE_COLUMNS[query.market]}"
        priced_join = "JOIN catalog_machine priced ON priced.id = m.machine_id "

    gpus_sql, gpus_params = fit_sql.gpus_used_sql(query.fits, gpu_kinds.machine_memory_sql(query.by_kind))
    tier_sql, tier_params = preferences_sql.tier_sql(query)
    limits, limit_params = preferences_sql.meets_sql(query, "price * fit_gpus", tests=(HOURLY_OVER,))
    fitting = (
        f"(SELECT * FROM (SELECT m.speed_id, m.value, m.gpus, {price} AS price, "  # noqa: S608  # nosec B608
        f"{gpus_sql} AS fit_gpus, "
        'p.name COLLATE "C" AS provider, m.provider_machine_id COLLATE "C" AS machine_key, '
        "m.machine_id, m.free_gpus AS free, m.gpu_type_id, m.memory_per_gpu_mib, m.tier, m.country, m.region "
        f"FROM {source} m JOIN catalog_provider p ON p.id = m.provider_id {priced_join}"
        "WHERE m.model_slug = %s AND m.precision = %s "
        f"AND {screened} AND {tier_sql} AND m.memory_per_gpu_mib >= %s) AS a "
        f"WHERE fit_gpus IS NOT NULL AND {limits}) AS f"
    )
    fitting_params = [
        *gpus_params, *source_params, query.model_slug,
        query.precision, *screened_params, *tier_params, lowest_memory(query.fits), *limit_params,
    ]
    chosen, chosen_params = [], []
    if query.target is not None:
        # Copies of the machines before this one in its class (same figure, same GPUs measured and
        # used, same GPU type: the plans on one GPU type need that type's cheapest copies too),
        # cheapest first, against the copies wanted, and what those copies cost.
        classes = (
            f"SELECT *, COUNT(*) OVER () AS total, "  # noqa: S608  # nosec B608
            "COALESCE(SUM(free / fit_gpus) OVER w, 0) AS copies_before, "
            "COALESCE(SUM(free / fit_gpus * price * fit_gpus) OVER w, 0) AS price_before, "
            "CEIL(%s::numeric * gpus * 100 / (value * fit_gpus * %s::numeric)) + %s AS wanted "
            f"FROM {fitting} WINDOW w AS (PARTITION BY value, gpus, gpu_type_id, fit_gpus ORDER BY "
            f"{preferences_sql.order_by_sql(SPEED_ORDER, implied=(HOURLY_PRICE,))} "
            "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
        )
        # A class's wanted copies alone are a plan (spares as fast as the rest): the cheapest such
        # price bounds every plan, and a plan takes a class's copies cheapest first, so a copy whose
        # class's copies up to it cost more than that is in no cheapest plan.
        completed = (
            "CASE WHEN copies_before + free / fit_gpus >= wanted "
            "THEN price_before + (wanted - copies_before) * price * fit_gpus END"
        )
        bound_over = "PARTITION BY gpu_type_id" if query.per_gpu_type else ""
        chosen.append(
            f"SELECT {ROW_COLUMNS} FROM (SELECT *, MIN({completed}) OVER ({bound_over}) AS bound "  # noqa: S608  # nosec B608
            f"FROM ({classes}) AS k WHERE copies_before < wanted) AS c "
            "WHERE bound IS NULL OR price_before + price * fit_gpus <= bound"
        )
        chosen_params += [query.target, query.efficiency, query.redundancy, *fitting_params]
    if query.keep > 0:
        # The first machines by price per million tokens (rounded as shown, then the machines' own order).
        chosen.append(
            f"(SELECT {ROW_COLUMNS} FROM (SELECT *, COUNT(*) OVER () AS total FROM {fitting}) AS c "  # noqa: S608  # nosec B608
            "ORDER BY ROUND(price * gpus * 1000000 / (value * 3600), 4), "
            f"{preferences_sql.order_by_sql(SPEED_ORDER)} LIMIT %s)"
        )
        chosen_params += [*fitting_params, query.keep]
    if not chosen:
        return [], 0
    # Only what the plan's search and the sort weigh travels; the GPU type's name is joined last.
    sql = (
        f"SELECT r.speed_id, r.machine_id, r.price, r.free, r.memory_per_gpu_mib, r.tier, r.provider, "  # noqa: S608  # nosec B608
        "r.machine_key, g.name, r.country, r.region, r.value, r.gpus, r.total "
        f"FROM ({' UNION '.join(chosen)}) AS r "
        "JOIN catalog_gputype g ON g.id = r.gpu_type_id ORDER BY r.machine_id"
    )
    with database.reads().cursor() as cursor:
        cursor.execute(sql, chosen_params)
        fetched = cursor.fetchall()
    total = fetched[0][-1] if fetched else 0
    return [SpeedRow._make((*row[:9], row[9] or None, *row[10:13], None)) for row in fetched], total
