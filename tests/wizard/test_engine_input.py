"""The inference engine as an input (transformers, the default, or vllm): on the page, in the API, the
commands, the address and "Constraints applied"; under vllm the breakdown is vLLM's budget, and every
machine row says what it holds and, under vllm, how to start it."""
import json
from decimal import Decimal

import pytest
from django.core.management import call_command

from tests.helpers import LLAMA_8B, with_details_opened

pytestmark = pytest.mark.django_db

VLLM = LLAMA_8B + "&engine=vllm"
# The current stable release (0.21 on) pays its CUDA graphs' estimate inside gpu_memory_utilization.
VLLM_ITEMS = ["Model weights as loaded", "Activation peak (profiling step)", "Memory outside PyTorch",
              "CUDA graphs (estimated inside the budget)", "KV cache (vLLM blocks)",
              "Outside gpu_memory_utilization", "Kept by the driver from CUDA"]


def get_json(client, path, query, **headers):
    response = client.get(f"/api/v1/{path}?{query}", **headers)
    return response.status_code, response.json()


def test_the_default_engine_leaves_the_spec_example_as_it_was(client, small_fleet):
    _, plain = get_json(client, "estimate", LLAMA_8B)
    _, named = get_json(client, "estimate", LLAMA_8B + "&engine=transformers")
    assert plain == named
    assert round(plain["total_gib"], 2) == 19.55


