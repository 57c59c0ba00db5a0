"""llama.cpp's build on the query (engine_version under engine=llamacpp): from b9460 llama-server reserves the
compute buffer's logits for one row per slot (ggml-org/llama.cpp#23861), before it and where the build is not
given for every token of the micro-batch; the answer names the build and its rule on the page, the API, the GPU
what-if and the commands; a value that is no build is refused beside its field."""
import json
from decimal import Decimal

import pytest
from django.core.management import call_command

from nodelodge.recommendations.query import parse_query
from nodelodge.watches.services import explicit_query
from sizing.calculators.llamacpp_builds import NOT_GIVEN, PER_SLOT_FROM, parse_build
from tests.helpers import LLAMA_8B, LLAMA_8B_ARGS

pytestmark = pytest.mark.django_db

LLAMACPP = LLAMA_8B.replace("requests=1", "requests=4") + "&engine=llamacpp"
PER_SLOT = "one row per slot, 4 rows (llama-server from build b9460)"
WHOLE = "every token of the micro-batch (reserved so before llama-server build b9460"
# The published llama-server start-up (ACCURACY.md, llama.cpp and Ollama): Qwen2.5 7B Q4_K_M, -c 16384, four
# slots (its auto slots over one unified pool), a q8_0 cache, flash attention; its compute buffer logged 148.09 MiB.
SERVER_LOG = "model=qwen2-5-7b&engine=llamacpp&quantization=Q4_K_M&kv_cache=q8_0&max_model_len=16384&parallel=4" \
             "&gpu_memory_gib=30.26"


def get_json(client, path, query, **headers):
    response = client.get(f"/api/v1/{path}?{query}", **headers)
    return response.status_code, response.json()


def compute(body):
    return next(item for item in body["items"] if item["name"] == "Compute buffer (one micro-batch)")


def test_the_build_is_read_as_llama_cpp_numbers_its_releases():
    assert parse_build("b10240").text == parse_build("10240").text == parse_build(" B10240 ").text == "b10240"
    assert parse_build("").given is False and parse_build(None) == NOT_GIVEN
    assert parse_build(f"b{PER_SLOT_FROM - 1}").reservation == "micro-batch"
    assert parse_build(f"b{PER_SLOT_FROM}").reservation == "slot"


def test_a_build_from_b9460_reserves_one_row_per_slot_and_the_answer_names_build_and_rule(client, small_fleet):
    _, default = get_json(client, "estimate", LLAMACPP)
    _, pool = get_json(client, "estimate", LLAMACPP + "&engine_version=5912")
    _, old = get_json(client, "estimate", LLAMACPP + "&engine_version=9459")
    status, new = get_json(client, "estimate", LLAMACPP + "&engine_version=b10240")
    assert status == 200
    assert default["engine_version"] is None and old["engine_version"] == "b9459"
    assert new["engine_version"] == "b10240"
    # the build not given is sized as before b9460, the whole micro-batch's logits, in the larger graph of one
    # pool's (every build before b5913: the same bytes as before) and a stream per slot's (each token's mask
    # over its own stream's cells)
    assert compute(default)["bytes"] == compute(pool)["bytes"] > compute(old)["bytes"] > compute(new)["bytes"]
    assert default["total_bytes"] == pool["total_bytes"]  # 4 × 4,096: the same cells in a pool and in streams
    assert WHOLE in compute(default)["formula"] and WHOLE in compute(old)["formula"]
    assert PER_SLOT in compute(new)["formula"]
    assert default["total_bytes"] - new["total_bytes"] == compute(default)["bytes"] - compute(new)["bytes"]
    assert any("llama.cpp build not given" in line and "b9460" in line for line in default["assumptions"])
    assert any("llama.cpp build b10240: llama-server reserves the logits of one row per slot" in line
               for line in new["assumptions"])
    assert any("llama.cpp build b9459: the compute buffer holds the logits of every token" in line
               for line in old["assumptions"])


