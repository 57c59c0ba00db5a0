"""The kept latest speeds' functions again: their statements reach a machine's speeds by its id, never
through the GPU type's index (`catalog.latest_speeds.latest_sql`). PostgreSQL only."""
from django.db import migrations

from catalog import fleet_counts, latest_speeds


def replace_functions(apps, schema_editor):
    fleet_counts.execute_on_postgresql(schema_editor, latest_speeds.functions_sql())


class Migration(migrations.Migration):
    dependencies = [("catalog", "0010_latest_speeds")]

    operations = [migrations.RunPython(replace_functions, migrations.RunPython.noop)]
