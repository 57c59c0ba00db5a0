"""vLLM watches saved before the query carried vLLM's release were sized on 0.19's budget rules: written
out, they keep that meaning now that a query naming no release assumes the current stable one."""
from django.db import migrations

SIZED_ON = "0.19"


def _key(params: dict) -> str:
    # as `nodelodge.watches.services.query_key` writes it
    return "&".join(f"{key}={params[key]}" for key in sorted(params))


def write_the_release_out(apps, schema_editor):
    Watch = apps.get_model("watches", "Watch")
    for watch in Watch.objects.filter(query__engine="vllm").order_by("pk").iterator():
        if "engine_version" in watch.query:
            continue
        watch.query = {**watch.query, "engine_version": SIZED_ON}
        watch.query_key = _key(watch.query)
        watch.save(update_fields=["query", "query_key"])


class Migration(migrations.Migration):

    dependencies = [
        ("watches", "0003_below_median"),
    ]

    operations = [
        migrations.RunPython(write_the_release_out, migrations.RunPython.noop),
    ]
