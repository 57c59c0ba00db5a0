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
from catalog.counting.fleet_machines import PROVIDER_PLACE
from catalog.market_columns import MARKET_PRICE_COLUMNS
from catalog.markets import priced
from catalog.models import MARKET_FIELDS, Machine, MeasuredSpeed
from catalog.rows import SPEED_FIELDS
from sizing import offers
from sizing.fit import lowest_memory
from sizing.kinds import NO_KINDS, KindSpace
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


# A chosen row: what `SpeedRow` holds (the GPU type and provider by id until the last joins), and the count.
ROW_COLUMNS = (
    "speed_id, machine_id, price, free, memory_per_gpu_mib, tier, provider_id, machine_key, gpu_type_id, "
    "country, region, value, gpus, total"
)
# The listing order's columns over the fitting speed rows (`provider`: the provider's place in the
# providers' name order, `fleet_machines.PROVIDER_PLACE`, the same order as by name).
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
    # The kinds of GPU `fits` tell apart (`sizing.fit.by_kind`; `catalog.counting.gpu_kinds`): none, or
    # each machine is read at its memory raised by its kind.
    by_kind: KindSpace = NO_KINDS


def fitting_sql(
    query: SpeedQuery, source: str = latest_speeds.TABLE, source_params: tuple = (), within: str = "TRUE"
) -> tuple[str, list]:
    """A FROM item (AS f) of the speed rows `query` can use (see `SpeedQuery`), and its values: each
    machine's latest speed (from `source`, the kept table or a statement with its columns and
    `source_params`) that the availability rule lets through, that fits and meets the preferences, with
    its price under the market preference, GPUs used (`fit_gpus`) and order keys. `within` is SQL over
    `m` (a `source` row) narrowing the rows read, with no values of its own (a walk's part). Only
    what the walk indexes hold is read (`latest_speeds.walk_indexes_sql`): a walk reads their entries."""
    screened, screened_params = availability_sql.available_sql(query.stale_cutoff, query.countries)
    # Under another market preference than on demand only, the column the database keeps for that
    # choice (`catalog.market_columns`), kept beside each speed as the machine has it.
    price = f"m.{MARKET_PRICE_COLUMNS[query.market]}"
    gpus_sql, gpus_params = fit_sql.gpus_used_sql(query.fits, gpu_kinds.machine_memory_sql(query.by_kind))
    tier_sql, tier_params = preferences_sql.tier_sql(query)
    limits, limit_params = preferences_sql.meets_sql(query, "price * fit_gpus", tests=(HOURLY_OVER,))
    fitting = (
        f"(SELECT * FROM (SELECT m.speed_id, m.value, m.gpus, {price} AS price, {gpus_sql} AS fit_gpus, "  # noqa: S608  # nosec B608
        f"{PROVIDER_PLACE} AS provider, m.provider_id, m.provider_machine_id COLLATE \"C\" AS machine_key, "
        "m.machine_id, m.free_gpus AS free, m.gpu_type_id, m.memory_per_gpu_mib, m.tier, m.country, m.region "
        f"FROM {source} m WHERE m.model_slug = %s AND m.precision = %s AND {within} "
        f"AND {screened} AND {tier_sql} AND m.memory_per_gpu_mib >= %s) AS a "
        f"WHERE fit_gpus IS NOT NULL AND {limits}) AS f"
    )
    return fitting, [
        *gpus_params, *source_params, query.model_slug,
        query.precision, *screened_params, *tier_params, lowest_memory(query.fits), *limit_params,
    ]


# Within a speed class (same figure, same GPUs measured and used, same GPU type) the machines in the
# listing order, which there is the price's order (the hourly price is a fixed multiple of it).
CLASS_ORDER = preferences_sql.order_by_sql(SPEED_ORDER, implied=(HOURLY_PRICE,))
# The copies of a class a plan wants: enough for the target alone (target ÷ the usable speed of a copy)
# and the spares, over a row's (or a part's) value, gpus and fit_gpus; values: target, efficiency,
# redundancy.
WANTED_SQL = "CEIL(%s::numeric * {gpus} * 100 / ({value} * {fit_gpus} * %s::numeric)) + %s"
# The first machines by price per million tokens (rounded as shown, then the machines' own order).
PER_MILLION_ORDER = (
    f"ROUND(price * gpus * 1000000 / (value * 3600), 4), {preferences_sql.order_by_sql(SPEED_ORDER)}"
)
# Rows a walk may stop after, whatever the figures (a LIMIT is a bigint).
MOST_ROWS = 10**18


