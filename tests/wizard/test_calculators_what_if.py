"""The GPU what-if on the calculators page: the API's answer in a form, numbers as the page writes them,
each bad value worded beside its field, the other calculators' values kept."""
import re

import pytest

pytestmark = pytest.mark.django_db

ASKED = "model=llama-3-1-8b&gpu_memory_gib=79.19&gpu_memory_utilization=0.95&max_model_len=8192"


def page(client, query, prefix=""):
    response = client.get(f"{prefix}/calculators/?{query}")
    assert response.status_code == 200
    return response.content.decode()


def test_the_form_is_there_unasked_with_vllms_defaults(client, models_and_gpus):
    html = page(client, "")
    assert 'id="what-if-title"' in html
    assert 'name="gpu_memory_gib"' in html and 'value="79.19"' in html
    assert '<option value="llama-3-1-8b" selected>' in html
    assert 'data-testid="what-if-result"' not in html


def test_asked_it_answers_the_pool_and_the_command(client, models_and_gpus):
    html = page(client, ASKED)
    assert 'data-testid="what-if-result"' in html and "Starts" in html
    tokens = int(re.search(r"GiB, ([\d,]+) tokens;", html).group(1).replace(",", ""))
    assert 476_016 * 0.85 <= tokens <= 476_016 * 1.05
    assert "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 1 --max-model-len 8192" in html


def test_a_model_too_large_says_it_does_not_start_and_why(client, models_and_gpus):
    html = page(client, "model=llama-3-1-70b&gpu_memory_gib=79.19&max_model_len=16000")
    assert "Does not start" in html and "max_model_len" in html


def test_the_german_page_reads_decimal_commas(client, models_and_gpus):
    html = page(client, "model=llama-3-1-8b&gpu_memory_gib=79,19&gpu_memory_utilization=0,95&max_model_len=8192",
                prefix="/de")
    assert "Startet" in html and "KV-Cache:" in html


@pytest.mark.parametrize(("change", "field"), [
    ("gpu_memory_gib=-1", "gpu_memory_gib"),
    ("tensor_parallel=3", "tensor_parallel"),
    ("gpu_memory_utilization=2", "gpu_memory_utilization"),
])
def test_a_bad_value_is_worded_beside_its_field_and_nothing_else_is_lost(client, models_and_gpus, change, field):
    name = change.split("=")[0]
    query = "&".join(p for p in ASKED.split("&") if not p.startswith(name + "=")) + f"&{change}&target=100"
    html = page(client, query)
    assert f'id="err-{field}"' in html
    assert 'data-testid="what-if-result"' not in html
    assert 'name="target" value="100"' in html  # the throughput calculator's value is kept


def test_a_gpu_type_chosen_on_the_page_sets_the_memory_it_sizes_with(client, models_and_gpus):
    html = page(client, "model=llama-3-1-8b&gpu=H100+SXM+80GB&gpu_memory_gib=79.19&max_model_len=8192")
    assert '<option value="H100 SXM 80GB" selected>' in html
    assert 'value="79.19"' in html and "Starts" in html
    unknown = page(client, "model=llama-3-1-8b&gpu=H900&gpu_memory_gib=79.19")
    assert 'id="err-gpu"' in unknown and 'data-testid="what-if-result"' not in unknown


def test_a_gpu_types_memory_reads_the_same_in_the_list_the_box_the_api_and_its_source(client, models_and_gpus):
    listed = page(client, "")
    assert ">H100 SXM 80GB (79.19 GiB)</option>" in listed and 'value="79.19"' in listed
    asked = page(client, "model=llama-3-1-8b&gpu=H100+SXM+80GB&max_model_len=8192")
    assert re.search(r'<input [^>]*name="gpu_memory_gib" value="79.19"', asked)
    answer = client.get("/api/v1/capacity?model=llama-3-1-8b&gpu=H100+SXM+80GB").json()
    assert answer["gpu_memory_gib"] == 79.19 and "79.19 GiB" in answer["gpu_memory_source"]


def test_the_pool_is_said_in_whole_requests(client, models_and_gpus):
    html = page(client, ASKED)
    said = re.search(r'data-testid="what-if-pool">([^<]*)</p>', html).group(1)
    whole = re.search(r"tokens; ([\d,]+) whole requests of 8,192 tokens at once \(vLLM.s maximum concurrency: "
                      r"([\d.]+)×\)", said)
    assert whole, said
    assert int(whole.group(1).replace(",", "")) == int(float(whole.group(2)))
    answer = client.get(f"/api/v1/capacity?{ASKED}").json()
    assert answer["requests_at_once"] == int(answer["max_concurrency"]) == int(whole.group(1).replace(",", ""))


@pytest.mark.parametrize(("prefix", "one", "outside"), [
    ("", "sampler: 1 sequence ×", "Memory outside PyTorch: 0.25 GiB"),
    ("/de", "Sampler: 1 Sequenz ×", "Speicher außerhalb von PyTorch: 0,25 GiB"),
])
def test_one_sequence_is_said_in_the_singular_and_an_items_figure_once(client, models_and_gpus, prefix, one, outside):
    html = page(client, ASKED + "&max_num_seqs=1", prefix)
    assert one in html
    item = re.search(rf"<li>{re.escape(outside)} <span class=\"muted mono\">([^<]*)</span>", html)
    assert item, "no item outside PyTorch"
    assert "GiB" not in item.group(1)


