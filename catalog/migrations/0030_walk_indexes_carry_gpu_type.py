"""The band walks' indexes carry each machine's GPU type (`catalog.counting.indexes.WALK_COLUMNS`): a walk
of a workload fitted by kind of GPU (gpt-oss's MXFP4 experts, `catalog.counting.gpu_kinds`) reads it from
the index entries instead of each machine's row. PostgreSQL only, as the indexes are."""

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
    dependencies = [("catalog", "0029_machines_fitted_by_gpu_kind")]

    operations = [
        migrations.RunPython(
            run("0030_walk_indexes_carry_gpu_type.sql"), run("0030_walk_indexes_carry_gpu_type.reverse.sql")
        )
    ]
