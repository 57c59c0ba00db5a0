"""Latent attention (DeepSeek's MLA) as a GGUF file and llama.cpp's cache: the tensors llama.cpp's converter
writes for the deepseek2 architecture, typed as its quantizer types them, against the parameter count and
published file sizes; the cache's bytes per token counted by hand; the compute buffer still refused."""
from dataclasses import replace

import pytest

from sizing.architectures import count_parameters
from sizing.calculators.llamacpp import LlamaCppSettings, cache_cells, kv_cache_bytes, llamacpp_need
from sizing.calculators.llamacpp_builds import NOT_GIVEN, LlamaCppBuild
from sizing.errors import SizingError
from sizing.gguf import gguf_weights, model_tensors
from sizing.units import GIB, MIB
from tests.accuracy.vllm_startup import language_spec
from tests.sizing.models import DEEPSEEK_V2_LITE

V3 = language_spec("deepseek-v3")
R1 = language_spec("deepseek-r1")


@pytest.mark.parametrize("model", [V3, R1, DEEPSEEK_V2_LITE], ids=lambda model: model.slug)
def test_the_tensors_hold_every_parameter_the_catalog_counts(model):
    """kv_b_proj split into attn_k_b and attn_v_b keeps its values; the multi-token-prediction layer the
    converter skips is not counted either."""
    assert sum(tensor.elements for tensor in model_tensors(model)) == count_parameters(model).total
    assert count_parameters(model).total == model.parameters


def test_deepseek_v3_layers_carry_the_query_pair_the_split_latent_projection_and_three_dense_mlps():
    roles = {tensor.layer: set() for tensor in model_tensors(V3)}
    for tensor in model_tensors(V3):
        roles[tensor.layer].add(tensor.role)
    latent = {"attn_q_a", "attn_q_a_norm", "attn_q_b", "attn_kv_a_mqa", "attn_kv_a_norm", "attn_k_b",
              "attn_v_b", "attn_output"}
    assert latent <= roles[0] and not {"attn_q", "attn_k", "attn_v", "attn_kv_b"} & roles[0]
    assert {"ffn_gate", "ffn_up", "ffn_down"} <= roles[2] and "ffn_gate_exps" not in roles[2]
    assert {"ffn_gate_exps", "ffn_down_shexp", "ffn_gate_inp"} <= roles[3] and "ffn_gate" not in roles[3]
    lite = {tensor.role for tensor in model_tensors(DEEPSEEK_V2_LITE) if tensor.layer == 0}
    assert "attn_q" in lite and "attn_q_a" not in lite


def test_q4_k_m_types_each_latent_tensor_as_the_quantizer_does():
    """attn_k_b's rows are qk_nope_head_dim (128) long: Q4_K's 256-value block falls back to Q5_0; the
    other latent projections are no attention-V tensor, so they keep the file's Q4_K; ffn_down (dense,
    experts and shared) takes Q6_K in the use_more_bits layers."""
    typed = {(t.tensor.role, t.tensor.layer): t.ggml_type for t in gguf_weights(V3, "Q4_K_M").tensors}
    assert typed["attn_k_b", 10] == "Q5_0"
    assert {typed[role, 10] for role in ("attn_q_a", "attn_q_b", "attn_kv_a_mqa", "attn_v_b", "attn_output")} \
        == {"Q4_K"}
    assert typed["ffn_down_exps", 9] == "Q6_K" and typed["ffn_down_exps", 10] == "Q4_K"
    assert typed["ffn_down_shexp", 60] == "Q6_K" and typed["ffn_down", 0] == "Q6_K"
    assert typed["output", None] == "Q6_K" and typed["attn_kv_a_norm", 10] == "F32"
    # DeepSeek-V2-Lite's experts are 1,408 wide: their down projection falls back too (Q6_K to Q8_0)
    lite = {(t.tensor.role, t.tensor.layer): t.ggml_type for t in gguf_weights(DEEPSEEK_V2_LITE, "Q4_K_M").tensors}
    assert lite["ffn_down_exps", 1] == "Q8_0" and lite["ffn_down_exps", 4] == "Q5_0"


