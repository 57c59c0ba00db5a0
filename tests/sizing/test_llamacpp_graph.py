"""llama.cpp's compute buffer as ggml's graph allocator places one micro-batch's tensors: the peak of what is
alive at once, freed memory reused, never the sum of the graph's stages."""
import random
from dataclasses import replace

import pytest

from sizing.calculators import llamacpp_graph
from sizing.calculators.llamacpp import LlamaCppSettings, llamacpp_need
from sizing.calculators.llamacpp_graph import (
    ALIGNMENT,
    Allocator,
    Conditions,
    GraphShape,
    build_graph,
    compute_buffer_bytes,
    shortened,
)
from sizing.units import MIB
from tests.sizing.models import LLAMA_3_1_8B

LLAMA = GraphShape(hidden=4096, heads=32, kv_heads=8, head_dim=128, vocab=128256, layers=(8192,) * 32,
                   intermediate=14336)


def test_the_allocator_reuses_a_freed_block_and_fits_the_smallest_hole_first():
    sizes = Conditions(())  # plain bytes: no cache length in them
    allocator = Allocator(sizes)

    def alloc(blocks):
        return allocator.alloc(sizes.form(blocks * ALIGNMENT)).value

    a, b, c = alloc(10), alloc(4), alloc(3)
    allocator.free(sizes.form(a), sizes.form(10 * ALIGNMENT))
    allocator.free(sizes.form(c), sizes.form(3 * ALIGNMENT))  # merges with the open end
    assert alloc(2) == a  # the hole before b, not the end
    assert allocator.peak.value == 17 * ALIGNMENT and b == 10 * ALIGNMENT
    assert alloc(20) == 14 * ALIGNMENT  # too large for the hole: at the end


def test_the_buffer_is_the_peak_of_the_graph_not_the_sum_of_its_stages():
    tokens, vocab = 512, LLAMA.vocab
    logits = vocab * tokens * 4
    scores = LLAMA.heads * 8192 * tokens * 4
    mlp = 3 * LLAMA.intermediate * tokens * 4
    off = compute_buffer_bytes(replace(LLAMA, flash_attention=False))
    # without flash attention one layer's scores (512 MiB) and the f32 mask (16 MiB) are the peak, with Q, the
    # residual and the attention's output beside them; the logits come later, in memory the scores left
    assert scores < off < scores + 64 * MIB
    assert off < logits + scores + mlp
    on = compute_buffer_bytes(LLAMA)
    assert logits < on < logits + 64 * MIB  # flash attention: the logits and what stays below them


def test_flash_attention_keeps_the_buffer_near_the_logits_as_the_context_grows():
    short = compute_buffer_bytes(replace(LLAMA, layers=(4096,) * 32))
    long = compute_buffer_bytes(replace(LLAMA, layers=(131072,) * 32))
    scores_of_one_layer = LLAMA.heads * 131072 * 512 * 4
    assert short < long < short + scores_of_one_layer // 16  # the mask grows, not the scores


def test_a_gpu_without_the_output_head_holds_no_logits():
    with_head = compute_buffer_bytes(LLAMA)
    without = compute_buffer_bytes(replace(LLAMA, output_layer=False))
    assert without < with_head - LLAMA.vocab * 512 * 4 // 2  # the MLP step is the peak without them
    assert not any(node.output for node in build_graph(replace(LLAMA, output_layer=False)).nodes)


def test_the_experts_of_a_mixture_are_the_chosen_ones_not_all():
    moe = replace(LLAMA, intermediate=0, experts=128, experts_per_token=8, expert_intermediate=768, vocab=1024)
    # the chosen experts' down projections, hidden × 8 × tokens, are the largest of the step
    assert compute_buffer_bytes(moe) > LLAMA.hidden * 8 * 512 * 4
    every_expert = replace(moe, experts_per_token=128)
    assert compute_buffer_bytes(every_expert) > 8 * compute_buffer_bytes(moe)


def test_the_need_counts_the_peak_once_per_gpu_and_fewer_tokens_when_the_cache_is_short():
    need = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192))
    compute = need.gpu_items[2]
    assert compute.bytes < 400 * MIB  # the sum of the stages was 1.3 GiB with the logits counted beside them
    assert "allocator" in compute.formula and "logits" in compute.formula
    short = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 256))
    assert short.gpu_items[2].formula.startswith("256 tokens") and short.gpu_items[2].bytes < compute.bytes // 2
    host_only = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192, gpu_layers=0))
    assert host_only.gpu_items[2].bytes == 0


