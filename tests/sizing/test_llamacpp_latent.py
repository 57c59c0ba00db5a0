"""Latent attention (DeepSeek's MLA) as a GGUF file and llama.cpp's cache: the tensors llama.cpp's converter
writes for the deepseek2 architecture, typed as its quantizer types them, against the parameter count and
published file sizes; the cache's bytes per token counted by hand; the absorbed attention's compute buffer
counted by hand on a small layer."""
from dataclasses import replace

import pytest
from django.utils import translation

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


def test_deepseek_v3_under_llama_cpp_is_sized_with_flash_attention_and_without():
    need = llamacpp_need(V3, LlamaCppSettings("Q4_K_M", 8192, latent_values=False))
    weights, cache, compute = need.gpu_items
    assert weights.bytes == gguf_weights(V3, "Q4_K_M").bytes - need.host_items[0].bytes
    assert cache.bytes == 61 * 576 * 2 * 8192 and "V a view of K" in cache.formula
    assert 350 * MIB < compute.bytes < 420 * MIB
    with_values = llamacpp_need(V3, LlamaCppSettings("Q4_K_M", 8192))
    assert with_values.gpu_items[1].bytes == 61 * 1088 * 2 * 8192 and "again in V" in with_values.gpu_items[1].formula
    # without flash attention: the scores of 8,192 cells × 512 tokens × 128 heads in f32 (2 GiB) at once
    off = llamacpp_need(V3, LlamaCppSettings("Q4_K_M", 8192, flash_attention=False, latent_values=False))
    assert off.gpu_items[1].bytes == cache.bytes
    assert 8192 * 512 * 128 * 4 < off.gpu_items[2].bytes < 8192 * 512 * 128 * 4 + 512 * MIB


# DeepSeek-V2-Lite's attention (16 heads, a 512-value latent, 64 rotary and 128 other query values a head,
# values of 128, no q_lora_rank), one layer, 512 tokens over 32,768 cells, no output head
V2_LITE_LAYER = GraphShape(hidden=2048, heads=16, kv_heads=1, head_dim=576, vocab=102_400, layers=(32768,),
                           intermediate=10944, tokens=512, outputs=512, output_layer=False, kv_lora_rank=512,
                           rope_dim=64, nope_dim=128, v_head_dim=128, flash_attention=False, f16_mask_only=True)


def test_a_hand_counted_v2_lite_layer_without_flash_attention_peaks_at_its_scores_over_the_latent_copy():
    """The inputs: embeddings 2,048 × 512 × 4 = 4,194,304, positions 2,048, row indices 4,096, the f32 mask
    32,768 × 512 × 4 = 67,108,864 (to 71,309,312); the attention norm 4,194,304 (to 75,503,616); the query
    16 × 192 × 512 × 4 = 6,291,456, its absorbed nope part 16 × 512 × 512 × 4 = 16,777,216 and rotated rope
    part 16 × 64 × 512 × 4 = 2,097,152 (to 100,669,440); the query freed, Q (16 × 576 × 512 × 4 =
    18,874,368) fits no hole: on top, to 119,543,808. The norm, the absorbed and rope parts and the latent's
    small tensors freed leave one hole of 29,360,128 bytes above the inputs. V, a view of the V-less K
    cache, copied transposed (32,768 × 512 × 2 = 33,554,432) does not fit it: on top, to 153,098,240; the
    scores (32,768 × 512 × 16 × 4 = 1,073,741,824) on top of it: the buffer reaches 1,226,840,064 bytes.
    The softmax writes over the scores; KQV (16 MiB), × attn_v_b and the rest fit the holes below.

    The builds that keep the latent again as V store it transposed without flash attention: no copy, the
    scores sit 33,554,432 lower, and the V rows' indices (512 tokens × 512 values × 8 = 2,097,152) add to
    the inputs: 1,195,382,784. In f32 the copy is 67,108,864: 33,554,432 more."""
    assert build_graph(V2_LITE_LAYER).peak() == compute_buffer_bytes(V2_LITE_LAYER) == 1_226_840_064
    assert 71_309_312 + 4_194_304 + 6_291_456 + 16_777_216 + 2_097_152 + 18_874_368 == 119_543_808
    assert 119_543_808 + 32768 * 512 * 2 + 32768 * 512 * 16 * 4 == 1_226_840_064
    old = replace(V2_LITE_LAYER, latent_values=True)
    assert compute_buffer_bytes(old) == 1_226_840_064 - 33_554_432 + 512 * 512 * 8 == 1_195_382_784
    assert compute_buffer_bytes(replace(V2_LITE_LAYER, key_value_bytes=4)) == 1_226_840_064 + 33_554_432
    # four streams of 8,192 cells: the copy is still every cell's (the mask and scores a stream's)
    streams = replace(V2_LITE_LAYER, layers=(8192,), streams=4)
    assert build_graph(streams).peak() == compute_buffer_bytes(streams)
    # with flash attention neither the scores nor the copy exist
    assert compute_buffer_bytes(replace(V2_LITE_LAYER, flash_attention=True)) < 100 * MIB


