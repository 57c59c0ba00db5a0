"""One model of each kind, computed by hand: the arithmetic is in each docstring.

Figures are the models' published config.json values (see catalog/data/modern_models.py and
shared reference KV_ARCHITECTURES.md); the parameter totals are the recounts the catalog ships.
"""
import pytest

from sizing.architectures import architecture_from_dict, count_parameters
from sizing.calculators import estimate, estimate_inference, estimate_speech
from sizing.errors import SizingError
from sizing.specs import LanguageModelSpec, SpeechModelSpec
from sizing.units import GIB
from tests.sizing.models import GEMMA3_27B, GPT_OSS_120B, LLAMA4_SCOUT


def spec(name, parameters, layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, architecture,
         tied=False, max_context=None):
    return LanguageModelSpec(
        slug=name.lower().replace(" ", "-"), name=name, parameters=parameters, layers=layers,
        attention_heads=heads, kv_heads=kv_heads, head_dim=head_dim, hidden_size=hidden,
        intermediate_size=intermediate, vocab_size=vocab, max_context=max_context,
        architecture=architecture_from_dict(architecture), tied_embeddings=tied,
    )


QWEN3_8B = spec("Qwen3-8B", 8_190_735_360, 36, 4096, 32, 8, 128, 12288, 151936, {"qk_norm": True})
QWEN3_0_6B = spec("Qwen3-0.6B", 596_049_920, 28, 1024, 16, 8, 128, 3072, 151936, {"qk_norm": True}, tied=True)
DEEPSEEK_V3 = spec(
    "DeepSeek-V3", 671_026_404_352, 61, 7168, 128, None, None, 18432, 129280,
    {"mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
             "v_head_dim": 128},
     "moe": {"experts": 256, "experts_per_token": 8, "expert_intermediate": 2048, "shared_intermediate": 2048,
             "first_dense_layers": 3},
     "native_weights": {"format": "fp8-block", "block": 128,
                        "quantized": ["attention", "mlp", "experts", "shared_experts"]}},
)
QWEN3_NEXT = spec(
    "Qwen3-Next-80B-A3B", 79_674_391_296, 48, 2048, 16, 2, 256, 5120, 151936,
    {"layer_pattern": "LLLF", "qk_norm": True, "attention_output_gate": True,
     "linear_attention": {"key_heads": 16, "value_heads": 32, "key_head_dim": 128, "value_head_dim": 128,
                          "conv_kernel": 4},
     "moe": {"experts": 512, "experts_per_token": 10, "expert_intermediate": 512, "shared_intermediate": 512,
             "shared_expert_gate": True}},
)
KIMI_LINEAR = spec(
    "Kimi-Linear-48B-A3B", 49_122_675_072, 27, 2304, 32, None, None, 9216, 163840,
    {"layer_pattern": "LLLFLLLFLLLFLLLFLLLFLLLFLLF", "no_rope": True,
     "mla": {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128},
     "linear_attention": {"key_heads": 32, "value_heads": 32, "key_head_dim": 128, "value_head_dim": 128,
                          "conv_kernel": 4, "kind": "kda"},
     "moe": {"experts": 256, "experts_per_token": 8, "expert_intermediate": 1024, "shared_intermediate": 1024,
             "first_dense_layers": 1}},
    max_context=1_048_576,
)
WHISPER_TURBO = SpeechModelSpec(
    slug="whisper-large-v3-turbo", name="Whisper large-v3-turbo", parameters=808_878_080, decoder_layers=4,
    d_model=1280, attention_heads=20, max_source_positions=1500, max_target_positions=448,
)


def items(breakdown):
    return {item.name: item for item in breakdown.items}


