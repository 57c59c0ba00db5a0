"""The counting engine's SQL as checked-in files: the files are what the generators write, the
migrations run frozen copies and import no live code, a freshly migrated database runs exactly the
files, the drift check names what differs, and the band walks' indexes hold what the availability
rule compiles to."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError, SystemCheckError
from django.db import connection

from catalog.checks import counting_sql_as_shipped
from catalog.counting import drift, indexes, shipped
from catalog.counting.layout import layout

ON_POSTGRESQL = pytest.mark.postgresql(reason="the engine's tables, functions and triggers are PostgreSQL's")
PROJECT_PACKAGES = {"catalog", "sizing", "nodelodge", "tests"}


def test_the_files_are_what_the_generators_write():
    assert shipped.stale() == [], "run `manage.py counting_sql --write` and commit catalog/counting/sql/"


def test_the_files_define_every_function_and_trigger():
    assert set(shipped.functions()) == {
        "catalog_fleet_track", "catalog_fleet_merge", "catalog_fleet_merge_at_commit", "catalog_fleet_rebuild",
        "catalog_fleet_truncated", "catalog_fleet_kinds_changed", "catalog_fleet_gpu_kind", "catalog_latest_speed_machines",
        "catalog_latest_speed_speeds", "catalog_latest_speed_truncated", "catalog_latest_speed_rebuild",
    }
    assert len(shipped.triggers()) == 14
    assert all(name.startswith(drift.PREFIXES) for name in [*shipped.functions(), *shipped.triggers()])
    assert shipped.generated_columns() == {
        "catalog_gputype.gpu_kind": shipped.GeneratedColumn(
            "catalog_gputype", "gpu_kind", "catalog_fleet_gpu_kind(name, architecture, compute_capability)"
        )
    }


def test_a_file_splits_at_semicolons_outside_quotes_and_comments():
    text = (
        "-- a comment; not a statement\n"
        "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $fn$\nBEGIN\n    PERFORM 1; PERFORM ';';\nEND $fn$;\n\n"
        "SELECT 'a;b', 'it''s; fine';\nSELECT 2"
    )
    assert shipped.statements(text) == [
        "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $fn$\nBEGIN\n    PERFORM 1; PERFORM ';';\nEND $fn$",
        "SELECT 'a;b', 'it''s; fine'",
        "SELECT 2",
    ]


def test_the_migrations_import_no_live_code():
    """A migration that imports today's generators installs today's SQL on a fresh database, whatever
    it installed when it was written: each runs its own frozen copy instead."""
    for path in sorted(Path(settings.BASE_DIR).glob("*/migrations/*.py")) + sorted(
        Path(settings.BASE_DIR).glob("nodelodge/*/migrations/*.py")
    ):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] not in PROJECT_PACKAGES, f"{path.name} imports {name}"


def test_the_frozen_copies_are_never_the_shipped_files():
    frozen = Path(settings.BASE_DIR) / "catalog" / "migrations" / "sql"
    for path in frozen.glob("*.sql"):
        assert path.read_text().startswith("-- Frozen:"), path.name
    for path in (Path(settings.BASE_DIR) / "catalog" / "migrations").glob("*.py"):
        assert "counting/sql" not in path.read_text(), path.name


@ON_POSTGRESQL
def test_a_migrated_database_runs_the_shipped_functions_and_triggers(db):
    """The test database is migrated from nothing: its functions and triggers come from the frozen
    copies, the files from today's generators; they must be the same."""
    assert drift.differences(connection) == []
    assert counting_sql_as_shipped(databases=["default"]) == []
    call_command("counting_sql")