def test_mxfp4_moe_types_the_per_head_latent_stacks_as_it_types_the_experts():
    """The MXFP4_MOE mix gives every tensor of more than one matrix (ne[2] > 1) MXFP4: the experts, and
    the per-head attn_k_b and attn_v_b stacks alike."""
    typed = {(t.tensor.role, t.tensor.layer): t.ggml_type for t in gguf_weights(V3, "MXFP4_MOE").tensors}
    assert typed["attn_k_b", 5] == typed["attn_v_b", 5] == typed["ffn_up_exps", 5] == "MXFP4"
    assert typed["attn_q_b", 5] == typed["ffn_up_shexp", 5] == "Q8_0"


@pytest.mark.parametrize(("model", "quant_type", "published_gib"), [
    # ubergarm, ikawrakow/ik_llama.cpp#259: llama-bench on unsloth/DeepSeek-R1-GGUF Q4_K_M, "376.65 GiB,
    # 671.03 B"
    (R1, "Q4_K_M", 376.65),
    # llama-bench on DeepSeek-(Coder-)V2-Lite Q4_K_M in llama.cpp issues: "9.65 GiB, 15.71 B"
    (DEEPSEEK_V2_LITE, "Q4_K_M", 9.65),
], ids=["deepseek-r1", "deepseek-v2-lite"])
def test_the_files_weigh_what_llama_bench_prints(model, quant_type, published_gib):
    weights = gguf_weights(model, quant_type)
    assert abs(weights.bytes / GIB / published_gib - 1) <= 0.001  # within the 0.01 GiB printed
    assert abs(weights.bytes / GIB - published_gib) <= 0.06


def test_the_cache_keeps_the_latent_and_the_rotary_key_per_layer_and_cell():
    """61 layers × (512 + 64) values × 2 bytes = 70,272 bytes per token in f16 without the V cache; the
    builds before the V-less cache (and a build not given) keep the 512 latent values again as V:
    61 × 1,088 × 2 = 132,736. q8_0: 576 / 32 × 34 = 612 bytes a layer."""
    settings = LlamaCppSettings("Q4_K_M", 4096, latent_values=False)
    layers = range(61)
    assert kv_cache_bytes(V3, settings, 1, layers) == 61 * 576 * 2 == 70_272
    assert kv_cache_bytes(V3, replace(settings, latent_values=True), 1, layers) == 61 * 1088 * 2 == 132_736
    quantized = replace(settings, cache_type_k="q8_0", cache_type_v="q8_0")
    assert kv_cache_bytes(V3, quantized, 1, layers) == 61 * 612 == 37_332
    assert kv_cache_bytes(V3, replace(quantized, latent_values=True), 1, layers) == 61 * (612 + 544)
    # ik_llama.cpp's log of the same latent cache (576 values a cell, q8_0, 32,768 cells):
    # "KV self size = 1166.62 MiB, c^KV (q8_0)" (ikawrakow/ik_llama.cpp#259)
    logged = LlamaCppSettings("Q4_K_M", 32768, cache_type_k="q8_0", cache_type_v="q8_0", latent_values=False)
    assert round(kv_cache_bytes(R1, logged, cache_cells(logged), layers) / MIB, 2) == 1166.62


def test_the_values_cache_is_dropped_only_for_a_build_known_to_have_the_v_less_cache():
    assert NOT_GIVEN.caches_latent_values and LlamaCppBuild(number=7000).caches_latent_values
    assert not LlamaCppBuild(number=9460).caches_latent_values


def test_llama_cpp_answers_refuse_latent_attention_until_its_compute_buffer_is_sized():
    with pytest.raises(SizingError, match="compute buffer for latent attention"):
        llamacpp_need(V3, LlamaCppSettings("Q4_K_M", 8192))


def test_linear_attention_is_still_not_a_gguf_file():
    with pytest.raises(SizingError, match="linear attention is not sized as a GGUF file"):
        model_tensors(language_spec("kimi-linear-48b-a3b"))