def test_leaving_out_whole_periods_of_middle_layers_keeps_the_peak_of_the_whole_stack():
    gemma_like = replace(LLAMA, layers=((1536,) * 5 + (32768,)) * 10 + (1536,) * 2, vocab=262208)
    for shape in (LLAMA, replace(LLAMA, flash_attention=False), gemma_like, replace(gemma_like, outputs=4)):
        short = shortened(shape)
        assert len(short.layers) < len(shape.layers)
        assert short.layers[-1] == shape.layers[-1]
        for variant in (shape, replace(shape, mask_cast=True)):
            assert build_graph(variant).peak() == build_graph(shortened(variant)).peak()


def test_a_pipeline_keeps_four_copies_of_each_input_and_only_several_gpus_holding_every_layer_pay_them():
    one, four = compute_buffer_bytes(replace(LLAMA, copies=1)), compute_buffer_bytes(replace(LLAMA, copies=4))
    inputs = (LLAMA.hidden + 8192) * 512 * 4  # the hidden states and the f32 mask of the earlier graph
    assert four - one >= 3 * inputs
    need = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192))
    item = need.pipeline_item
    assert item is not None and item.per_gpu and item.bytes == need.pipeline_bytes > 0 and "4 copies" in item.formula
    # On two GPUs the second, with the head, needs the most: all but what the first holds (layers 0–16, their
    # weights and cache; not half of them, as the split was once counted), the pipeline's copies added.
    first = need.gpu_needs(2)[0].share
    assert first.layers == range(17)
    assert need.per_gpu_bytes(2) - need.per_gpu_bytes(1) == (
        need.pipeline_bytes - first.weights_bytes - first.kv_cache_bytes)
    partial = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192, gpu_layers=32))  # the head on the host
    assert partial.pipeline_bytes == 0 and partial.pipeline_item is None


GEMMA_LIKE = replace(LLAMA, layers=((1536,) * 5 + (32768,)) * 10 + (1536,) * 2, vocab=262208, post_norms=True,
                     qk_norm=True)
MOE = replace(LLAMA, intermediate=0, experts=128, experts_per_token=8, expert_intermediate=768, vocab=151936)


@pytest.mark.parametrize(("shape", "expected"), [
    # the bytes of the allocator's walk as first written, one run per graph (before regions were kept)
    (LLAMA, 296235008),
    (replace(LLAMA, layers=(131072,) * 32), 547893248),
    (replace(LLAMA, flash_attention=False, copies=4), 679510016),
    (replace(LLAMA, layers=(256,) * 32, tokens=256, outputs=256), 139991040),
    (replace(LLAMA, tokens=100, outputs=1), 23759232),
    (GEMMA_LIKE, 624046080),
    (MOE, 344731648),
    (replace(MOE, layers=(1024,) * 32, output_layer=False), 133179392),
])
def test_the_buffer_is_the_bytes_the_allocators_own_walk_gives(shape, expected):
    llamacpp_graph._regions.cache_clear()
    compute_buffer_bytes.cache_clear()
    assert compute_buffer_bytes(shape) == expected


def _walked(shape):
    """The buffer from runs of the allocator at these very cells, no region read: the rule as written."""
    short = shortened(shape)
    earlier = replace(short, mask_cast=True)
    return max(build_graph(short).peak(), build_graph(earlier).peak(), llamacpp_graph._stranded_logits(earlier))


def _at_cells(shape, full, sliding):
    return replace(shape, layers=tuple(full if cells == max(shape.layers) else min(sliding, full)
                                       for cells in shape.layers))


@pytest.mark.parametrize("shape", [
    LLAMA, replace(LLAMA, flash_attention=False), replace(LLAMA, copies=4), replace(LLAMA, tokens=100, outputs=4),
    GEMMA_LIKE, replace(GEMMA_LIKE, flash_attention=False, copies=4), MOE,
], ids=["llama", "no-flash", "pipeline", "ubatch-100", "sliding", "sliding-no-flash", "experts"])
def test_a_region_read_at_other_cells_gives_the_bytes_of_a_walk_at_those_cells(shape):
    """Regions are found at some cache lengths and read at others: every length asked (from one micro-batch
    to two million cells, sliding windows shorter or as long) gets the bytes the allocator's walk gives."""
    rng = random.Random(7)
    llamacpp_graph._regions.cache_clear()
    compute_buffer_bytes.cache_clear()
    asked = [256 * n for n in (2, 3, 4, 6, 8, 16, 32, 64, 112, 128, 129, 4096, 8192)]
    asked += [256 * rng.randint(2, 8192) for _ in range(40)]
    for full in asked:
        sliding = rng.choice((full, 256 * rng.randint(1, 64)))
        variant = _at_cells(shape, full, sliding)
        assert compute_buffer_bytes(variant) == _walked(variant), (full, sliding)


