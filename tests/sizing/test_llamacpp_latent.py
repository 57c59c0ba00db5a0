"""Latent attention (DeepSeek's MLA) as a GGUF file and llama.cpp's cache: the tensors llama.cpp's converter
writes for the deepseek2 architecture, typed as its quantizer types them, against the parameter count and
published file sizes; the cache's bytes per token counted by hand; the absorbed attention's compute buffer
counted by hand on a small layer."""
from dataclasses import replace

import pytest

from sizing.architectures import count_parameters
from sizing.calculators.llamacpp import LlamaCppSettings, cache_cells, kv_cache_bytes, llamacpp_need
from sizing.calculators.llamacpp_builds import NOT_GIVEN, LlamaCppBuild
from sizing.calculators.llamacpp_graph import GraphShape, build_graph, compute_buffer_bytes
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


def test_a_hand_counted_latent_layer_peaks_at_its_concatenated_query():
    """One latent layer, 64 heads of 128 + 64 query dims, a 512-value latent, 4 tokens over 256 cells, with
    flash attention and the f16 mask, no output head. The allocator places the inputs (embeddings 2,048,
    positions and row indices 128 each, mask 256 × 4 × 2 = 2,048: 4,352 bytes), the attention norm (2,048),
    the query (64 × 192 × 4 × 4 = 196,608), the absorbed nope part (64 × 512 × 16 = 524,288) and the rotated
    rope part (64 × 64 × 16 = 65,536); the query is freed after the rope, a hole the concatenated Q
    (64 × 576 × 16 = 589,824) does not fit: it goes on top, at 792,832, and the buffer reaches 1,382,656
    bytes. Later tensors fit the holes below it. The earlier graph, an f32 mask cast on the device, adds the
    2,048 more of the f32 mask below it all; the V cache of the builds before the V-less one, its row
    indices (aligned to 128)."""
    shape = GraphShape(hidden=128, heads=64, kv_heads=1, head_dim=576, vocab=256, layers=(256,), intermediate=128,
                       tokens=4, outputs=4, output_layer=False, kv_lora_rank=512, rope_dim=64, nope_dim=128,
                       v_head_dim=128, f16_mask_only=True)
    assert build_graph(shape).peak() == compute_buffer_bytes(shape) == 1_382_656
    assert compute_buffer_bytes(replace(shape, f16_mask_only=False)) == 1_382_656 + 2048
    assert compute_buffer_bytes(replace(shape, latent_values=True)) == 1_382_656 + 128
    # the query's low-rank pair: attn_q_a's 256 × 4 × 4 bytes stay below the query until attn_q_b has run
    assert compute_buffer_bytes(replace(shape, q_lora_rank=256)) == 1_382_656 + 4096


def test_the_latent_graph_read_off_its_regions_is_the_allocator_walk_at_every_length():
    from sizing.calculators import llamacpp_graph

    llamacpp_graph._regions.cache_clear()
    compute_buffer_bytes.cache_clear()
    shape = GraphShape(hidden=7168, heads=128, kv_heads=1, head_dim=576, vocab=129_280, layers=(512,) * 6,
                       intermediate=18432, experts=256, experts_per_token=8, expert_intermediate=2048,
                       shared_intermediate=2048, kv_lora_rank=512, rope_dim=64, nope_dim=128, v_head_dim=128,
                       q_lora_rank=1536)
    for cells in (512, 768, 4096, 32768, 131072, 163840):
        for copies in (1, 4):
            at = replace(shape, layers=(cells,) * 6, copies=copies)
            assert compute_buffer_bytes(at) == max(build_graph(replace(at, f16_mask_only=True)).peak(),
                                                   build_graph(replace(at, mask_cast=True)).peak(),
                                                   llamacpp_graph._stranded_logits(replace(at, mask_cast=True)))


def test_deepseek_v3_under_llama_cpp_is_sized_with_flash_attention_and_refused_without():
    need = llamacpp_need(V3, LlamaCppSettings("Q4_K_M", 8192, latent_values=False))
    weights, cache, compute = need.gpu_items
    assert weights.bytes == gguf_weights(V3, "Q4_K_M").bytes - need.host_items[0].bytes
    assert cache.bytes == 61 * 576 * 2 * 8192 and "V a view of K" in cache.formula
    assert 350 * MIB < compute.bytes < 420 * MIB
    with_values = llamacpp_need(V3, LlamaCppSettings("Q4_K_M", 8192))
    assert with_values.gpu_items[1].bytes == 61 * 1088 * 2 * 8192 and "again in V" in with_values.gpu_items[1].formula
    with pytest.raises(SizingError, match="flash attention only"):
        llamacpp_need(V3, LlamaCppSettings("Q4_K_M", 8192, flash_attention=False))
