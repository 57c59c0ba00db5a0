"""llama.cpp split by layers over several GPUs (--split-mode layer, the default): each GPU holds the layers
`llama_model::load_tensors` gives it, their weights and their KV cache, the GPU holding the output head its
weights too, and the need per GPU is the largest GPU's (`sizing.calculators.llamacpp.gpu_needs`).

Each figure here is worked out again from the file's layers (`GgufWeights.layer_bytes`) and the cache of a
range of layers (`kv_cache_bytes`), not from the split's own sums. No database."""
import pytest
from django.utils import translation

from catalog.data.language_models import LANGUAGE_MODELS
from sizing.architectures import SLIDING
from sizing.calculators.llamacpp import (
    CUDA_CONTEXT_BYTES,
    LlamaCppSettings,
    cache_cells,
    kv_cache_bytes,
    llamacpp_need,
    split_layers,
)
from sizing.errors import SizingError
from sizing.gguf import gguf_weights
from sizing.units import MIB
from tests.sizing.models import LLAMA_3_1_8B
from tests.sizing.test_llamacpp import spec


def _layers_bytes(weights, layers):
    return sum(weights.layer_bytes(layer) for layer in layers)


def _head_bytes(weights):
    return weights.role_bytes("output") + weights.role_bytes("output_norm")


def test_split_by_layers_each_gpu_holds_its_own_layers_weights_and_cache():
    """Llama 3.1 8B Q4_K_M, -c 8192, every layer and the head on two GPUs: 33 slots, slot i on GPU ⌊2i / 33⌋
    (upper_bound of i / 33 in the split points 1/2, 1), so layers 0–16 on the first, layers 17–31 and the
    output head on the second. The second needs the most: 3,591,118,848 bytes, where half the weights and
    the cache each (the split as once counted) gave 3,531,911,168."""
    settings = LlamaCppSettings("Q4_K_M", 8192)
    need = llamacpp_need(LLAMA_3_1_8B, settings)
    weights = gguf_weights(LLAMA_3_1_8B, "Q4_K_M")
    first, second = need.gpu_needs(2)
    assert (first.share.layers, second.share.layers) == (range(0, 17), range(17, 32))
    assert not first.share.output_head and second.share.output_head
    assert first.share.weights_bytes == _layers_bytes(weights, range(0, 17)) == 2_215_936_000
    assert second.share.weights_bytes == _layers_bytes(weights, range(17, 32)) + _head_bytes(weights) == 2_401_460_224
    # f16 K and V of 8 KV heads × 128 for 8,192 cells: 32 MiB a layer
    assert first.share.kv_cache_bytes == kv_cache_bytes(LLAMA_3_1_8B, settings, 8192, range(0, 17)) == 17 * 32 * MIB
    assert second.share.kv_cache_bytes == kv_cache_bytes(LLAMA_3_1_8B, settings, 8192, range(17, 32)) == 15 * 32 * MIB
    # the first's buffer: its own layers' graph without the logits, the pipeline's copies in it
    # (test_split_by_layers_only_the_last_gpu_holds_the_head_and_reserves_the_logits); the second's: the head's
    assert (first.compute_bytes, first.pipeline_bytes) == (222_339_072, 0)
    assert (second.compute_bytes, second.pipeline_bytes) == (need.gpu_items[2].bytes, need.pipeline_bytes)
    assert second.compute_bytes + second.pipeline_bytes == 371_769_344
    assert first.bytes == 2_215_936_000 + 17 * 32 * MIB + 222_339_072 + CUDA_CONTEXT_BYTES == 3_323_273_216
    assert second.bytes == 2_401_460_224 + 15 * 32 * MIB + 371_769_344 + CUDA_CONTEXT_BYTES == 3_591_118_848
    assert need.per_gpu_bytes(2) == 3_591_118_848
    assert need.fits(2, 3_591_118_848) == (True, None)
    fits, reason = need.fits(2, 3_591_118_847)
    assert not fits and reason.startswith("GPU 2 of 2 needs 3.34 GiB (the weights and KV cache of layers 17–31, "
                                          "with the output head's weights, its compute buffer and CUDA context)")
    # one GPU: everything on it, as before
    assert need.per_gpu_bytes(1) == need.gpu_bytes + CUDA_CONTEXT_BYTES


