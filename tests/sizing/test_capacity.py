"""What a machine holds (sizing.capacity): the same need that decided its fit, asked the other way round."""
import pytest

from catalog.data.language_models import LANGUAGE_MODELS
from sizing.architectures import architecture_from_dict
from sizing.calculators import estimate_inference
from sizing.calculators.vllm_inference import estimate_vllm
from sizing.capacity import _TransformersNeed
from sizing.engine_support import gpu_architecture
from sizing.units import GIB
from tests.sizing import models


def shipped(slug):
    """A shipped model with its architecture (latent attention, sliding windows, experts)."""
    row = next(row for row in LANGUAGE_MODELS if row["slug"] == slug)
    figures = ("parameters", "layers", "attention_heads", "kv_heads", "head_dim", "hidden_size",
               "intermediate_size", "vocab_size", "max_context")
    return models.LLAMA_3_1_8B.__class__(
        slug=slug, name=row["name"], tied_embeddings=row.get("tied_embeddings", False),
        architecture=architecture_from_dict(row.get("architecture")), **{name: row[name] for name in figures},
    )


HOPPER = gpu_architecture("hopper", "9.0")
SPECS = [models.LLAMA_3_1_8B, models.LLAMA_3_2_1B, shipped("deepseek-v3"), shipped("gpt-oss-20b")]


@pytest.mark.parametrize("spec", SPECS, ids=[spec.slug for spec in SPECS])
@pytest.mark.parametrize("gpus", [1, 2, 8])
@pytest.mark.parametrize(("context", "requests"), [(4096, 1), (32_768, 8), (100, 500)])
def test_the_need_asked_the_other_way_is_the_estimate_itself(spec, gpus, context, requests):
    breakdown = estimate_inference(spec, 16, context, requests, 16)
    assert breakdown.can_split_over(gpus)
    need = _TransformersNeed(spec, breakdown.capacity.weights_bytes, 16, gpus)
    assert need(context, requests) == breakdown.bytes_per_gpu(gpus)


def test_a_machine_holds_the_most_requests_whose_estimate_still_fits():
    breakdown = estimate_inference(models.LLAMA_3_1_8B, 16, 8192, 2, 16)
    memory = 80 * GIB
    held = breakdown.capacity.on_machine(1, memory)
    assert estimate_inference(models.LLAMA_3_1_8B, 16, 8192, held.max_requests_at_context, 16).bytes_per_gpu(1) <= memory
    assert estimate_inference(models.LLAMA_3_1_8B, 16, 8192, held.max_requests_at_context + 1, 16) \
        .bytes_per_gpu(1) > memory
    longest = held.max_context_at_requests
    assert estimate_inference(models.LLAMA_3_1_8B, 16, longest, 2, 16).bytes_per_gpu(1) <= memory
    assert longest == models.LLAMA_3_1_8B.max_context or \
        estimate_inference(models.LLAMA_3_1_8B, 16, longest + 1, 2, 16).bytes_per_gpu(1) > memory
    assert held.command is None  # transformers has no start command


def test_a_small_gpu_holds_nothing_more_and_the_context_is_capped_by_the_model():
    breakdown = estimate_inference(models.LLAMA_3_2_1B, 16, 4096, 1, 16)
    assert breakdown.capacity.on_machine(1, 2 * GIB).max_requests_at_context == 0
    assert breakdown.capacity.on_machine(8, 1000 * GIB).max_context_at_requests == models.LLAMA_3_2_1B.max_context


def test_under_vllm_the_machine_holds_what_its_budget_leaves_and_names_the_command():
    spec = models.LLAMA_3_1_8B.__class__(**{**models.LLAMA_3_1_8B.__dict__, "hf_id": "meta-llama/Llama-3.1-8B"})
    breakdown = estimate_vllm(spec, 16, 8192, 4, 16)
    memory = breakdown.bytes_per_gpu(1) + 10 * GIB
    held = breakdown.capacity.on_machine(1, memory, HOPPER)
    assert held.max_requests_at_context >= 4
    assert held.max_context_at_requests >= 8192
    assert held.command == ("vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 1 --max-model-len 8192 "
                            "--max-num-seqs 4 --gpu-memory-utilization 0.92")
    over = estimate_vllm(spec, 16, 8192, held.max_requests_at_context + 1, 16)
    assert over.bytes_per_gpu(1) > memory


def test_the_vllm_need_divides_over_tensor_parallel_gpus_and_is_the_budget_over_utilization():
    breakdown = estimate_vllm(models.LLAMA_3_1_8B, 16, 8192, 4, 16)
    assert breakdown.bytes_per_gpu(2) < breakdown.bytes_per_gpu(1)
    assert breakdown.total_bytes == breakdown.bytes_per_gpu(1)
    # The current stable release (0.21 on) pays its CUDA graphs' estimate inside the budget.
    assert [item.name for item in breakdown.items] == [
        "Model weights as loaded", "Activation peak (profiling step)", "Memory outside PyTorch",
        "CUDA graphs (estimated inside the budget)", "KV cache (vLLM blocks)", "Outside gpu_memory_utilization",
        "Kept by the driver from CUDA"]


@pytest.mark.parametrize("row", LANGUAGE_MODELS, ids=[row["slug"] for row in LANGUAGE_MODELS])
def test_every_shipped_model_is_sized_under_vllm_or_refused_in_words(row):
    from sizing.errors import SizingError

    spec = shipped(row["slug"])
    for precision in (16, 8, 4):
        try:
            breakdown = estimate_vllm(spec, precision, 4096, 2, 8)
        except SizingError as refused:
            assert refused.field in {"precision", "model"} and refused.message
            continue
        for gpus in (1, 2, 4, 8):
            if breakdown.can_split_over(gpus):
                held = breakdown.capacity.on_machine(gpus, 80 * GIB)
                if breakdown.bytes_per_gpu(gpus) <= 80 * GIB:  # a machine it fits holds the asked requests
                    assert held.max_requests_at_context >= 2 and held.max_context_at_requests >= 4096


@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_the_per_gpu_bar_adds_up_to_the_need_per_gpu_under_vllm(gpus):
    breakdown = estimate_vllm(models.LLAMA_3_1_8B, 16, 8192, 4, 16)
    shares = breakdown.per_gpu_shares(gpus)
    assert sum(share for _, share in shares) == breakdown.bytes_per_gpu(gpus)
    assert [name for name, _ in shares] == [item.name for item in breakdown.items]


def test_what_a_shape_holds_is_kept_per_query_and_model_never_across_an_edited_model():
    """The answers' rows ask the same shapes again and again: kept per process, keyed by everything
    the figure depends on, so a model whose figures staff corrected is worked out anew."""
    from dataclasses import replace

    from sizing.capacity import _held

    breakdown = estimate_inference(models.LLAMA_3_1_8B, 16, 8192, 2, 16)
    first = breakdown.capacity.on_machine(1, 80 * GIB)
    hits = _held.cache_info().hits
    assert estimate_inference(models.LLAMA_3_1_8B, 16, 8192, 2, 16).capacity.on_machine(1, 80 * GIB) == first
    assert _held.cache_info().hits == hits + 1
    deeper = replace(models.LLAMA_3_1_8B, layers=2 * models.LLAMA_3_1_8B.layers)
    edited = estimate_inference(deeper, 16, 8192, 2, 16).capacity.on_machine(1, 80 * GIB)
    assert edited.max_requests_at_context < first.max_requests_at_context
    assert _held.cache_info().maxsize == 4096  # bounded, whatever the queries
