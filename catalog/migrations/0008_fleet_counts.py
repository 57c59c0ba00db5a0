"""Fleet counts kept by the writes: the shape tables and the triggers on catalog_machine that keep
them (`catalog.counting.fleet_counts`). PostgreSQL only; the embedded SQLite run counts by the engine."""
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
    dependencies = [("catalog", "0007_modern_architectures")]

    operations = [migrations.RunPython(run("0008_fleet_counts.sql"), run("0008_fleet_counts.reverse.sql"))]