def test_every_cache_length_of_a_model_takes_a_bounded_number_of_allocator_runs(monkeypatch):
    """Between two changes of the allocator's path the peak is one form of the cells: a whole range of cache
    lengths, each the size of a capacity search's probe, costs a few dozen runs, not one run each."""
    runs = []
    real = llamacpp_graph._simulate
    monkeypatch.setattr(llamacpp_graph, "_simulate", lambda *args: runs.append(args[1]) or real(*args))
    llamacpp_graph._regions.cache_clear()
    compute_buffer_bytes.cache_clear()
    seventy_b = replace(LLAMA, hidden=8192, heads=64, intermediate=28672, layers=(8192,) * 80)
    lengths = range(256, 256 * 8192 + 1, 256)  # one micro-batch to 2,097,152 cells
    for copies in (1, 4):
        for cells in lengths:
            compute_buffer_bytes(replace(seventy_b, layers=(cells,) * 80, tokens=min(512, cells),
                                         outputs=min(512, cells), copies=copies))
    assert len(runs) <= 48, len(runs)  # 2 × 8,192 lengths, two graphs each


def _rounded(parallel, ubatch=512):
    """The micro-batch a stream per slot reserves at -np `parallel`: rounded up to a multiple of it."""
    return -(-ubatch // parallel) * parallel


def _clear_regions():
    llamacpp_graph._regions.cache_clear()
    llamacpp_graph._aligned_variables.cache_clear()
    compute_buffer_bytes.cache_clear()


@pytest.mark.parametrize("shape", [
    LLAMA, replace(LLAMA, flash_attention=False), replace(LLAMA, copies=4), replace(LLAMA, output_layer=False),
    GEMMA_LIKE, replace(GEMMA_LIKE, flash_attention=False, copies=4), MOE,
    replace(MOE, experts=60, experts_per_token=4, vocab=151646),
], ids=["llama", "no-flash", "pipeline", "no-head", "sliding", "sliding-no-flash", "experts", "odd-widths"])
def test_a_region_read_at_other_micro_batches_and_rows_gives_the_bytes_of_a_walk_at_them(shape):
    """A stream per slot reserves the micro-batch rounded up to a multiple of -np (513 tokens at -np 3, 765 at
    -np 255) and, from b9460, a row of logits per slot: the tokens and the rows are variables of the graph as
    the cells are, the tensors too small to keep whole multiples of the alignment (the positions, 4 bytes a
    token; 60 experts' router scores, 240) counted by a variable each. Every -np, at any cells, gets the bytes
    the allocator's walk gives."""
    rng = random.Random(11)
    _clear_regions()
    for parallel in sorted({1, 2, 3, 7, 100, 171, 255, 256, *rng.sample(range(1, 257), 24)}):
        tokens = _rounded(parallel)
        full = 256 * rng.randint(2, 256)
        for outputs in (tokens, min(512, parallel)):
            variant = replace(_at_cells(shape, full, 256 * rng.randint(1, 64)), tokens=tokens, outputs=outputs)
            assert compute_buffer_bytes(variant) == _walked(variant), (parallel, outputs, full)
    odd = replace(shape, tokens=100, outputs=7, layers=tuple(cells // 256 * 300 for cells in shape.layers))
    assert compute_buffer_bytes(odd) == _walked(odd)  # cells that are no multiple of the alignment's


def test_every_micro_batch_a_stream_per_slot_reserves_takes_a_bounded_number_of_allocator_runs(monkeypatch):
    """A capacity search at one context asks each -np it probes its own micro-batch, rounded up to a multiple
    of it: every -np from 1 to 256 (llama-server's most slots), at three cache lengths, as the pipeline's
    copies and with one row of logits per slot or the whole micro-batch, costs a few runs of the allocator,
    not one (or two) per -np."""
    runs = []
    real = llamacpp_graph._simulate
    monkeypatch.setattr(llamacpp_graph, "_simulate", lambda *args: runs.append(args[1]) or real(*args))
    seventy_b = replace(LLAMA, hidden=8192, heads=64, intermediate=28672, layers=(8192,) * 80)
    for shape in (seventy_b, GEMMA_LIKE, MOE, replace(LLAMA, flash_attention=False)):
        _clear_regions()
        runs.clear()
        for per_slot in (False, True):
            for copies in (1, 4):
                for parallel in range(1, 257):
                    tokens = _rounded(parallel)
                    for full in (4096, 8192, 32768):
                        compute_buffer_bytes(replace(
                            _at_cells(shape, full, 1536), tokens=tokens, copies=copies, f16_mask_only=per_slot,
                            outputs=min(512, parallel) if per_slot else tokens))
        assert 0 < len(runs) <= 40, (shape.hidden, len(runs))  # of 3,072 graphs each


def test_a_tensor_whose_bytes_per_token_are_no_multiple_of_the_alignment_has_its_aligned_size_counted_apart():
    """The positions (4 bytes a token) and the cache's row indices (8) round up to 128 bytes, so no form of
    the tokens gives their size: each such tensor's aligned size is a variable of its own, set from the tokens
    (⌈4 × 513 / 128⌉ × 128 = 2,176 bytes at 513 tokens), as are the rows' indices (4 bytes a row), and 60
    experts' router scores (240 bytes a token) and a vocabulary of 151,646 (606,584 bytes a row of logits)."""
    def aligned(shape):
        template = replace(shape, layers=(0,) * len(shape.layers), tokens=0, outputs=0)
        return llamacpp_graph._aligned_variables(template, 128)

    tokens, rows = 0, 1  # the variables: the tokens, the rows of logits, then the cells × tokens
    assert aligned(LLAMA) == ((tokens, 4), (tokens, 8), (rows, 4))
    odd = replace(MOE, experts=60, experts_per_token=4, vocab=151646)
    assert {(tokens, 240), (rows, 606584)} <= set(aligned(odd))
    assert llamacpp_graph._variables((513, 3, 64 * 513), aligned(LLAMA)) == (513, 3, 64 * 513, 17, 33, 1)


@pytest.mark.parametrize("terms", [(0,), (5, -3, 0, 7), (-1, -1, -1), (1 << 40, -(1 << 40), 128, -129, 0, 0, 3),
                                   (0, 0, 0, 0, 0, 0, -2)])
def test_a_forms_terms_packed_into_one_integer_read_back_as_they_were(terms):
    """The walk adds and compares forms as single integers (`_packed`): their sums and differences are the
    terms' sums and differences, each read back with its sign, and a form's signs as its terms' are."""
    packed = llamacpp_graph._packed(terms)
    assert llamacpp_graph._unpacked(packed, len(terms)) == terms
    other = tuple(reversed(terms))
    assert llamacpp_graph._unpacked(packed - llamacpp_graph._packed(other), len(terms)) == tuple(
        a - b for a, b in zip(terms, other, strict=True))
    assert llamacpp_graph._signs(packed) == (min(terms) >= 0, max(terms) <= 0)


def test_a_capacity_search_builds_each_graph_once_and_walks_it_again_at_each_run(monkeypatch):
    """Each allocator run is a walk of a graph built once per shape (its layers' kinds, the head, the copies,
    the mask's generation), its sizes set from the run's values, never a graph built again."""
    builds, runs = [], []
    real_build, real_simulate = llamacpp_graph._build, llamacpp_graph._simulate

    def build(*args):
        builds.append(args[0])
        return real_build(*args)

    def simulate(*args):
        runs.append(args[0])
        return real_simulate(*args)

    monkeypatch.setattr(llamacpp_graph, "_build", build)
    monkeypatch.setattr(llamacpp_graph, "_simulate", simulate)
    _clear_regions()
    llamacpp_graph._compiled.cache_clear()
    for shape in (GEMMA_LIKE, MOE):
        for cells in range(512, 65537, 1536):
            for tokens in (512, 513):
                compute_buffer_bytes(replace(_at_cells(shape, cells, 1536), tokens=tokens, outputs=tokens))
    assert len(runs) > len(builds) > 0
    assert len(builds) == len(set(builds)) == len(set(runs))  # one build a graph, whatever its runs