def test_machine_rows_hold_more_with_the_build_and_their_command_is_unchanged(client, small_fleet):
    _, default = get_json(client, "recommendations", LLAMACPP)
    _, new = get_json(client, "recommendations", LLAMACPP + "&engine_version=b10240")
    commands = [row["command"] for row in new["machines"] if row["command"]]
    assert commands and commands == [row["command"] for row in default["machines"] if row["command"]]
    assert all(command.startswith("llama-server -m ") and "b10240" not in command for command in commands)
    held = {row["id"]: row["max_context_at_requests"] for row in default["machines"]}
    assert all(row["max_context_at_requests"] >= held[row["id"]] for row in new["machines"] if row["id"] in held)
    constraints = {c["label"]: c["value"] for c in new["constraints"]}
    assert constraints["llama.cpp build"] == "b10240: the logits of one row per slot reserved"
    assert {c["label"]: c["value"] for c in default["constraints"]}["llama.cpp build"] == (
        "not given: the logits of every token of the micro-batch reserved, as before b9460")


def test_the_page_shows_the_assumed_build_and_keeps_it_on_the_address(client, small_fleet):
    page = client.get(f"/?{LLAMACPP}&engine_version=b10240").content.decode()
    assert "llama.cpp build b10240: llama-server reserves the logits of one row per slot" in page
    assert PER_SLOT in page and 'value="b10240"' in page and "engine_version=b10240" in page
    german = client.get(f"/de/?{LLAMACPP}&engine_version=b10240", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "llama.cpp-Build b10240: llama-server reserviert die Logits einer Zeile je Slot" in german
    assert "Engine-Version (vLLM-Version, llama.cpp-Build oder Ollama-Version)" in german
    default = client.get(f"/?{LLAMACPP}").content.decode()
    assert "llama.cpp build not given" in default and 'placeholder="b9460"' in default


def test_a_watch_and_the_address_keep_the_build():
    query = parse_query({"workload": "inference", "model": "llama-3-1-8b", "precision": "16", "context": "4096",
                         "requests": "4", "engine": "llamacpp", "engine_version": "10240"})
    assert query.llamacpp_build.text == "b10240" and query.as_params()["engine_version"] == "b10240"
    assert explicit_query(query)["engine_version"] == "b10240"
    assert "engine_version" not in parse_query({**query.as_params(), "engine_version": ""}).as_params()


@pytest.mark.parametrize("language", ["en", "de"])
def test_a_value_that_is_no_build_is_a_400_beside_its_field_in_both_languages(client, small_fleet, language):
    words = {"en": "Enter the llama.cpp build as its number, such as b6500 or 6500",
             "de": "Geben Sie den llama.cpp-Build als Nummer an, etwa b6500 oder 6500"}[language]
    for path in ("estimate", "recommendations"):
        status, body = get_json(client, path, LLAMACPP + "&engine_version=banana", HTTP_ACCEPT_LANGUAGE=language)
        assert status == 400 and words in body["errors"]["engine_version"], body
    status, body = get_json(client, "capacity", SERVER_LOG + "&engine_version=b-1", HTTP_ACCEPT_LANGUAGE=language)
    assert status == 400 and words in body["errors"]["engine_version"], body
    prefix = "/de" if language == "de" else ""
    page = client.get(f"{prefix}/?{LLAMACPP}&engine_version=banana", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert 'id="err-engine_version"' in page and words in page


@pytest.mark.parametrize(("extra", "words"), [
    ("&engine=llamacpp&engine_version=0.19", "llama.cpp build as its number"),  # a vLLM release
    ("&engine=vllm&engine_version=b6500", "vLLM version as numbers with dots"),  # a llama.cpp build
    ("&engine=ollama&engine_version=b6500", "Enter the Ollama version as ollama --version prints it"),
    ("&engine=sglang&engine_version=b6500", "read by vLLM (its release), llama.cpp (its build) and Ollama"),
])
def test_another_engines_version_is_a_422_beside_its_field(client, small_fleet, extra, words):
    status, body = get_json(client, "estimate", LLAMA_8B + extra)
    assert status == 422 and words in body["errors"]["engine_version"], body
    what_if = "model=llama-3-1-8b&gpu_memory_gib=24" + extra
    status, body = get_json(client, "capacity", what_if)
    assert status == 422 and words in body["errors"]["engine_version"], body


def test_the_what_if_sizes_the_commands_streams_of_the_published_llama_server_logs_build(client, small_fleet):
    """The log left -np out and ran llama-server's auto slots over one unified pool (148.09 MiB, held by the
    log's own check as such); the what-if sizes the command it prints, -np 4 without --kv-unified: a stream
    per slot, the same 476 MiB of cache and each token's mask over its own stream's 4,096 cells."""
    status, body = get_json(client, "capacity", SERVER_LOG + "&engine_version=b10240")
    assert status == 200, body
    assert body["engine_version"] == "b10240" and "one row per slot" in body["engine_version_rules"]
    assert "one KV stream per slot" in body["engine_version_rules"]
    assert body["kv_cache_bytes"] == 476 * 2**20 and body["kv_cache_tokens"] == 16384
    assert round(compute(body)["bytes"] / 2**20, 2) == 136.01  # the log's pool: 148.01 of 148.09 MiB
    assert body["command"] == "llama-server -m Qwen2.5-7B-Q4_K_M.gguf -c 16384 -np 4 -ngl 999 -fa on " \
        "--cache-type-k q8_0 --cache-type-v q8_0"
    _, default = get_json(client, "capacity", SERVER_LOG)
    assert default["engine_version"] is None and "llama.cpp build not given" in default["engine_version_rules"]
    assert compute(default)["bytes"] == int(Decimal("343.01171875") * 2**20)  # as before: 2.32× the log
    _, ollama = get_json(client, "capacity", SERVER_LOG.replace("engine=llamacpp", "engine=ollama")
                         .replace("max_model_len=16384", "max_model_len=4096"))
    assert ollama["engine_version"] is None and "Ollama" in ollama["engine_version_rules"]
    assert compute(ollama)["bytes"] == compute(default)["bytes"]
    page = client.get(f"/calculators/?{SERVER_LOG}&engine_version=b10240").content.decode()
    assert "llama.cpp build b10240: llama-server reserves the logits of one row per slot" in page


def test_the_commands_take_and_name_the_build(small_fleet, capsys):
    args = (*LLAMA_8B_ARGS[:-1], "4", "--engine", "llamacpp")
    call_command("estimate", *args, "--engine-version", "b10240", "--json")
    assert json.loads(capsys.readouterr().out)["engine_version"] == "b10240"
    call_command("recommend", *args, "--engine-version", "10240")
    out = capsys.readouterr().out
    assert PER_SLOT in out and "llama-server -m " in out
    assert "llama.cpp build: b10240: the logits of one row per slot reserved" in out
    call_command("estimate", *args)
    assert "llama.cpp build not given" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        call_command("recommend", *args, "--engine-version", "latest")
    assert refused.value.code == 2 and "engine_version" in capsys.readouterr().err


def test_the_what_if_over_two_gpus_lists_the_buffer_of_the_gpu_without_the_output_head(client, small_fleet):
    """Split by layers, the last GPU holds the output head and reserves the logits; the other's compute buffer
    is its own layers' graph without them, an item of its own beside the pipeline's copies, smaller than the
    buffer of the GPU with the head, which is the need per GPU."""
    from catalog.models import LanguageModel
    from catalog.rows import language_model_spec
    from sizing.calculators.llamacpp import LlamaCppSettings, llamacpp_need
    from sizing.calculators.llamacpp_builds import KV_STREAMS, ONE_ROW_PER_SLOT

    status, body = get_json(client, "capacity", SERVER_LOG + "&engine_version=b10240&pipeline_parallel=2")
    assert status == 200, body
    assert body["items"][-1]["name"] == "Pipeline copies of the compute buffer's inputs"
    other = body["other_gpus_compute"]
    assert other["name"] == "Compute buffer on each other GPU"
    qwen = language_model_spec(LanguageModel.objects.get(slug="qwen2-5-7b"))
    need = llamacpp_need(qwen, LlamaCppSettings("Q4_K_M", 16384, parallel=4, cache_type_k="q8_0",
                                                cache_type_v="q8_0", reservation=ONE_ROW_PER_SLOT,
                                                kv_layout=KV_STREAMS))
    assert other["per_gpu"] and other["bytes"] == need.other_gpus_compute_bytes(2) > 0
    assert other["bytes"] < compute(body)["bytes"] + body["items"][-2]["bytes"]
    assert "Split by layers over several GPUs" in compute(body)["formula"]
    _, one = get_json(client, "capacity", SERVER_LOG + "&engine_version=b10240")
    assert one["other_gpus_compute"] is None