def test_qwen3_8b_takes_its_explicit_head_dim():
    """Qwen3-8B, 16-bit, 32,768 tokens × 1 request; head_dim 128 as config.json states it.

    weights  8,190,735,360 × 2                          = 16,381,470,720 B
    KV       2 × 36 layers × 8 KV heads × 128 × 2 B × 32,768 = 4,831,838,208 B (4.50 GiB; 147,456 B/token)
    margin   20 % × 21,213,308,928 = 4,242,661,785.6 → 4,242,661,786 B
    prefill  32,768 × (4 × 4,096 + (3 + 2) × 12,288) × 2 + 151,936 × 4 = 5,100,881,408 B,
             of which the margin covers 4,242,661,786: item 858,219,622 B
    runtime  1,073,741,824 B
    total    16,381,470,720 + 4,831,838,208 + 4,242,661,786 + 858,219,622 + 1,073,741,824 = 27,387,932,160 B
    Qwen3-0.6B: hidden/heads = 1,024/16 = 64, but head_dim is 128: 2 × 28 × 8 × 128 × 2 = 114,688 B per token,
    not the 57,344 that hidden/heads would give.
    """
    breakdown = estimate_inference(QWEN3_8B, 16, 32_768, 1)
    by_name = items(breakdown)
    assert by_name["Model weights"].bytes == 16_381_470_720
    assert by_name["KV cache"].bytes == 4_831_838_208
    assert by_name["KV cache"].formula == (
        "2 × 36 layers × 8 KV heads × 128 head dim × 2 bytes × 32,768 tokens × 1 request"
    )
    assert by_name["Safety margin"].bytes == 4_242_661_786
    assert by_name["Prefill activations"].bytes == 858_219_622
    assert breakdown.total_bytes == 27_387_932_160
    per_token = estimate_inference(QWEN3_0_6B, 16, 1, 1)
    assert items(per_token)["KV cache"].bytes == 114_688


def test_gemma3_27b_holds_only_the_window_on_its_local_layers():
    """Gemma 3 27B, 16-bit, 32,768 tokens × 1 request. Layers 5, 11, …, 59 are global (10), 52 slide
    over 1,024 tokens; one layer costs 2 × 16 KV heads × 128 × 2 B = 8,192 B per token.

    global   10 × 8,192 × 32,768          = 2,684,354,560 B (2.50 GiB)
    local    52 × 8,192 × min(32,768, 1,024) = 436,207,616 B (0.41 GiB)
    naive    62 × 8,192 × 32,768 would be 16,642,998,272 B (15.5 GiB)
    weights  27,432,406,640 × 2 = 54,864,813,280 B (the SigLIP vision tower included)
    At 131,072 tokens the global item grows fourfold, the local one stays 436,207,616 B.
    """
    breakdown = estimate_inference(GEMMA3_27B, 16, 32_768, 1)
    by_name = items(breakdown)
    assert by_name["KV cache, full-attention layers"].bytes == 2_684_354_560
    assert by_name["KV cache, sliding-window layers"].bytes == 436_207_616
    assert "min(32,768 tokens, 1,024 window) = 1,024 tokens" in by_name["KV cache, sliding-window layers"].formula
    assert by_name["Model weights"].bytes == 54_864_813_280
    longer = items(estimate_inference(GEMMA3_27B, 16, 131_072, 1))
    assert longer["KV cache, full-attention layers"].bytes == 4 * 2_684_354_560
    assert longer["KV cache, sliding-window layers"].bytes == 436_207_616
    assert any("transformers' static cache" in line for line in breakdown.assumptions)


