"""The market preference is counted (issue 44): each machine keeps its price per GPU-hour under the
interruptible-allowed and any-market choices as columns the database computes (`sizing.markets.priced_in`),
the fleet shapes count every machine once per choice at that price, and the band walks read each choice's
price from indexes of its own (`catalog.counting`). The SQL is PostgreSQL's; the embedded SQLite run
counts by the engine and keeps the columns alone."""
import importlib
from pathlib import Path

import django.db.models.functions.comparison
from django.db import migrations, models

# The SQL as it was when this migration was written, frozen beside it: never today's generators.
SQL = Path(__file__).resolve().parent / "sql"
# SQLite adds a stored generated column by rebuilding catalog_machine, which drops the triggers on it:
# taken down first and put back after, as migration 0022 does (0014's frozen copies).
provider_copies = importlib.import_module("catalog.migrations.0014_provider_copies_kept_by_database")


def run(name):
    def operation(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute((SQL / name).read_text(), params=None)

    return operation


def sqlite_triggers_down(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in provider_copies.SQLITE_UNINSTALL:
            schema_editor.execute(statement)


def sqlite_triggers_up(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in [provider_copies.CATCH_UP, *provider_copies.SQLITE_INSTALL]:
            schema_editor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0025_cluster_index_carries_reliability'),
    ]

    operations = [
        migrations.RunPython(sqlite_triggers_down, sqlite_triggers_up),
        migrations.AddField(
            model_name='machine',
            name='any_market_price',
            field=models.GeneratedField(db_persist=True, expression=django.db.models.functions.comparison.Least(models.F('price_per_gpu_hour'), django.db.models.functions.comparison.Coalesce(models.Case(models.When(interruptible=False, then=models.F('interruptible_price_per_gpu_hour'))), models.F('price_per_gpu_hour')), django.db.models.functions.comparison.Coalesce(models.F('reserved_price_per_gpu_hour'), models.F('price_per_gpu_hour')), output_field=models.DecimalField(decimal_places=4, max_digits=10)), output_field=models.DecimalField(decimal_places=4, max_digits=10)),
        ),
        migrations.AddField(
            model_name='machine',
            name='interruptible_allowed_price',
            field=models.GeneratedField(db_persist=True, expression=django.db.models.functions.comparison.Least(models.F('price_per_gpu_hour'), django.db.models.functions.comparison.Coalesce(models.Case(models.When(interruptible=False, then=models.F('interruptible_price_per_gpu_hour'))), models.F('price_per_gpu_hour')), output_field=models.DecimalField(decimal_places=4, max_digits=10)), output_field=models.DecimalField(decimal_places=4, max_digits=10)),
        ),
        migrations.RunPython(sqlite_triggers_up, sqlite_triggers_down),
        migrations.RunPython(run("0026_market_prices_kept.sql"), run("0026_market_prices_kept.reverse.sql")),
    ]
