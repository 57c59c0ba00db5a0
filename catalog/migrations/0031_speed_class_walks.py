"""A plan walks each speed class (issue 41): the latest speeds keep each machine's price under every market
preference, and indexes by model, precision, speed class and each choice's price let a plan read each
class's cheapest machines in order and stop (`catalog.counting.speeds.speed_rows_counted`). PostgreSQL
only; the embedded SQLite run reads the speeds themselves."""
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
    dependencies = [("catalog", "0030_walk_indexes_carry_gpu_type")]

    operations = [
        migrations.RunPython(run("0031_speed_class_walks.sql"), run("0031_speed_class_walks.reverse.sql"))
    ]