def test_gpt_oss_120b_in_mxfp4_with_alternating_sliding_layers():
    """gpt-oss-120b, native MXFP4 (4-bit), 131,072 tokens × 1 request.

    experts  36 layers × 128 × (5,760 × 2,880 + 2,880 × 2,880) = 114,661,785,600 weights
             × 0.5 B = 57,330,892,800 B + scales 36 × 128 × (5,760 + 2,880) × 2,880 ÷ 32 = 3,583,180,800 × 1 B
             = 60,914,073,600 B (4.25 bits per weight)
    16-bit   116,829,156,672 − 114,661,785,600 = 2,167,371,072 × 2 = 4,334,742,144 B (attention, routers,
             embeddings, head, norms, expert biases); weights in all 65,248,815,744 B (65.25 GB)
    full     18 layers × 2 × 8 × 64 × 2 B × 131,072 = 4,831,838,208 B (4.50 GiB)
    sliding  18 layers × 2 × 8 × 64 × 2 B × min(131,072, 128) = 4,718,592 B
    8-bit is not offered: no 8-bit checkpoint exists.
    """
    breakdown = estimate_inference(GPT_OSS_120B, 4, 131_072, 1)
    by_name = items(breakdown)
    assert by_name["Model weights, MXFP4 layers"].bytes == 60_914_073_600
    assert "3,583,180,800 scales × 1 byte" in by_name["Model weights, MXFP4 layers"].formula
    assert by_name["Model weights, 16-bit modules"].bytes == 4_334_742_144
    assert by_name["KV cache, full-attention layers"].bytes == 4_831_838_208
    assert by_name["KV cache, sliding-window layers"].bytes == 4_718_592
    assert "4-bit, MXFP4 as published" in breakdown.title
    with pytest.raises(SizingError) as refused:
        estimate_inference(GPT_OSS_120B, 8, 4096, 1)
    assert refused.value.field == "precision" and "no 8-bit checkpoint" in refused.value.message
    counted = count_parameters(GPT_OSS_120B)
    assert (counted.total, counted.active) == (116_829_156_672, 5_711_982_912)


def test_llama4_scout_bounds_its_chunked_layers_by_the_chunk():
    """Llama 4 Scout, 16-bit, 131,072 tokens × 1 request. no_rope_layers [1,1,1,0] × 12: 36 layers attend
    within 8,192-token chunks, 12 NoPE layers are global; one layer costs 2 × 8 × 128 × 2 = 4,096 B/token.

    global   12 × 4,096 × 131,072 = 6,442,450,944 B (6.00 GiB)
    chunked  36 × 4,096 × min(131,072, 8,192) = 1,207,959,552 B (1.13 GiB)
    weights  108,641,793,536 × 2 = 217,283,587,072 B: all 16 experts of all 48 layers (+ the shared
             expert and the vision encoder), though 1 runs per token: 17,172,894,720 active
    """
    breakdown = estimate_inference(LLAMA4_SCOUT, 16, 131_072, 1)
    by_name = items(breakdown)
    assert by_name["KV cache, full-attention layers"].bytes == 6_442_450_944
    assert by_name["KV cache, chunked local-attention layers"].bytes == 1_207_959_552
    assert by_name["Model weights"].bytes == 217_283_587_072
    assert count_parameters(LLAMA4_SCOUT).active == 17_172_894_720
    assert any("every one of the 16 experts" in line and "expert parallelism" in line
               for line in breakdown.assumptions)


def test_deepseek_v3_caches_the_mla_latent_and_is_sized_in_block_fp8():
    """DeepSeek-V3, native FP8, 131,072 tokens × 1 request.

    latent   61 layers × (512 + 64) × 2 B × 131,072 = 9,210,691,584 B (8.58 GiB; 70,272 B/token), kept whole
             on every GPU under tensor parallelism; transformers' expanded cache would be
             61 × 128 heads × (192 + 128) × 2 = 4,997,120 B/token, 71× more
    scales   per MLA layer q_a 12×56 + q_b 192×12 + kv_a 5×56 + kv_b 256×4 + o 56×128 = 11,448 (× 61 = 698,328);
             dense MLP 3 × 144×56 × 3 = 72,576; experts 58 × 256 × 3 × 896 = 39,911,424;
             shared 58 × 2,688 = 155,904: 40,838,232 fp32 scales = 163,352,928 B
    FP8      669,065,609,216 × 1 B + 163,352,928 = 669,228,962,144 B
    16-bit   embeddings 2 × 129,280 × 7,168 + norms 881,664 + latent norms 61 × 2,048 + routers 58 × 256 × 7,168
             = 1,960,795,136 × 2 = 3,921,590,272 B (the routing biases are buffers, not counted)
    """
    breakdown = estimate_inference(DEEPSEEK_V3, 8, 131_072, 1)
    by_name = items(breakdown)
    latent = by_name["KV cache, latent attention (MLA)"]
    assert latent.bytes == 9_210_691_584 and latent.per_gpu
    assert latent.formula == "61 layers × (512 latent + 64 rotary dims) × 2 bytes × 131,072 tokens × 1 request"
    assert by_name["Model weights, block FP8 layers"].bytes == 669_228_962_144
    assert "40,838,232 scales × 4 bytes" in by_name["Model weights, block FP8 layers"].formula
    assert by_name["Model weights, 16-bit modules"].bytes == 3_921_590_272
    assert any("4,997,120 bytes per token instead of 70,272, 71× more" in line for line in breakdown.assumptions)
    assert any("4.x releases" in line for line in breakdown.assumptions)
    fp8_kv = items(estimate_inference(DEEPSEEK_V3, 8, 131_072, 1, kv_bits=8))
    assert fp8_kv["KV cache, latent attention (MLA)"].bytes == 9_210_691_584 // 2
    assert count_parameters(DEEPSEEK_V3).active == 37_552_282_624