def test_the_wizards_need_the_bar_and_the_what_if_read_the_same_split():
    """The wizard's breakdown sizes the same GPUs (its fit, its per-GPU bar: the largest GPU's own items)."""
    from sizing.calculators.llamacpp_inference import estimate_llamacpp

    need = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192))
    answer = estimate_llamacpp(LLAMA_3_1_8B, 4, 8192, 1, quantization="Q4_K_M")
    for gpus in range(1, 9):
        assert answer.bytes_per_gpu(gpus) == need.per_gpu_bytes(gpus), gpus
        assert sum(share for _name, share in answer.per_gpu_shares(gpus)) == answer.bytes_per_gpu(gpus), gpus
    shares = dict(answer.per_gpu_shares(2))
    assert shares[answer.items[0].name] == 2_401_460_224 and shares[answer.items[1].name] == 15 * 32 * MIB


def test_sliding_window_layers_make_the_cache_of_a_split_uneven():
    """Gemma 3 27B: five sliding-window layers (1,024 tokens) to each full one. At -c 131072 on two GPUs the
    first holds layers 0–31, the second layers 32–61 and the head: five full layers each, so their caches
    differ by two sliding layers' windows (1,536 cells: the window and one micro-batch, padded), not by the
    two layers' share of the whole cache that counting a layer as an average layer gives."""
    gemma = spec("gemma-3-27b")
    settings = LlamaCppSettings("Q4_K_M", 131072)
    need = llamacpp_need(gemma, settings)
    first, second = need.gpu_needs(2)
    assert (first.share.layers, second.share.layers) == (range(0, 32), range(32, 62))
    kinds = gemma.architecture.kind_of_layer
    per_cell = 2 * 16 * 128 * 2  # K and V of 16 KV heads × 128 in f16
    for share in (first.share, second.share):
        sliding = sum(1 for layer in share.layers if kinds(layer) == SLIDING)
        full = len(share.layers) - sliding
        assert full == 5
        assert share.kv_cache_bytes == per_cell * (full * 131072 + sliding * 1536)
        assert share.kv_cache_bytes == kv_cache_bytes(gemma, settings, cache_cells(settings), share.layers)
    assert first.share.kv_cache_bytes - second.share.kv_cache_bytes == 2 * 1536 * per_cell
    average = need.kv_cache_bytes * 2 // 62  # two layers' share, each layer an average one
    assert average > 14 * (2 * 1536 * per_cell)
    # the head's GPU, with the head (a second copy of the tied embeddings) and the logits, needs the most
    weights = gguf_weights(gemma, "Q4_K_M")
    assert second.share.weights_bytes == (_layers_bytes(weights, range(32, 62)) + _head_bytes(weights)
                                          + weights.role_bytes("token_embd"))
    assert need.per_gpu_bytes(2) == second.bytes > first.bytes
    even = -(-(need.gpu_items[0].bytes + need.gpu_items[1].bytes) // 2) + need.gpu_items[2].bytes + (
        need.pipeline_bytes + CUDA_CONTEXT_BYTES)
    assert need.per_gpu_bytes(2) - even == (second.share.weights_bytes + second.share.kv_cache_bytes) - (
        need.gpu_items[0].bytes + need.gpu_items[1].bytes + 1) // 2


def test_gemma_3_4bs_third_gpu_holds_one_full_layer_where_the_others_hold_two():
    """Gemma 3 4B (34 layers, every sixth a full one: 5, 11, 17, 23, 29) at -c 32768 on three GPUs: 35 slots,
    so layers 0–11, 12–23 and 24–33 with the head. The first two hold two full layers and ten sliding ones
    each, the third one full layer and nine sliding: 10 of the 34 layers, but 58 % of the first's cache."""
    gemma = spec("gemma-3-4b")
    settings = LlamaCppSettings("Q4_K_M", 32768)
    need = llamacpp_need(gemma, settings)
    kinds = gemma.architecture.kind_of_layer
    assert [layer for layer in range(34) if kinds(layer) != SLIDING] == [5, 11, 17, 23, 29]
    needs = need.gpu_needs(3)
    assert [gpu.share.layers for gpu in needs] == [range(0, 12), range(12, 24), range(24, 34)]
    per_cell = 2 * 4 * 256 * 2  # K and V of 4 KV heads × 256 in f16
    window = 1024 + 512  # the window plus one micro-batch, padded to 256
    for gpu, (full, sliding) in zip(needs, ((2, 10), (2, 10), (1, 9)), strict=True):
        assert gpu.share.kv_cache_bytes == per_cell * (full * 32768 + sliding * window)
    assert needs[2].share.kv_cache_bytes * 100 // needs[0].share.kv_cache_bytes == 57
    assert sum(gpu.share.kv_cache_bytes for gpu in needs) == need.gpu_items[1].bytes


