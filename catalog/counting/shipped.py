"""The SQL the counting engine installs, checked in as files you can read (`catalog/counting/sql/`).

The files are written from the generators (`fleet_counts`, `latest_speeds`, `indexes`) by
`manage.py counting_sql --write`; a test fails when the two differ. Migrations never read these
files: each executes its own frozen copy (`catalog/migrations/sql/`), and a change here needs a new
migration that installs it. The drift check (`catalog.counting.drift`) compares the functions and
triggers in the database with the ones these files define.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from catalog.counting import fleet_counts, indexes, latest_speeds

SQL_DIR = Path(__file__).resolve().parent / "sql"
HEADER = (
    "-- The SQL {what}, as `catalog/counting/{source}` generates it.\n"
    "-- Written by `manage.py counting_sql --write`; a test fails when it differs from the generator.\n"
    "-- Installed by the migrations' frozen copies (catalog/migrations/sql/), never from this file.\n\n"
)


def generated() -> dict[str, str]:
    """File name -> the text the generators give today."""
    files = {
        "fleet_counts.sql": ("that keeps the fleet counts", "fleet_counts.py", fleet_counts.install_sql()),
        "latest_speeds.sql": (
            "that keeps the latest speeds", "latest_speeds.py", latest_speeds.install_sql()
        ),
        "offer_indexes.sql": ("of the band walks' indexes", "indexes.py", indexes.install_sql()),
    }
    return {
        name: HEADER.format(what=what, source=source) + render(statements)
        for name, (what, source, statements) in files.items()
    }


def render(statements: list[str]) -> str:
    """Statements as a file: each ended by a semicolon, a blank line between them."""
    return "".join(statement.rstrip() + ";\n\n" for statement in statements).rstrip("\n") + "\n"


def shipped() -> dict[str, str]:
    """File name -> the text checked in."""
    return {path.name: path.read_text() for path in sorted(SQL_DIR.glob("*.sql"))}


def stale() -> list[str]:
    """The files whose text differs from the generators' (or that no generator writes)."""
    current, wanted = shipped(), generated()
    return sorted(name for name in set(current) | set(wanted) if current.get(name) != wanted.get(name))


def write() -> list[str]:
    """Writes the files the generators' text differs from; returns their names."""
    SQL_DIR.mkdir(exist_ok=True)
    changed = []
    current = shipped()
    for name, text in generated().items():
        if current.get(name) != text:
            (SQL_DIR / name).write_text(text)
            changed.append(name)
    for name in set(current) - set(generated()):
        (SQL_DIR / name).unlink()
        changed.append(name)
    return sorted(changed)


def statements(text: str) -> list[str]:
    """The statements of a SQL file: split at semicolons outside quotes, dollar quotes and comments."""
    found, start, index = [], 0, 0
    while index < len(text):
        if text.startswith("--", index):
            end = text.find("\n", index)
            index = len(text) if end < 0 else end
        elif text[index] == "'":
            index = text.index("'", index + 1) + 1
            while text.startswith("'", index):  # '' inside a literal
                index = text.index("'", index + 1) + 1
            continue
        elif (tag := re.match(r"\$[A-Za-z_]*\$", text[index:])) is not None:
            index = text.index(tag.group(), index + len(tag.group())) + len(tag.group())
            continue
        elif text[index] == ";":
            found.append(text[start:index])
            start = index + 1
        index += 1
    found.append(text[start:])
    cleaned = ("\n".join(line for line in s.strip().splitlines() if not line.startswith("--")) for s in found)
    return [statement.strip() for statement in cleaned if statement.strip()]


@dataclass(frozen=True)
class Function:
    name: str
    body: str  # the text between the dollar quotes, as PostgreSQL keeps it (pg_proc.prosrc)


@dataclass(frozen=True)
class Trigger:
    name: str
    table: str
    definition: str  # the statement with its whitespace collapsed


@dataclass(frozen=True)
class GeneratedColumn:
    table: str
    name: str
    expression: str  # as the file writes it, whitespace collapsed

    @property
    def qualified(self) -> str:
        return f"{self.table}.{self.name}"


FUNCTION = re.compile(r"CREATE (?:OR REPLACE )?FUNCTION (\w+)\(.*?AS (\$\w*\$)(.*)\2", re.S)
TRIGGER = re.compile(r"CREATE (?:CONSTRAINT )?TRIGGER (\w+) .*? ON (\w+) ", re.S)
GENERATED_COLUMN = re.compile(
    r"ALTER TABLE (\w+) ADD COLUMN (\w+) \w+ GENERATED ALWAYS AS \((.*)\) STORED$", re.S
)


def functions(texts=None) -> dict[str, Function]:
    """Name -> each function the files create."""
    found = {}
    for text in (shipped() if texts is None else texts).values():
        for statement in statements(text):
            if (match := FUNCTION.match(statement)) is not None:
                found[match.group(1)] = Function(match.group(1), match.group(3))
    return found


def triggers(texts=None) -> dict[str, Trigger]:
    """Name -> each trigger the files create."""
    found = {}
    for text in (shipped() if texts is None else texts).values():
        for statement in statements(text):
            if (match := TRIGGER.match(statement)) is not None:
                found[match.group(1)] = Trigger(match.group(1), match.group(2), collapse(statement))
    return found


def generated_columns(texts=None) -> dict[str, GeneratedColumn]:
    """table.column -> each generated column the files add to a table."""
    found = {}
    for text in (shipped() if texts is None else texts).values():
        for statement in statements(text):
            if (match := GENERATED_COLUMN.match(statement)) is not None:
                column = GeneratedColumn(match.group(1), match.group(2), collapse(match.group(3)))
                found[column.qualified] = column
    return found


def collapse(sql: str) -> str:
    return " ".join(sql.split())
