"""A minimum reliability is a preference (issue 44): the fleet shapes keep each machine's reliability
rounded down to two places and group by it, the latest speeds keep it, and the band walks' indexes carry
it (`catalog.counting`). PostgreSQL only; the embedded SQLite run counts by the engine."""
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
    dependencies = [("catalog", "0023_language_model_gguf_files")]

    operations = [
        migrations.RunPython(run("0024_reliability_preference.sql"), run("0024_reliability_preference.reverse.sql"))
    ]
