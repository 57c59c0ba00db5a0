"""A covering index by country, then price (PostgreSQL only).

With a choice of one to a few countries, the walk along the price index passes every other
country's machines before it finds a band's cheapest; by country it reads only the chosen ones'
(`catalog.counting.fleet_machines.shown_ids_sql`). Same columns and condition as the price index of 0005.
"""
from django.db import migrations

COUNTRY_INDEX = (
    "CREATE INDEX catalog_machine_country_price_idx ON catalog_machine (country, price_per_gpu_hour) "
    "INCLUDE (memory_per_gpu_mib, free_gpus, tier, last_seen_at, provider_id, provider_machine_id, id) "
    "WHERE gone_at IS NULL AND is_available AND provider_is_active"
)


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(COUNTRY_INDEX)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS catalog_machine_country_price_idx")


class Migration(migrations.Migration):
    dependencies = [("catalog", "0011_latest_speeds_reached_by_machine")]

    operations = [migrations.RunPython(create, drop)]
