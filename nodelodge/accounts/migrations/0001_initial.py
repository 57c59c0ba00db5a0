"""API tokens move here from Watches: the model's state only; the table `watches_apitoken` and its
rows stay as they are."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("watches", "0001_initial"),  # where the table was made
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ApiToken",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name="ID")),
                        ("digest", models.CharField(max_length=64, unique=True)),
                        ("prefix", models.CharField(
                            help_text="The token's first characters, to tell tokens apart.", max_length=12)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        ("owner", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                    related_name="api_tokens", to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        "db_table": "watches_apitoken",
                        "ordering": ["-created_at", "-pk"],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
