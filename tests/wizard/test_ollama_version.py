"""Ollama's release on the query (engine_version under engine=ollama), read as the llama.cpp build it runs:
before 0.30.0 its own runners (the whole micro-batch's logits, one KV pool), from 0.30.0 llama-server
(ollama/ollama#16031) with a KV stream per slot, b9452 in 0.30.0 (the whole micro-batch) and b9479 or later
from 0.30.1 (one row of logits per slot, ggml-org/llama.cpp#23861). Not given, or later than the releases
read, it is sized as before; the page, the API, the GPU what-if, the commands and watches name it."""
import json

import pytest
from django.core.management import call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog import rows as catalog_rows
from nodelodge.recommendations.capacity import parse_capacity
from nodelodge.recommendations.query import Conflict, QueryError, parse_query
from nodelodge.recommendations.vllm_release import engine_version_pattern
from nodelodge.watches.services import explicit_query
from sizing.calculators.llamacpp_builds import (
    KV_POOL,
    KV_STREAMS,
    NOT_GIVEN,
    ONE_ROW_PER_SLOT,
    WHOLE_MICRO_BATCH,
    kv_layout,
    parse_ollama_version,
)
from sizing.errors import SizingError
from tests.helpers import LLAMA_8B, LLAMA_8B_ARGS

pytestmark = pytest.mark.django_db

OLLAMA = LLAMA_8B.replace("requests=1", "requests=4") + "&engine=ollama"
# Gemma 3 4B: five sliding-window layers (1,024 tokens) to each global one.
GEMMA = OLLAMA.replace("llama-3-1-8b", "gemma-3-4b")
PER_SLOT = "one row per slot, 4 rows (llama-server from build b9460)"
WHOLE = "every token of the micro-batch (reserved so before llama-server build b9460"
WHAT_IF = "model=qwen2-5-7b&engine=ollama&quantization=Q4_K_M&kv_cache=q8_0&max_model_len=4096&parallel=4" \
          "&gpu_memory_gib=30.26"


def get_json(client, path, query, **headers):
    response = client.get(f"/api/v1/{path}?{query}", **headers)
    return response.status_code, response.json()


def item(body, name):
    return next(found for found in body["items"] if found["name"] == name)


def compute(body):
    return item(body, "Compute buffer (one micro-batch)")


def cache(body):
    return item(body, "KV cache on the GPUs")


@pytest.mark.parametrize(("text", "number", "reservation", "streams"), [
    ("0.5.4", None, WHOLE_MICRO_BATCH, False),  # its own runners
    ("0.24.0", None, WHOLE_MICRO_BATCH, False),
    ("0.30.0", 9452, WHOLE_MICRO_BATCH, True),  # llama-server b9452, before b9460
    ("0.30.1", 9479, ONE_ROW_PER_SLOT, True),
    ("v0.32.15", 9479, ONE_ROW_PER_SLOT, True),  # pins b10488: b9479 or later
    ("0.33.0", None, WHOLE_MICRO_BATCH, False),  # later than the releases read: as not given
])
def test_an_ollama_release_is_read_as_the_llama_cpp_build_it_runs(text, number, reservation, streams):
    build = parse_ollama_version(text)
    assert build.text == text.removeprefix("v") and build.number == number
    assert build.reservation == reservation
    assert kv_layout("ollama", build, 4) == (KV_STREAMS if streams else KV_POOL)
    assert parse_ollama_version(" ") == parse_ollama_version(None) == NOT_GIVEN


@pytest.mark.parametrize("text", ["0.30", "0.30.1-rc0", "latest", "b9479", "0.30.1.2", "0.３0.1"])
def test_what_is_no_ollama_release_is_refused_by_its_field(text):
    with pytest.raises(SizingError) as refused:
        parse_ollama_version(text)
    assert refused.value.field == "engine_version" and "ollama --version" in refused.value.message


def test_from_0_30_1_the_compute_buffer_holds_one_row_of_logits_per_slot(client, small_fleet):
    _, default = get_json(client, "estimate", OLLAMA)
    _, old = get_json(client, "estimate", OLLAMA + "&engine_version=0.24.0")
    _, first = get_json(client, "estimate", OLLAMA + "&engine_version=0.30.0")
    _, unknown = get_json(client, "estimate", OLLAMA + "&engine_version=0.40.0")
    status, new = get_json(client, "estimate", OLLAMA + "&engine_version=v0.30.1")
    assert status == 200
    assert default["engine_version"] is None and new["engine_version"] == "0.30.1"
    assert old["engine_version"] == "0.24.0" and unknown["engine_version"] == "0.40.0"
    # older and unknown releases are sized as before: the whole micro-batch, byte for byte
    assert default["total_bytes"] == old["total_bytes"] == unknown["total_bytes"]
    assert compute(default) == compute(old) == compute(unknown) and WHOLE in compute(default)["formula"]
    # 0.30.0's llama-server reserves the whole micro-batch too, each token's mask over its own slot's stream
    assert compute(default)["bytes"] > compute(first)["bytes"] > compute(new)["bytes"]
    assert WHOLE in compute(first)["formula"]
    assert PER_SLOT in compute(new)["formula"]
    # a model without sliding-window layers at a num_ctx of whole 256s: the cache as before
    assert cache(new)["bytes"] == cache(default)["bytes"]
    assert default["total_bytes"] - new["total_bytes"] == compute(default)["bytes"] - compute(new)["bytes"]
    assert any("Ollama's version not given" in line and "engine_version=0.30.1 or later" in line
               for line in default["assumptions"])
    assert any("Ollama 0.24.0 runs its own runners" in line for line in old["assumptions"])
    assert any("Ollama 0.30.0 starts llama-server build b9452, before b9460" in line for line in first["assumptions"])
    assert any("Ollama 0.30.1 starts llama-server build b9479 or later" in line and "one stream per slot" in line
               for line in new["assumptions"])
    assert any("Ollama 0.40.0 is later than the releases read here" in line for line in unknown["assumptions"])


