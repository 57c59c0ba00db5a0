"""A one-pass prefill of a model with sliding-window or chunked-local layers, as transformers runs it: the
whole prompt's keys and values stay in every local layer until the first decoding step, and with SDPA a
full boolean mask is built for the local layers and turned into a 16-bit additive mask in each of them."""
from dataclasses import replace

from sizing.calculators import estimate_inference, prefill_activation_bytes
from sizing.calculators.inference import local_prefill

from .models import GEMMA3_27B, GPT_OSS_120B, LLAMA4_SCOUT, LLAMA_3_1_8B


def items(breakdown):
    return {item.name: item for item in breakdown.items}


def test_gemma3_27b_at_32k_counts_the_prompts_keys_and_values_and_the_sliding_mask():
    """Gemma 3 27B, 16-bit, 32,768 tokens × 1 request; 52 sliding layers over 1,024 tokens, 10 global.

    MLP peak     32,768 × (4 × 5,376 + 5 × 21,504) × 2 B                  = 8,455,716,864
    attention    32,768 × (4 × 5,376 + 4 × 32 × 128) × 2 + 32,768² × 3    = 5,704,253,440 (smaller)
    mask         1 × 32,768 × 32,768 × 1 B                                 = 1,073,741,824
    retained     52 × (32,768 − 1,024) × 2 × 16 × 128 × 2 B                = 13,522,436,096
    logits       262,208 × 4 B                                             = 1,048,832
    prefill                                                                = 23,052,943,616 (21.47 GiB)
    weights 54,864,813,280 + KV 3,120,562,176 = 57,985,375,456; margin 11,597,075,092
    item 23,052,943,616 − 11,597,075,092 = 11,455,868,524; total 82,112,060,896 B = 76.47 GiB
    (before: no prefill item, 70,656,192,372 B = 65.80 GiB).
    """
    breakdown = estimate_inference(GEMMA3_27B, 16, 32_768, 1)
    by_name = items(breakdown)

    assert prefill_activation_bytes(GEMMA3_27B, 32_768, 1) == 23_052_943_616
    assert by_name["Safety margin"].bytes == 11_597_075_092
    assert by_name["Prefill activations"].bytes == 11_455_868_524
    assert breakdown.total_bytes == 82_112_060_896
    formula = by_name["Prefill activations"].formula
    assert "52 local layers × 1 request × (32,768 − 1,024 window) tokens × 8,192 bytes" in formula
    assert "1 × 1 request × 32,768 × 32,768 × 1 byte (the local layers' boolean mask)" in formula
    assert "larger of (MLP: 32,768 prompt tokens" in formula
    assert any("DynamicSlidingWindowLayer" in line and "SDPA" in line for line in breakdown.assumptions)


def test_gemma3_27b_at_8k_stays_inside_the_margin_and_unchanged():
    """At 8,192 tokens the prefill (5,235,540,224 B: MLP 2,113,929,216 + mask 67,108,864 + retained
    3,053,453,312 + logits) stays under the 11,194,421,908 B margin: 68,240,273,268 B as before."""
    breakdown = estimate_inference(GEMMA3_27B, 16, 8_192, 1)

    assert prefill_activation_bytes(GEMMA3_27B, 8_192, 1) == 5_235_540_224
    assert "Prefill activations" not in items(breakdown)
    assert breakdown.total_bytes == 68_240_273_268


def test_a_prompt_inside_the_window_builds_no_mask_and_keeps_nothing_more():
    assert local_prefill(GEMMA3_27B, 1_023, 1) is None
    at_window = local_prefill(GEMMA3_27B, 1_024, 2)
    assert at_window.masks == 1 and at_window.retained_bytes == 0
    assert at_window.mask_elements == 2 * 1_024 * 1_024


def test_requests_multiply_the_mask_and_the_retained_keys_and_values():
    one = local_prefill(GEMMA3_27B, 16_384, 1)
    four = local_prefill(GEMMA3_27B, 16_384, 4)
    assert four.retained_bytes == 4 * one.retained_bytes
    assert four.mask_bytes == 4 * one.mask_bytes


def test_attention_sinks_build_no_mask_but_keep_the_prompt():
    """gpt-oss runs its sinks in a FlashAttention kernel (transformers offers no SDPA for it): 18 sliding
    layers over 128 tokens keep 131,072 − 128 tokens × 2 × 8 × 64 × 2 B each."""
    local = local_prefill(GPT_OSS_120B, 131_072, 1)
    assert local.masks == 0 and local.mask_bytes == 0 and local.conversion_bytes == 0
    assert local.retained_bytes == 18 * (131_072 - 128) * 2048
    all_full = replace(GPT_OSS_120B, architecture=replace(GPT_OSS_120B.architecture, layer_pattern="F"))
    assert prefill_activation_bytes(GPT_OSS_120B, 131_072, 1) == (
        prefill_activation_bytes(all_full, 131_072, 1) + local.retained_bytes)
    breakdown = estimate_inference(GPT_OSS_120B, 4, 131_072, 1)
    assert any("Attention sinks" in line for line in breakdown.assumptions)
    assert "boolean mask" not in items(breakdown).get("Prefill activations").formula


def test_chunked_layers_count_like_sliding_ones_with_their_chunk():
    local = local_prefill(LLAMA4_SCOUT, 32_768, 1)
    assert local.layers == 36 and local.windows == (8_192,)
    assert local.retained_bytes == 36 * (32_768 - 8_192) * 2 * 8 * 128 * 2
    assert local.mask_elements == 32_768 * 32_768


def test_a_plain_decoder_keeps_its_prefill_and_formula():
    """Llama 3.1 8B at 131,072 tokens: no local layers, the item as before."""
    breakdown = estimate_inference(LLAMA_3_1_8B, 16, 131_072, 1)
    assert local_prefill(LLAMA_3_1_8B, 131_072, 1) is None
    assert items(breakdown)["Prefill activations"].formula.startswith("131,072 prompt tokens × (4 × 4,096 hidden")
    assert not any("DynamicSlidingWindowLayer" in line for line in breakdown.assumptions)


def test_the_local_layers_prefill_reads_in_german():
    from django.utils import translation

    with translation.override("de"):
        breakdown = estimate_inference(GEMMA3_27B, 16, 32_768, 1)
        formula = items(breakdown)["Prefill-Aktivierungen"].formula
        text = " ".join(breakdown.assumptions)
    assert "52 lokale Schichten × 1 Anfrage × (32.768 − 1.024 Fenster) Token × 8.192 Bytes" in formula
    assert formula.startswith("größerer Wert von (MLP: 32.768 Prompt-Token")
    assert "Sliding-Window- und Chunked-Local-Schichten (hier 52)" in text
