"""A llama.cpp or Ollama watch writes flash_attention and kv_unified out, as it writes every default out, and
those saved before the query carried them are written out by the migration with what they were sized with
(flash attention on, no --kv-unified): the same query asked again is the same watch."""
import pytest

from nodelodge.watches import services
from nodelodge.watches.models import Watch
from nodelodge.watches.services import WatchRequest, create_watch
from tests.factories import make_user
from tests.helpers import LLAMA_8B

QUERY = dict(pair.split("=") for pair in LLAMA_8B.split("&"))


@pytest.mark.django_db
def test_a_new_watch_writes_the_switches_its_engine_reads(catalog):
    llamacpp = create_watch(make_user(), WatchRequest(query={**QUERY, "engine": "llamacpp"}))
    ollama = create_watch(make_user(), WatchRequest(query={**QUERY, "engine": "ollama", "flash_attention": "off"}))
    vllm = create_watch(make_user(), WatchRequest(query={**QUERY, "engine": "vllm"}))
    assert (llamacpp.query["flash_attention"], llamacpp.query["kv_unified"]) == ("on", "off")
    assert ollama.query["flash_attention"] == "off" and "kv_unified" not in ollama.query
    assert "flash_attention" not in vllm.query and "kv_unified" not in vllm.query
    assert "flash_attention=on" in llamacpp.query_key and "kv_unified=off" in llamacpp.query_key


@pytest.mark.django_db(transaction=True)
def test_the_migration_writes_the_switches_of_saved_gguf_watches_out(catalog):
    """On both databases (a JSON lookup on the saved query)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from tests.helpers import migrate

    old = migrate([("watches", "0004_vllm_watches_keep_their_release")])
    try:
        OldWatch = old.get_model("watches", "Watch")
        owner = make_user()
        saved = {engine: {**QUERY, "engine": engine, "kv_cache": "16", "sort": "price", "tier": "both"}
                 for engine in ("llamacpp", "ollama")}
        saved["plain"] = QUERY
        made = {name: OldWatch.objects.create(owner_id=owner.pk, query=query, query_key=services.query_key(query),
                                              secret=f"s{index}", feed_token=f"f{index}",
                                              unsubscribe_token=f"u{index}")
                for index, (name, query) in enumerate(saved.items())}
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("watches"))
    llamacpp = Watch.objects.get(pk=made["llamacpp"].pk)
    assert llamacpp.query == {**saved["llamacpp"], "flash_attention": "on", "kv_unified": "off"}
    assert llamacpp.query_key == services.query_key(llamacpp.query)
    # the same query asked again is keyed as the saved one
    again = services.explicit_query(services.watch_query(llamacpp))
    assert services.query_key(again) == llamacpp.query_key
    assert Watch.objects.get(pk=made["ollama"].pk).query == {**saved["ollama"], "flash_attention": "on"}
    assert Watch.objects.get(pk=made["plain"].pk).query == QUERY
