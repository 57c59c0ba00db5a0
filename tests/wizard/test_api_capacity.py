"""GET /api/v1/capacity: the GPU what-if under vLLM, its answer and its refusals."""
import math
from decimal import Decimal
from fractions import Fraction

import pytest

from sizing.units import GIB, gib_number

pytestmark = pytest.mark.django_db

H100 = "model=llama-3-1-8b&precision=16&kv_cache=16&engine=vllm&gpu_memory_gib=79.19&tensor_parallel=1" \
       "&pipeline_parallel=1&gpu_memory_utilization=0.95&max_model_len=8192&max_num_batched_tokens=8192"


def capacity(client, query, **headers):
    response = client.get(f"/api/v1/capacity?{query}", **headers)
    return response.status_code, response.json()


def test_the_issue_example_answers_the_pool_vllm_logs_within_its_bounds(client, small_fleet):
    status, body = capacity(client, H100 + "&engine_version=0.19")
    assert status == 200
    assert body["fits"] is True and body["reason"] is None
    # vLLM 0.19 logged 476,016 tokens and 58.11x for this start-up
    assert 476_016 * 0.85 <= body["kv_cache_tokens"] <= 476_016 * 1.05
    assert 58.11 * 0.85 <= body["max_concurrency"] <= 58.11 * 1.05
    assert abs(body["weights_gib"] - 14.99) <= 14.99 * 0.05
    assert [item["name"] for item in body["items"]] == [
        "Model weights as loaded", "Activation peak (profiling step)", "Memory outside PyTorch"]
    assert round(body["weights_gib"] + body["activation_gib"] + body["non_torch_gib"] + body["kv_cache_gib"], 1) \
        == round(body["budget_gib"], 1)
    assert body["command"] == ("vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 1 --max-model-len 8192 "
                               "--max-num-seqs 1024 --gpu-memory-utilization 0.95")


def test_fp8_weights_and_kv_cache_write_their_flags_and_double_the_pool(client, small_fleet):
    _, plain = capacity(client, H100)
    _, fp8 = capacity(client, H100.replace("kv_cache=16", "kv_cache=8"))
    assert fp8["kv_cache_tokens"] == pytest.approx(2 * plain["kv_cache_tokens"], rel=0.001)
    assert fp8["command"].endswith("--kv-cache-dtype fp8")
    _, weights = capacity(client, H100.replace("precision=16", "precision=8"))
    assert weights["command"].endswith("--quantization fp8")
    assert weights["weights_gib"] < plain["weights_gib"]


def test_a_model_too_large_for_the_gpu_answers_does_not_fit_with_the_reason(client, small_fleet):
    status, body = capacity(client, "model=llama-3-1-70b&gpu_memory_gib=79.19&max_model_len=16000")
    assert status == 200
    assert body["fits"] is False
    assert body["reason"]
    assert body["kv_cache_tokens"] == 0 and body["max_concurrency"] == 0


def test_tensor_parallel_splits_the_weights_and_adds_nccl_buffers(client, small_fleet):
    """The weights divide over the four GPUs; the rotary cos/sin cache (131,072 positions × 128 × 2 bytes =
    1/32 GiB) stays whole on each."""
    _, one = capacity(client, H100)
    _, four = capacity(client, H100.replace("tensor_parallel=1", "tensor_parallel=4"))
    rotary = 1 / 32
    assert four["weights_gib"] == pytest.approx((one["weights_gib"] - rotary) / 4 + rotary, abs=0.01)
    assert four["non_torch_gib"] > one["non_torch_gib"]
    assert "--tensor-parallel-size 4" in four["command"]


# vLLM 0.8.4, Qwen2.5-7B at TP 2 and utilization 0.8 on two RTX 3090s whose log says "Custom allreduce is
# disabled because your platform lacks GPU P2P capability": 359,328 tokens (published_logs_not_handed.csv).
RTX3090_TP2 = ("model=qwen2-5-7b&gpu_memory_gib=23.54&tensor_parallel=2&gpu_memory_utilization=0.8"
               "&max_model_len=4096&engine_version=0.8.4")


def test_the_split_costs_what_the_gpus_are_connected_by(client, small_fleet):
    answers = {name: capacity(client, RTX3090_TP2 + f"&interconnect={name}")[1]
               for name in ("nvswitch", "pcie_p2p", "pcie")}
    non_torch = {name: body["non_torch_gib"] for name, body in answers.items()}
    assert non_torch["nvswitch"] == pytest.approx(0.25 + 2, abs=0.005)  # as measured through NVSwitch
    assert non_torch["pcie_p2p"] == pytest.approx(0.25 + 60.75 / 1024, abs=0.005)  # 24 MiB + 4 × 9.19 MiB
    assert non_torch["pcie"] == pytest.approx(0.25, abs=0.005)  # NCCL in host memory, no custom all-reduce
    tokens = {name: body["kv_cache_tokens"] for name, body in answers.items()}
    assert tokens["nvswitch"] < tokens["pcie_p2p"] < tokens["pcie"]
    assert 0.85 <= tokens["pcie"] / 359_328 <= 1.05 and tokens["nvswitch"] / 359_328 < 0.85
    formulas = {}
    for name, body in answers.items():
        assert body["interconnect"] == name and "as asked" in body["interconnect_text"]
        [item] = [item for item in body["items"] if item["name"] == "Memory outside PyTorch"]
        assert "tensor parallelism" in item["formula"]
        formulas[name] = item["formula"]
    assert "NVSwitch" in formulas["nvswitch"] and "host memory" in formulas["pcie"]
    assert "9,633,792 bytes per connection" in formulas["pcie_p2p"]


def test_a_named_gpu_type_says_what_its_gpus_are_connected_by_unless_asked(client, small_fleet):
    _, geforce = capacity(client, "model=qwen2-5-7b&gpu=RTX 4090&tensor_parallel=2")
    assert geforce["interconnect"] == "pcie" and "RTX 4090" in geforce["interconnect_text"]
    _, asked = capacity(client, "model=qwen2-5-7b&gpu=RTX 4090&tensor_parallel=2&interconnect=nvswitch")
    assert asked["interconnect"] == "nvswitch" and asked["non_torch_gib"] > geforce["non_torch_gib"] + 1.9
    _, h100 = capacity(client, "model=qwen2-5-7b&gpu=H100 SXM 80GB&tensor_parallel=2")
    assert h100["interconnect"] == "nvswitch"
    _, unnamed = capacity(client, "model=qwen2-5-7b&tensor_parallel=2")
    assert unnamed["interconnect"] == "nvswitch" and "not said" in unnamed["interconnect_text"]
    _, one = capacity(client, "model=qwen2-5-7b&gpu=RTX 4090")
    assert one["interconnect"] == "pcie" and "split" not in one["interconnect_text"]