def chosen_sql(
    query: SpeedQuery, rows: str, total: str, columns: str = ROW_COLUMNS
) -> tuple[list[str], list]:
    """The SELECTs (of `columns`) of the rows a plan can need and the `keep` first by price per million
    tokens among `rows` (a FROM item of fitting speed rows, holding at least, of each speed class, its
    cheapest rows up to its wanted copies and its `keep` cheapest, and every row of the class cheaper
    than any of those), with `total` (SQL) as the count, and their values (see `speed_rows_counted`)."""
    chosen, chosen_params = [], []
    if query.target is not None:
        # Copies of the machines before this one in its class (same figure, same GPUs measured and
        # used, same GPU type: the plans on one GPU type need that type's cheapest copies too),
        # cheapest first, against the copies wanted, and what those copies cost.
        wanted = WANTED_SQL.format(gpus="gpus", value="value", fit_gpus="fit_gpus")
        classes = (
            f"SELECT *, {total} AS total, "  # noqa: S608  # nosec B608
            "COALESCE(SUM(free / fit_gpus) OVER w, 0) AS copies_before, "
            "COALESCE(SUM(free / fit_gpus * price * fit_gpus) OVER w, 0) AS price_before, "
            f"{wanted} AS wanted "
            f"FROM {rows} WINDOW w AS (PARTITION BY value, gpus, gpu_type_id, fit_gpus ORDER BY "
            f"{CLASS_ORDER} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
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
            f"SELECT {columns} FROM (SELECT *, MIN({completed}) OVER ({bound_over}) AS bound "  # noqa: S608  # nosec B608
            f"FROM ({classes}) AS k WHERE copies_before < wanted) AS c "
            "WHERE bound IS NULL OR price_before + price * fit_gpus <= bound"
        )
        chosen_params += [query.target, query.efficiency, query.redundancy]
    if query.keep > 0:
        chosen.append(
            f"(SELECT {columns} FROM (SELECT *, {total} AS total FROM {rows}) AS c "  # noqa: S608  # nosec B608
            f"ORDER BY {PER_MILLION_ORDER} LIMIT %s)"
        )
        chosen_params += [query.keep]
    return chosen, chosen_params


