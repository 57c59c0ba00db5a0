"""SGLang's static pool, sized without a database: the weights and the token pool inside
mem_fraction_static of the memory free at start, SGLang's default fraction, the command and what is refused."""
from fractions import Fraction

import pytest

from sizing.calculators.sglang import SglangSettings, default_mem_fraction_static, sglang_pool
from sizing.calculators.vllm import loaded_bytes as vllm_loaded_bytes
from sizing.calculators.vllm_loading import rotary_caches
from sizing.errors import SizingError
from sizing.units import GIB
from tests.accuracy.vllm_startup import language_spec

A800 = int(Fraction("79.25") * GIB)
H100 = int(Fraction("79.19") * GIB)


def qwq(**settings):
    values = {"gpu_memory_bytes": A800, "mem_fraction_static": Fraction("0.98"), "context_length": 4096,
              "max_running_requests": 4, **settings}
    return sglang_pool(language_spec("qwen2-5-32b"), 16, 16, SglangSettings(**values))


def test_the_logged_qwq_start_up_lands_within_the_held_bounds():
    pool = qwq()
    assert 66_082 * 0.85 <= pool.kv_cache_tokens <= 66_082 * 1.05
    assert abs(pool.weights.bytes / 65_627_100_283 - 1) <= 0.03
    assert pool.cell_bytes == 2 * 8 * 128 * 64 * 2
    assert pool.fit() == (True, None)
    assert pool.requests_at_once == 4  # 16 requests of 4,096 fit, --max-running-requests caps them at 4


def test_the_weights_and_the_pool_fill_the_static_fraction_and_the_rest_is_left():
    pool = qwq()
    assert pool.static_bytes - pool.cell_bytes < pool.weights.bytes + pool.kv_cache_bytes <= pool.static_bytes
    assert pool.static_bytes + pool.rest_bytes == pool.free_at_start_bytes
    assert pool.free_at_start_bytes + pool.context_bytes == A800


def test_an_fp8_cache_holds_twice_the_tokens_and_writes_its_flag():
    plain, fp8 = qwq(), sglang_pool(language_spec("qwen2-5-32b"), 16, 8, SglangSettings(
        gpu_memory_bytes=A800, mem_fraction_static=Fraction("0.98"), context_length=4096))
    assert fp8.kv_cache_tokens == pytest.approx(2 * plain.kv_cache_tokens, abs=2)
    assert fp8.command("Qwen/QwQ-32B").endswith("--kv-cache-dtype fp8_e5m2")


def test_fp8_weights_are_loaded_online_with_the_head_kept_in_16_bits():
    pool = sglang_pool(language_spec("llama-3-1-8b"), 8, 16, SglangSettings(gpu_memory_bytes=H100))
    assert pool.quantization == "fp8"
    assert 8.03e9 * 1.0 < pool.weights.bytes < 8.03e9 * 1.2  # 1 byte a linear weight, 2 for the embeddings
    assert "--quantization fp8" in pool.command("meta-llama/Llama-3.1-8B")


def test_the_weights_carry_the_rotary_caches_in_float32_whole_on_every_gpu():
    spec = language_spec("qwen2-5-32b")
    rotary = rotary_caches(spec, value_bytes=4)
    assert rotary.bytes == spec.max_context * 128 * 4  # one cache, rotary_dim 128, float32 on CUDA
    one = qwq(mem_fraction_static=None)
    assert one.weights.bytes == vllm_loaded_bytes(spec, 16)[0] + rotary.bytes
    assert "× 4 bytes, on every GPU" in one.weights.formula


def test_a_yarn_context_lengthens_the_rotary_cache():
    spec = language_spec("qwen3-30b-a3b")  # 40,960 positions natively, 131,072 under YaRN
    assert spec.architecture.yarn is not None
    native = sglang_pool(spec, 16, 16, SglangSettings(gpu_memory_bytes=H100, context_length=spec.max_context))
    yarn = sglang_pool(spec, 16, 16, SglangSettings(gpu_memory_bytes=H100, context_length=spec.max_context + 1))
    width = rotary_caches(spec).width
    assert yarn.weights.bytes - native.weights.bytes == (spec.architecture.yarn.context - spec.max_context) * width * 4


