# SQL here is assembled from this module's constants and the availability rule's columns; every
# value travels as a parameter (ruff's S608 cannot tell).
# ruff: noqa: S608
"""The latest tokens/s speed of each machine per model and precision, kept by the writes (PostgreSQL).

The throughput plan and the price-per-million sort read, for one model and precision, the latest
speed measured on each machine on its own GPU type, with the machine's columns the availability rule,
the fit and the preferences read. Worked out at request time that is a join of every speed of the
model (about 15,000 at 100,000 machines) with its machine and a sort for the latest of each; here it
is one row per (machine, model, precision) in `catalog_latestspeed`, with everything the answer
shows of it, so a request filters and reads one table and sorts only ties. Indexed by model and
precision, speed class, memory per GPU and price (under each market preference, whose prices are kept
beside the listed one), with what a plan's walk reads: a plan reads each class's cheapest entries in
order and stops (`catalog.counting.speeds.speed_rows_counted`).

What "latest" means is written once (`latest_sql`): the tests' scan (`tests/catalog/scan_oracle.py`)
and the kept table use the same statement. The table holds every machine the rule
could ever let through, with the rule's columns as they are on catalog_machine (`availability.COLUMNS`,
same names), so the request applies the one availability rule, stale cutoff included, to it exactly
as to the machines: nothing here decides what "available" means and nothing needs sweeping when a
machine goes stale. The provider's name (an order key) is read from catalog_provider at request time.

Who keeps it: statement triggers on catalog_machine and catalog_measuredspeed work the rows of the
machines a statement touched out again from both tables. A statement writing speeds first locks
their machines' rows (as a machine's own update does), so two transactions never work out the same
machine's rows at once; each statement of the trigger then sees the other's committed writes.
"""
from __future__ import annotations

from django.db import connection

from catalog import availability, preferences
from catalog.counting.indexes import indexed_condition
from catalog.counting.layout import layout
from catalog.market_columns import MARKET_PRICE_COLUMNS
from sizing.markets import DEFAULT_MARKET
from sizing.offers import MEASUREMENT_FIELDS
from sizing.preferences import MACHINE_FIELDS

TABLE = "catalog_latestspeed"
# The machine's columns kept beside the speed: those the availability rule reads, then what the fit,
# the preferences and the order of machines read, then its price under each market preference.
MACHINE_COLUMNS = tuple(dict.fromkeys([
    *availability.COLUMNS.values(), *(preferences.COLUMNS[field] for field in MACHINE_FIELDS),
    "price_per_gpu_hour", "provider_id", "provider_machine_id",
    "gpu_type_id", "region", *MARKET_PRICE_COLUMNS.values(),
]))
# What a plan's walk reads besides the index's keys (`catalog.counting.speeds.speed_rows_counted`): the
# availability rule's figures, the preferences' columns, the order's ties and what a chosen row shows,
# so that the walks and the count read the index entries alone.
WALK_COLUMNS = ("last_seen_at", "country", "free_gpus", "tier", "reliability", "provider_id",
                "provider_machine_id", "machine_id", "speed_id", "region")
# The speed, with what the answer shows of the measurement.
# (The columns' order is the installed table's: the date comes before the rest of the measurement.)
SPEED_COLUMNS = (
    "model_slug", "precision", "value", "gpus", "measured_at",
    *(field for field in MEASUREMENT_FIELDS if field != "measured_at"), "source",
)


def latest_sql(condition: str) -> str:
    """SELECT of the kept table's rows: for each machine and each model and precision measured on it
    (tokens/s, on the machine's own GPU type), the latest measurement (ties: the lower speed per GPU,
    fewer GPUs, the earlier entry; as `sizing.speeds.speed_for`). `condition` is SQL over
    `s` (catalog_measuredspeed) and `m` (catalog_machine) narrowing what is worked out."""
    machine = ", ".join(f"m.{column} AS {column}" for column in MACHINE_COLUMNS)
    speed = ", ".join(f"s.{column} AS {column}" for column in SPEED_COLUMNS)
    return (
        f"SELECT DISTINCT ON (s.machine_id, s.model_slug, s.precision) m.id AS machine_id, "  # nosec B608
        f"s.id AS speed_id, {speed}, {machine} "
        "FROM catalog_measuredspeed s JOIN catalog_machine m ON m.id = s.machine_id "
        # "+ 0": the GPU type is never how speeds are reached. A fleet written in one transaction has
        # no statistics yet, and the planner then read every speed of a GPU type for each machine.
        f"WHERE s.unit = 'tokens/s' AND s.gpu_type_id + 0 = m.gpu_type_id AND ({condition}) "
        "ORDER BY s.machine_id, s.model_slug, s.precision, s.measured_at DESC, s.value / s.gpus, s.gpus, s.id"
    )


def install_sql() -> list[str]:
    """The table, its functions and triggers, as statements (PostgreSQL): what
    `catalog/counting/sql/latest_speeds.sql` holds."""
    return [
        f"CREATE TABLE {TABLE} AS {layout(latest_sql('FALSE'))} WITH NO DATA",
        f"ALTER TABLE {TABLE} ADD PRIMARY KEY (model_slug, precision, machine_id)",
        f"CREATE INDEX {TABLE}_machine_idx ON {TABLE} (machine_id)",
        *walk_indexes_sql(),
        *functions_sql(),
        *_triggers("catalog_machine", "machines", "catalog_latest_speed_machines()"),
        *_triggers("catalog_measuredspeed", "speeds", "catalog_latest_speed_speeds()"),
        "SELECT catalog_latest_speed_rebuild()",
    ]


