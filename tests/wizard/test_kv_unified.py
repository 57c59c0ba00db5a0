"""llama-server's --kv-unified on the GPU what-if (kv_unified=on, engine=llamacpp): one KV pool the parallel
slots share whatever the build's default (a stream per slot from b5913), each request may take up to -c of it
(llama_context: n_ctx_seq = n_ctx), the micro-batch reserved without rounding to the slots, and the command
says --kv-unified. Ollama and vLLM have no such setting, nor do builds before b5913: refused beside the field."""
from dataclasses import replace

import pytest

from catalog import rows as catalog_rows
from sizing.calculators.llamacpp import (
    LlamaCppSettings,
    cache_cells,
    kv_streams,
    llamacpp_need,
    reserved_tokens,
)
from sizing.calculators.llamacpp_builds import KV_POOL, KV_STREAMS

pytestmark = pytest.mark.django_db

# Three slots: a stream per slot rounds each share of -c up to 256 cells and the micro-batch up to a multiple
# of three; one pool does neither.
WHAT_IF = ("model=qwen2-5-7b&engine=llamacpp&quantization=Q4_K_M&kv_cache=f16&max_model_len=12000&parallel=3"
           "&gpu_memory_gib=23.55&engine_version=b10240")


def capacity(client, query, **headers):
    response = client.get(f"/api/v1/capacity?{query}", **headers)
    return response.status_code, response.json()


def kv_item(body):
    return next(item for item in body["items"] if item["name"] == "KV cache on the GPUs")


def test_kv_unified_sizes_one_pool_and_each_request_may_take_the_whole_context(client, models_and_gpus):
    status, streams = capacity(client, WHAT_IF)
    assert status == 200
    status, unified = capacity(client, WHAT_IF + "&kv_unified=on")
    assert status == 200 and unified["kv_unified"] is True and streams["kv_unified"] is False
    spec = catalog_rows.language_model_spec(catalog_rows.get_model("qwen2-5-7b"))
    asked = LlamaCppSettings(quant_type="Q4_K_M", context=12000, parallel=3, kv_layout=KV_STREAMS,
                             reservation="slot")
    pool = llamacpp_need(spec, replace(asked, kv_unified=True))
    per_slot = llamacpp_need(spec, asked)
    # -c 12,000 padded to 12,032 cells in one pool; three streams of 4,000 padded to 4,096 each: 12,288.
    assert unified["kv_cache_tokens"] == cache_cells(replace(asked, kv_unified=True)) == 12_032
    assert streams["kv_cache_tokens"] == cache_cells(asked) == 12_288
    assert unified["kv_cache_bytes"] == pool.kv_cache_bytes < streams["kv_cache_bytes"] == per_slot.kv_cache_bytes
    # Each request may take all of -c from the shared pool, not a third of it.
    assert unified["context_per_request"] == 12_000 and streams["context_per_request"] == 4_000
    # The micro-batch is reserved as asked (512), not rounded up to a multiple of the three slots (513).
    assert kv_streams(replace(asked, kv_unified=True)) == 1 and kv_streams(asked) == 3
    assert reserved_tokens(asked, cache_cells(asked), 3) == 513
    assert "--kv-unified" in unified["command"] and "--kv-unified" not in streams["command"]
    assert "one pool the 3 parallel slots share: --kv-unified" in kv_item(unified)["formula"]
    assert replace(asked, kv_unified=True).layout == KV_POOL


def test_the_page_says_the_pool_is_shared_in_both_languages(client, models_and_gpus):
    query = WHAT_IF.replace("engine_version=b10240", "engine_version=b10240&kv_unified=on")
    english = client.get(f"/calculators/?{query}").content.decode()
    assert "one pool the 3 slots share (--kv-unified), each request up to 12,000 tokens of it." in english
    german = client.get(f"/de/calculators/?{query}").content.decode()
    assert "ein Pool für die 3 Slots (--kv-unified), jede Anfrage bis zu 12.000 Token davon." in german


@pytest.mark.parametrize("query, field, words", [
    (WHAT_IF.replace("engine=llamacpp", "engine=ollama").replace("&engine_version=b10240", "") + "&kv_unified=on",
     "kv_unified", "Ollama and the other engines set no such option"),
    ("model=llama-3-1-8b&engine=vllm&kv_unified=off", "kv_unified", "is llama-server's --kv-unified"),
    (WHAT_IF.replace("b10240", "b5000") + "&kv_unified=on", "kv_unified", "before b5913 have no --kv-unified"),
])
def test_kv_unified_where_no_engine_or_build_takes_it_is_refused_beside_its_field(client, models_and_gpus, query,
                                                                                   field, words):
    status, body = capacity(client, query)
    assert status == 422
    assert words in body["errors"][field]


def test_a_value_other_than_on_or_off_is_refused_in_both_languages(client, models_and_gpus):
    status, body = capacity(client, WHAT_IF + "&kv_unified=maybe")
    assert status == 400 and body["errors"]["kv_unified"] == "kv_unified is on or off."
    status, body = capacity(client, WHAT_IF + "&kv_unified=maybe", HTTP_ACCEPT_LANGUAGE="de")
    assert status == 400 and body["errors"]["kv_unified"] == "kv_unified ist an oder aus (on oder off)."


def test_an_old_build_with_kv_unified_off_is_sized_as_its_own_pool(client, models_and_gpus):
    status, old = capacity(client, WHAT_IF.replace("b10240", "b5000") + "&kv_unified=off")
    assert status == 200 and old["kv_unified"] is False and "--kv-unified" not in old["command"]
    assert old["kv_cache_tokens"] == 12_032  # one pool before b5913