def test_under_vllm_the_estimate_is_the_engines_budget_item_by_item(client, small_fleet):
    status, body = get_json(client, "estimate", VLLM)
    assert status == 200
    assert [item["name"] for item in body["items"]] == VLLM_ITEMS
    assert "vLLM" in body["title"]
    assert body["items"][3]["bytes"] == 2**30  # the CUDA graphs' estimate, 1 GiB per GPU
    kv = body["items"][4]
    assert kv["formula"].startswith("1 request × 256 blocks of 16 tokens")
    assert kv["bytes"] == 256 * 16 * 2 * 32 * 8 * 128 * 2
    inside = sum(item["bytes"] for item in body["items"][:5])
    # the need over the release's default gpu_memory_utilization (0.92 in the current stable release), and
    # what the driver keeps from CUDA (469 MiB)
    assert body["total_bytes"] == -(-inside * 25 // 23) + 469 * 2**20


@pytest.mark.parametrize("engine", ["tgi", "VLLM", "1"])
def test_an_unknown_engine_is_refused_naming_the_field(client, small_fleet, engine):
    status, body = get_json(client, "recommendations", f"{LLAMA_8B}&engine={engine}")
    assert status == 400 and set(body["errors"]) == {"engine"}


def test_a_speech_model_is_not_sized_under_vllm(client, small_fleet):
    # Each value is valid alone; together they are not: a 422 naming the engine.
    status, body = get_json(client, "estimate", "workload=inference&model=whisper-large-v3&requests=1&engine=vllm")
    assert status == 422 and set(body["errors"]) == {"engine"}


def test_every_machine_row_says_what_it_holds_under_both_engines(client, small_fleet):
    for query, has_command in ((LLAMA_8B, False), (VLLM, True)):
        _, body = get_json(client, "recommendations", query)
        assert body["machines"]
        for machine in body["machines"]:
            assert machine["max_requests_at_context"] >= 1
            assert machine["max_context_at_requests"] >= 4096
            assert machine["capacity_text"].startswith("Holds ")
            assert (machine["command"] is not None) == has_command
    _, body = get_json(client, "recommendations", VLLM)
    first = body["machines"][0]
    assert first["command"] == (
        f"vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size {first['gpus_used']} --max-model-len 4096 "
        "--max-num-seqs 1 --gpu-memory-utilization 0.92")


def test_the_constraints_name_the_engine_only_when_it_is_vllm(client, small_fleet):
    _, plain = get_json(client, "recommendations", LLAMA_8B)
    _, vllm = get_json(client, "recommendations", VLLM)
    assert "Engine" not in [c["label"] for c in plain["constraints"]]
    engine = next(c for c in vllm["constraints"] if c["label"] == "Engine")
    assert engine["value"].startswith("vLLM")
    _, german = get_json(client, "recommendations", VLLM, HTTP_ACCEPT_LANGUAGE="de")
    assert any(c["value"].startswith("vLLM") and c["label"] != "Engine" for c in german["constraints"])


def test_most_requests_per_dollar_sorts_by_requests_at_the_context_over_the_price(client, small_fleet):
    status, body = get_json(client, "recommendations", VLLM + "&sort=requests_per_dollar")
    assert status == 200
    ratios = [Decimal(m["max_requests_at_context"]) / Decimal(m["price_per_hour"]) for m in body["machines"]]
    assert ratios == sorted(ratios, reverse=True)
    assert body["listing"]["sort"] == "requests_per_dollar"


def test_the_page_keeps_the_engine_in_its_form_and_its_address(client, small_fleet):
    page = with_details_opened(client, client.get(f"/?{VLLM}").content.decode())
    assert '<option value="vllm" selected>' in page
    assert "engine=vllm" in page  # the shareable address and the launch links carry it
    assert 'data-testid="command"' in page and "vllm serve meta-llama/Llama-3.1-8B" in page
    plain = client.get(f"/?{LLAMA_8B}").content.decode()
    assert "engine=" not in plain.split('name="query" value="')[1].split('"')[0]


def test_a_bad_engine_on_the_page_is_worded_beside_its_field(client, small_fleet):
    page = client.get(f"/?{LLAMA_8B}&engine=tgi").content.decode()
    assert 'id="err-engine"' in page


def test_the_commands_take_the_engine(small_fleet, capsys):
    call_command("estimate", "--model", "llama-3-1-8b", "--engine", "vllm", "--json")
    body = json.loads(capsys.readouterr().out)
    assert [item["name"] for item in body["items"]] == VLLM_ITEMS
    call_command("recommend", "--model", "llama-3-1-8b", "--engine", "vllm")
    out = capsys.readouterr().out
    assert "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size" in out
    assert "holds " in out


# --- llama.cpp and Ollama ---------------------------------------------------------------------------------

LLAMACPP = LLAMA_8B.replace("precision=16", "precision=4") + "&engine=llamacpp"


def test_under_llama_cpp_the_need_is_the_gguf_file_its_cache_and_buffers_and_each_row_starts_it(
    client, small_fleet
):
    assert "precision=4" in LLAMACPP
    status, body = get_json(client, "recommendations", LLAMACPP)
    assert status == 200, body
    assert "llama.cpp" in body["memory"]["title"] and "GGUF Q4_K_M" in body["memory"]["title"]
    assert [item["name"] for item in body["memory"]["items"]] == [
        "Model weights on the GPUs (GGUF Q4_K_M)", "KV cache on the GPUs", "Compute buffer (one micro-batch)",
        "CUDA context"]
    assert body["machines"] and body["clusters"] == []
    for machine in body["machines"]:
        assert machine["command"] == (
            "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 4096 -np 1 -ngl 999 -fa on")
        assert machine["max_requests_at_context"] >= 1
    engine = next(c for c in body["constraints"] if c["label"] == "Engine")
    assert engine["value"].startswith("llama.cpp (the GGUF file in Q4_K_M")


def test_under_ollama_each_row_gives_the_servers_settings_in_both_languages(client, small_fleet):
    query = LLAMACPP.replace("engine=llamacpp", "engine=ollama").replace("requests=1", "requests=2") + "&kv_cache=8"
    _, body = get_json(client, "recommendations", query)
    assert body["machines"]
    assert all(machine["command"] == "OLLAMA_CONTEXT_LENGTH=4096 OLLAMA_NUM_PARALLEL=2 OLLAMA_FLASH_ATTENTION=1 "
               "OLLAMA_KV_CACHE_TYPE=q8_0 ollama serve" for machine in body["machines"])
    page = with_details_opened(client, client.get(f"/de/?{query}").content.decode())
    assert "Mit Ollama starten" in page and "ollama serve" in page
    assert '<option value="ollama" selected>' in page


def test_the_commands_take_llama_cpp(small_fleet, capsys):
    call_command("recommend", "--model", "llama-3-1-8b", "--precision", "4", "--engine", "llamacpp")
    out = capsys.readouterr().out
    assert "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 4096 -np 1 -ngl 999 -fa on" in out