@ON_POSTGRESQL
def test_a_migrated_database_has_the_shipped_tables_and_indexes(db):
    """The engine's tables and indexes, created again from the files in a scratch schema, have the
    columns and definitions the migrations gave the real ones."""
    tables = {"catalog_fleetshape", "catalog_fleetdelta", "catalog_fleetpending", "catalog_latestspeed"}
    texts = [shipped.shipped()["fleet_counts.sql"], shipped.shipped()["latest_speeds.sql"]]
    with connection.cursor() as cursor:
        cursor.execute("CREATE SCHEMA counting_scratch")
        cursor.execute("SET LOCAL search_path = counting_scratch, public")
        for text in texts:
            for statement in shipped.statements(text):
                # The column the files add to the GPU types is the drift check's (a catalog table).
                if shipped.GENERATED_COLUMN.match(statement):
                    continue
                if re.match(r"(CREATE (UNLOGGED )?TABLE|ALTER TABLE|CREATE INDEX) ", statement):
                    cursor.execute(statement)

        def described(schema: str) -> dict:
            cursor.execute(
                "SELECT table_name, column_name, data_type, is_nullable, ordinal_position "
                "FROM information_schema.columns WHERE table_schema = %s AND table_name = ANY(%s) "
                "ORDER BY 1, 5",
                [schema, sorted(tables)],
            )
            columns = cursor.fetchall()
            cursor.execute(
                "SELECT tablename, indexname, replace(indexdef, %s, '') FROM pg_indexes "
                "WHERE schemaname = %s AND tablename = ANY(%s) ORDER BY 1, 2",
                [f"{schema}.", schema, sorted(tables)],
            )
            return {"columns": columns, "indexes": cursor.fetchall()}

        scratch, real = described("counting_scratch"), described("public")
    assert {row[0] for row in real["columns"]} == tables
    assert scratch == real


@ON_POSTGRESQL
def test_the_drift_check_names_a_changed_function_and_a_missing_trigger(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE OR REPLACE FUNCTION catalog_latest_speed_truncated() RETURNS trigger LANGUAGE plpgsql "
            "AS $fn$ BEGIN DELETE FROM catalog_latestspeed; RETURN NULL; END $fn$"
        )
        cursor.execute("DROP TRIGGER catalog_fleet_deleted ON catalog_machine")
    assert drift.differences(connection) == [
        drift.Difference("catalog_latest_speed_truncated", "function", "differs"),
        drift.Difference("catalog_fleet_deleted", "trigger", "missing"),
    ]
    [error] = counting_sql_as_shipped(databases=["default"])
    assert error.id == "catalog.E001"
    assert "catalog_latest_speed_truncated" in error.msg and "catalog_fleet_deleted" in error.msg
    with pytest.raises(SystemCheckError, match="catalog_latest_speed_truncated"):
        call_command("check", databases=["default"])
    with pytest.raises(CommandError, match="catalog_latest_speed_truncated"):
        call_command("counting_sql")


