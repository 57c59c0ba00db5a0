# SQL here is assembled from this module's constants and the compiled rule; every value travels as
# a parameter (ruff's S608 cannot tell).
# ruff: noqa: S608
"""Fleet counts kept by the writes (PostgreSQL): the wizard counts shapes of machines, not machines.

A machine's *shape* is what the counting query reads of it, with its price apart: the fields the
availability rule checks (`sizing.availability.RULE`, as compiled by `catalog.counting.availability_sql`) and
the machine's tier. `catalog_fleetshape` holds one row per shape (split into chunks of at most
CHUNK prices), with the shape's distinct prices in order (`prices`, in units of 1/10,000 of a dollar)
and, for each, how many of the shape's machines cost that price or less (`cum`). Any price band's
count is then two binary searches (`width_bucket`) per row, whatever the number of machines.

Who keeps it: PostgreSQL triggers on catalog_machine, so every write path counts (the provider
refresh's bulk upserts, Launch and Stop, the admin, queryset updates, deletes, TRUNCATE) with no
service able to forget it. Each statement appends its net change per shape and price to
`catalog_fleetdelta` (unlogged: its rows never outlive their transaction); at commit one deferred
trigger merges the transaction's changes into the shapes, taking the shapes' lock stripes in
ascending order, so two writers never deadlock and never wait on each other before they commit
(a Launch does not wait behind a provider's refresh for the counts). Readers see the counts change
exactly when the machines do. A reader inside a transaction that wrote machines merges that
transaction's changes first (`merge_pending`).

Staleness: the shape keeps `last_seen_at` exactly (sentinels aside, below), and the reader applies
the stale cutoff to it with the same compiled rule as the scan, so the answer is the scan's at any
instant, with nothing to sweep: a machine crosses the cutoff in the counts at the very moment it
does in the table. A refresh writes one `last_seen_at` per provider, so this adds rows per provider
refreshed at a different instant, not per machine.

The preferences' columns (`sizing.preferences.MACHINE_FIELDS`) are kept as the machine has them, but for
the reliability, kept rounded down to the places a minimum reliability takes (`RELIABILITY_PLACES`): a
machine meets a minimum exactly when its rounded figure does, and the shapes of a fleet multiply by at
most the 101 figures (and "not reported") rather than by every figure a feed reports.

Fields the rule never reaches for a machine (those after its first failing check that needs no
query value, e.g. everything after "offline") are stored as NULL, so machines left out for the same
reason share a row; price and tier are kept only for machines the rule can let through.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal

from django.db import DEFAULT_DB_ALIAS, connection

from catalog import availability, preferences
from catalog.counting import availability_sql, folding, gpu_kinds, preferences_sql
from catalog.counting.gpu_kinds import KIND_COLUMN
from catalog.counting.layout import layout
from catalog.counting.params import named
from catalog.market_columns import MARKET_PRICE_COLUMNS
from sizing.availability import BEFORE_CUTOFF, OUTSIDE, RULE
from sizing.kinds import NO_KINDS, KindSpace
from sizing.limits import PRICE_UNITS  # price_per_gpu_hour has 4 places: integers of 1/10,000
from sizing.markets import DEFAULT_MARKET, MARKET_CHOICES
from sizing.preferences import MACHINE_FIELDS, RELIABILITY_PLACES

SHAPES = "catalog_fleetshape"
DELTAS = "catalog_fleetdelta"
PENDING = "catalog_fleetpending"
CHUNK = 256  # prices per shape row: rows stay inline (no TOAST), about 3 KiB at most
LOCK_STRIPES = 64
LOCK_NAMESPACE = 0x4E4C46  # "NLF": two-key advisory locks (namespace, stripe)
# Checks that read a query's values (the stale cutoff, the chosen countries): their fields are kept
# as they are, and the reader evaluates them. Every other test is decided when the machine is written.
QUERY_TESTS = frozenset({BEFORE_CUTOFF, OUTSIDE})

# Column types of the shape, as on catalog_machine.
COLUMN_TYPES = {
    "is_available": "boolean",
    "provider_is_active": "boolean",
    "last_seen_at": "timestamp with time zone",
    "country": "varchar(2)",
    "memory_per_gpu_mib": "integer",
    "free_gpus": "smallint",
    "tier": "varchar(10)",
    "reliability": f"numeric({RELIABILITY_PLACES + 1},{RELIABILITY_PLACES})",
    "market": "varchar(13)",
    KIND_COLUMN: "smallint",
}
# Each machine is counted once per market preference (`sizing.markets.MARKET_CHOICES`), at its price
# under that choice (the column of `catalog.models.MARKET_PRICE_COLUMNS`): a shape's row is of one
# choice (`market`), and every reader reads the rows of the query's choice alone. The counts are three
# times as many rows, whatever the number of machines; an answer reads the same number of them under
# every choice.
MARKET = "market"
# A counted machine's GPU type's kind, beside the machine's columns (`_counted_rows`).
MACHINE_KIND = "gpu_type_kind"
# The preferences' columns the shape keeps otherwise than the machine has them (SQL over `m`).
KEPT_AS = {
    "reliability": f"(floor(m.reliability * {10 ** RELIABILITY_PLACES}) / {10 ** RELIABILITY_PLACES})"
    f"::{COLUMN_TYPES['reliability']}",
}
# Not checked by the availability rule: the columns the preferences compare (`sizing.preferences`),
# which the counting query groups by.
EXTRA_COLUMNS = tuple(preferences.COLUMNS[field] for field in MACHINE_FIELDS)


def _counted_checks():
    return [check for check in RULE if check.counted]


def key_columns() -> list[str]:
    """The shape's columns: every column a counted check reads, in the rule's order, then tier."""
    columns: list[str] = []
    for check in _counted_checks():
        column = availability.COLUMNS[check.field]
        if column not in columns:
            columns.append(column)
    return columns + [c for c in EXTRA_COLUMNS if c not in columns] + [KIND_COLUMN, MARKET]


def _projection() -> tuple[list[str], str]:
    """SQL over `m` (a catalog_machine row) for each shape column, and for the price in units."""
    earlier: list[str] = []  # failures of checks decided at write time, met so far
    exprs: dict[str, str] = {}

    def unless_failed(sql: str, sentinel: str) -> str:
        if not earlier:
            return sql
        return f"CASE WHEN {' OR '.join(earlier)} THEN {sentinel} ELSE {sql} END"

    for check in _counted_checks():
        column = availability.COLUMNS[check.field]
        if column not in exprs:
            exprs[column] = unless_failed(f"m.{column}", "NULL")
        if check.test not in QUERY_TESTS:
            fails, params = availability_sql.fails_sql(check, datetime.min, None)
            if params:
                raise ValueError(f"a check decided at write time takes no values: {check}")
            earlier.append(f"({fails})")
    for column in EXTRA_COLUMNS:
        exprs.setdefault(column, unless_failed(KEPT_AS.get(column, f"m.{column}"), "NULL"))
    exprs[KIND_COLUMN] = unless_failed(f"m.{MACHINE_KIND}", "NULL")
    exprs[MARKET] = f"k.{MARKET}"
    by_choice = " ".join(
        f"WHEN '{choice}' THEN m.{column}" for choice, column in MARKET_PRICE_COLUMNS.items()
    )
    price = unless_failed(f"(CASE k.{MARKET} {by_choice} END * {PRICE_UNITS})::bigint", "0")
    return [exprs[column] for column in key_columns()], price


def _counted_rows(table: str, n: int) -> str:
    """The rows of `table` (catalog_machine's columns) as `_delta_select` counts them: each with its GPU
    type's kind (`MACHINE_KIND`) and `n`. The kind is joined, once per row: for an update of 100,000
    machines the trigger's statement took 2.6 s working it out from the GPU type's name per machine and
    market, 1.4 s looking the kept kind up per machine and market, 0.7 s joined (0.65 s without it)."""
    return (
        f"SELECT m.*, g.{KIND_COLUMN} AS {MACHINE_KIND}, {n} AS n FROM {table} AS m "  # nosec B608
        "LEFT JOIN catalog_gputype AS g ON g.id = m.gpu_type_id"
    )


def _shape_text(alias: str) -> str:
    """One text per shape, whatever the session's time zone (timestamps as epoch seconds)."""
    parts = [
        f"quote_nullable(extract(epoch FROM {alias}.{c}))" if COLUMN_TYPES[c].startswith("timestamp")
        else f"quote_nullable({alias}.{c})"
        for c in key_columns()
    ]
    return "concat_ws('|', " + ", ".join(parts) + ")"


def _delta_select(source: str) -> str:
    """SELECT of (shape, key columns..., price, n) over `source`, `_counted_rows`."""
    columns = key_columns()
    exprs, price = _projection()
    choices = ", ".join(f"('{choice}')" for choice in MARKET_PRICE_COLUMNS)
    projected = ", ".join(f"{expr} AS {column}" for expr, column in zip(exprs, columns, strict=True))
    plain = ", ".join(f"p.{c}" for c in columns)
    return (
        f"SELECT {_shape_text('p')} AS shape, {plain}, p.price, SUM(p.n)::integer AS n "  # nosec B608
        f"FROM (SELECT {projected}, {price} AS price, m.n FROM ({source}) AS m "
        f"CROSS JOIN (VALUES {choices}) AS k({MARKET}) "
        f"WHERE {availability_sql.in_fleet_sql()}) AS p "
        f"GROUP BY {plain}, p.price HAVING SUM(p.n) <> 0"
    )


def _chunked_insert(entries: str, keys: str) -> str:
    """INSERT into the shapes from `entries` (shape, price, n: every machine of those shapes) and
    `keys` (shape and key columns, one row per shape)."""
    columns = ", ".join(key_columns())
    keyed = ", ".join(f"k.{c}" for c in key_columns())
    return (
        f"INSERT INTO {SHAPES} (shape, chunk, {columns}, prices, cum) "  # nosec B608
        f"SELECT c.shape, c.chunk, {keyed}, array_agg(c.price ORDER BY c.price), "
        "array_agg(c.cum ORDER BY c.price) "
        "FROM (SELECT e.shape, e.chunk, e.price, "
        "SUM(e.n) OVER (PARTITION BY e.shape, e.chunk ORDER BY e.price)::integer AS cum "
        "FROM (SELECT shape, price, n, "
        f"(row_number() OVER (PARTITION BY shape ORDER BY price) - 1) / {CHUNK} AS chunk "
        f"FROM ({entries}) AS x) AS e) AS c "
        f"JOIN ({keys}) AS k ON k.shape = c.shape "
        f"GROUP BY c.shape, c.chunk, {keyed}"
    )


def install_sql() -> list[str]:
    """The tables, functions and triggers, as statements (PostgreSQL): what
    `catalog/counting/sql/fleet_counts.sql` holds."""
    columns = key_columns()
    typed = ", ".join(f"{c} {COLUMN_TYPES[c]}" for c in columns)
    names = ", ".join(columns)
    new = _counted_rows("fleet_new", 1)
    old = _counted_rows("fleet_old", -1)

    def record(rows: str) -> str:
        """The statement that records the net change of `rows` (`_counted_rows`)."""
        changes = _delta_select(rows)
        return layout(
            f"INSERT INTO {DELTAS} (txid, shape, {names}, price, n) "  # nosec B608
            f"SELECT txid_current(), d.* FROM ({changes}) AS d",
            "        ",
        )

    merge_entries = (
        "SELECT shape, price, SUM(n) AS n FROM ("
        "SELECT o.shape, u.price, u.c - coalesce(o.cum[u.i - 1], 0) AS n FROM old AS o "
        "CROSS JOIN LATERAL unnest(o.prices, o.cum) WITH ORDINALITY AS u(price, c, i) "
        "UNION ALL SELECT shape, price, n FROM d) AS x GROUP BY shape, price HAVING SUM(n) <> 0"
    )
    every_machine = _delta_select(_counted_rows("catalog_machine", 1))
    rebuild_entries = f"SELECT shape, price, n FROM ({every_machine}) AS s"  # nosec B608
    rebuild_keys = f"SELECT DISTINCT shape, {names} FROM ({every_machine}) AS s"  # nosec B608
    all_stripes = (
        f"PERFORM pg_advisory_xact_lock({LOCK_NAMESPACE}, s) "
        f"FROM generate_series(0, {LOCK_STRIPES - 1}) AS s ORDER BY s;"
    )
    return [
        # A partition per market preference: every reader asks one choice (or a few), so it reads that
        # choice's rows alone, as many as before markets were kept.
        f"CREATE TABLE {SHAPES} (id bigserial, shape text NOT NULL, chunk integer NOT NULL, "
        f"{typed}, prices bigint[] NOT NULL, cum integer[] NOT NULL, PRIMARY KEY (id, {MARKET})) "
        f"PARTITION BY LIST ({MARKET})",
        *(f"CREATE TABLE {SHAPES}_{choice} PARTITION OF {SHAPES} FOR VALUES IN ('{choice}')"
          for choice in MARKET_CHOICES),
        # Inline and uncompressed: the counting query reads the arrays of every row, several times.
        f"ALTER TABLE {SHAPES} ALTER COLUMN prices SET STORAGE PLAIN, ALTER COLUMN cum SET STORAGE PLAIN",
        f"CREATE INDEX {SHAPES}_shape_idx ON {SHAPES} (shape)",
        # An empty answer's openings read the other markets' rows in the chosen countries alone.
        f"CREATE INDEX {SHAPES}_country_idx ON {SHAPES} (country)",
        f"CREATE UNLOGGED TABLE {DELTAS} (txid bigint NOT NULL, shape text NOT NULL, {typed}, "
        "price bigint NOT NULL, n integer NOT NULL)",
        f"CREATE INDEX {DELTAS}_txid_idx ON {DELTAS} (txid)",
        f"CREATE UNLOGGED TABLE {PENDING} (txid bigint PRIMARY KEY)",
        # The catalog's kind of each GPU type, kept on it: every machine written is joined to it, where
        # working it out from the type's name took a share of a refresh. Generated, so every write of a
        # GPU type (the admin, a catalog load, a queryset update) keeps it, and nothing else can set it.
        gpu_kinds.gpu_kind_function_sql(),
        f"ALTER TABLE catalog_gputype ADD COLUMN {KIND_COLUMN} smallint "
        f"GENERATED ALWAYS AS ({gpu_kinds.gpu_type_kind_column_sql()}) STORED",
        # One statement's net change per shape and price, kept until its transaction commits.
        f"""CREATE FUNCTION catalog_fleet_track() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {record(new)};
    ELSIF TG_OP = 'UPDATE' THEN
        {record(new + ' UNION ALL ' + old)};
    ELSE
        {record(old)};
    END IF;
    IF FOUND THEN
        INSERT INTO {PENDING} (txid) VALUES (txid_current()) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $fn$""",  # nosec B608
        # Merges this transaction's changes into the shapes (at commit, or when a reader asks).
        f"""CREATE FUNCTION catalog_fleet_merge() RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
    tx bigint := txid_current_if_assigned();
BEGIN
    IF tx IS NULL THEN
        RETURN;
    END IF;
    DELETE FROM {PENDING} WHERE txid = tx;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock({LOCK_NAMESPACE}, s.stripe)
    FROM (SELECT DISTINCT abs(hashtext(shape) % {LOCK_STRIPES}) AS stripe FROM {DELTAS} WHERE txid = tx) AS s
    ORDER BY s.stripe;
    WITH gone AS (DELETE FROM {DELTAS} WHERE txid = tx RETURNING *),
    d AS (SELECT shape, price, SUM(n) AS n FROM gone GROUP BY shape, price),
    k AS (SELECT DISTINCT ON (shape) shape, {names} FROM gone ORDER BY shape),
    old AS (DELETE FROM {SHAPES} AS s USING k WHERE s.shape = k.shape RETURNING s.shape, s.prices, s.cum)
    {layout(_chunked_insert(merge_entries, 'SELECT * FROM k'), '    ')};
END $fn$""",  # nosec B608
        """CREATE FUNCTION catalog_fleet_merge_at_commit() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM catalog_fleet_merge();
    RETURN NULL;
END $fn$""",  # nosec B608
        # Counts every machine again (installation, repair); waits for writers merging meanwhile.
        f"""CREATE FUNCTION catalog_fleet_rebuild() RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    {all_stripes}
    DELETE FROM {SHAPES};
    {layout(_chunked_insert(rebuild_entries, rebuild_keys), '    ')};
END $fn$""",  # nosec B608
        f"""CREATE FUNCTION catalog_fleet_truncated() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    {all_stripes}
    DELETE FROM {SHAPES};
    DELETE FROM {DELTAS} WHERE txid = txid_current();
    RETURN NULL;
END $fn$""",  # nosec B608
        "CREATE TRIGGER catalog_fleet_inserted AFTER INSERT ON catalog_machine "
        "REFERENCING NEW TABLE AS fleet_new FOR EACH STATEMENT EXECUTE FUNCTION catalog_fleet_track()",
        "CREATE TRIGGER catalog_fleet_updated AFTER UPDATE ON catalog_machine "
        "REFERENCING OLD TABLE AS fleet_old NEW TABLE AS fleet_new FOR EACH STATEMENT "
        "EXECUTE FUNCTION catalog_fleet_track()",
        "CREATE TRIGGER catalog_fleet_deleted AFTER DELETE ON catalog_machine "
        "REFERENCING OLD TABLE AS fleet_old FOR EACH STATEMENT EXECUTE FUNCTION catalog_fleet_track()",
        "CREATE TRIGGER catalog_fleet_truncated AFTER TRUNCATE ON catalog_machine "
        "FOR EACH STATEMENT EXECUTE FUNCTION catalog_fleet_truncated()",
        # A GPU type whose architecture, compute capability or name changes its machines' kind
        # (`gpu_kinds`, kept on the type): every machine is counted again (rare: staff correcting a GPU type).
        f"""CREATE FUNCTION catalog_fleet_kinds_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF EXISTS (SELECT 1 FROM gpu_old AS o JOIN gpu_new AS g ON g.id = o.id
               WHERE o.{KIND_COLUMN} <> g.{KIND_COLUMN}) THEN
        PERFORM catalog_fleet_rebuild();
        DELETE FROM {DELTAS} WHERE txid = txid_current();
    END IF;
    RETURN NULL;
END $fn$""",  # nosec B608
        "CREATE TRIGGER catalog_fleet_kinds_changed AFTER UPDATE ON catalog_gputype "
        "REFERENCING OLD TABLE AS gpu_old NEW TABLE AS gpu_new FOR EACH STATEMENT "
        "EXECUTE FUNCTION catalog_fleet_kinds_changed()",
        f"CREATE CONSTRAINT TRIGGER catalog_fleet_merged AFTER INSERT ON {PENDING} "
        "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION catalog_fleet_merge_at_commit()",
        "SELECT catalog_fleet_rebuild()",
    ]


def state(cursor) -> str:
    """What the kept counts hold, as a value every committed change of a count moves: the merge at
    commit deletes the shape rows a transaction touched and inserts them anew under its own
    transaction id, so their number and the sum of their ids change (a booking's free GPUs, a refresh's
    reports, a provider deactivated, a price). One statement over a few thousand rows, read in the
    reader's snapshot, on the primary or the replica alike; no other database's activity moves it.

    Transaction ids repeat from one cluster to the next (two clusters loaded alike reach the same
    ids), so the value also names the database: the cluster's system identifier, which a replica
    shares with its primary, and the database's oid. Answers kept in a cache shared by two databases
    (staging and production on one Redis, a database rebuilt) are then never served for the other."""
    cursor.execute(
        f"SELECT count(*), coalesce(sum(xmin::text::bigint), 0),"  # noqa: S608 # nosec B608
        " (SELECT system_identifier FROM pg_control_system()),"
        " (SELECT oid FROM pg_database WHERE datname = current_database())"
        f" FROM {SHAPES}"
    )
    rows, ids, cluster, database_oid = cursor.fetchone()
    return f"{cluster}.{database_oid}:{rows}:{ids}"


def merge_pending(cursor) -> None:
    """Inside a transaction that wrote machines, fold its changes into the counts it is about to
    read (they are otherwise folded at commit).

    Only on the primary: merging writes, and a replica's transactions are read-only, so they have no
    changes of their own to fold (the merge would find none). Every other transaction's changes
    were folded by the deferred trigger before it committed, so the counts a replica replays are
    exactly those of the machines it replays. (The changes' table is unlogged: a replica holds none.)

    Inside `catalog.database.one_snapshot`, at most once: its reads write no machines, and a snapshot
    in a transaction of its own has none to fold at all."""
    if cursor.db.alias != DEFAULT_DB_ALIAS or not cursor.db.in_atomic_block:
        return
    if folding.counts_folded(cursor.db):
        return
    cursor.execute("SELECT catalog_fleet_merge()")
    folding.note_counts_folded(cursor.db)


def rebuild() -> None:
    """Count every machine again (the counts never need it; for a database restored without them)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT catalog_fleet_rebuild()")


def to_units(price: Decimal) -> int:
    units = price * PRICE_UNITS
    if units != units.to_integral_value():
        raise ValueError(f"price {price} has more than 4 places")
    return int(units)


def from_units(units: int | Decimal) -> Decimal:
    return Decimal(units).scaleb(-4)


def seen_microseconds(timestamp_sql: str) -> str:
    """A sighting as microseconds since 1970 (exact: PostgreSQL's epoch is numeric): the counts return
    a few hundred sightings, which psycopg reads as integers in a fraction of the time it takes to read
    them as dates and times (7 µs each), and the tally wants only their newest and oldest."""
    return f"(extract(epoch FROM {timestamp_sql}) * 1000000)::bigint"


def grouped_sql(
    status_sql: str, status_params: list, memory_edges: Sequence[int], price_edges: Sequence[Decimal],
    screened: int, by_reliability: bool = False, market: str = DEFAULT_MARKET, by_kind: KindSpace = NO_KINDS,
) -> tuple[str, dict]:
    """The counting query over the shapes, with the columns of the scan it replaces: status, tier,
    memory bucket, free GPUs, [price bucket], machines, cheapest price, most memory, newest and
    oldest sighting, dearest price, reliability (as kept, rounded down; grouped by only where
    `by_reliability`: a minimum reliability is chosen, else NULL), at the prices of the `market`
    preference. The price bucket of a price is the
    number of `price_edges` at or below it, as `width_bucket` gives it over the machines. The memory
    bucket is of the memory raised by the shape's kind of GPU where the thresholds are by kind (`by_kind`:
    the kinds they tell apart, `catalog.counting.gpu_kinds`)."""
    status, params = named(status_sql, status_params, "status")
    reliability = "m.reliability" if by_reliability else "NULL::numeric"
    params["memory_edges"] = list(memory_edges) or [0]
    params["market"] = market
    memory = gpu_kinds.shape_memory_sql(by_kind)
    head = (
        f"{status} AS status, m.tier, "
        f"width_bucket({memory}::bigint, %(memory_edges)s::bigint[]) AS memory_bucket, m.free_gpus"
    )
    if not price_edges:
        # One band: the whole row; its cheapest and dearest are its first and last price.
        sql = (
            f"SELECT {head}, SUM(m.cum[cardinality(m.cum)]), MIN(m.prices[1]), "  # nosec B608
            f"MAX(m.memory_per_gpu_mib), {seen_microseconds('MAX(m.last_seen_at)')}, "
            f"{seen_microseconds('MIN(m.last_seen_at)')}, "
            f"MAX(m.prices[cardinality(m.prices)]), {reliability} FROM {SHAPES} m "
            f"WHERE m.{MARKET} = %(market)s GROUP BY 1, 2, 3, 4, 11"
        )
        return sql, params
    # A row's prices fall in the bands from that of its cheapest price to that of its dearest (the
    # band of a price is the number of edges at or below it). Most rows lie in one band and count
    # whole, with no join (the rows are read twice, once for each kind: at 1,000,000 machines that
    # is 9 ms instead of 13 for joining every row with every band). Only rows spanning several bands
    # need k, the number of their prices below each edge (binary searches), with 0 and all of them
    # at the ends: band b then holds the prices at positions k[b + 1] + 1 .. k[b + 2]. Rows the rule
    # leaves out fall whole in band 0. OFFSET 0 keeps each subquery evaluated once per row, and the
    # band rows on the inner side of the join. The bands are a constant series so the planner's
    # estimate stays small (an estimate of hundreds of bands per row had it compile the query with
    # JIT, 0.3 s, for a 10 ms run).
    edge_units = [to_units(edge) for edge in price_edges]
    params["price_edges"] = edge_units
    params.update({f"below_edge_{number}": units - 1 for number, units in enumerate(edge_units)})
    screened_sql = f"s.status = {int(screened)}"
    params["lowest_edge"], params["highest_edge"] = edge_units[0], edge_units[-1]

    def banded(spans: str) -> str:
        return (
            "(SELECT s.*, "  # nosec B608
            f"CASE WHEN {screened_sql} THEN width_bucket(s.prices[1], %(price_edges)s::bigint[]) ELSE 0 END "
            "AS first_band, "
            f"CASE WHEN {screened_sql} THEN "
            "width_bucket(s.prices[cardinality(s.prices)], %(price_edges)s::bigint[]) "
            "ELSE 0 END AS last_band "
            f"FROM (SELECT {head}, m.memory_per_gpu_mib, m.last_seen_at, m.prices, m.cum, "
            f"{reliability} AS reliability "
            f"FROM {SHAPES} m WHERE m.{MARKET} = %(market)s{spans} OFFSET 0) AS s OFFSET 0) AS s"
        )

    searches = ", ".join(
        f"width_bucket(%(below_edge_{number})s::bigint, s.prices)" for number in range(len(edge_units))
    )
    # A row spans bands only where some edge lies above its cheapest price and at or below its dearest:
    # the second branch reads only the rows that may (two array reads each), not every row's status
    # and bands again. The first branch's test is written as "not spanning" so the planner expects
    # most rows there (as they are), and aggregates by hashing rather than sorting them.
    may_span = (" AND m.prices[1] < %(highest_edge)s "
                "AND m.prices[cardinality(m.prices)] >= %(lowest_edge)s")
    sql = (
        "SELECT status, tier, memory_bucket, free_gpus, band, SUM(n), MIN(lo), MAX(memory_per_gpu_mib), "  # nosec B608
        f"{seen_microseconds('MAX(last_seen_at)')}, {seen_microseconds('MIN(last_seen_at)')}, MAX(hi), "
        "reliability FROM ("
        "SELECT s.status, s.tier, s.memory_bucket, s.free_gpus, s.first_band AS band, "
        "s.cum[cardinality(s.cum)] AS n, s.prices[1] AS lo, s.memory_per_gpu_mib, s.last_seen_at, "
        f"s.prices[cardinality(s.prices)] AS hi, s.reliability FROM {banded('')} "
        "WHERE NOT s.first_band < s.last_band "
        "UNION ALL "
        "SELECT s.status, s.tier, s.memory_bucket, s.free_gpus, b.band, b.n, b.lo, s.memory_per_gpu_mib, "
        f"s.last_seen_at, b.hi, s.reliability FROM {banded(may_span)} "
        f"CROSS JOIN LATERAL (SELECT ARRAY[0, {searches}, cardinality(s.prices)] AS k OFFSET 0) AS k "
        "CROSS JOIN LATERAL (SELECT g AS band, "
        "coalesce(s.cum[k.k[g + 2]], 0) - coalesce(s.cum[k.k[g + 1]], 0) AS n, "
        "s.prices[k.k[g + 1] + 1] AS lo, s.prices[k.k[g + 2]] AS hi "
        f"FROM generate_series(0, {len(price_edges)}) AS g "
        "WHERE g >= s.first_band AND g <= s.last_band OFFSET 0) AS b "
        "WHERE s.first_band < s.last_band AND b.n > 0"
        ") AS banded GROUP BY 1, 2, 3, 4, 5, 12"
    )
    return sql, params


def count_at_price_sql(
    status_sql: str, status_params: list, screened: int, gpus_sql: str, gpus_params: list,
    settings, hourly: Decimal,
) -> tuple[str, dict]:
    """Machines the rule lets through, of the tier `settings` chooses (any without one), whose hourly
    price on the GPUs they would use (`gpus_sql`, NULL when the workload does not fit) is exactly
    `hourly`, at the prices of the market preference `settings.market`."""
    status, params = named(status_sql, status_params, "status")
    gpus, gpus_values = named(gpus_sql, gpus_params, "fit")
    tier, tier_values = named(*preferences_sql.tier_sql(settings), "tier")
    params |= gpus_values | tier_values
    params["hourly"] = to_units(hourly)
    params["market"] = settings.market
    sql = (
        "SELECT coalesce(SUM(coalesce(m.cum[width_bucket(t.p, m.prices)], 0) "  # nosec B608
        "- coalesce(m.cum[width_bucket(t.p - 1, m.prices)], 0)), 0) "
        f"FROM {SHAPES} m CROSS JOIN LATERAL (SELECT %(hourly)s::bigint / g.gpus AS p "
        f"FROM (SELECT {gpus} AS gpus) AS g WHERE %(hourly)s::bigint %% g.gpus = 0) AS t "
        f"WHERE m.{MARKET} = %(market)s AND {status} = {int(screened)} AND {tier}"
    )
    return sql, params