def speed_rows_counted(query: SpeedQuery) -> tuple[list[SpeedRow], int]:
    """PostgreSQL: the rows a plan can need and how many machines qualify, in one statement.

    Within a speed class every copy serves the same, so a cheaper machine is never worse: a plan
    uses at most as many copies of a class as reach the target alone plus the spare copies, so the
    class's cheapest machines up to that many copies are enough (per GPU type, for the plans on
    one GPU type). Those copies alone are a plan, so the cheapest of these one-class plans bounds
    the cheapest plan (on each GPU type, when those plans are asked for), and a copy whose class's
    copies up to and including it cost more is left out too. The `keep` machines with the lowest
    price per million tokens come as well (the sorted list's first page). The rest are counted,
    not fetched.

    The rows are read by walks over the kept table's index of the query's market price
    (`latest_speeds.walk_indexes_sql`), one per *part* of a class (its machines of one memory per GPU,
    which decides the GPUs they use), in price order, each left after as many rows as the class wants
    copies and as the `keep`, and the rest of the last price read (the class's order breaks ties at one
    price; the walk reads the index entries alone and sorts nothing): every machine holds at least one
    copy, so a class's rows up to its wanted copies are among its parts' first that many, and every
    row of the class before one of those is too (the windows over the walked rows see what they would
    over the whole class). Within a class the price per million tokens grows with the price, so the
    `keep` first of all are among the parts' `keep` first. The parts are found by skipping through the
    index from one to the next: as many as distinct figures, whatever the number of machines. The
    count alone reads every fitting entry of the index (and nothing else).

    The latest speed of each machine comes from the table the writes keep
    (`catalog.counting.latest_speeds`); the tests work the same rows out by windows over every fitting
    speed, worked out from the speeds and machines (`tests/catalog/scan_oracle.py`). Either way the
    availability rule, fit and preferences apply at request time."""
    if query.target is None and query.keep <= 0:
        return [], 0
    table = latest_speeds.TABLE
    model = [query.model_slug, query.precision]
    in_index = latest_speeds.walk_index_condition()
    # Each (figure, GPUs measured, GPU type, memory per GPU) of the model and precision among the
    # machines the walk indexes hold, one index probe each.
    keys = "value, gpus, gpu_type_id, memory_per_gpu_mib"
    parts = (
        f"parts AS ((SELECT {keys} FROM {table} "  # noqa: S608  # nosec B608
        f"WHERE model_slug = %s AND precision = %s AND {in_index} ORDER BY {keys} LIMIT 1) "
        f"UNION ALL SELECT n.* FROM parts c CROSS JOIN LATERAL (SELECT {keys} FROM {table} "
        f"WHERE model_slug = %s AND precision = %s AND {in_index} AND ({keys}) > "
        "(c.value, c.gpus, c.gpu_type_id, c.memory_per_gpu_mib) "
        f"ORDER BY {keys} LIMIT 1) AS n)"
    )
    part_gpus, part_gpus_params = _gpus_at_memory_sql(query, "p")
    walk_from, walk_params = fitting_sql(
        query, within="m.value = c.value AND m.gpus = c.gpus AND m.gpu_type_id = c.gpu_type_id "
        "AND m.memory_per_gpu_mib = c.memory_per_gpu_mib",
    )
    wanted_sql, wanted_params = "0", []
    if query.target is not None:
        wanted_sql = WANTED_SQL.format(gpus="c.gpus", value="c.value", fit_gpus="c.fit_gpus")
        wanted_params = [query.target, query.efficiency, query.redundancy]
    walked = (
        f"walked AS MATERIALIZED (SELECT w.* FROM (SELECT *, {part_gpus} AS fit_gpus "  # noqa: S608  # nosec B608
        "FROM parts p) AS c CROSS JOIN LATERAL "
        f"(SELECT f.* FROM {walk_from} ORDER BY price "
        f"FETCH FIRST (LEAST(GREATEST({wanted_sql}, %s), {MOST_ROWS})::bigint) ROWS WITH TIES) AS w "
        "WHERE c.fit_gpus IS NOT NULL)"
    )
    counted_from, counted_params = fitting_sql(query)
    counted = f"counted AS MATERIALIZED (SELECT COUNT(*) AS total FROM {counted_from})"  # noqa: S608  # nosec B608
    chosen, chosen_params = chosen_sql(query, "walked", "(SELECT total FROM counted)")
    # Only what the plan's search and the sort weigh travels; the GPU type's and provider's names are
    # joined last, for the chosen rows alone.
    sql = (
        f"WITH RECURSIVE {parts}, {walked}, {counted} "  # noqa: S608  # nosec B608
        f"SELECT {CHOSEN_SELECT} FROM ({' UNION '.join(chosen)}) AS r {CHOSEN_JOINS} ORDER BY r.machine_id"
    )
    params = [
        *model, *model, *part_gpus_params, *walk_params, *wanted_params, max(query.keep, 0),
        *counted_params, *chosen_params,
    ]
    with database.reads().cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    return as_speed_rows(fetched)


# The chosen rows (`r`, ROW_COLUMNS) as `as_speed_rows` reads them.
CHOSEN_SELECT = (
    "r.speed_id, r.machine_id, r.price, r.free, r.memory_per_gpu_mib, r.tier, pr.name, r.machine_key, "
    "g.name, r.country, r.region, r.value, r.gpus, r.total"
)
CHOSEN_JOINS = (
    "JOIN catalog_provider pr ON pr.id = r.provider_id JOIN catalog_gputype g ON g.id = r.gpu_type_id"
)


def _gpus_at_memory_sql(query: SpeedQuery, part: str) -> tuple[str, list]:
    """CASE expression over a walk's part `part` (its GPU type and memory per GPU): the GPUs each of
    its machines uses if it fits (`fit_sql.gpus_used_sql`: the first threshold its memory meets), NULL
    where its memory meets none."""
    memory = gpu_kinds.machine_memory_sql(query.by_kind, part)
    whens, params = [], []
    for gpus, need_mib in query.fits:
        whens.append(f"WHEN {memory} >= %s THEN %s::integer")
        params += [need_mib, gpus]
    return "(CASE " + " ".join(whens) + " END)", params


def as_speed_rows(fetched: list[tuple]) -> tuple[list[SpeedRow], int]:
    """The rows of a statement of the chosen rows (CHOSEN_SELECT), and the count."""
    total = fetched[0][-1] if fetched else 0
    return [SpeedRow._make((*row[:9], row[9] or None, *row[10:13], None)) for row in fetched], total
