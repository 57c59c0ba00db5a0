"""Fleet counts kept by the writes: the shape tables and the triggers on catalog_machine that keep
them (`catalog.counting.fleet_counts`). PostgreSQL only; the embedded SQLite run counts by the engine."""
from django.db import migrations

from catalog.counting import fleet_counts


def install(apps, schema_editor):
    fleet_counts.install(schema_editor)


def uninstall(apps, schema_editor):
    fleet_counts.uninstall(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("catalog", "0007_modern_architectures")]

    operations = [migrations.RunPython(install, uninstall)]