def test_a_partial_offload_splits_the_last_layers_and_leaves_the_head_on_the_host():
    """-ngl 24 of Llama 3.1 8B's 32 layers on two GPUs, as `llamacpp_need` reads -ngl (llama.cpp before
    ggml-org/llama.cpp#18148): i_gpu_start = max(32 − 24, 0) = 8 and act_gpu_layers = min(24, 33) = 24
    slots, the head (slot 24) past them, on the host: layers 8–19 on the first GPU, 20–31 on the second, no
    pipeline, each GPU reserving the graph of the offloaded layers."""
    settings = LlamaCppSettings("Q4_K_M", 8192, gpu_layers=24)
    need = llamacpp_need(LLAMA_3_1_8B, settings)
    weights = gguf_weights(LLAMA_3_1_8B, "Q4_K_M")
    assert split_layers(8, 32, False, 2) == (range(8, 20), range(20, 32))
    first, second = need.gpu_needs(2)
    assert (first.share.layers, second.share.layers) == (range(8, 20), range(20, 32))
    assert not first.share.output_head and not second.share.output_head and need.pipeline_bytes == 0
    compute = need.gpu_items[2].bytes
    for gpu, layers in ((first, range(8, 20)), (second, range(20, 32))):
        assert gpu.share.weights_bytes == _layers_bytes(weights, layers)
        assert gpu.share.kv_cache_bytes == kv_cache_bytes(LLAMA_3_1_8B, settings, 8192, layers) == 12 * 32 * MIB
        assert (gpu.compute_bytes, gpu.pipeline_bytes) == (compute, 0)
        assert gpu.bytes == _layers_bytes(weights, layers) + 12 * 32 * MIB + compute + CUDA_CONTEXT_BYTES
    # the last layers take more bits in Q4_K_M (attn_v and ffn_down of layers 28–31): the second needs more
    assert need.per_gpu_bytes(2) == second.bytes > first.bytes
    assert need.fits(2, second.bytes)[0] and not need.fits(2, second.bytes - 1)[0]
    # -ngl 32: every layer, the head on the host: 32 slots, 16 layers each
    every_layer = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192, gpu_layers=32))
    assert [gpu.share.layers for gpu in every_layer.gpu_needs(2)] == [range(0, 16), range(16, 32)]
    # layers_that_fit searches with the same rule: the most -ngl whose largest GPU fits
    memory = second.bytes
    most = need.layers_that_fit(2, memory)
    assert most >= 24
    assert llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192, gpu_layers=most)).fits(2, memory)[0]
    assert not llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192, gpu_layers=most + 1)).fits(2, memory)[0]


@pytest.mark.parametrize(("language", "gpus", "words"), [
    ("en", 1, "The GPU needs 5.87 GiB (the weights and KV cache of layers 0–31, with the output head's weights, "
              "its compute buffer and CUDA context), more than its 4.00 GiB."),
    ("en", 2, "GPU 2 of 2 needs 3.34 GiB (the weights and KV cache of layers 17–31, with the output head's "
              "weights, its compute buffer and CUDA context), more than its 3.00 GiB."),
    ("de", 1, "Die GPU braucht 5,87 GiB (Gewichte und KV-Cache der Schichten 0–31, dazu die Gewichte des "
              "Ausgabekopfs, ihren Rechenpuffer und CUDA-Kontext), mehr als ihre 4,00 GiB."),
    ("de", 2, "GPU 2 von 2 braucht 3,34 GiB (Gewichte und KV-Cache der Schichten 17–31, dazu die Gewichte des "
              "Ausgabekopfs, ihren Rechenpuffer und CUDA-Kontext), mehr als ihre 3,00 GiB."),
])
def test_the_refusal_names_the_one_gpu_or_the_gpu_needing_the_most(language, gpus, words):
    with translation.override(language):
        need = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192))
        fits, reason = need.fits(gpus, (4 if gpus == 1 else 3) * 1024 * MIB)
    assert not fits and reason == words


