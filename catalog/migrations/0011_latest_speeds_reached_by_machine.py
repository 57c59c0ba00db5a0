"""The kept latest speeds' functions again: their statements reach a machine's speeds by its id, never
through the GPU type's index (`catalog.counting.latest_speeds.latest_sql`), and TRUNCATE empties the table.
The index by speed class goes: a plan's classes are now told apart by the GPUs a copy uses too, which
no index holds, so it only cost every write. PostgreSQL only."""
from django.db import migrations

from catalog.counting import fleet_counts, latest_speeds


def replace_functions(apps, schema_editor):
    fleet_counts.execute_on_postgresql(
        schema_editor, [*latest_speeds.functions_sql(), f"DROP INDEX IF EXISTS {latest_speeds.TABLE}_class_idx"]
    )


class Migration(migrations.Migration):
    dependencies = [("catalog", "0010_latest_speeds")]

    operations = [migrations.RunPython(replace_functions, migrations.RunPython.noop)]
