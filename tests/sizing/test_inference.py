"""Language-model inference: the spec's worked examples, to the displayed digit."""
from decimal import ROUND_HALF_UP, Decimal

from sizing.calculators import estimate_inference
from sizing.units import GIB

from .models import LLAMA_3_1_8B, LLAMA_3_2_1B


def gib_2(n_bytes: int) -> str:
    return f"{n_bytes / GIB:.2f}"


def items_by_name(breakdown):
    return {item.name: item for item in breakdown.items}


def test_llama_3_1_8b_16_bit_4096_tokens_one_request_reproduces_the_spec_example():
    breakdown = estimate_inference(LLAMA_3_1_8B, 16, 4096, 1)
    items = items_by_name(breakdown)

    names = [item.name for item in breakdown.items]
    assert names == ["Model weights", "KV cache", "Safety margin", "CUDA runtime"]
    assert gib_2(items["Model weights"].bytes) == "14.96"
    assert gib_2(items["KV cache"].bytes) == "0.50"
    assert gib_2(items["Safety margin"].bytes) == "3.09"
    assert gib_2(items["CUDA runtime"].bytes) == "1.00"
    assert f"{breakdown.total_gib:.2f}" == "19.55"
    # fits a 24 GiB GPU, not a 16 GiB one
    assert 16 * GIB < breakdown.bytes_per_gpu(1) < 24 * GIB


def test_inference_items_are_exact_bytes():
    items = items_by_name(estimate_inference(LLAMA_3_1_8B, 16, 4096, 1))

    assert items["Model weights"].bytes == 8_030_261_248 * 2
    assert items["KV cache"].bytes == 2 * 32 * 8 * 128 * 2 * 4096 * 1 == 536_870_912
    # 20 % of 16,597,393,408 = 3,319,478,681.6, rounded up once
    assert items["Safety margin"].bytes == 3_319_478_682
    assert items["CUDA runtime"].bytes == GIB
    assert items["CUDA runtime"].per_gpu is True
    assert not any(item.per_gpu for name, item in items.items() if name != "CUDA runtime")


def test_inference_formulas_are_filled_in_with_the_models_numbers():
    items = items_by_name(estimate_inference(LLAMA_3_1_8B, 16, 4096, 1))

    assert items["Model weights"].formula == "8,030,261,248 parameters × 2 bytes (16-bit)"
    assert items["KV cache"].formula == (
        "2 × 32 layers × 8 KV heads × 128 head dim × 2 bytes × 4,096 tokens × 1 request"
    )
    assert "15.46 GiB" in items["Safety margin"].formula


def test_same_model_in_4_bit_keeps_the_spec_item_and_adds_what_published_formats_store():
    """Llama 3.1 8B, 4-bit (GPTQ/AWQ, group 128), 4,096 tokens, 1 request.

    Model weights (spec)   8,030,261,248 × 0.5 = 4,015,130,624 (the spec's "about 6.1 GiB" total)
    16-bit embeddings      128,256 × 4,096 × 2 (untied head) = 1,050,673,152 parameters
                           × (2 − 0.5) = 1,576,009,728
    Scales and zeros       8,030,261,248 − 1,050,673,152 = 6,979,588,096 quantized parameters
                           × (16 + 4) / 128 = 0.15625 bits ÷ 8 = 136,320,080
    KV cache               536,870,912
    Margin                 20 % × 6,264,331,344 = 1,252,866,268.8 → 1,252,866,269
    Runtime                1,073,741,824
    Total                  8,590,939,437 bytes = 8.00 GiB
    """
    breakdown = estimate_inference(LLAMA_3_1_8B, 4, 4096, 1)
    items = items_by_name(breakdown)

    assert [item.name for item in breakdown.items] == [
        "Model weights", "16-bit embeddings and output head", "Quantization scales", "KV cache",
        "Safety margin", "CUDA runtime",
    ]
    assert items["Model weights"].bytes == 4_015_130_624
    assert items["Model weights"].formula.endswith("× 0.5 bytes (4-bit)")
    assert items["16-bit embeddings and output head"].bytes == 1_576_009_728
    assert "1,050,673,152 parameters (embeddings + output head)" in items["16-bit embeddings and output head"].formula
    assert items["Quantization scales"].bytes == 136_320_080
    assert "6,979,588,096 quantized parameters" in items["Quantization scales"].formula
    assert items["Safety margin"].bytes == 1_252_866_269
    assert breakdown.total_bytes == 8_590_939_437
    assert f"{breakdown.total_gib:.2f}" == "8.00"
    text = " ".join(breakdown.assumptions)
    assert "embeddings" in text and "stay 16-bit" in text and "GPTQ" in text


def test_a_tied_output_head_is_counted_once_in_16_bit():
    """Llama 3.2 1B (tied), 8-bit: 128,256 × 2,048 = 262,668,288 parameters stay 16-bit, × (2 − 1) more."""
    items = items_by_name(estimate_inference(LLAMA_3_2_1B, 8, 1024, 1))

    assert items["16-bit embeddings and output head"].bytes == 262_668_288
    assert "tied to the output head" in items["16-bit embeddings and output head"].formula
    # (1,235,814,400 − 262,668,288) = 973,146,112 quantized × (16 + 8) / 128 bits ÷ 8 = 22,808,112
    assert items["Quantization scales"].bytes == 22_808_112


