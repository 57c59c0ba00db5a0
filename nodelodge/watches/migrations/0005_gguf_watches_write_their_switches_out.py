"""llama.cpp and Ollama watches saved before the query carried flash_attention and kv_unified were sized with
flash attention on and without --kv-unified: written out, as a watch writes every default out, so that the
same query asked again is the same watch (`services.explicit_query`, `query_key`)."""
from django.db import migrations

WRITTEN_OUT = {"llamacpp": {"flash_attention": "on", "kv_unified": "off"}, "ollama": {"flash_attention": "on"}}


def _key(params: dict) -> str:
    # as `nodelodge.watches.services.query_key` writes it
    return "&".join(f"{key}={params[key]}" for key in sorted(params))


def write_the_switches_out(apps, schema_editor):
    Watch = apps.get_model("watches", "Watch")
    for engine, switches in WRITTEN_OUT.items():
        for watch in Watch.objects.filter(query__engine=engine).order_by("pk").iterator():
            query = {**switches, **watch.query}
            if query == watch.query:
                continue
            watch.query = query
            watch.query_key = _key(query)
            watch.save(update_fields=["query", "query_key"])


class Migration(migrations.Migration):

    dependencies = [
        ("watches", "0004_vllm_watches_keep_their_release"),
    ]

    operations = [
        migrations.RunPython(write_the_switches_out, migrations.RunPython.noop),
    ]