def test_the_context_outside_the_budget_holds_no_nvlink_buffers_over_pcie(client, small_fleet):
    """vLLM 0.11 at TP 2 on two RTX 3090s without peer access started at utilization 0.9 (its graphs took
    1.13 GiB): the 1.5 GiB context measured through NVSwitch would leave no room for them."""
    query = "model=llama-3-2-3b&gpu_memory_gib=23.70&tensor_parallel=2&engine_version=0.11&max_model_len=131072"
    _, pcie = capacity(client, query + "&interconnect=pcie")
    _, nvswitch = capacity(client, query + "&interconnect=nvswitch")
    assert pcie["fits"] is True and nvswitch["fits"] is False and "outside the budget" in nvswitch["reason"]
    [context] = [item for item in pcie["outside_budget"] if item["name"].startswith("CUDA context")]
    assert context["bytes"] == 3 * GIB // 2 - 2 * 24 * 9_633_792
    assert "NVLink" in context["formula"]


@pytest.mark.parametrize("engine", ["sglang", "llamacpp"])
def test_the_interconnect_is_vllms_and_refused_beside_its_field_with_another_engine(client, small_fleet, engine):
    status, body = capacity(client, f"model=qwen2-5-7b&engine={engine}&interconnect=pcie")
    assert status == 422 and set(body["errors"]) == {"interconnect"}
    status, body = capacity(client, "model=qwen2-5-7b&interconnect=infiniband")
    assert status == 400 and set(body["errors"]) == {"interconnect"}


def test_a_utilization_copied_from_a_real_command_is_taken_with_every_digit(client, small_fleet):
    """vLLM takes any fraction in (0, 1]: 0.9764 is sized as given, its budget exactly that share of
    the GPU's memory, and the command carries it as typed."""
    status, body = capacity(client, _with("gpu_memory_utilization=0.9764"))
    assert status == 200, body
    budget_bytes = math.floor(Fraction("0.9764") * int(Decimal("79.19") * GIB))
    assert body["budget_gib"] == gib_number(budget_bytes)
    assert body["budget"].startswith("0.9764 × ")
    assert body["command"].endswith("--gpu-memory-utilization 0.9764")
    status, body = capacity(client, _with("gpu_memory_utilization=0.123456789012345"))
    assert status == 200, body
    assert body["budget"].startswith("0.123456789012345 × ")
    assert body["fits"] is False  # 9.78 GiB of budget: the weights alone take more
    # The whole memory: taken, and answered that nothing is left outside it for the CUDA context
    status, body = capacity(client, _with("gpu_memory_utilization=1"))
    assert status == 200 and body["budget"].startswith("1 × ")
    assert body["fits"] is False and body["reason"] and body["command"] is None


def test_a_utilization_past_fifteen_decimal_places_is_refused_in_words(client, small_fleet):
    status, body = capacity(client, _with("gpu_memory_utilization=0.1234567890123456"))
    assert status == 400
    assert body["errors"] == {
        "gpu_memory_utilization": "The GPU memory utilization takes at most 15 decimal places."}
    _, german = capacity(client, _with("gpu_memory_utilization=0.1234567890123456"),
                         HTTP_ACCEPT_LANGUAGE="de")
    assert german["errors"] == {
        "gpu_memory_utilization": "Die GPU-Speicherauslastung hat höchstens 15 Nachkommastellen."}


@pytest.mark.parametrize(("change", "field"), [
    ("gpu_memory_gib=0", "gpu_memory_gib"),
    ("gpu_memory_gib=lots", "gpu_memory_gib"),
    ("gpu_memory_utilization=1.5", "gpu_memory_utilization"),
    ("gpu_memory_utilization=0", "gpu_memory_utilization"),
    ("tensor_parallel=0", "tensor_parallel"),
    ("max_model_len=x", "max_model_len"),
    ("max_num_batched_tokens=0", "max_num_batched_tokens"),
    ("max_num_seqs=-1", "max_num_seqs"),
    ("engine=tgi", "engine"),
    ("engine=transformers", "engine"),
    ("precision=3", "precision"),
    ("kv_cache=4", "kv_cache"),
])
def test_every_bad_field_is_refused_with_400_naming_it(client, small_fleet, change, field):
    status, body = capacity(client, _with(change))
    assert status == 400, body
    assert set(body["errors"]) == {field}
    assert body["errors"][field]


@pytest.mark.parametrize(("change", "field"), [
    ("tensor_parallel=3", "tensor_parallel"),  # Llama 3.1 8B's 32 heads
    ("pipeline_parallel=999", "pipeline_parallel"),  # its 32 layers
    ("max_model_len=10000000", "max_model_len"),  # its 131,072 tokens
])
def test_settings_the_model_cannot_take_are_a_422_naming_the_field(client, small_fleet, change, field):
    status, body = capacity(client, _with(change))
    assert status == 422, body
    assert set(body["errors"]) == {field} and body["errors"][field]


@pytest.mark.parametrize("change", ["model=no-such-model", "model=whisper-large-v3"])
def test_a_model_the_catalog_holds_no_language_model_for_is_a_404(client, small_fleet, change):
    status, body = capacity(client, _with(change))
    assert status == 404, body
    assert set(body["errors"]) == {"model"}


def test_a_setting_left_empty_takes_its_default(client, small_fleet):
    assert capacity(client, "model=&engine=&gpu_memory_gib=&tensor_parallel=") == capacity(client, "")


def _with(change: str) -> str:
    name = change.split("=")[0]
    return "&".join(part for part in H100.split("&") if not part.startswith(name + "=")) + "&" + change


