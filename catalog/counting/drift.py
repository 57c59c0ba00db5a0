"""Does the database run the counting engine's SQL as shipped? Compares the functions and triggers
installed in PostgreSQL with those the checked-in files define (`catalog.counting.shipped`), and
names each that differs, is missing, or is installed without being shipped. A function is compared
by its body as PostgreSQL keeps it; a trigger by its definition, schema names aside. A column the files
generate on a table of the catalog (the GPU types' kind) is compared by its expression, and its rows by
what the expression gives today: a function it calls, replaced, leaves the rows written before it
holding the old function's values until they are written again ("stale")."""
from __future__ import annotations

import re
from typing import NamedTuple

from catalog.counting import shipped

# The engine's objects are named with these prefixes: installed ones that no file ships are drift too.
PREFIXES = ("catalog_fleet_", "catalog_latest_speed_")

FUNCTIONS_SQL = """
SELECT p.proname, p.prosrc
FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
WHERE n.nspname = current_schema() AND p.proname LIKE ANY (%(patterns)s)
"""
TRIGGERS_SQL = """
SELECT t.tgname, pg_get_triggerdef(t.oid)
FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND NOT t.tgisinternal AND t.tgname LIKE ANY (%(patterns)s)
"""
GENERATED_SQL = """
SELECT c.relname || '.' || a.attname, pg_get_expr(d.adbin, d.adrelid)
FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid
JOIN pg_namespace AS n ON n.oid = c.relnamespace
JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE n.nspname = current_schema() AND a.attgenerated = 's' AND NOT a.attisdropped
AND c.relname || '.' || a.attname = ANY (%(columns)s)
"""


class Difference(NamedTuple):
    name: str
    kind: str  # "function", "trigger" or "column"
    how: str  # "differs", "missing", "not shipped" or "stale"

    def __str__(self) -> str:
        return f"{self.kind} {self.name} {self.how}"


def _patterns() -> list[str]:
    return [prefix.replace("_", r"\_") + "%" for prefix in PREFIXES]


def _compare(kind: str, installed: dict[str, str], expected: dict[str, str]) -> list[Difference]:
    found = []
    for name in sorted(set(installed) | set(expected)):
        if name not in installed:
            found.append(Difference(name, kind, "missing"))
        elif name not in expected:
            found.append(Difference(name, kind, "not shipped"))
        elif installed[name] != expected[name]:
            found.append(Difference(name, kind, "differs"))
    return found


def differences(connection) -> list[Difference]:
    """What in this PostgreSQL database differs from the shipped files, by name."""
    with connection.cursor() as cursor:
        cursor.execute(FUNCTIONS_SQL, {"patterns": _patterns()})
        functions = dict(cursor.fetchall())
        cursor.execute(TRIGGERS_SQL, {"patterns": _patterns()})
        triggers = dict(cursor.fetchall())
        cursor.execute("SELECT current_schema()")
        schema = cursor.fetchone()[0]
        columns = _columns(cursor)
    triggers = {name: _unqualified(definition, schema) for name, definition in triggers.items()}
    expected_functions = {name: function.body for name, function in shipped.functions().items()}
    expected_triggers = {name: trigger.definition for name, trigger in shipped.triggers().items()}
    return [
        *_compare("function", functions, expected_functions),
        *_compare("trigger", triggers, expected_triggers),
        *columns,
    ]


def _columns(cursor) -> list[Difference]:
    """The shipped generated columns missing, generated otherwise, or holding stale values."""
    expected = shipped.generated_columns()
    cursor.execute(GENERATED_SQL, {"columns": sorted(expected)})
    installed = {name: shipped.collapse(expression) for name, expression in cursor.fetchall()}
    found = []
    for name, column in sorted(expected.items()):
        if name not in installed:
            found.append(Difference(name, "column", "missing"))
        elif installed[name] != column.expression:
            found.append(Difference(name, "column", "differs"))
        else:
            cursor.execute(
                f"SELECT EXISTS (SELECT 1 FROM {column.table} "  # noqa: S608  # nosec B608
                f"WHERE {column.name} IS DISTINCT FROM ({column.expression}))"
            )
            if cursor.fetchone()[0]:
                found.append(Difference(name, "column", "stale"))
    return found


def _unqualified(definition: str, schema: str = "public") -> str:
    """A trigger's definition as the files write it: no schema before a name, whitespace collapsed."""
    return shipped.collapse(re.sub(rf"\b{re.escape(schema)}\.", "", definition))


def message(found: list[Difference]) -> str:
    return (
        "The counting engine's SQL in the database differs from catalog/counting/sql/: "
        + "; ".join(str(difference) for difference in found)
        + "."
    )
