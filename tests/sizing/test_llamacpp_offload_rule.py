"""Which layers -ngl N puts on the GPUs, by build (`sizing.calculators.llamacpp.offload_placement`): the last N
decoder layers and the output head only past them up to b7108 (and in Ollama's own runners), the output head
and the last N − 1 layers from b7847 (ggml-org/llama.cpp#18148), the placement needing more where the build
is not known. Figures worked out again from the file's layers and roles (`layer_bytes`, `role_bytes`). No
database."""
import pytest

from sizing.calculators.llamacpp import (
    CUDA_CONTEXT_BYTES,
    LlamaCppSettings,
    cache_cells,
    kv_cache_bytes,
    llamacpp_need,
    offload_placement,
    split_layers,
)
from sizing.calculators.llamacpp_builds import (
    HEAD_FIRST,
    HEAD_FIRST_FROM,
    LAYERS_FIRST,
    LAYERS_FIRST_UNTIL,
    NOT_GIVEN,
    OFFLOAD_LARGER,
    parse_build,
    parse_engine_build,
    parse_ollama_version,
)
from sizing.gguf import gguf_weights
from sizing.units import GIB, MIB
from tests.sizing.models import LLAMA_3_1_8B
from tests.sizing.test_llamacpp import spec

# Llama 3.1 8B: 32 decoder layers, an output head of its own (not tied).
WEIGHTS = gguf_weights(LLAMA_3_1_8B, "Q4_K_M")
HEAD = WEIGHTS.role_bytes("output") + WEIGHTS.role_bytes("output_norm")


def _layers(layers):
    return sum(WEIGHTS.layer_bytes(layer) for layer in layers)


def _ngl(n, offload, context=8192):
    return LlamaCppSettings("Q4_K_M", context, gpu_layers=n, offload=offload)


@pytest.mark.parametrize(("build", "offload"), [
    ("b5000", LAYERS_FIRST), (f"b{LAYERS_FIRST_UNTIL}", LAYERS_FIRST), (f"b{LAYERS_FIRST_UNTIL + 1}", OFFLOAD_LARGER),
    ("b7500", OFFLOAD_LARGER), (f"b{HEAD_FIRST_FROM - 1}", OFFLOAD_LARGER), (f"b{HEAD_FIRST_FROM}", HEAD_FIRST),
    ("b9500", HEAD_FIRST), ("", OFFLOAD_LARGER),
])
def test_a_llama_cpp_build_places_the_layers_or_the_head_first(build, offload):
    assert parse_build(build).offload == offload


@pytest.mark.parametrize(("release", "offload"), [
    ("0.29.3", LAYERS_FIRST),  # Ollama's own runners: the head once every layer is offloaded
    ("0.30.0", HEAD_FIRST),  # llama-server b9452, long after #18148
    ("0.32.15", HEAD_FIRST),
    ("0.33.0", OFFLOAD_LARGER),  # a release not read here: sized as not given
    ("", OFFLOAD_LARGER),
])
def test_an_ollama_release_places_them_as_the_runner_it_starts(release, offload):
    assert parse_ollama_version(release).offload == offload
    assert parse_engine_build("ollama", release).offload == offload
    assert NOT_GIVEN.offload == OFFLOAD_LARGER


def test_ngl_16_of_32_layers_before_the_boundary_is_the_last_16_layers_and_the_head_on_the_host():
    need = llamacpp_need(LLAMA_3_1_8B, _ngl(16, LAYERS_FIRST))
    assert offload_placement(LLAMA_3_1_8B, need.settings) == (16, False)
    assert (need.gpu_layers, need.output_on_gpu) == (16, False)
    assert need.gpu_items[0].bytes == _layers(range(16, 32))
    assert need.host_items[0].bytes == WEIGHTS.bytes - _layers(range(16, 32))  # embeddings, layers 0–15, head
    assert need.gpu_items[1].bytes == kv_cache_bytes(LLAMA_3_1_8B, need.settings, 8192, range(16, 32))
    assert need.gpu_items[1].bytes == 16 * 32 * MIB  # 16 layers × 8,192 cells × 2 × 1,024 × 2 bytes
    assert "16 of 32 layers:" in need.gpu_items[0].formula
    assert f"as llama.cpp places them up to b{LAYERS_FIRST_UNTIL}" in need.gpu_items[0].formula
    assert need.host_items[0].formula.endswith("16 layers not offloaded and the output head")
    assert need.server_command("m.gguf").startswith("llama-server -m m.gguf -c 8192 -np 1 -ngl 16 ")
    assert need.ollama_settings()["num_gpu"] == "16"