def test_every_bad_what_if_field_is_said_at_once_the_models_refusals_too(client, models_and_gpus):
    html = page(client, "model=llama-3-1-8b&gpu_memory_gib=abc&tensor_parallel=3&pipeline_parallel=999")
    for field in ("gpu_memory_gib", "tensor_parallel", "pipeline_parallel"):
        assert f'id="err-{field}"' in html, f"no message beside {field}"
    assert "attention heads" in re.search(r'id="err-tensor_parallel">([^<]*)<', html).group(1)
    assert 'data-testid="what-if-result"' not in html
    both = client.get("/api/v1/capacity?model=llama-3-1-8b&gpu_memory_gib=abc&tensor_parallel=3")
    assert both.status_code == 400 and {"gpu_memory_gib", "tensor_parallel"} <= set(both.json()["errors"])
    refused = client.get("/api/v1/capacity?model=llama-3-1-8b&tensor_parallel=3&max_model_len=999999")
    assert refused.status_code in (400, 422)
    assert {"tensor_parallel", "max_model_len"} <= set(refused.json()["errors"])


def test_llama_cpp_on_the_page_answers_the_file_its_cache_and_the_llama_server_command(client, models_and_gpus):
    html = page(client, "model=llama-3-1-8b&engine=llamacpp&quantization=q4_k_m&kv_cache=q8_0&max_model_len=16384"
                        "&parallel=2&gpu=RTX 4090&precision=16&gpu_memory_utilization=0.9")
    assert 'data-testid="what-if-result"' in html and "Starts" in html
    assert "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf" in html and "4.8944 bits per weight" in html
    assert "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 16384 -np 2 -ngl 999 -fa on --cache-type-k q8_0 " \
           "--cache-type-v q8_0" in html
    assert "2 × 8,192 tokens per request" in html


def test_qwen3_next_under_llama_cpp_on_the_page_names_its_recurrent_state_and_starts_on_an_h100(client,
                                                                                           models_and_gpus):
    html = page(client, "model=qwen3-next-80b-a3b&engine=llamacpp&quantization=Q4_K_M&max_model_len=32768"
                        "&parallel=2&gpu=H100 SXM 80GB&precision=16")
    assert 'data-testid="what-if-result"' in html and "Starts" in html
    assert "linear-attention layers keep a recurrent state" in html and "Gated DeltaNet" in html
    assert "llama-server -m " in html and "-c 32768 -np 2 -ngl 999 -fa on" in html


def test_deepseek_v3_under_llama_cpp_without_flash_attention_on_the_page_words_its_latent_copy(client,
                                                                                             models_and_gpus):
    html = page(client, "model=deepseek-v3&engine=llamacpp&quantization=Q4_K_M&max_model_len=8192"
                        "&gpu=H100 SXM 80GB&tensor_parallel=8&engine_version=b9500&flash_attention=off")
    assert 'data-testid="what-if-result"' in html and "Starts" in html
    assert "attention scores of the whole context (no flash attention)" in html
    assert "copied transposed as V (a view of the K cache)" in html and "-c 8192 -np 1 -ngl 999 -fa off" in html


def test_kimi_linear_under_llama_cpp_on_the_page_names_its_kda_state_and_under_ollama_asks_its_release(
        client, models_and_gpus):
    query = ("model=kimi-linear-48b-a3b&quantization=Q4_K_M&max_model_len=32768&parallel=2&gpu=H100 SXM 80GB"
             "&precision=16")
    html = page(client, query + "&engine=llamacpp")
    assert 'data-testid="what-if-result"' in html and "Starts" in html
    assert "linear-attention layers keep a recurrent state" in html and "Kimi Delta Attention" in html
    assert "llama-server -m " in html and "-c 32768 -np 2" in html
    refused = page(client, query + "&engine=ollama")
    assert 'id="err-engine_version"' in refused and "0.30.0" in refused


def test_a_cache_type_the_engine_does_not_store_is_worded_beside_its_field(client, models_and_gpus):
    html = page(client, "model=llama-3-1-8b&engine=llamacpp&kv_cache=fp8&gpu=RTX 4090")
    assert 'id="err-kv_cache"' in html and "llama.cpp and Ollama cache K and V" in html
    assert 'data-testid="what-if-result"' not in html


def test_sglang_on_the_page_answers_the_token_pool_and_the_launch_command(client, models_and_gpus):
    html = page(client, "model=qwen2-5-32b&engine=sglang&gpu_memory_gib=79.25&mem_fraction_static=0.98"
                        "&max_model_len=4096&parallel=4&gpu_memory_utilization=0.9")
    assert 'data-testid="what-if-result"' in html and "Starts" in html
    tokens = int(re.search(r"GiB, ([\d,]+) tokens \(SGLang", html).group(1).replace(",", ""))
    assert 66_082 * 0.85 <= tokens <= 66_082 * 1.05
    assert "python -m sglang.launch_server --model-path Qwen/Qwen2.5-32B --tp 1 --context-length 4096 " \
           "--mem-fraction-static 0.98 --max-running-requests 4" in html


def test_sglang_on_the_german_page_reads_its_words_and_decimal_commas(client, models_and_gpus):
    html = page(client, "model=qwen2-5-32b&engine=sglang&gpu_memory_gib=79,25&mem_fraction_static=0,98"
                        "&max_model_len=4096", prefix="/de")
    assert "Token-Pool" in html and "--mem-fraction-static 0.98" in html


def test_a_bad_fraction_is_worded_beside_its_field(client, models_and_gpus):
    html = page(client, "model=llama-3-1-8b&engine=sglang&gpu_memory_gib=79.19&mem_fraction_static=1.5")
    assert 'id="err-mem_fraction_static"' in html and 'data-testid="what-if-result"' not in html