def test_tensor_parallel_divides_the_weights_and_the_kv_heads_and_replicates_a_head_past_them():
    one = qwq(mem_fraction_static=None)
    two = qwq(tensor_parallel=2, mem_fraction_static=None)
    rotary = rotary_caches(language_spec("qwen2-5-32b"), value_bytes=4).bytes  # whole on every GPU
    assert two.weights.bytes - rotary == pytest.approx((one.weights.bytes - rotary) / 2, abs=1)
    assert two.cell_bytes == one.cell_bytes // 2
    sixteen = sglang_pool(language_spec("qwen2-5-32b"), 16, 16, SglangSettings(gpu_memory_bytes=H100,
                                                                                 tensor_parallel=8))
    assert sixteen.cell_bytes == 2 * 1 * 128 * 64 * 2


def test_sglangs_default_fraction_follows_its_reserve_per_memory_class():
    assert default_mem_fraction_static(H100, 1) == Fraction("0.835")  # 13,440 MiB of 81,559 reserved
    assert default_mem_fraction_static(H100, 8) == Fraction("0.818")
    assert default_mem_fraction_static(int(Fraction("22.06") * GIB), 1) == Fraction("0.837")
    assert qwq(mem_fraction_static=None).fraction == Fraction("0.835")


def test_weights_past_the_fraction_leave_no_pool_and_no_command():
    pool = sglang_pool(language_spec("llama-3-1-70b"), 16, 16, SglangSettings(gpu_memory_bytes=24 * GIB))
    fits, reason = pool.fit()
    assert not fits and "Not enough memory" in reason and pool.kv_cache_tokens == 0


def test_a_pool_shorter_than_the_context_does_not_hold_one_request():
    pool = qwq(mem_fraction_static=Fraction("0.78"), context_length=131072)
    fits, reason = pool.fit()
    assert not fits and "--context-length 131,072" in reason


def test_the_command_carries_every_setting_it_was_sized_for():
    assert qwq().command("Qwen/QwQ-32B", ("--dtype half",)) == (
        "python -m sglang.launch_server --model-path Qwen/QwQ-32B --dtype half --tp 1 --context-length 4096 "
        "--mem-fraction-static 0.98 --max-running-requests 4")


def test_mla_models_cache_one_latent_per_token_and_layer():
    spec = language_spec("deepseek-v3")
    pool = sglang_pool(spec, 8, 16, SglangSettings(gpu_memory_bytes=H100, tensor_parallel=8))
    assert pool.cell_bytes == (512 + 64) * 61 * 2


@pytest.mark.parametrize(("change", "field"), [
    ({"tensor_parallel": 3}, "tensor_parallel"),
    ({"mem_fraction_static": Fraction(1)}, "mem_fraction_static"),
    ({"context_length": 10_000_000}, "max_model_len"),
])
def test_what_sglang_refuses_names_its_field(change, field):
    with pytest.raises(SizingError) as refused:
        qwq(**change)
    assert refused.value.field == field


def test_four_bit_weights_are_not_sized_under_sglang():
    with pytest.raises(SizingError) as refused:
        sglang_pool(language_spec("qwen2-5-32b"), 4, 16, SglangSettings(gpu_memory_bytes=H100))
    assert refused.value.field == "precision"


def test_linear_attention_models_are_refused_not_sized_wrong():
    with pytest.raises(SizingError) as refused:
        sglang_pool(language_spec("qwen3-next-80b-a3b"), 16, 16, SglangSettings(gpu_memory_bytes=H100, tensor_parallel=4))
    assert refused.value.field == "model"
