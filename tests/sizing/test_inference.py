"""Language-model inference: the spec's worked examples, to the displayed digit."""
from decimal import ROUND_HALF_UP, Decimal

from sizing.calculators import estimate_inference
from sizing.units import GIB

from .models import LLAMA_3_1_8B


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


def test_same_model_in_4_bit_needs_about_6_1_gib():
    breakdown = estimate_inference(LLAMA_3_1_8B, 4, 4096, 1)

    assert items_by_name(breakdown)["Model weights"].bytes == 4_015_130_624
    assert items_by_name(breakdown)["Model weights"].formula.endswith("× 0.5 bytes (4-bit)")
    assert f"{breakdown.total_gib:.2f}" == "6.09"


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


def test_split_over_two_gpus_halves_shared_items_and_keeps_a_runtime_on_each():
    breakdown = estimate_inference(LLAMA_3_1_8B, 16, 4096, 1)
    shared = breakdown.total_bytes - GIB

    assert breakdown.bytes_per_gpu(2) == -(-shared // 2) + GIB
    assert breakdown.can_split_over(4) and not breakdown.can_split_over(3)