def test_qwen3_next_keeps_a_fixed_state_on_its_linear_layers():
    """Qwen3-Next-80B-A3B, 16-bit, 32,768 tokens × 1 request. layer_types: every fourth layer full.

    full     12 layers × 2 × 2 KV heads × 256 × 2 B × 32,768 = 805,306,368 B (0.75 GiB; 24,576 B/token)
    linear   36 layers × [(4 − 1) × 8,192 conv channels + 32 × 128 × 128 state] × 2 B
             = 36 × 548,864 × 2 = 39,518,208 B (37.7 MiB) per sequence, at any context
    """
    breakdown = estimate_inference(QWEN3_NEXT, 16, 32_768, 1)
    by_name = items(breakdown)
    assert by_name["KV cache, full-attention layers"].bytes == 805_306_368
    assert by_name["Recurrent state, linear-attention layers"].bytes == 39_518_208
    short = items(estimate_inference(QWEN3_NEXT, 16, 16, 1))
    assert short["Recurrent state, linear-attention layers"].bytes == 39_518_208
    eight_bit = items(estimate_inference(QWEN3_NEXT, 16, 32_768, 1, kv_bits=8))
    assert eight_bit["KV cache, full-attention layers"].bytes == 805_306_368 // 2
    assert eight_bit["Recurrent state, linear-attention layers"].bytes == 39_518_208  # stays 16-bit


def test_kimi_linear_caches_a_latent_on_seven_layers_and_a_float32_state_on_twenty():
    """Kimi-Linear-48B-A3B, 16-bit, 32,768 tokens × 2 requests. linear_attn_config: full_attn_layers 4, 8,
    …, 24, 27 (1-based), the other 20 Kimi Delta Attention.

    latent   7 layers × (512 + 64) × 2 B × 32,768 × 2 = 528,482,304 B (8,064 B per token)
    KDA      20 layers × [(4 − 1) × 12,288 conv channels (q, k, v: 3 × 32 × 128) × 2 B
                          + 32 heads × 128 × 128 × 4 B (float32)] × 2
             = 20 × (73,728 + 2,097,152) × 2 = 86,835,200 B, whatever the context
    The NoPE latent layers rotate nothing: no cos/sin cache under vLLM.
    """
    breakdown = estimate_inference(KIMI_LINEAR, 16, 32_768, 2)
    by_name = items(breakdown)
    latent = by_name["KV cache, latent attention (MLA)"]
    state = by_name["Recurrent state, linear-attention layers"]
    assert latent.bytes == 528_482_304 and "unrotated" in latent.formula
    assert state.bytes == 86_835_200 and "× 4 bytes" in state.formula
    assert items(estimate_inference(KIMI_LINEAR, 16, 16, 2))["Recurrent state, linear-attention layers"].bytes \
        == 86_835_200
    eight_bit = items(estimate_inference(KIMI_LINEAR, 16, 32_768, 2, kv_bits=8))
    assert eight_bit["KV cache, latent attention (MLA)"].bytes == 528_482_304 // 2
    assert eight_bit["Recurrent state, linear-attention layers"].bytes == 86_835_200  # not the KV precision
    assert any("Kimi Delta Attention" in line and "float32" in line for line in breakdown.assumptions)