def test_ngl_16_of_32_layers_from_the_boundary_is_the_head_and_the_last_15_layers():
    need = llamacpp_need(LLAMA_3_1_8B, _ngl(16, HEAD_FIRST))
    # i_gpu_start = 32 + 1 − min(16, 33) = 17: layers 17–31 and the head (slot 32)
    assert offload_placement(LLAMA_3_1_8B, need.settings) == (17, True)
    assert (need.gpu_layers, need.output_on_gpu) == (15, True)
    assert need.gpu_items[0].bytes == _layers(range(17, 32)) + HEAD
    assert need.host_items[0].bytes == WEIGHTS.bytes - _layers(range(17, 32)) - HEAD
    assert need.gpu_items[1].bytes == 15 * 32 * MIB
    assert need.host_items[1].bytes == 17 * 32 * MIB
    assert "15 of 32 layers and the output head:" in need.gpu_items[0].formula
    assert f"the output head first, then the last layers, as llama.cpp places them from b{HEAD_FIRST_FROM}" \
        in need.gpu_items[0].formula
    assert need.host_items[0].formula.endswith("17 layers not offloaded")
    # the GPU holding the head reserves the logits: more than the same layers' graph without them
    without_head = llamacpp_need(LLAMA_3_1_8B, _ngl(15, LAYERS_FIRST))
    assert need.gpu_items[2].bytes > without_head.gpu_items[2].bytes
    # the same -ngl in the command and Ollama's num_gpu: the build places them
    assert " -ngl 16 " in need.server_command("m.gguf") and need.ollama_settings()["num_gpu"] == "16"


def test_the_two_rules_agree_at_no_layer_and_at_every_layer_and_the_head():
    for n, placed in ((0, (32, False)), (33, (0, True)), (None, (0, True)), (999, (0, True))):
        for offload in (LAYERS_FIRST, HEAD_FIRST, OFFLOAD_LARGER):
            assert offload_placement(LLAMA_3_1_8B, _ngl(n, offload)) == placed, (n, offload)
    # -ngl 1: one layer, or the head alone; -ngl 32: every layer, or the head and layers 1–31
    assert offload_placement(LLAMA_3_1_8B, _ngl(1, LAYERS_FIRST)) == (31, False)
    assert offload_placement(LLAMA_3_1_8B, _ngl(1, HEAD_FIRST)) == (32, True)
    assert offload_placement(LLAMA_3_1_8B, _ngl(32, LAYERS_FIRST)) == (0, False)
    assert offload_placement(LLAMA_3_1_8B, _ngl(32, HEAD_FIRST)) == (1, True)
    head_alone = llamacpp_need(LLAMA_3_1_8B, _ngl(1, HEAD_FIRST))
    assert head_alone.gpu_items[0].bytes == HEAD and head_alone.gpu_items[1].bytes == 0
    assert head_alone.gpu_items[2].bytes > 0  # the output rows are computed on the GPU


def test_a_build_not_known_sizes_the_placement_whose_gpus_need_more():
    """Llama 3.1 8B's head (128,256 × 4,096 in Q6_K) outweighs one layer and its cache: the head first. Mixtral's
    head (32,000 wide) is smaller than one layer of eight experts: the layers first."""
    llama = llamacpp_need(LLAMA_3_1_8B, _ngl(16, OFFLOAD_LARGER))
    assert (llama.gpu_layers, llama.output_on_gpu) == (15, True)
    assert llama.gpu_bytes == llamacpp_need(LLAMA_3_1_8B, _ngl(16, HEAD_FIRST)).gpu_bytes
    assert llama.gpu_bytes > llamacpp_need(LLAMA_3_1_8B, _ngl(16, LAYERS_FIRST)).gpu_bytes
    assert "the build not known: placed as from b7847, the output head first" in llama.gpu_items[0].formula
    mixtral = spec("mixtral-8x7b")
    larger = llamacpp_need(mixtral, LlamaCppSettings("Q4_K_M", 8192, gpu_layers=16, offload=OFFLOAD_LARGER))
    layers_first = llamacpp_need(mixtral, LlamaCppSettings("Q4_K_M", 8192, gpu_layers=16, offload=LAYERS_FIRST))
    assert (larger.gpu_layers, larger.output_on_gpu) == (16, False)
    assert larger.gpu_bytes == layers_first.gpu_bytes
    assert "the build not known: placed as up to b7108, the layers first" in larger.gpu_items[0].formula


