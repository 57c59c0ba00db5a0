"""The default market's band walks also read by tier then price (`catalog.counting.indexes`): a walk that
keeps one tier of a set of countries (Secure in the EU) read every machine of its band in those countries
from the table and sorted them; by tier it reads its own tier's in price order and stops at its limit.
PostgreSQL only, as the other walk indexes are."""

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
    dependencies = [("catalog", "0033_gpu_types_keep_their_kind")]

    operations = [migrations.RunPython(run("0034_walks_by_tier.sql"), run("0034_walks_by_tier.reverse.sql"))]