def test_deepseek_v2_lite_without_flash_attention_is_its_hand_counted_layer_and_the_output_rows():
    """The whole model at -c 32768 (a V-less build): the first layer's peak above, and the output rows'
    indices among the inputs (512 × 4 = 2,048 bytes); the MoE layers and the logits (102,400 × 512 × 4)
    stay below it. The breakdown says what the buffer holds, in both languages."""
    settings = LlamaCppSettings("Q4_K_M", 32768, flash_attention=False, latent_values=False)
    compute = llamacpp_need(DEEPSEEK_V2_LITE, settings).gpu_items[2]
    assert compute.bytes == 1_226_840_064 + 2048
    assert "attention scores of the whole context (no flash attention)" in compute.formula
    assert ("latent of every cell copied transposed as V (a view of the K cache): 32,768 cells × 512 values "
            "in f16") in compute.formula
    old = llamacpp_need(DEEPSEEK_V2_LITE, replace(settings, latent_values=True)).gpu_items[2]
    assert old.bytes == 1_195_382_784 + 2048 and "copied transposed" not in old.formula
    with translation.override("de"):
        german = llamacpp_need(DEEPSEEK_V2_LITE, settings).gpu_items[2].formula
    assert "transponiert kopiert" in german and "copied" not in german


def test_the_latent_graph_without_flash_attention_read_off_its_regions_is_the_allocator_walk():
    from sizing.calculators import llamacpp_graph

    llamacpp_graph._regions.cache_clear()
    compute_buffer_bytes.cache_clear()
    shape = replace(V2_LITE_LAYER, layers=(512,) * 6, experts=64, experts_per_token=6, expert_intermediate=1408,
                    shared_intermediate=2816, output_layer=True, f16_mask_only=False)
    for cells in (512, 768, 4096, 32768, 131072, 163840):
        for streams, copies, latent_values in ((1, 1, False), (4, 1, False), (1, 4, False), (1, 1, True)):
            at = replace(shape, layers=(cells // streams,) * 6, streams=streams, copies=copies,
                         latent_values=latent_values)
            assert compute_buffer_bytes(at) == max(build_graph(at).peak(),
                                                   llamacpp_graph._stranded_logits(at)), (cells, streams)


def test_a_quantized_cache_without_flash_attention_is_refused_where_it_would_be_read_as_v():
    """llama.cpp refuses a quantized V type without flash attention, whether or not the build keeps a V
    cache; in a V-less build V is a view of K, so a quantized K is refused too (its blocks cannot be copied
    transposed). A build that keeps V takes a quantized K with an f16 V."""
    v_less = LlamaCppSettings("Q4_K_M", 8192, flash_attention=False, latent_values=False)
    for settings in (replace(v_less, cache_type_k="q8_0", cache_type_v="q8_0"),
                     replace(v_less, cache_type_v="q4_0"), replace(v_less, latent_values=True, cache_type_v="q8_0")):
        with pytest.raises(SizingError, match="flash attention") as refused:
            llamacpp_need(DEEPSEEK_V2_LITE, settings)
        assert refused.value.field == "flash_attention"
    with pytest.raises(SizingError, match="a quantized K cache \\(q8_0\\) is a quantized V cache"):
        llamacpp_need(DEEPSEEK_V2_LITE, replace(v_less, cache_type_k="q8_0"))
    with translation.override("de"), pytest.raises(SizingError, match="Flash Attention"):
        llamacpp_need(DEEPSEEK_V2_LITE, replace(v_less, cache_type_k="q8_0"))
    kept = llamacpp_need(DEEPSEEK_V2_LITE, replace(v_less, latent_values=True, cache_type_k="q8_0"))
    assert kept.gpu_items[1].bytes == 27 * (612 + 1024) * 8192
    assert llamacpp_need(DEEPSEEK_V2_LITE, replace(v_less, cache_type_k="q8_0", flash_attention=True))
