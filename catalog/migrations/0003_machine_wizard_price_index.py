"""An index on price for the machines the wizard may offer (live and available).

The wizard fetches, per band of GPUs used, the cheapest few machines in price order; this index lets
PostgreSQL walk them in that order from the band's cheapest price instead of sorting the whole fleet.
Raw SQL keeps it out of the model state: it serves one query, and the model's own indexes stay as
the catalog defines them.
"""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("catalog", "0002_plain_integer_figures")]

    operations = [
        migrations.RunSQL(
            sql=(
                "CREATE INDEX catalog_machine_offer_price_idx ON catalog_machine (price_per_gpu_hour) "
                "WHERE gone_at IS NULL AND is_available"
            ),
            reverse_sql="DROP INDEX catalog_machine_offer_price_idx",
        )
    ]
