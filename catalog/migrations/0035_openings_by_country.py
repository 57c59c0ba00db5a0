"""The kept counts by country (`catalog.counting.fleet_counts`): an empty answer's openings ask the
interruptible and any-market prices in the chosen countries alone, and read each of those partitions whole
to find them. PostgreSQL only, as the kept counts are."""

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
    dependencies = [("catalog", "0034_walks_by_tier")]

    operations = [
        migrations.RunPython(run("0035_openings_by_country.sql"), run("0035_openings_by_country.reverse.sql"))
    ]