def test_a_long_prompt_adds_the_prefill_activations_beyond_the_margin():
    """Llama 3.1 8B, 16-bit, 65,536 tokens, 1 request.

    KV cache      2 × 32 × 8 × 128 × 2 × 65,536 = 8,589,934,592
    Margin        20 % × (16,060,522,496 + 8,589,934,592) = 4,930,091,417.6 → 4,930,091,418
    Prefill       65,536 × (4 × 4,096 + (3 alive + 2 held) × 14,336) × 2 + 1 × 128,256 × 4
                  = 11,542,724,608 + 513,024 = 11,543,237,632
    Excess        11,543,237,632 − 4,930,091,418 = 6,613,146,214
    Total         16,060,522,496 + 8,589,934,592 + 4,930,091,418 + 6,613,146,214 + 1,073,741,824
                  = 37,267,436,544 bytes = 34.71 GiB
    """
    breakdown = estimate_inference(LLAMA_3_1_8B, 16, 65_536, 1)
    items = items_by_name(breakdown)

    assert items["Safety margin"].bytes == 4_930_091_418
    assert items["Prefill activations"].bytes == 6_613_146_214
    assert ("65,536 prompt tokens × (4 × 4,096 hidden + (3 alive + 2 held by the allocator) × 14,336 MLP width)"
            in items["Prefill activations"].formula)
    assert breakdown.total_bytes == 37_267_436_544
    assert f"{breakdown.total_gib:.2f}" == "34.71"
    assert any("chunks" in line and "generate()" in line for line in breakdown.assumptions)


def test_the_margin_covers_a_short_prompts_activations_without_an_item():
    breakdown = estimate_inference(LLAMA_3_1_8B, 16, 16_384, 1)
    # 16,384 × 88,064 × 2 + 513,024 = 2,886,194,176 < margin 20 % × 18,208,006,144 = 3,641,601,229
    assert "Prefill activations" not in items_by_name(breakdown)
    assert "(here 2.69 GiB)" in items_by_name(breakdown)["Safety margin"].formula


def test_128000_token_context_needs_a_15_63_gib_kv_cache_and_a_note_to_size_context():
    breakdown = estimate_inference(LLAMA_3_1_8B, 16, 128_000, 1)
    kv_cache = items_by_name(breakdown)["KV cache"]

    assert kv_cache.bytes == 16_777_216_000  # exactly 15.625 GiB
    shown = (Decimal(kv_cache.bytes) / GIB).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    assert str(shown) == "15.63"
    assert f"{kv_cache.gib:.1f}" == "15.6"
    assert any("15.63 GiB" in line and "Size the context" in line for line in breakdown.assumptions)


def test_small_context_carries_no_context_note():
    breakdown = estimate_inference(LLAMA_3_1_8B, 16, 4096, 1)

    assert not any("Size the context" in line for line in breakdown.assumptions)


def test_inference_breakdown_carries_its_inputs_and_split_rule():
    breakdown = estimate_inference(LLAMA_3_1_8B, 8, 2048, 3)

    assert breakdown.workload == "inference"
    assert breakdown.precision == 8
    assert breakdown.splittable_over_heads == 32
    assert breakdown.inputs == {
        "model": "llama-3.1-8b", "model_name": "Llama 3.1 8B", "precision": 8, "context": 2048, "requests": 3,
        "kv_bits": 16,
    }
    assert "× 3 requests" in items_by_name(breakdown)["KV cache"].formula
    assert items_by_name(breakdown)["Model weights"].formula.endswith("× 1 byte (8-bit)")


def test_inference_assumptions_name_cache_precision_margin_frameworks_and_tensor_parallelism():
    text = " ".join(estimate_inference(LLAMA_3_1_8B, 16, 4096, 1).assumptions)

    assert "16-bit" in text and "whatever the weights' precision" in text
    assert "activations" in text and "fragmentation" in text
    assert "vLLM" in text and "gpu_memory_utilization" in text
    assert "tensor parallelism" in text and "own 1 GiB runtime" in text and "32 attention heads" in text


def test_split_over_two_gpus_halves_shared_items_and_adds_runtime_and_buffers_on_each():
    breakdown = estimate_inference(LLAMA_3_1_8B, 16, 4096, 1)
    shared = breakdown.total_bytes - GIB

    assert breakdown.bytes_per_gpu(1) == breakdown.total_bytes
    # every GPU of a split keeps its 1 GiB runtime and 2 GiB of communication buffers
    assert breakdown.bytes_per_gpu(2) == -(-shared // 2) + GIB + 2 * GIB
    assert breakdown.bytes_per_gpu(4) == -(-shared // 4) + GIB + 2 * GIB
    assert [item.name for item in breakdown.split_items] == ["Tensor-parallel buffers"]
    assert "3.58 GiB" in breakdown.split_items[0].formula
    assert any("2.00 GiB of communication buffers" in line for line in breakdown.assumptions)
    assert breakdown.can_split_over(4) and not breakdown.can_split_over(3)