def test_from_0_30_0_a_sliding_window_model_keeps_its_window_and_a_micro_batch_in_every_slot(client, small_fleet):
    """llama-server started with -np keeps a KV stream per slot (llama_kv_cache_iswa): a sliding-window layer
    holds 4 × (1,024 + 512) cells, where Ollama's own runners held 4 × 1,024 + 512, rounded up to 256."""
    spec = catalog_rows.language_model_spec(catalog_rows.get_model("gemma-3-4b"))
    sliding = sum(1 for layer in range(spec.layers) if spec.architecture.kind_of_layer(layer) == "S")
    per_cell = 2 * spec.kv_heads * spec.head_dim * 2  # K and V in f16
    _, default = get_json(client, "estimate", GEMMA)
    _, old = get_json(client, "estimate", GEMMA + "&engine_version=0.24.0")
    _, new = get_json(client, "estimate", GEMMA + "&engine_version=0.30.0")
    assert sliding and cache(default)["bytes"] == cache(old)["bytes"]
    assert cache(new)["bytes"] - cache(default)["bytes"] == sliding * (4 * 1536 - 4608) * per_cell
    assert "4 streams × 4,096 cells (-c 16,384, -np 4: a stream per slot" in cache(new)["formula"]
    assert "a sliding-window layer's stream 1,536" in cache(new)["formula"]
    assert "a stream" not in cache(default)["formula"]


def test_machine_rows_hold_more_with_the_release_and_the_settings_are_unchanged(client, small_fleet):
    _, default = get_json(client, "recommendations", OLLAMA)
    _, new = get_json(client, "recommendations", OLLAMA + "&engine_version=0.30.1")
    commands = [row["command"] for row in new["machines"] if row["command"]]
    assert commands and commands == [row["command"] for row in default["machines"] if row["command"]]
    assert all(command.endswith("ollama serve") and "0.30.1" not in command for command in commands)
    held = {row["id"]: row["max_context_at_requests"] for row in default["machines"]}
    assert all(row["max_context_at_requests"] >= held[row["id"]] for row in new["machines"] if row["id"] in held)
    constraints = {c["label"]: c["value"] for c in new["constraints"]}
    assert constraints["Ollama version"] == "0.30.1: llama-server b9479 or later, the logits of one row per slot " \
        "reserved"
    assert {c["label"]: c["value"] for c in default["constraints"]}["Ollama version"] == (
        "not given: the logits of every token of the micro-batch reserved, as Ollama's own runners before 0.30.0")