def test_refusals_are_worded_in_german_when_asked(client, small_fleet):
    bad = H100.replace("tensor_parallel=1", "tensor_parallel=0")
    _, english = capacity(client, bad)
    _, german = capacity(client, bad, HTTP_ACCEPT_LANGUAGE="de")
    assert english["errors"]["tensor_parallel"] == "The tensor-parallel size must be at least 1."
    assert german["errors"]["tensor_parallel"] == "Die Tensor-Parallel-Größe muss mindestens 1 sein."


def test_the_openapi_schema_lists_the_what_if_with_its_defaults(client, small_fleet):
    schema = client.get("/api/v1/openapi.json").json()
    operation = schema["paths"]["/api/v1/capacity"]["get"]
    names = {parameter["name"] for parameter in operation["parameters"]}
    assert names == {"model", "precision", "kv_cache", "engine", "gpu", "gpu_memory_gib", "tensor_parallel",
                     "pipeline_parallel", "gpu_memory_utilization", "max_model_len", "max_num_batched_tokens",
                     "max_num_seqs", "quantization", "flash_attention", "parallel", "gpu_layers", "kv_unified",
                     "mem_fraction_static", "engine_version", "cudagraph_estimate", "skip_vision_tower",
                     "model_runner", "interconnect"}
    interconnect = next(p for p in operation["parameters"] if p["name"] == "interconnect")
    assert set(interconnect["schema"]["enum"]) == {"", "nvswitch", "pcie_p2p", "pcie"}


def test_the_answer_is_the_same_every_time(client, small_fleet):
    assert capacity(client, H100) == capacity(client, H100)


def test_a_named_gpu_type_sizes_with_the_memory_cuda_reports_for_it(client, small_fleet):
    status, body = capacity(client, "model=llama-3-1-8b&gpu=h100 sxm 80gb&gpu_memory_gib=10")
    assert status == 200
    assert body["gpu"] == "H100 SXM 80GB" and body["gpu_memory_gib"] == 79.19  # 81,090 MiB, as its source states it
    assert "vLLM" in body["gpu_memory_source"]
    _, l4 = capacity(client, "model=llama-3-1-8b&gpu=L4")
    assert l4["gpu_memory_gib"] == 22.04  # (23,034 - 469) MiB = 22.036 GiB, two decimals rounded half up
    assert l4["gpu_memory_source"].startswith("nvidia-smi 23,034 MiB")
    status, body = capacity(client, "model=llama-3-1-8b&gpu=H900")
    assert status == 404 and set(body["errors"]) == {"gpu"}


def test_a_max_model_len_past_the_config_is_sized_with_the_cards_yarn_and_its_override(client, small_fleet):
    """Qwen3 30B-A3B's config allows 40,960 tokens; its card extends it to 131,072 with YaRN: sized and
    started with the override, and refused past it."""
    query = H100.replace("llama-3-1-8b", "qwen3-30b-a3b").replace("max_model_len=8192", "max_model_len=131072")
    status, body = capacity(client, query)
    assert status == 200, body
    assert body["max_model_len"] == 131072
    assert "--max-model-len 131072" in body["command"]
    assert "--hf-overrides '{\"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 4.0" in body["command"]
    status, body = capacity(client, query.replace("131072", "131073"))
    assert status == 422 and "131,072" in body["errors"]["max_model_len"], body


def test_the_wizard_answers_a_yarn_context_with_commands_that_turn_it_on(client, small_fleet):
    body = client.get("/api/v1/recommendations?workload=inference&model=qwen3-30b-a3b&precision=16"
                      "&context=131072&requests=1&engine=vllm").json()
    assert "memory" in body, body
    commands = [machine["command"] for machine in body["machines"] if machine.get("command")]
    assert commands and all("--hf-overrides" in command for command in commands)
    assert any("YaRN" in words for words in body["memory"]["assumptions"])


# --- llama.cpp and Ollama -------------------------------------------------------------------------------

QWEN3_T4S = "model=qwen3-30b-a3b&engine=llamacpp&quantization=Q4_K_M&kv_cache=16&max_model_len=32768&gpu=T4" \
            "&tensor_parallel=2"


def test_llama_cpp_sizes_the_gguf_file_its_cache_and_starts_with_llama_server(client, small_fleet):
    """A llama.cpp log of Qwen3 30B-A3B with -c 32768, an f16 cache and every layer on two T4s: KV self size
    3072.00 MiB, the token embeddings (166.92 MiB) in host memory."""
    status, body = capacity(client, QWEN3_T4S)
    assert status == 200, body
    assert body["engine"] == "llamacpp" and body["gpus"] == 2 and body["quantization"] == "Q4_K_M"
    assert body["kv_cache_bytes"] == 3072 * 2**20 and body["kv_cache_tokens"] == 32768
    assert abs(body["host_bytes"] - 166.92 * 2**20) < 0.01 * 2**20
    assert body["file"] == "Qwen3-30B-A3B-Q4_K_M.gguf" and 4.8 < body["bits_per_weight"] < 5.0
    assert body["fits"] is True and body["partial_offload"] is None
    assert body["command"] == "llama-server -m Qwen3-30B-A3B-Q4_K_M.gguf -c 32768 -np 1 -ngl 999 -fa on"
    assert sum(item["bytes"] for item in body["items"]) == body["weights_bytes"] + body["kv_cache_bytes"] \
        + body["items"][2]["bytes"] + body["items"][3]["bytes"]
    # two GPUs holding every layer and the head run as a pipeline: each keeps four copies of its inputs
    pipeline = body["items"][3]
    assert len(body["items"]) == 4 and pipeline["per_gpu"] and "4 copies" in pipeline["formula"]
    assert 0 < pipeline["bytes"] < body["items"][2]["bytes"]