def walk_index_condition() -> str:
    """The machines the walk indexes hold: those the availability rule's flag checks let through."""
    return indexed_condition()


def walk_indexes_sql() -> list[str]:
    """The indexes a plan walks each speed class on, in the price order of each market preference
    (`catalog.market_columns`): the machines the rule's flag checks let through (as the band walks'
    indexes, `catalog.counting.indexes`), by model and precision, class (figure, GPUs measured, GPU
    type) and price. The classes are found by skipping through any of them."""
    statements = []
    for choice, price in MARKET_PRICE_COLUMNS.items():
        name = f"{TABLE}_walk_idx" if choice == DEFAULT_MARKET else f"{TABLE}_{choice}_walk_idx"
        statements.append(
            f"CREATE INDEX {name} ON {TABLE} (model_slug, precision, value, gpus, gpu_type_id, "
            f"memory_per_gpu_mib, {price}) INCLUDE ({', '.join(WALK_COLUMNS)}) WHERE {walk_index_condition()}"
        )
    return statements


def functions_sql() -> list[str]:
    """The functions the triggers call, created or replaced."""
    columns = ", ".join(["machine_id", "speed_id", *SPEED_COLUMNS, *MACHINE_COLUMNS])

    def rework(ids: str, indent: str) -> str:
        """The statements that work the rows of the machines `ids` (a FROM item of ids) out again."""
        condition = f"s.machine_id IN (SELECT id FROM {ids})"  # nosec B608
        return layout(
            f"DELETE FROM {TABLE} AS k USING (SELECT DISTINCT id FROM {ids}) AS a WHERE k.machine_id = a.id; "  # nosec B608
            f"INSERT INTO {TABLE} ({columns}) {latest_sql(condition)};",
            indent,
        )

    return [
        # Machines written: their rows worked out again (new ones have no speeds yet, gone ones none left).
        f"""CREATE OR REPLACE FUNCTION catalog_latest_speed_machines() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        {rework('(SELECT id FROM machines_new) AS n', '        ')}
    ELSE
        DELETE FROM {TABLE} AS k USING (SELECT DISTINCT id FROM machines_old) AS a WHERE k.machine_id = a.id;
    END IF;
    RETURN NULL;
END $fn$""",  # nosec B608
        # Speeds written: their machines' rows, locked first so one machine is worked out by one
        # transaction at a time (a machine's own update holds the same lock).
        f"""CREATE OR REPLACE FUNCTION catalog_latest_speed_speeds() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    ids bigint[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        ids := ARRAY(SELECT DISTINCT machine_id FROM speeds_new);
    ELSIF TG_OP = 'UPDATE' THEN
        ids := ARRAY(SELECT machine_id FROM speeds_new UNION SELECT machine_id FROM speeds_old);
    ELSE
        ids := ARRAY(SELECT DISTINCT machine_id FROM speeds_old);
    END IF;
    PERFORM 1 FROM catalog_machine AS m JOIN unnest(ids) AS a(id) ON m.id = a.id ORDER BY m.id
    FOR NO KEY UPDATE OF m;
    {rework('unnest(ids) AS n(id)', '    ')}
    RETURN NULL;
END $fn$""",  # nosec B608
        f"""CREATE OR REPLACE FUNCTION catalog_latest_speed_truncated() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    -- Emptied as the machines were: a DELETE would leave every page behind until a VACUUM FULL.
    TRUNCATE {TABLE};
    RETURN NULL;
END $fn$""",  # nosec B608
        f"""CREATE OR REPLACE FUNCTION catalog_latest_speed_rebuild() RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    LOCK TABLE catalog_machine, catalog_measuredspeed IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM {TABLE};
    {layout(f'INSERT INTO {TABLE} ({columns}) ' + latest_sql('TRUE'), '    ')};
END $fn$""",  # nosec B608
    ]


def _triggers(table: str, name: str, function: str) -> list[str]:
    """Statement triggers on `table` calling `function` with the statement's rows as {name}_new and
    {name}_old, and emptying the kept table on TRUNCATE."""
    prefix = f"CREATE TRIGGER catalog_latest_speed_{name}"
    run = f"FOR EACH STATEMENT EXECUTE FUNCTION {function}"
    return [
        f"{prefix}_inserted AFTER INSERT ON {table} REFERENCING NEW TABLE AS {name}_new {run}",
        f"{prefix}_updated AFTER UPDATE ON {table} REFERENCING OLD TABLE AS {name}_old "
        f"NEW TABLE AS {name}_new {run}",
        f"{prefix}_deleted AFTER DELETE ON {table} REFERENCING OLD TABLE AS {name}_old {run}",
        f"{prefix}_truncated AFTER TRUNCATE ON {table} FOR EACH STATEMENT "
        "EXECUTE FUNCTION catalog_latest_speed_truncated()",
    ]


def rebuild() -> None:
    """Works every row out again from the speeds and machines (never needed by the writes; for a
    database restored without the table, and for the tests' comparison)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT catalog_latest_speed_rebuild()")
