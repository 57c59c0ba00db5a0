"""The kept latest speeds' functions again: their statements reach a machine's speeds by its id, never
through the GPU type's index (`catalog.counting.latest_speeds.latest_sql`), and TRUNCATE empties the table.
The index by speed class goes: a plan's classes are now told apart by the GPUs a copy uses too, which
no index holds, so it only cost every write. PostgreSQL only."""
from pathlib import Path

from django.db import migrations

# The SQL as it was when this migration was written, frozen beside it: never today's generators.
SQL = Path(__file__).resolve().parent / "sql"


def run(name):
    def operation(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute((SQL / name).read_text(), params=None)

    return operation


class Migration(migrations.Migration):
    dependencies = [("catalog", "0010_latest_speeds")]

    operations = [migrations.RunPython(run("0011_latest_speeds_reached_by_machine.sql"), migrations.RunPython.noop)]