@pytest.mark.parametrize("offload", [LAYERS_FIRST, HEAD_FIRST, OFFLOAD_LARGER])
def test_layers_that_fit_search_with_the_builds_placement(offload):
    memory = 4 * GIB
    need = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192, offload=offload))
    most = need.layers_that_fit(1, memory)
    assert llamacpp_need(LLAMA_3_1_8B, _ngl(most, offload)).fits(1, memory)[0]
    assert not llamacpp_need(LLAMA_3_1_8B, _ngl(most + 1, offload)).fits(1, memory)[0]
    # the head first costs more than the layer it displaces: fewer -ngl fit (23 and 20 here)
    assert most == {LAYERS_FIRST: 23, HEAD_FIRST: 20, OFFLOAD_LARGER: 20}[offload]


def test_a_split_from_the_boundary_puts_the_head_on_the_last_gpu_with_the_last_layers():
    """-ngl 16 on two GPUs from b7847: 16 slots, layers 17–31 and the head (slot 15), slot i on GPU ⌊2i / 16⌋:
    layers 17–24 on the first, 25–31 and the head on the second; before: layers 16–23 and 24–31, no head."""
    settings = _ngl(16, HEAD_FIRST)
    need = llamacpp_need(LLAMA_3_1_8B, settings)
    assert split_layers(17, 32, True, 2) == (range(17, 25), range(25, 32))
    first, second = need.gpu_needs(2)
    assert (first.share.layers, first.share.output_head) == (range(17, 25), False)
    assert (second.share.layers, second.share.output_head) == (range(25, 32), True)
    assert first.share.weights_bytes == _layers(range(17, 25))
    assert second.share.weights_bytes == _layers(range(25, 32)) + HEAD
    cells = cache_cells(settings)
    assert second.share.kv_cache_bytes == kv_cache_bytes(LLAMA_3_1_8B, settings, cells, range(25, 32))
    assert second.bytes == (second.share.weights_bytes + second.share.kv_cache_bytes + second.compute_bytes
                            + second.pipeline_bytes + CUDA_CONTEXT_BYTES)
    old = llamacpp_need(LLAMA_3_1_8B, _ngl(16, LAYERS_FIRST))
    assert [(gpu.share.layers, gpu.share.output_head) for gpu in old.gpu_needs(2)] == [
        (range(16, 24), False), (range(24, 32), False)]


def test_a_partial_offload_holding_the_head_is_no_pipeline():
    """llama.cpp runs several GPUs as a pipeline only with every layer and the head on them (n_gpu_layers >
    n_layer): -ngl 32 from b7847 holds the head and layers 1–31, each GPU sized for the offloaded layers' buffer
    with the logits, no copies of the inputs."""
    need = llamacpp_need(LLAMA_3_1_8B, _ngl(32, HEAD_FIRST))
    assert (need.gpu_layers, need.output_on_gpu, need.pipelined) == (31, True, False)
    assert need.pipeline_bytes == 0 and need.other_gpus_compute_bytes(2) == 0
    assert [gpu.compute_bytes for gpu in need.gpu_needs(2)] == [need.gpu_items[2].bytes] * 2
    assert "Split by layers" not in need.gpu_items[2].formula
    every = llamacpp_need(LLAMA_3_1_8B, _ngl(33, HEAD_FIRST))
    assert every.pipelined and every.pipeline_bytes > 0 and every.other_gpus_compute_bytes(2) > 0
