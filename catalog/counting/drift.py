"""Does the database run the counting engine's SQL as shipped? Compares the functions and triggers
installed in PostgreSQL with those the checked-in files define (`catalog.counting.shipped`), and
names each that differs, is missing, or is installed without being shipped. A function is compared
by its body as PostgreSQL keeps it; a trigger by its definition, schema names aside."""
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


class Difference(NamedTuple):
    name: str
    kind: str  # "function" or "trigger"
    how: str  # "differs", "missing" or "not shipped"

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
    triggers = {name: _unqualified(definition, schema) for name, definition in triggers.items()}
    expected_functions = {name: function.body for name, function in shipped.functions().items()}
    expected_triggers = {name: trigger.definition for name, trigger in shipped.triggers().items()}
    return [
        *_compare("function", functions, expected_functions),
        *_compare("trigger", triggers, expected_triggers),
    ]


def _unqualified(definition: str, schema: str = "public") -> str:
    """A trigger's definition as the files write it: no schema before a name, whitespace collapsed."""
    return shipped.collapse(re.sub(rf"\b{re.escape(schema)}\.", "", definition))


def message(found: list[Difference]) -> str:
    return (
        "The counting engine's SQL in the database differs from catalog/counting/sql/: "
        + "; ".join(str(difference) for difference in found)
        + "."
    )