def test_kimi_delta_attention_layers_count_as_transformers_builds_them():
    """One KDA layer (hidden 2,304, 32 heads of 128, kernel 4): q, k, v 3 × 4,096 × 2,304; one depthwise
    convolution 12,288 × 4; f_a, g_a 128 × 2,304 each; f_b, g_b 4,096 × 128 each; b 32 × 2,304; o 2,304 ×
    4,096; dt_bias 4,096, A_log 32, o_norm 128 = 39,514,272. Twenty of them: 790,285,440. One latent layer
    (no q_lora): q 32 × 192 × 2,304, kv_a 576 × 2,304, kv_a_layernorm 512, kv_b 32 × 256 × 512, o 2,304 ×
    4,096 = 29,114,880; seven: 203,804,160."""
    counted = count_parameters(KIMI_LINEAR)
    assert counted.of("linear_attention") == 790_285_440
    assert counted.of("attention") == 203_804_160
    assert counted.total == 49_122_675_072 and counted.active == 3_484_453_248


def test_whisper_large_v3_turbo_caches_four_decoder_layers():
    """Whisper large-v3-turbo, 16-bit, 1 stream. Four decoder layers of d_model 1,280: 2 × 4 × 1,280 × 2 B
    = 20,480 B per position.

    greedy   20,480 × (448 + 1,500) = 39,895,040 B
    beam 5   20,480 × (448 × 5 + 1,500) = 76,595,200 B (the cross-attention frames shared by the beams)
    weights  808,878,080 × 2 = 1,617,756,160 B (large-v3's 1,543,490,560 less 28 decoder layers)
    8-bit KV halves the cache: 38,297,600 B at beam 5.
    """
    greedy = items(estimate_speech(WHISPER_TURBO, 16, 1, beams=1))
    assert greedy["Decoder KV cache"].bytes == 39_895_040
    default = estimate("speech", WHISPER_TURBO, 16, None, 1, None)
    assert items(default)["Decoder KV cache"].bytes == 76_595_200
    assert items(default)["Model weights"].bytes == 1_617_756_160
    eight = estimate("speech", WHISPER_TURBO, 16, None, 1, None, kv_bits=8)
    assert items(eight)["Decoder KV cache"].bytes == 38_297_600


def test_kv_cache_precision_is_16_or_8_bit():
    with pytest.raises(SizingError) as error:
        estimate_inference(QWEN3_8B, 16, 4096, 1, kv_bits=4)
    assert error.value.field == "kv_bits"
    eight = estimate_inference(QWEN3_8B, 16, 32_768, 1, kv_bits=8)
    assert items(eight)["KV cache"].bytes == 4_831_838_208 // 2
    assert "1 byte" in items(eight)["KV cache"].formula and "8-bit KV cache" in eight.title


def test_fine_tuning_refuses_attention_the_lora_sizing_does_not_cover():
    for model in (DEEPSEEK_V3, QWEN3_NEXT, KIMI_LINEAR):
        with pytest.raises(SizingError) as error:
            estimate("finetune", model, 16, 2048, 1, None)
        assert error.value.field == "model" and "not sized here" in error.value.message


def test_gib_figures_of_the_reference_examples():
    assert round(4_831_838_208 / GIB, 3) == 4.5
    assert round(9_210_691_584 / GIB, 3) == 8.578


def test_a_linear_attention_kind_the_catalog_does_not_size_is_refused_naming_it():
    linear = {"key_heads": 2, "value_heads": 2, "key_head_dim": 8, "value_head_dim": 8, "conv_kernel": 4}
    with pytest.raises(SizingError) as error:
        architecture_from_dict({"layer_pattern": "LF", "linear_attention": {**linear, "kind": "mamba2"}})
    assert "linear_attention.kind" in error.value.message
    read = architecture_from_dict({"layer_pattern": "LF", "linear_attention": {**linear, "kind": "kda"}})
    assert read.linear_attention is not None and read.linear_attention.kind == "kda"
    assert architecture_from_dict(read.as_dict()) == read
