"""Machines carry their provider's active flag, so the availability rule needs no join; the covering
price index leaves out machines of inactive providers (PostgreSQL only, as in 0004)."""
from django.db import migrations, models

OLD_INDEX = (
    "CREATE INDEX catalog_machine_offer_cover_idx ON catalog_machine (price_per_gpu_hour) "
    "INCLUDE (memory_per_gpu_mib, free_gpus, tier, country, last_seen_at, provider_id, "
    "provider_machine_id, id) WHERE gone_at IS NULL AND is_available"
)
NEW_INDEX = OLD_INDEX + " AND provider_is_active"


def copy_flag(apps, schema_editor):
    Provider = apps.get_model("catalog", "Provider")
    Machine = apps.get_model("catalog", "Machine")
    inactive = Provider.objects.filter(is_active=False).values("pk")
    Machine.objects.filter(provider__in=inactive).update(provider_is_active=False)


def index_with_flag(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS catalog_machine_offer_cover_idx")
        schema_editor.execute(NEW_INDEX)


def index_without_flag(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS catalog_machine_offer_cover_idx")
        schema_editor.execute(OLD_INDEX)


class Migration(migrations.Migration):
    dependencies = [("catalog", "0004_machine_wizard_covering_price_index")]

    operations = [
        migrations.AddField(
            model_name="machine",
            name="provider_is_active",
            field=models.BooleanField(default=True, editable=False),
        ),
        migrations.RunPython(copy_flag, migrations.RunPython.noop),
        migrations.RunPython(index_with_flag, index_without_flag),
    ]