@ON_POSTGRESQL
def test_the_drift_check_names_a_kept_kind_its_function_no_longer_gives(db, models_and_gpus):
    """The GPU types' kind, generated by a function: the function replaced leaves the rows written before
    holding the old function's kinds until each is written again."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE OR REPLACE FUNCTION catalog_fleet_gpu_kind(name varchar, architecture varchar, "
            "compute_capability varchar) RETURNS smallint LANGUAGE sql IMMUTABLE AS $fn$SELECT 8::smallint$fn$"
        )
        assert drift.differences(connection) == [
            drift.Difference("catalog_fleet_gpu_kind", "function", "differs"),
            drift.Difference("catalog_gputype.gpu_kind", "column", "stale"),
        ]
        cursor.execute("UPDATE catalog_gputype SET name = name")
        assert drift.differences(connection) == [drift.Difference("catalog_fleet_gpu_kind", "function", "differs")]
        cursor.execute("ALTER TABLE catalog_gputype DROP COLUMN gpu_kind")
        assert drift.Difference("catalog_gputype.gpu_kind", "column", "missing") in drift.differences(connection)
        cursor.execute(
            "ALTER TABLE catalog_gputype ADD COLUMN gpu_kind smallint GENERATED ALWAYS AS (8::smallint) STORED"
        )
        assert drift.Difference("catalog_gputype.gpu_kind", "column", "differs") in drift.differences(connection)


@ON_POSTGRESQL
def test_the_drift_check_names_a_function_nothing_ships(db):
    with connection.cursor() as cursor:
        cursor.execute("CREATE FUNCTION catalog_fleet_extra() RETURNS void LANGUAGE sql AS $fn$ SELECT 1 $fn$")
    assert drift.differences(connection) == [drift.Difference("catalog_fleet_extra", "function", "not shipped")]


@ON_POSTGRESQL
def test_the_partial_indexes_hold_what_the_availability_rule_compiles_to(db):
    """The band walks' indexes have the condition the rule's flag checks compile to, and each is the
    shipped one, column for column. (The model's own `catalog_machine_wizard_idx` is Django's.)"""
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE INDEX counting_scratch_rule ON catalog_machine (id) WHERE {indexes.indexed_condition()}"
        )

        def predicates() -> dict[str, str]:
            cursor.execute(
                "SELECT c.relname, pg_get_expr(i.indpred, i.indrelid) FROM pg_index i "
                "JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE i.indrelid = 'catalog_machine'::regclass AND i.indpred IS NOT NULL"
            )
            return dict(cursor.fetchall())

        found = predicates()
        compiled = found.pop("counting_scratch_rule")
        walks = {statement.split()[2] for statement in indexes.install_sql()}
        # By price and by country then price, for the price of each market preference; by tier then price
        # for the default market's.
        assert walks == {
            f"catalog_machine{market}_{kind}_idx"
            for market in ("", "_interruptible", "_any") for kind in ("offer_cover", "country_price")
        } | {"catalog_machine_tier_price_idx"}
        assert {found[name] for name in walks} == {compiled}
        for statement in indexes.install_sql():
            name = statement.split()[2]
            cursor.execute(statement.replace(name, f"scratch_{name}", 1))
            cursor.execute(
                "SELECT indexname, replace(indexdef, 'scratch_', '') FROM pg_indexes "
                "WHERE tablename = 'catalog_machine' AND indexname IN (%s, %s) ORDER BY indexname DESC",
                [name, f"scratch_{name}"],
            )
            (_, installed), (_, shipped_definition) = cursor.fetchall()
            assert installed == shipped_definition


def test_the_indexed_condition_is_the_rules_flag_checks():
    assert indexes.indexed_condition() == "gone_at IS NULL AND is_available AND provider_is_active"


def test_laying_a_statement_out_changes_only_spaces_between_words():
    sql = (
        "SELECT a, 'x  FROM  y', CASE WHEN b THEN 1 END AS c, extract(epoch FROM d) FROM (SELECT * FROM t) AS s "
        "JOIN u ON u.id = s.id WHERE 'it''s' <> e GROUP BY a ORDER BY a; DELETE FROM t WHERE FALSE"
    )
    laid_out = layout(sql, "    ")
    assert laid_out.replace("\n", " ").split() == sql.split()
    assert "'x  FROM  y'" in laid_out and "extract(epoch FROM d)" in laid_out and "DELETE FROM t" in laid_out
    assert laid_out.count("\n") == 10


def test_the_functions_say_what_the_migrations_before_0013_installed():
    """Migration 0013 lays the functions out on lines; what each one says is unchanged."""
    frozen = Path(settings.BASE_DIR) / "catalog" / "migrations" / "sql"
    before = shipped.functions({
        name: (frozen / name).read_text()
        for name in ("0008_fleet_counts.sql", "0011_latest_speeds_reached_by_machine.sql")
    })
    after = shipped.functions({"0013": (frozen / "0013_counting_functions_laid_out.sql").read_text()})
    assert set(before) == set(after)
    for name, function in after.items():
        assert function.body.split() == before[name].body.split(), name


def test_the_newest_frozen_copy_of_each_function_is_the_shipped_one():
    """Each function as the last migration to install it left it is the one the files ship."""
    frozen = Path(settings.BASE_DIR) / "catalog" / "migrations" / "sql"
    installed: dict[str, str] = {}
    for path in sorted(frozen.glob("*.sql")):
        if not path.name.endswith(".reverse.sql"):
            installed |= {name: f.body for name, f in shipped.functions({path.name: path.read_text()}).items()}
    assert installed == {name: function.body for name, function in shipped.functions().items()}


@ON_POSTGRESQL
def test_the_drift_check_waits_for_pending_migrations(db, monkeypatch):
    """`migrate` runs the database checks before it migrates: a database about to receive the SQL
    is not reported as differing from it."""
    from django.db.migrations.executor import MigrationExecutor

    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER catalog_fleet_deleted ON catalog_machine")
    monkeypatch.setattr(MigrationExecutor, "migration_plan", lambda self, targets: [("pending", False)])
    assert counting_sql_as_shipped(databases=["default"]) == []


def test_a_fragments_placeholders_become_named_ones():
    from catalog.counting.params import named

    sql, values = named("m.a < %s AND m.b = ANY(%s) AND m.c %% 2 = 0", [1, ["x"]], "status")
    assert sql == "m.a < %(status_0)s AND m.b = ANY(%(status_1)s) AND m.c %% 2 = 0"
    assert values == {"status_0": 1, "status_1": ["x"]}
    with pytest.raises(ValueError):
        named("m.a < %s", [], "status")