@pytest.mark.parametrize(("language", "words"), [
    ("en", "GPU 1 of 2 needs 21.49 GiB (the weights and KV cache of layers 0–40, its compute buffer and CUDA "
           "context), more than its 21.37 GiB."),
    ("de", "GPU 1 von 2 braucht 21,49 GiB (Gewichte und KV-Cache der Schichten 0–40, ihren Rechenpuffer und "
           "CUDA-Kontext), mehr als ihre 21,37 GiB."),
])
def test_a_refusal_names_the_gpu_without_the_head_where_it_needs_the_most(language, words):
    """Llama 3.1 70B Q4_K_M, -c 8192, on two GPUs: 81 slots, layers 0–40 on the first, 41–79 and the head on
    the second. The first's two layers more outweigh the head: where the second fits, the first does not
    (its buffer, without the logits, sized only then), and the refusal names it."""
    with translation.override(language):
        need = llamacpp_need(spec("llama-3-1-70b"), LlamaCppSettings("Q4_K_M", 8192))
        first, second = need.gpu_needs(2)
        assert (first.share.layers, second.share.layers) == (range(0, 41), range(41, 80))
        assert first.bytes > second.bytes and need.per_gpu_bytes(2) == first.bytes
        fits, reason = need.fits(2, second.bytes)
    assert not fits and reason == words
    assert need.fits(2, first.bytes) == (True, None)


def _gguf_models():
    """Every catalog model llama.cpp sizes as a GGUF file at 4,096 tokens (Kimi-Linear's Kimi Delta Attention
    among them)."""
    found = []
    for row in LANGUAGE_MODELS:
        model = spec(row["slug"])
        try:
            llamacpp_need(model, LlamaCppSettings("Q4_K_M", 4096))
        except SizingError:
            continue
        found.append(model)
    return found


def test_every_catalog_models_split_holds_its_weights_and_cache_once_and_is_no_smaller_than_an_even_one():
    """Over every catalog model llama.cpp sizes, every layer and the head or half the layers offloaded, on
    two to eight GPUs (as many as its layers): the GPUs' weights add up to the GPU weights and their caches to
    the GPU cache, each layer on one GPU; and the largest GPU needs no less than the GPU with the head did
    when the weights and cache were divided evenly, less one layer's weights and cache (the split gives a
    GPU whole layers: at most a layer fewer than an even share, never a cheaper need per GPU)."""
    models = _gguf_models()
    assert len(models) >= 40
    cases = 0
    for model in models:
        layers = model.layers
        for settings in (LlamaCppSettings("Q4_K_M", 4096), LlamaCppSettings("Q4_K_M", 4096, gpu_layers=layers // 2)):
            need = llamacpp_need(model, settings)
            first = layers - need.gpu_layers
            kv_size = need.kv_size
            one_layer = max(need.weights.layer_bytes(layer) + kv_cache_bytes(model, settings, kv_size,
                                                                              range(layer, layer + 1))
                            for layer in range(first, layers))
            for gpus in range(2, min(8, layers) + 1):
                needs = need.gpu_needs(gpus)
                held = [layer for gpu in needs for layer in gpu.share.layers]
                assert held == list(range(first, layers)), (model.slug, settings, gpus)
                assert sum(gpu.share.weights_bytes for gpu in needs) == need.gpu_items[0].bytes
                assert sum(gpu.share.kv_cache_bytes for gpu in needs) == need.gpu_items[1].bytes
                assert sum(gpu.share.output_head for gpu in needs) == need.output_on_gpu
                even = (-(-(need.gpu_items[0].bytes + need.gpu_items[1].bytes) // gpus) + need.gpu_items[2].bytes
                        + need.pipeline_bytes + CUDA_CONTEXT_BYTES)
                assert need.per_gpu_bytes(gpus) >= even - one_layer, (model.slug, settings, gpus)
                cases += 1
    assert cases > 500