def test_the_page_shows_the_assumed_release_in_both_languages_and_keeps_it_on_the_address(client, small_fleet):
    page = client.get(f"/?{OLLAMA}&engine_version=0.30.1").content.decode()
    assert "Ollama 0.30.1 starts llama-server build b9479 or later" in page
    assert PER_SLOT in page and 'value="0.30.1"' in page and "engine_version=0.30.1" in page
    german = client.get(f"/de/?{OLLAMA}&engine_version=0.30.1", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Ollama 0.30.1 startet llama-server ab Build b9479" in german
    assert "Sein KV-Cache hält einen Stream je Slot" in german
    default = client.get(f"/?{OLLAMA}").content.decode()
    assert "Ollama&#x27;s version not given" in default and 'placeholder="0.30.1"' in default
    german_default = client.get(f"/de/?{OLLAMA}", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Ollamas Version nicht angegeben" in german_default and "engine_version=0.30.1 oder später" in german_default


def test_a_watch_and_the_address_keep_the_release():
    query = parse_query({"workload": "inference", "model": "llama-3-1-8b", "precision": "16", "context": "4096",
                         "requests": "4", "engine": "ollama", "engine_version": "v0.32.15"})
    assert query.llamacpp_build.text == "0.32.15" and query.as_params()["engine_version"] == "0.32.15"
    assert explicit_query(query)["engine_version"] == "0.32.15"
    assert parse_query(explicit_query(query)).llamacpp_build == query.llamacpp_build
    assert "engine_version" not in parse_query({**query.as_params(), "engine_version": ""}).as_params()


@pytest.mark.parametrize("language", ["en", "de"])
def test_a_value_that_is_no_release_is_a_400_beside_its_field_in_both_languages(client, small_fleet, language):
    words = {"en": "Enter the Ollama version as ollama --version prints it, such as 0.30.1",
             "de": "Geben Sie die Ollama-Version an, wie ollama --version sie ausgibt, etwa 0.30.1"}[language]
    for path in ("estimate", "recommendations"):
        status, body = get_json(client, path, OLLAMA + "&engine_version=latest", HTTP_ACCEPT_LANGUAGE=language)
        assert status == 400 and words in body["errors"]["engine_version"], body
    status, body = get_json(client, "capacity", WHAT_IF + "&engine_version=0.30.1-rc0",
                            HTTP_ACCEPT_LANGUAGE=language)
    assert status == 400 and words in body["errors"]["engine_version"], body
    prefix = "/de" if language == "de" else ""
    page = client.get(f"{prefix}/?{OLLAMA}&engine_version=latest", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert 'id="err-engine_version"' in page and words in page


@pytest.mark.parametrize("version", ["0.19", "b6500"])
def test_another_engines_version_under_ollama_is_a_422_beside_its_field(client, small_fleet, version):
    status, body = get_json(client, "estimate", OLLAMA + f"&engine_version={version}")
    assert status == 422 and "ollama --version" in body["errors"]["engine_version"], body
    status, body = get_json(client, "capacity", WHAT_IF + f"&engine_version={version}")
    assert status == 422 and "ollama --version" in body["errors"]["engine_version"], body


def test_the_what_if_names_the_release_its_rule_and_its_cache(client, small_fleet):
    status, body = get_json(client, "capacity", WHAT_IF + "&engine_version=0.30.1")
    assert status == 200, body
    assert body["engine_version"] == "0.30.1" and "one row per slot" in body["engine_version_rules"]
    assert PER_SLOT in compute(body)["formula"]
    assert body["ollama"]["OLLAMA_NUM_PARALLEL"] == "4" and body["ollama"]["OLLAMA_CONTEXT_LENGTH"] == "4096"
    _, default = get_json(client, "capacity", WHAT_IF)
    assert default["engine_version"] is None and "Ollama's version not given" in default["engine_version_rules"]
    assert compute(default)["bytes"] > compute(body)["bytes"]
    assert default["kv_cache_bytes"] == body["kv_cache_bytes"] and default["kv_cache_tokens"] == 16384
    # each slot's num_ctx rounded up on its own: 4 × 1,024 cells, where one pool rounds 4 × 1,000 up to 4,096
    odd = WHAT_IF.replace("max_model_len=4096", "max_model_len=1000")
    _, pool = get_json(client, "capacity", odd)
    _, streams = get_json(client, "capacity", odd + "&engine_version=0.30.1")
    assert pool["kv_cache_tokens"] == streams["kv_cache_tokens"] == 4096
    odd = WHAT_IF.replace("max_model_len=4096", "max_model_len=300").replace("parallel=4", "parallel=2")
    _, pool = get_json(client, "capacity", odd)
    _, streams = get_json(client, "capacity", odd + "&engine_version=0.30.1")
    assert pool["kv_cache_tokens"] == 768 and streams["kv_cache_tokens"] == 1024
    page = client.get(f"/calculators/?{WHAT_IF}&engine_version=0.30.1").content.decode()
    assert "Ollama 0.30.1 starts llama-server build b9479 or later" in page


def test_the_commands_take_and_name_the_release(small_fleet, capsys):
    args = (*LLAMA_8B_ARGS[:-1], "4", "--engine", "ollama")
    call_command("estimate", *args, "--engine-version", "0.30.1", "--json")
    assert json.loads(capsys.readouterr().out)["engine_version"] == "0.30.1"
    call_command("recommend", *args, "--engine-version", "v0.30.1")
    out = capsys.readouterr().out
    assert PER_SLOT in out and "ollama serve" in out
    assert "Ollama version: 0.30.1: llama-server b9479 or later, the logits of one row per slot reserved" in out
    call_command("estimate", *args)
    assert "Ollama's version not given" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        call_command("recommend", *args, "--engine-version", "latest")
    assert refused.value.code == 2 and "engine_version" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["vllm", "llamacpp", "ollama", "sglang"])
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(version=st.from_regex(engine_version_pattern(), fullmatch=True))
def test_an_engine_version_the_schema_allows_is_never_a_bad_value_under_any_engine(engine, version):
    """The API's schema states engine_version once (`vllm_release.engine_version_pattern`): a value it allows
    is read by the engine or refused as one that does not go with it (422, `Conflict`), never as a bad
    value (400) — the query's and the what-if's alike."""
    query = {"workload": "inference", "model": "llama-3-1-8b", "engine": engine, "engine_version": version}
    what_if = {"model": "llama-3-1-8b", "engine": engine, "engine_version": version}
    for parse, data in ((parse_query, query), (parse_capacity, what_if)):
        try:
            parse(data)
        except QueryError as error:
            assert isinstance(error, Conflict) or "engine_version" not in error.errors, (parse, error.errors)
