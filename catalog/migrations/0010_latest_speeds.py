"""The latest tokens/s speed of each machine per model and precision, kept by the writes
(`catalog.counting.latest_speeds`). PostgreSQL only; the embedded SQLite run reads the speeds themselves."""
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
    dependencies = [("catalog", "0009_merge_fleet_counts_and_measured_speeds")]

    operations = [migrations.RunPython(run("0010_latest_speeds.sql"), run("0010_latest_speeds.reverse.sql"))]
