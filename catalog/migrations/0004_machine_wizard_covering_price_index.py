"""Makes the wizard's price index covering (PostgreSQL only).

Each band of GPUs used is read in price order, and on a large fleet most of the machines that walk
passes fail the band's filters (memory, free GPUs, tier, country). With every column the band
statement reads in the index, PostgreSQL filters on the index entries alone (an index-only scan,
once VACUUM has marked the pages all-visible) instead of fetching each machine's row from the table.
The embedded SQLite run has no INCLUDE clause and keeps the plain index from 0003.
"""
from django.db import migrations

COVERING_INDEX = (
    "CREATE INDEX catalog_machine_offer_cover_idx ON catalog_machine (price_per_gpu_hour) "
    "INCLUDE (memory_per_gpu_mib, free_gpus, tier, country, last_seen_at, provider_id, "
    "provider_machine_id, id) WHERE gone_at IS NULL AND is_available"
)
PLAIN_INDEX = (
    "CREATE INDEX catalog_machine_offer_price_idx ON catalog_machine (price_per_gpu_hour) "
    "WHERE gone_at IS NULL AND is_available"
)


def make_covering(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(COVERING_INDEX)
        schema_editor.execute("DROP INDEX catalog_machine_offer_price_idx")


def make_plain(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PLAIN_INDEX)
        schema_editor.execute("DROP INDEX catalog_machine_offer_cover_idx")


class Migration(migrations.Migration):
    dependencies = [("catalog", "0003_machine_wizard_price_index")]

    operations = [migrations.RunPython(make_covering, make_plain)]
