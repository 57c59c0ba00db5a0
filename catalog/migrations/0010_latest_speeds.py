"""The latest tokens/s speed of each machine per model and precision, kept by the writes
(`catalog.counting.latest_speeds`). PostgreSQL only; the embedded SQLite run reads the speeds themselves."""
from django.db import migrations

from catalog.counting import latest_speeds


def install(apps, schema_editor):
    latest_speeds.install(schema_editor)


def uninstall(apps, schema_editor):
    latest_speeds.uninstall(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("catalog", "0009_merge_fleet_counts_and_measured_speeds")]

    operations = [migrations.RunPython(install, uninstall)]
