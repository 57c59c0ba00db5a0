"""A language model may need its repository's own code to load (Kimi-Linear's tokenizer): the engines'
commands then carry --trust-remote-code (issue #43)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0027_cluster_index_carries_market_prices"),
    ]

    operations = [
        migrations.AddField(
            model_name="languagemodel",
            name="trust_remote_code",
            field=models.BooleanField(
                default=False,
                help_text="Its repository holds code the engines run to load it (a tokenizer or config class of its own): every vLLM and SGLang command carries --trust-remote-code.",
                verbose_name="Needs --trust-remote-code",
            ),
        ),
    ]
