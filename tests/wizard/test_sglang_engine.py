"""SGLang as the wizard's engine (engine=sglang): the need per GPU is SGLang's static pool at the
wizard's --mem-fraction-static, each row holds what the token pool holds on its GPUs and starts with
`python -m sglang.launch_server` where its GPU runs it; page, API and commands alike."""
import json
from fractions import Fraction

import pytest
from django.core.management import call_command

from sizing.calculators import estimate
from sizing.calculators.sglang import sglang_pool
from sizing.calculators.sglang_inference import wizard_fraction, wizard_settings
from sizing.calculators.vllm import DRIVER_RESERVED_BYTES
from sizing.engine_support import SGLANG, gpu_architecture, support_for
from sizing.units import MIB
from tests.helpers import LLAMA_8B, with_details_opened
from tests.sizing.test_llamacpp import spec

pytestmark = pytest.mark.django_db

SGLANG_QUERY = LLAMA_8B.replace("requests=1", "requests=4") + "&engine=sglang"
ITEMS = ["Model weights as loaded", "Token pool (KV cache)", "Activations and CUDA graphs (outside the static pool)",
         "CUDA context (before SGLang measures)", "Kept by the driver from CUDA"]


def get_json(client, path, query, **headers):
    response = client.get(f"/api/v1/{path}?{query}", **headers)
    return response.status_code, response.json()


@pytest.mark.parametrize(("slug", "requests", "context"), [("llama-3-1-8b", 4, 4096), ("qwen3-32b", 3, 16384),
                                                          ("llama-3-1-70b", 16, 8192)])
def test_a_gpu_fits_exactly_when_the_token_pool_holds_the_asked_tokens(slug, requests, context):
    """The need per GPU is the least memory whose pool, at the fraction the command sets, holds them."""
    need = estimate("inference", spec(slug), 16, context, requests, None, 16, engine="sglang")
    for gpus in (1, 2, 4, 8):
        least = need.bytes_per_gpu(gpus)

        def tokens(memory):
            return sglang_pool(spec(slug), 16, 16, wizard_settings(memory - DRIVER_RESERVED_BYTES, gpus, context,
                                                                   requests)).kv_cache_tokens

        assert tokens(least) >= requests * context > tokens(least - 1), (gpus, least)


def test_the_fraction_falls_with_the_tensor_parallel_size_as_sglangs_earlier_default():
    assert [wizard_fraction(tp) for tp in (1, 2, 3, 4, 8, 16)] == [
        Fraction(88, 100), Fraction(87, 100), Fraction(87, 100), Fraction(85, 100), Fraction(81, 100),
        Fraction(79, 100)]


def test_under_sglang_the_estimate_is_the_static_pool_item_by_item(client, small_fleet):
    status, body = get_json(client, "estimate", SGLANG_QUERY)
    assert status == 200, body
    assert [item["name"] for item in body["items"]] == ITEMS
    assert "SGLang" in body["title"]
    pool = body["items"][1]
    assert pool["bytes"] == 4 * 4096 * 2 * 8 * 128 * 32 * 2  # requests × context × K and V of every layer
    inside = body["items"][0]["bytes"] + pool["bytes"]
    assert body["items"][2]["bytes"] == -(-inside * 100 // 88) - inside


def test_each_row_holds_what_its_pool_holds_and_starts_sglang_where_its_gpu_runs_it(client, small_fleet):
    status, body = get_json(client, "recommendations", SGLANG_QUERY)
    assert status == 200, body
    assert body["machines"]
    commands = 0
    for machine in body["machines"]:
        gpus, memory = machine["gpus_used"], round(machine["memory_per_gpu_gib"] * 1024) * MIB
        pool = sglang_pool(spec("llama-3-1-8b"), 16, 16,
                           wizard_settings(memory - DRIVER_RESERVED_BYTES, gpus, 4096, 4))
        assert machine["max_requests_at_context"] == pool.kv_cache_tokens // 4096 >= 4
        command = machine["command"]
        if command is not None:
            commands += 1
            assert command.startswith("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B")
            assert f"--tp {gpus} --context-length 4096 --mem-fraction-static {float(wizard_fraction(gpus)):g}" \
                   in command and "--max-running-requests 4" in command
    assert commands
    engine = next(c for c in body["constraints"] if c["label"] == "Engine")
    assert engine["value"].startswith("SGLang")


def test_a_row_whose_gpu_does_not_run_sglang_has_no_command():
    need = estimate("inference", spec("llama-3-1-8b"), 8, 4096, 1, None, 8, engine="sglang")
    for name, capability in (("volta", "7.0"), ("hopper", "9.0")):
        architecture = gpu_architecture(name, capability)
        held = need.capacity.on_machine(1, 81559 * MIB, architecture)
        runs = support_for(SGLANG, spec("llama-3-1-8b"), 8, 8, architecture).runs
        assert (held.command is not None) == runs and held.runs_on_gpu == runs


@pytest.mark.parametrize(("query", "field"), [("&precision=4", "precision"), ("&requests=5000", "requests")])
def test_what_sglang_does_not_take_is_a_conflict_naming_its_field(client, small_fleet, query, field):
    status, body = get_json(client, "recommendations", SGLANG_QUERY.replace("requests=4&", "") + query)
    assert status == 422 and set(body["errors"]) == {field}, body


def test_the_page_and_the_commands_take_sglang_in_both_languages(client, small_fleet, capsys):
    call_command("recommend", "--model", "llama-3-1-8b", "--engine", "sglang", "--requests", "4")
    assert "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B" in capsys.readouterr().out
    call_command("estimate", "--model", "llama-3-1-8b", "--engine", "sglang", "--json")
    assert [item["name"] for item in json.loads(capsys.readouterr().out)["items"]] == ITEMS
    page = with_details_opened(client, client.get(f"/de/?{SGLANG_QUERY}").content.decode())
    assert '<option value="sglang" selected>' in page
    assert "Mit SGLang starten" in page and "python -m sglang.launch_server" in page


def test_a_rows_capacity_under_sglang_sizes_one_pool(monkeypatch):
    """Whatever the machine, a row is one pool: the requests and the context are read off its tokens."""
    import sizing.calculators.sglang as sglang_module

    calls = []
    real = sglang_module.sglang_pool
    monkeypatch.setattr(sglang_module, "sglang_pool", lambda *args: calls.append(1) or real(*args))
    need = estimate("inference", spec("llama-3-1-70b"), 16, 4096, 3, None, 16, engine="sglang")
    for memory_mib, gpus in ((24564, 1), (81559, 8), (2048, 1), (143771, 16)):
        calls.clear()
        need.capacity._on_machine(gpus, memory_mib * MIB, gpu_architecture("hopper", "9.0"))
        assert len(calls) <= 1


def test_a_model_bigger_than_any_machine_gets_clusters_that_start_sglang_across_them(client, h100_site):
    """The cluster planner's doors: its plans carry SGLang's command per node (--nnodes, --node-rank)."""
    query = "workload=inference&model=llama-3-1-405b&precision=16&context=8192&requests=1&engine=sglang"
    status, body = get_json(client, "recommendations", query)
    assert status == 200 and body["machines_total"] == 0
    (cluster,) = body["clusters"]
    assert len(cluster["sglang_commands"]) == 2
    assert all(command.startswith("python -m sglang.launch_server") for command in cluster["sglang_commands"])
    assert "--tp 16 --nnodes 2 --node-rank 1" in cluster["sglang_commands"][1]