def test_llama_cpp_answers_each_gpu_of_a_split_by_layers_as_the_log_buffers_them(client, small_fleet):
    """The same log gives each GPU's KV buffer: 1,600.00 MiB on CUDA0, 1,472.00 on CUDA1. llama.cpp's 49 slots
    (48 layers and the head) put layers 0–24 on the first, 25–47 and the head on the second; each GPU's need
    is its own layers' weights and cache, and the largest is what `fits` holds to the GPU."""
    _, body = capacity(client, QWEN3_T4S)
    first, second = body["per_gpu"]
    assert (first["gpu"], first["first_layer"], first["last_layer"], first["output_head"]) == (1, 0, 24, False)
    assert (second["gpu"], second["first_layer"], second["last_layer"], second["output_head"]) == (2, 25, 47, True)
    assert (first["kv_cache_bytes"], second["kv_cache_bytes"]) == (1600 * 2**20, 1472 * 2**20)
    assert first["weights_bytes"] + second["weights_bytes"] == body["weights_bytes"]
    assert second["compute_bytes"] == body["items"][2]["bytes"] + body["items"][3]["bytes"]
    assert first["compute_bytes"] == body["other_gpus_compute"]["bytes"]
    for gpu in (first, second):
        assert gpu["need_bytes"] == (gpu["weights_bytes"] + gpu["kv_cache_bytes"] + gpu["compute_bytes"]
                                     + 300 * 2**20)
    assert body["need_per_gpu_bytes"] == max(first["need_bytes"], second["need_bytes"])
    assert body["need_per_gpu_gib"] == gib_number(body["need_per_gpu_bytes"])


def test_llama_cpp_refuses_a_split_naming_the_gpu_that_needs_the_most(client, small_fleet):
    """Llama 3.1 8B Q4_K_M, -c 8192, over two GPUs of 3.3 GiB: the second (layers 17–31 and the head) needs
    3,591,118,848 bytes, the first 3,323,273,216 (test_llamacpp_layer_split)."""
    query = "model=llama-3-1-8b&engine=llamacpp&quantization=Q4_K_M&max_model_len=8192&pipeline_parallel=2"
    status, body = capacity(client, query + "&gpu_memory_gib=3.3")
    assert status == 200, body
    assert [gpu["need_bytes"] for gpu in body["per_gpu"]] == [3_323_273_216, 3_591_118_848]
    assert body["need_per_gpu_bytes"] == 3_591_118_848
    assert body["fits"] is False and body["reason"] == (
        "GPU 2 of 2 needs 3.34 GiB (the weights and KV cache of layers 17–31, with the output head's weights, its "
        "compute buffer and CUDA context), more than its 3.30 GiB.")
    _, roomy = capacity(client, query + "&gpu_memory_gib=3.35")
    assert roomy["fits"] is True and roomy["reason"] is None
    _, one = capacity(client, query.replace("&pipeline_parallel=2", "") + "&gpu_memory_gib=5")
    assert len(one["per_gpu"]) == 1 and one["per_gpu"][0]["last_layer"] == 31 and one["per_gpu"][0]["output_head"]
    assert one["reason"].startswith("The GPU needs 5.87 GiB (the weights and KV cache of layers 0–31, ")


DEEPSEEK_V3_H100S = "model=deepseek-v3&engine=llamacpp&quantization=Q4_K_M&max_model_len=8192" \
                    "&gpu=H100 SXM 80GB&tensor_parallel=8"


def test_llama_cpp_sizes_deepseek_v3s_latent_attention_file_cache_and_compute_buffer(client, small_fleet):
    """The deepseek2 file in Q4_K_M (376.7 GiB, llama-bench prints 376.65 for unsloth's R1), its latent
    cache of 512 + 64 values a layer and cell: from b9460 K alone (V a view of it), the build not given
    the latent kept again as V as well (the larger need)."""
    status, body = capacity(client, DEEPSEEK_V3_H100S + "&engine_version=b9500")
    assert status == 200, body
    assert abs(body["file_gib"] - 376.71) < 0.01 and 4.8 < body["bits_per_weight"] < 4.85
    assert body["weights_bytes"] > 0 and body["kv_cache_bytes"] == 61 * 576 * 2 * 8192
    assert body["fits"] is True and body["command"].endswith("-c 8192 -np 1 -ngl 999 -fa on")
    assert "latent attention" in body["items"][1]["formula"] and 300 * 2**20 < body["items"][2]["bytes"] < 500 * 2**20
    status, unknown = capacity(client, DEEPSEEK_V3_H100S)
    assert status == 200 and unknown["kv_cache_bytes"] == 61 * (576 + 512) * 2 * 8192
    # without flash attention: the scores of the whole context and, V being a view of K, its latent copied
    status, off = capacity(client, DEEPSEEK_V3_H100S + "&engine_version=b9500&flash_attention=off")
    assert status == 200, off
    assert off["command"].endswith("-c 8192 -np 1 -ngl 999 -fa off")
    assert off["kv_cache_bytes"] == body["kv_cache_bytes"]
    assert off["items"][2]["bytes"] > body["items"][2]["bytes"] + 8192 * 512 * 128 * 4 - 512 * 2**20
    assert "no flash attention" in off["items"][2]["formula"] and "copied transposed" in off["items"][2]["formula"]
    status, quantized = capacity(client, DEEPSEEK_V3_H100S + "&engine_version=b9500&flash_attention=off"
                                                             "&kv_cache=q8_0")
    assert status != 200 and "flash_attention" in str(quantized)
    # Ollama from 0.30.1 runs a V-less llama-server build: K alone, q8_0 (612 bytes a layer and cell)
    status, ollama = capacity(client, DEEPSEEK_V3_H100S.replace("engine=llamacpp", "engine=ollama")
                              + "&engine_version=0.31.0&kv_cache=q8_0")
    assert status == 200, ollama
    assert ollama["kv_cache_bytes"] == 61 * 612 * 8192 and ollama["ollama"]["OLLAMA_KV_CACHE_TYPE"] == "q8_0"


