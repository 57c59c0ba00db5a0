"""The counting engine's functions again, laid out on lines as the engine's shipped SQL files show
them (what each statement says is unchanged). PostgreSQL only."""
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
    dependencies = [("catalog", "0012_machine_country_price_index")]

    operations = [
        migrations.RunPython(
            run("0013_counting_functions_laid_out.sql"), run("0013_counting_functions_laid_out.reverse.sql")
        )
    ]