def test_ollama_allocates_num_ctx_per_parallel_request_and_answers_its_settings(client, small_fleet):
    status, body = capacity(client, "model=llama-3-1-8b&engine=ollama&kv_cache=q8_0&max_model_len=8192"
                                    "&parallel=4&gpu=RTX 4090")
    assert status == 200, body
    assert body["context_per_request"] == 8192 and body["kv_cache_tokens"] == 32768
    assert body["kv_cache_bytes"] == 32 * 32768 * 2 * (1024 // 32 * 34)  # layers × tokens × K+V in q8_0
    assert body["command"] is None
    assert body["ollama"] == {"OLLAMA_CONTEXT_LENGTH": "8192", "OLLAMA_NUM_PARALLEL": "4",
                              "OLLAMA_FLASH_ATTENTION": "1", "OLLAMA_KV_CACHE_TYPE": "q8_0"}


def test_a_model_too_big_for_the_gpus_offers_the_layers_that_fit_never_a_command_that_cannot_start(
    client, small_fleet
):
    status, body = capacity(client, "model=llama-3-1-70b&engine=llamacpp&max_model_len=8192&gpu=RTX 4090")
    assert status == 200, body
    assert body["fits"] is False and body["command"] is None and "more than" in body["reason"]
    partial = body["partial_offload"]
    assert 0 < partial["gpu_layers"] == body["layers_that_fit"] < 80
    assert f"-ngl {partial['gpu_layers']} " in partial["command"]
    assert partial["gpu_gib"] + partial["host_gib"] > body["file_gib"]  # the file, its cache and buffer


@pytest.mark.parametrize(("query", "field"), [
    ("model=llama-3-1-8b&engine=llamacpp&precision=8", "precision"),
    ("model=llama-3-1-8b&engine=llamacpp&kv_cache=fp8", "kv_cache"),
    ("model=llama-3-1-8b&engine=llamacpp&quantization=Q9_X", "quantization"),
    ("model=llama-3-1-8b&engine=ollama&gpu_memory_utilization=0.8", "gpu_memory_utilization"),
    ("model=llama-3-1-8b&engine=vllm&quantization=Q4_K_M", "quantization"),
    ("model=llama-3-1-8b&engine=vllm&kv_cache=q4_0", "kv_cache"),
    ("model=llama-3-1-8b&engine=vllm&parallel=4", "parallel"),
    ("model=llama-3-1-8b&engine=llamacpp&parallel=0", "parallel"),
    ("model=llama-3-1-8b&engine=llamacpp&gpu_layers=-1", "gpu_layers"),
    ("model=llama-3-1-8b&engine=llamacpp&flash_attention=maybe", "flash_attention"),
    ("model=llama-3-1-8b&engine=tgi", "engine"),
])
def test_a_setting_the_engine_does_not_read_is_refused_beside_its_field(client, small_fleet, query, field):
    """A value the schema refuses is a 400; one it allows that the chosen engine does not read or store is
    a conflict (422): both name the field."""
    status, body = capacity(client, query)
    schema_invalid = {"parallel=0", "gpu_layers=-1", "flash_attention=maybe", "engine=tgi"} & set(query.split("&"))
    assert status == (400 if schema_invalid else 422), body
    assert field in body["errors"] and body["errors"][field]


def test_a_quantized_v_cache_without_flash_attention_is_refused_as_llama_cpp_would(client, small_fleet):
    status, body = capacity(client, "model=llama-3-1-8b&engine=llamacpp&kv_cache=q8_0&flash_attention=off")
    assert status == 422
    assert "flash attention" in body["errors"]["flash_attention"]


def test_the_schema_states_the_gguf_parameters_and_answer(client, small_fleet):
    schema = client.get("/api/v1/openapi.json").json()
    operation = schema["paths"]["/api/v1/capacity"]["get"]
    names = {parameter["name"] for parameter in operation["parameters"]}
    assert {"quantization", "flash_attention", "parallel", "gpu_layers"} <= names
    engine = next(p for p in operation["parameters"] if p["name"] == "engine")["schema"]
    assert set(engine["enum"]) >= {"vllm", "llamacpp", "ollama"}
    assert "GgufCapacityOut" in str(operation["responses"]["200"])


QWQ_A800 = "model=qwen2-5-32b&engine=sglang&gpu_memory_gib=79.25&mem_fraction_static=0.98&max_model_len=4096" \
           "&parallel=4"


def test_sglang_answers_the_token_pool_it_logged_and_its_launch_command(client, small_fleet):
    status, body = capacity(client, QWQ_A800)
    assert status == 200 and body["engine"] == "sglang" and body["fits"] is True
    # SGLang logged max_total_num_tokens=66082 and 61.12 GB of weights for QwQ-32B on an A800
    assert 66_082 * 0.85 <= body["kv_cache_tokens"] <= 66_082 * 1.05
    assert abs(body["weights_bytes"] / 65_627_100_283 - 1) <= 0.03
    assert body["kv_cache_bytes"] == body["kv_cache_tokens"] * body["bytes_per_token"]
    assert body["requests_at_once"] == 4 and body["max_running_requests"] == 4
    assert [item["name"] for item in body["items"]] == [
        "Model weights as loaded", "Token pool (KV cache)", "Activations and CUDA graphs (outside the static pool)",
        "CUDA context (before SGLang measures)"]
    assert body["command"] == ("python -m sglang.launch_server --model-path Qwen/Qwen2.5-32B --tp 1 "
                               "--context-length 4096 --mem-fraction-static 0.98 --max-running-requests 4")


def test_sglang_takes_its_own_default_fraction_for_the_gpu_and_says_so(client, small_fleet):
    status, body = capacity(client, "model=llama-3-1-8b&engine=sglang&gpu=H100 SXM 80GB&max_model_len=8192")
    assert status == 200 and body["fits"] is True and body["runs_on_gpu"] is True
    assert body["mem_fraction_static"] == 0.835 and "default" in body["mem_fraction_static_words"]
    assert "--mem-fraction-static 0.835" in body["command"]


def test_sglang_offers_no_command_on_a_gpu_it_does_not_run_on(client, small_fleet):
    status, body = capacity(client, "model=llama-3-1-8b&engine=sglang&gpu=V100 32GB&max_model_len=8192")
    assert status == 200 and body["runs_on_gpu"] is False and body["command"] is None
    assert "SGLang cannot run SGLang itself on V100 32GB" in body["gpu_support_text"]
    status, t4 = capacity(client, "model=llama-3-1-8b&engine=sglang&gpu=T4&max_model_len=2048&precision=8")
    assert status == 200
    assert t4["command"] is None or "--dtype half" in t4["command"]


def test_an_fp8_sglang_start_writes_its_quantization_and_cache_flags(client, small_fleet):
    status, body = capacity(client, QWQ_A800 + "&precision=8&kv_cache=fp8")
    assert status == 200 and body["kv_cache_dtype"] == "fp8_e5m2"
    assert body["command"].endswith("--quantization fp8 --kv-cache-dtype fp8_e5m2")


@pytest.mark.parametrize(("query", "field"), [
    ("model=llama-3-1-8b&engine=sglang&gpu_memory_utilization=0.8", "gpu_memory_utilization"),
    ("model=llama-3-1-8b&engine=sglang&max_num_batched_tokens=4096", "max_num_batched_tokens"),
    ("model=llama-3-1-8b&engine=sglang&max_num_seqs=8", "max_num_seqs"),
    ("model=llama-3-1-8b&engine=sglang&quantization=Q4_K_M", "quantization"),
    ("model=llama-3-1-8b&engine=sglang&flash_attention=on", "flash_attention"),
    ("model=llama-3-1-8b&engine=sglang&gpu_layers=10", "gpu_layers"),
    ("model=llama-3-1-8b&engine=sglang&pipeline_parallel=2", "pipeline_parallel"),
    ("model=llama-3-1-8b&engine=sglang&precision=4", "precision"),
    ("model=llama-3-1-8b&engine=sglang&kv_cache=q8_0", "kv_cache"),
    ("model=llama-3-1-8b&engine=sglang&mem_fraction_static=1", "mem_fraction_static"),
    ("model=llama-3-1-8b&engine=sglang&mem_fraction_static=0", "mem_fraction_static"),
    ("model=llama-3-1-8b&engine=sglang&mem_fraction_static=abc", "mem_fraction_static"),
    ("model=llama-3-1-8b&engine=vllm&mem_fraction_static=0.8", "mem_fraction_static"),
    ("model=llama-3-1-8b&engine=llamacpp&mem_fraction_static=0.8", "mem_fraction_static"),
])
def test_a_setting_sglang_does_not_read_or_another_engine_is_given_its_fraction_is_refused(
        client, small_fleet, query, field):
    status, body = capacity(client, query)
    schema_invalid = {"mem_fraction_static=1", "mem_fraction_static=0", "mem_fraction_static=abc"} & set(
        query.split("&"))
    assert status == (400 if schema_invalid else 422), body
    assert field in body["errors"]


def test_sglang_settings_the_model_cannot_take_are_a_conflict_naming_the_field(client, small_fleet):
    status, body = capacity(client, "model=qwen3-next-80b-a3b&engine=sglang&tensor_parallel=4")
    assert status in (404, 422)
    status, body = capacity(client, "model=llama-3-1-8b&engine=sglang&tensor_parallel=3")
    assert status in (400, 422) and "tensor_parallel" in body["errors"]


def test_a_fraction_copied_from_a_real_command_is_taken_with_every_digit(client, small_fleet):
    status, body = capacity(client, QWQ_A800.replace("0.98", "0.9764"))
    assert status == 200 and "--mem-fraction-static 0.9764" in body["command"]


def test_the_schema_states_the_sglang_parameter_and_answer(client, small_fleet):
    schema = client.get("/api/v1/openapi.json").json()
    parameters = {item["name"]: item for item in schema["paths"]["/api/v1/capacity"]["get"]["parameters"]}
    assert "mem_fraction_static" in parameters
    assert "sglang" in parameters["engine"]["schema"]["enum"]
    assert "SglangCapacityOut" in schema["components"]["schemas"]


def test_no_sglang_command_is_offered_for_a_gpu_type_that_cannot_run_it(client, small_fleet):
    from catalog import rows as catalog_rows
    from sizing.engine_support import SGLANG, support_for
    from tests.accuracy.vllm_startup import language_spec

    spec = language_spec("llama-3-1-8b")
    for usable in catalog_rows.gpu_types_usable():
        for precision, kv_cache in ((16, 16), (8, 16), (16, 8), (8, 8)):
            status, body = capacity(client, f"model=llama-3-1-8b&engine=sglang&gpu={usable.gpu_type}"
                                             f"&precision={precision}&kv_cache={kv_cache}&max_model_len=2048")
            assert status == 200, body
            runs = support_for(SGLANG, spec, precision, kv_cache, usable.architecture).runs
            assert body["runs_on_gpu"] is runs
            if not runs:
                assert body["command"] is None and body["gpu_support_text"]
            architecture = usable.architecture
            if body["command"] and architecture.maker == "NVIDIA" and not architecture.at_least((8, 0)):
                assert "--dtype half" in body["command"]


@pytest.mark.parametrize("gpu", ["gpu=H100%20SXM%2080GB", "gpu_memory_gib=79.19"])
def test_gpt_oss_120b_at_its_full_context_does_not_start_on_one_h100(client, small_fleet, gpu):
    """vLLM issues #23278 and #27508: gpt-oss-120b fails to start on one H100 at its default 131,072
    tokens. Its MXFP4 experts load through Marlin at padded sizes (65.91 GiB), named GPU or not."""
    status, body = capacity(client, f"model=gpt-oss-120b&precision=4&{gpu}")
    assert status == 200
    assert body["max_model_len"] == 131_072
    assert body["fits"] is False
    assert "refuses to start" in body["reason"]
    assert body["command"] is None
    assert body["weights_gib"] == pytest.approx(65.91, abs=0.01)
    assert "Marlin" in body["items"][0]["formula"]


def test_gpt_oss_120b_on_a_b200_loads_its_experts_at_flashinfer_s_padding(client, small_fleet):
    _, hopper = capacity(client, "model=gpt-oss-120b&precision=4&gpu=H100%20SXM%2080GB&max_model_len=8192")
    _, blackwell = capacity(client, "model=gpt-oss-120b&precision=4&gpu=B200&max_model_len=8192")
    assert blackwell["weights_gib"] > hopper["weights_gib"]
    assert "FlashInfer" in blackwell["items"][0]["formula"]
    assert blackwell["fits"] is True and blackwell["command"].startswith("vllm serve openai/gpt-oss-120b")


def test_kimi_linear_starts_with_its_repositorys_code_and_keeps_its_state_outside_the_blocks(client, small_fleet):
    """Kimi-Linear over two H100s at 131,072 tokens: 45.75 GiB of weights per GPU, no rotary cache (NoPE);
    its tokenizer is its repository's code, so the command carries --trust-remote-code. SGLang's what-if
    does not size its linear-attention state and says so."""
    status, body = capacity(client, "model=kimi-linear-48b-a3b&gpu=H100%20SXM%2080GB&tensor_parallel=2"
                                    "&max_model_len=131072")
    assert status == 200, body
    assert body["fits"] is True and body["weights_gib"] == pytest.approx(45.75, abs=0.01)
    assert "no rotary cos/sin cache" in body["items"][0]["formula"]
    assert body["command"].startswith("vllm serve moonshotai/Kimi-Linear-48B-A3B-Instruct --trust-remote-code ")
    status, body = capacity(client, "model=kimi-linear-48b-a3b&engine=sglang&tensor_parallel=2")
    assert status == 422 and "model" in body["errors"]


def test_the_answer_names_the_vllm_release_it_assumed_and_its_budget_rules(client, small_fleet):
    _, default = capacity(client, H100)
    assert default["engine_version"] == "0.31.0" and default["model_runner"] == "v2"
    assert "0.29 on" in default["engine_version_rules"]
    assert "Left unset, gpu_memory_utilization is 0.92" in default["engine_version_rules"]
    assert [item["name"] for item in default["items"]][-1] == "CUDA graphs (estimated inside the budget)"
    _, old = capacity(client, H100 + "&engine_version=0.19")
    assert old["engine_version"] == "0.19"
    assert old["kv_cache_gib"] == pytest.approx(default["kv_cache_gib"] + 1.0, abs=0.011)
    _, off = capacity(client, H100 + "&cudagraph_estimate=off")
    assert off["kv_cache_gib"] == old["kv_cache_gib"]
    assert off["command"].startswith("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 vllm serve ")


@pytest.mark.parametrize("version, words", [("nineteen", "numbers with dots"), ("0.7", "from 0.8")])
def test_a_bad_engine_version_is_a_400_beside_its_field(client, small_fleet, version, words):
    status, body = capacity(client, H100 + f"&engine_version={version}")
    assert status == 400
    assert words in body["errors"]["engine_version"]


@pytest.mark.parametrize("version", ["0.7.3", "0.32.15"])
def test_a_vllm_release_past_the_known_ones_with_three_numbers_is_a_422(client, small_fleet, version):
    """Three numbers have the form of an Ollama release, which the schema allows (schema-valid values are
    never a 400): under vLLM such a release past the known ones is a value that does not go with the engine."""
    status, body = capacity(client, H100 + f"&engine_version={version}")
    assert status == 422
    assert "from 0.8" in body["errors"]["engine_version"]


def test_the_graphs_estimate_asked_of_a_release_before_0_20_is_a_400_beside_its_field(client, small_fleet):
    status, body = capacity(client, H100 + "&engine_version=0.19&cudagraph_estimate=on")
    assert status == 400
    assert "0.20" in body["errors"]["cudagraph_estimate"]


UNSET = H100.replace("&gpu_memory_utilization=0.95", "")


def test_a_utilization_left_out_is_the_releases_default_and_the_answer_names_it(client, small_fleet):
    # vLLM's CacheConfig: 0.9 before 0.20, 0.92 from it (PR #38284; 0.31.0 logs "(0.92, …)" with no flag).
    _, current = capacity(client, UNSET)
    assert current["gpu_memory_utilization"] == 0.92
    assert current["budget"].startswith("0.92 × 79.19 GiB")
    assert "--gpu-memory-utilization 0.92" in current["command"]
    _, old = capacity(client, UNSET + "&engine_version=0.19")
    assert old["gpu_memory_utilization"] == 0.9 and "--gpu-memory-utilization 0.9 " in old["command"] + " "
    _, asked = capacity(client, H100)
    assert asked["gpu_memory_utilization"] == 0.95


def test_from_0_25_to_0_28_a_dense_model_runs_on_the_v2_runner_and_the_switch_picks_the_v1_one(client, small_fleet):
    _, dense = capacity(client, H100 + "&engine_version=0.26.0")
    assert dense["model_runner"] == "v2" and "CUDA graphs (outside the budget)" in [
        item["name"] for item in dense["outside_budget"]]
    assert "0.25 to 0.28" in dense["engine_version_rules"] and not dense["command"].startswith("VLLM_")
    _, v1 = capacity(client, H100 + "&engine_version=0.26.0&model_runner=v1")
    assert v1["model_runner"] == "v1" and v1["items"][-1]["name"] == "CUDA graphs (estimated inside the budget)"
    assert v1["kv_cache_gib"] == pytest.approx(dense["kv_cache_gib"] - 1.0, abs=0.011)
    assert v1["command"].startswith("VLLM_USE_V2_MODEL_RUNNER=0 vllm serve ")
    _, german = capacity(client, H100 + "&engine_version=0.26.0", HTTP_ACCEPT_LANGUAGE="de")
    assert "V2-Model-Runner" in german["engine_version_rules"]


@pytest.mark.parametrize("query, status, field, words", [
    ("&engine_version=0.21&model_runner=v2", 400, "model_runner", "0.22"),
    ("&engine_version=0.26&model_runner=v3", 400, "model_runner", "v1 or v2"),
    ("&engine_version=0.26&cudagraph_estimate=on", 422, "cudagraph_estimate", "V1 runner"),
])
def test_a_runner_or_estimate_the_release_cannot_size_is_refused_beside_its_field(client, small_fleet, query,
                                                                                    status, field, words):
    got, body = capacity(client, H100 + query)
    assert got == status and words in body["errors"][field]


def test_the_v2_runner_asked_of_a_mixture_of_experts_before_0_29_is_refused(client, small_fleet):
    query = H100.replace("llama-3-1-8b", "qwen3-30b-a3b")
    status, body = capacity(client, query + "&engine_version=0.26.0&model_runner=v2")
    assert status == 422 and "0.29" in body["errors"]["model_runner"]
    status, body = capacity(client, query + "&engine_version=0.29.0&model_runner=v2")
    assert status == 200 and body["model_runner"] == "v2"


def test_a_multimodal_model_is_offered_the_flag_that_skips_its_vision_tower(client, small_fleet):
    query = H100.replace("llama-3-1-8b", "gemma-3-4b")
    status, loaded = capacity(client, query)
    assert status == 200
    assert loaded["vision_tower"]["loaded"] is True
    assert loaded["vision_tower"]["skip_flag"] == """--limit-mm-per-prompt '{"image": 0}'"""
    _, skipped = capacity(client, query + "&skip_vision_tower=on")
    assert skipped["vision_tower"]["loaded"] is False
    assert skipped["weights_gib"] == pytest.approx(
        loaded["weights_gib"] - loaded["vision_tower"]["gib"], abs=0.011)
    assert skipped["command"].endswith("""--limit-mm-per-prompt '{"image": 0}'""")
    _, plain = capacity(client, H100)
    assert plain["vision_tower"] is None
    status, refused = capacity(client, H100 + "&skip_vision_tower=on")
    assert status == 422 and "no vision tower" in refused["errors"]["skip_vision_tower"]


QWEN3_NEXT_H100 = "model=qwen3-next-80b-a3b&quantization=Q4_K_M&max_model_len=32768&parallel=2" \
                  "&gpu=H100 SXM 80GB&tensor_parallel=1"
# One sequence's recurrent state in one of Qwen3-Next's 36 Gated DeltaNet layers, f32: the convolution's last
# 3 inputs of 8,192 channels and the 32 heads' 128 × 128 delta-rule state.
NEXT_STATE = (3 * 8192 + 32 * 128 * 128) * 4


def test_llama_cpp_answers_qwen3_next_with_its_file_its_hybrid_memory_and_the_command(client, small_fleet):
    """The qwen3next file in Q4_K_M; K and V in the 12 full-attention layers (2 KV heads × 256 values, f16)
    for -c 32768 in two streams of 16,384 cells, beside the 36 linear layers' recurrent state of each slot."""
    status, body = capacity(client, QWEN3_NEXT_H100 + "&engine=llamacpp&engine_version=b9500")
    assert status == 200, body
    assert 45.1 < body["file_gib"] < 45.2 and body["fits"] is True
    assert body["kv_cache_bytes"] == 12 * 32768 * 2 * 512 * 2 + 36 * 2 * NEXT_STATE
    assert "recurrent state" in body["items"][1]["formula"]
    assert "Gated DeltaNet" in body["items"][2]["formula"] and body["items"][2]["bytes"] < 1024 * 2**20
    assert body["command"].startswith("llama-server -m ") and "-c 32768 -np 2" in body["command"]


def test_ollama_answers_qwen3_next_its_own_runners_with_their_checkpoints_llama_server_without(client,
                                                                                            small_fleet):
    """Ollama's num_ctx is each request's: 2 × 32,768 tokens; before 0.30.0 (or the release not given) its Go
    engine keeps 32 checkpoints of each slot's recurrent state beside it, llama-server (0.30.0 on) none."""
    query = QWEN3_NEXT_H100 + "&engine=ollama"
    status, own = capacity(client, query)
    assert status == 200, own
    attention = 12 * 65536 * 2 * 512 * 2
    assert own["kv_cache_bytes"] == attention + 36 * 2 * 33 * NEXT_STATE
    assert "32 checkpoints" in own["items"][1]["formula"] and own["ollama"]["OLLAMA_NUM_PARALLEL"] == "2"
    status, server = capacity(client, query + "&engine_version=0.31.0")
    assert status == 200, server
    assert server["kv_cache_bytes"] == attention + 36 * 2 * NEXT_STATE


KIMI_LINEAR_H100 = "model=kimi-linear-48b-a3b&quantization=Q4_K_M&max_model_len=32768&parallel=2" \
                   "&gpu=H100 SXM 80GB&tensor_parallel=1"
# One sequence's recurrent state in one of Kimi-Linear's 20 KDA layers, f32: the last 3 inputs of the q, k and v
# convolutions (4,096 channels each) and the 32 heads' 128 × 128 delta-rule state.
KIMI_STATE = (3 * 3 * 4096 + 32 * 128 * 128) * 4


def test_llama_cpp_answers_kimi_linear_with_its_file_its_latent_cache_its_state_and_the_command(client,
                                                                                              small_fleet):
    """The kimi-linear file in Q4_K_M (29.70 GB published); the 7 latent layers' 576 values a cell, f16, with
    no V cache at b9500, for -c 32768; each of the 2 slots' state in the 20 KDA layers; the KDA layer's graph
    in the compute buffer."""
    status, body = capacity(client, KIMI_LINEAR_H100 + "&engine=llamacpp&engine_version=b9500")
    assert status == 200, body
    assert 27.6 < body["file_gib"] < 27.7 and body["fits"] is True
    assert body["kv_cache_bytes"] == 7 * 32768 * 576 * 2 + 20 * 2 * KIMI_STATE
    assert "recurrent state" in body["items"][1]["formula"] and "latent" in body["items"][1]["formula"]
    assert "Kimi Delta Attention" in body["items"][2]["formula"] and "upper bound" in body["items"][2]["formula"]
    assert body["command"].startswith("llama-server -m ") and "-c 32768 -np 2" in body["command"]


def test_ollama_answers_kimi_linear_from_its_llama_server_and_refuses_its_own_runners(client, small_fleet):
    """Ollama's num_ctx is each request's: 2 × 32,768 tokens in its llama-server (0.30.0 on); its own runners
    (an earlier release, or none given) have no Kimi-Linear model: refused beside engine_version."""
    query = KIMI_LINEAR_H100 + "&engine=ollama"
    status, server = capacity(client, query + "&engine_version=0.31.0")
    assert status == 200, server
    assert server["kv_cache_bytes"] == 7 * 65536 * 576 * 2 + 20 * 2 * KIMI_STATE
    for release in ("", "&engine_version=0.29.0"):
        status, body = capacity(client, query + release)
        assert status in (400, 409, 422) and "0.30.0" in body["errors"]["engine_version"]


def test_a_llama_cpp_build_that_cannot_load_kimi_linear_is_refused_beside_engine_version(client, small_fleet):
    status, body = capacity(client, KIMI_LINEAR_H100 + "&engine=llamacpp&engine_version=b7738")
    assert status in (400, 409, 422) and "kimi-linear" in body["errors"]["engine_version"]
    status, body = capacity(client, KIMI_LINEAR_H100 + "&engine=llamacpp&engine_version=b7739")
    assert status == 200, body


def test_a_llama_cpp_build_that_cannot_load_qwen3next_is_refused_beside_engine_version(client, small_fleet):
    status, body = capacity(client, QWEN3_NEXT_H100 + "&engine=llamacpp&engine_version=b7000")
    assert status in (400, 422) and "engine_version" in body["errors"]
    assert "from b7186" in body["errors"]["engine_version"]
