"""GGUF files as llama.cpp's quantizer types them, and llama.cpp / Ollama's memory: weights on the GPUs
and in host memory, the KV cache in its types, partial offload and the commands."""
import csv
from pathlib import Path

import pytest

from catalog.data.language_models import LANGUAGE_MODELS
from catalog.models import LanguageModel
from catalog.rows import language_model_spec
from sizing.calculators.llamacpp import LlamaCppSettings, llamacpp_need
from sizing.errors import SizingError
from sizing.gguf import GGML_TYPES, QUANT_TYPES, gguf_weights
from sizing.units import GIB, MIB
from tests.sizing.models import LLAMA_3_1_8B

ROWS = {row["slug"]: row for row in LANGUAGE_MODELS}
REFERENCE = Path(__file__).resolve().parents[2] / "catalog" / "data" / "reference" / "engine_measurements.csv"


def spec(slug):
    return language_model_spec(LanguageModel(**ROWS[slug]))


def published_files():
    """llama.cpp's quantize README: Llama 3.1 8B in each quant type, tensor data in GiB (2 decimals)."""
    with REFERENCE.open() as lines:
        return [(row["quant_type"], int(row["weights_bytes"]), row["source_quote"])
                for row in csv.DictReader(lines) if row["engine"] == "gguf-file"]


@pytest.mark.parametrize(("quant_type", "logged", "quote"), published_files())
def test_llama_8b_files_weigh_what_llama_cpp_publishes(quant_type, logged, quote):
    weights = gguf_weights(LLAMA_3_1_8B, quant_type)
    # the README rounds to 0.01 GiB: within half of that, plus nothing of our own
    assert abs(weights.bytes - logged) <= 0.005 * GIB + 1
    # and the bits per weight its table prints, to the 4 decimals printed
    assert f"{float(weights.bits_per_weight):.4f}" == quote.split("|")[-3].strip()


def test_q4_k_m_gives_more_bits_to_some_attention_v_and_ffn_down_layers_and_the_head():
    typed = {(t.tensor.role, t.tensor.layer): t.ggml_type for t in gguf_weights(LLAMA_3_1_8B, "Q4_K_M").tensors}
    more = {0, 1, 2, 3, 28, 29, 30, 31} | {layer for layer in range(4, 28) if (layer - 4) % 3 == 2}
    assert {layer for layer in range(32) if typed["attn_v", layer] == "Q6_K"} == more
    assert {layer for layer in range(32) if typed["ffn_down", layer] == "Q6_K"} == more
    assert typed["output", None] == "Q6_K" and typed["token_embd", None] == "Q4_K"
    assert typed["attn_norm", 0] == typed["output_norm", None] == "F32"
    assert typed["attn_q", 5] == typed["ffn_up", 5] == "Q4_K"


def test_every_quant_type_types_every_tensor_with_a_known_block_that_divides_its_rows():
    for quant_type in QUANT_TYPES:
        if quant_type == "MXFP4_MOE":
            continue
        for typed in gguf_weights(spec("qwen2-5-7b"), quant_type).tensors:
            elements, _size = GGML_TYPES[typed.ggml_type]
            assert typed.tensor.row % elements == 0, (quant_type, typed)


def test_a_moe_file_in_mxfp4_keeps_the_experts_in_mxfp4_and_the_rest_in_q8_0():
    typed = gguf_weights(spec("qwen3-30b-a3b"), "MXFP4_MOE").tensors
    assert {t.ggml_type for t in typed if t.tensor.role.endswith("_exps")} == {"MXFP4"}
    assert {t.ggml_type for t in typed if t.tensor.role in ("attn_q", "output")} == {"Q8_0"}


def test_qwen3_moe_at_32768_tokens_caches_what_llama_cpp_logs_and_keeps_the_embeddings_on_the_host():
    """A llama.cpp log of Qwen3 30B-A3B, -c 32768, f16 cache, every layer offloaded: KV self size
    3072.00 MiB; the CPU buffer 166.92 MiB is the token embeddings (Q4_K in the file)."""
    need = llamacpp_need(spec("qwen3-30b-a3b"), LlamaCppSettings("Q4_K_M", 32768, gpu_layers=99))
    assert need.kv_cache_bytes == 3072 * MIB
    assert abs(need.host_bytes - 166.92 * MIB) < 0.01 * MIB
    q8 = llamacpp_need(spec("qwen3-30b-a3b"), LlamaCppSettings("Q4_K_M", 32768, cache_type_k="q8_0",
                                                                 cache_type_v="q8_0"))
    q4 = llamacpp_need(spec("qwen3-30b-a3b"), LlamaCppSettings("Q4_K_M", 32768, cache_type_k="q4_0",
                                                                 cache_type_v="q4_0"))
    assert q8.kv_cache_bytes == 3072 * MIB * 34 // 64 and q4.kv_cache_bytes == 3072 * MIB * 18 // 64


def test_a_quantized_v_cache_needs_flash_attention_and_slots_share_the_context():
    with pytest.raises(SizingError) as refused:
        llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192, cache_type_v="q8_0", flash_attention=False))
    assert refused.value.field == "flash_attention"
    llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192, cache_type_k="q8_0", flash_attention=False))
    four = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 32768, parallel=4))
    one = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 32768))
    assert four.kv_cache_bytes == one.kv_cache_bytes and four.context_per_slot == 8192
    with pytest.raises(SizingError):  # a slot's context past the model's
        llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 262144))
    llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 262144, parallel=2))


def test_sliding_layers_keep_their_window_per_slot():
    gemma = spec("gemma-3-27b")
    long = llamacpp_need(gemma, LlamaCppSettings("Q4_K_M", 65536))
    short = llamacpp_need(gemma, LlamaCppSettings("Q4_K_M", 8192))
    full_layers = sum(1 for layer in range(62) if gemma.architecture.kind_of_layer(layer) == "F")
    per_token = 2 * 16 * 128 * 2
    window = 1024 + 512  # the window plus one micro-batch, padded to 256
    assert long.kv_cache_bytes == per_token * (full_layers * 65536 + (62 - full_layers) * window)
    assert short.kv_cache_bytes == per_token * (full_layers * 8192 + (62 - full_layers) * window)


def test_gemma_2s_even_layers_keep_their_4096_window_and_a_micro_batch():
    """Gemma 2 9B's shipped row declares its sliding layers (every even layer of 42, 4,096 tokens): at -c
    8192 they keep 4,096 + 512 cells, not 8,192 (2.05 GiB of f16 cache, 2.63 GiB when every layer was
    sized as global); at -c 4096 the window is the whole cache and nothing changes."""
    gemma = spec("gemma-2-9b")
    assert [gemma.architecture.kind_of_layer(layer) for layer in range(4)] == ["S", "F", "S", "F"]
    per_token = 2 * 8 * 256 * 2
    assert llamacpp_need(gemma, LlamaCppSettings("Q4_K_M", 8192)).kv_cache_bytes == per_token * 21 * (8192 + 4608)
    assert llamacpp_need(gemma, LlamaCppSettings("Q4_K_M", 4096)).kv_cache_bytes == per_token * 42 * 4096


def test_partial_offload_moves_layers_and_their_cache_and_the_sum_stays_the_file():
    model = spec("qwen3-30b-a3b")
    file_bytes = gguf_weights(model, "Q4_K_M").bytes
    for layers in (0, 10, 48, 49):
        need = llamacpp_need(model, LlamaCppSettings("Q4_K_M", 16384, gpu_layers=layers))
        weights = need.gpu_items[0].bytes + need.host_items[0].bytes
        assert weights == file_bytes, layers
        assert need.gpu_items[1].bytes + need.host_items[1].bytes == need.kv_cache_bytes
    half = llamacpp_need(model, LlamaCppSettings("Q4_K_M", 16384))
    t4 = 15360 * MIB
    fits = half.layers_that_fit(1, t4)
    assert 0 < fits < 48
    assert llamacpp_need(model, LlamaCppSettings("Q4_K_M", 16384, gpu_layers=fits)).fits(1, t4)[0]
    assert not llamacpp_need(model, LlamaCppSettings("Q4_K_M", 16384, gpu_layers=fits + 1)).fits(1, t4)[0]
    assert half.layers_that_fit(2, 81559 * MIB) == 49


def test_tied_embeddings_are_loaded_again_for_the_output_head_on_the_gpu():
    gemma = spec("gemma-3-27b")
    need = llamacpp_need(gemma, LlamaCppSettings("Q4_K_M", 8192))
    embeddings = next(t.bytes for t in need.weights.tensors if t.tensor.role == "token_embd")
    assert need.host_items[0].bytes == embeddings
    assert need.gpu_items[0].bytes + need.host_items[0].bytes == need.weights.bytes + embeddings


def test_the_commands_carry_the_settings_sized():
    need = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 32768, parallel=4, cache_type_k="q8_0",
                                                          cache_type_v="q8_0", gpu_layers=20))
    assert need.server_command("Llama-3.1-8B-Q4_K_M.gguf") == (
        "llama-server -m Llama-3.1-8B-Q4_K_M.gguf -c 32768 -np 4 -ngl 20 -fa on --cache-type-k q8_0 "
        "--cache-type-v q8_0")
    assert need.ollama_settings() == {"OLLAMA_CONTEXT_LENGTH": "8192", "OLLAMA_NUM_PARALLEL": "4",
                                      "OLLAMA_FLASH_ATTENTION": "1", "OLLAMA_KV_CACHE_TYPE": "q8_0",
                                      "num_gpu": "20"}


@pytest.mark.parametrize(("settings", "field"), [
    (LlamaCppSettings("Q4_K_Q", 4096), "quantization"),
    (LlamaCppSettings("Q4_K_M", 4096, cache_type_k="q3_0"), "kv_cache"),
    (LlamaCppSettings("Q4_K_M", 4096, parallel=0), "parallel"),
    (LlamaCppSettings("Q4_K_M", 4, parallel=8), "parallel"),
    (LlamaCppSettings("Q4_K_M", 4096, gpu_layers=-1), "gpu_layers"),
])
def test_bad_settings_name_their_field(settings, field):
    with pytest.raises(SizingError) as refused:
        llamacpp_need(LLAMA_3_1_8B, settings)
    assert refused.value.field == field


def test_the_wizards_precision_is_the_gguf_file_and_the_need_splits_over_any_gpu_count_by_layers():
    from sizing.calculators import estimate
    from sizing.fit import FitPlanner

    need = estimate("inference", spec("llama-3-1-70b"), 4, 8192, 2, None, 8, engine="llamacpp")
    assert need.inputs["quantization"] == "Q4_K_M" and need.split_by_layers == 80
    assert [item.per_gpu for item in need.items] == [False, False, True, True]
    direct = llamacpp_need(spec("llama-3-1-70b"), LlamaCppSettings("Q4_K_M", 16384, parallel=2, cache_type_k="q8_0",
                                                                     cache_type_v="q8_0"))
    assert need.bytes_per_gpu(3) == direct.per_gpu_bytes(3)  # 3 GPUs: no head count to divide
    fit = FitPlanner(need).fit(24564, 4)
    assert fit is not None and "by layers" in fit.why_gpus
    assert direct.fits(fit.gpus_used, 24564 * MIB)[0] and not direct.fits(fit.gpus_used - 1, 24564 * MIB)[0]
    sixteen = estimate("inference", spec("llama-3-1-8b"), 16, 4096, 1, None, 16, engine="ollama")
    assert sixteen.inputs["quantization"] == "F16" and "Ollama" in sixteen.title


def test_a_machine_row_holds_what_llama_cpp_fits_and_starts_it_only_where_it_fits():
    from sizing.calculators import estimate

    need = estimate("inference", spec("llama-3-1-8b"), 4, 4096, 4, None, 8, engine="ollama")
    on_4090 = need.capacity.on_machine(1, 24564 * MIB)
    assert on_4090.command.startswith("OLLAMA_CONTEXT_LENGTH=4096 OLLAMA_NUM_PARALLEL=4 ")
    assert on_4090.command.endswith(" ollama serve") and "OLLAMA_KV_CACHE_TYPE=q8_0" in on_4090.command
    most = on_4090.max_requests_at_context
    settings = LlamaCppSettings("Q4_K_M", 4096 * most, parallel=most, cache_type_k="q8_0", cache_type_v="q8_0")
    assert llamacpp_need(spec("llama-3-1-8b"), settings).fits(1, 24564 * MIB)[0]
    more = LlamaCppSettings("Q4_K_M", 4096 * (most + 1), parallel=most + 1, cache_type_k="q8_0", cache_type_v="q8_0")
    assert not llamacpp_need(spec("llama-3-1-8b"), more).fits(1, 24564 * MIB)[0]
    tiny = need.capacity.on_machine(1, 2 * 1024 * MIB)
    assert tiny.command is None and tiny.max_requests_at_context == 0
    served = estimate("inference", spec("llama-3-1-8b"), 8, 8192, 1, None, 16, engine="llamacpp")
    assert served.capacity.on_machine(1, 24564 * MIB).command == (
        "llama-server -m Llama-3.1-8B-Q8_0.gguf -c 8192 -np 1 -ngl 999 -fa on")


def test_a_rows_capacity_under_llama_cpp_sizes_a_bounded_number_of_needs(monkeypatch):
    """What a machine holds is two binary searches (requests up to MAX_REQUESTS, context up to the model's
    longest) and the asked need: counted, whatever the machine and the query."""
    import math

    import sizing.capacity as capacity_module
    from sizing.calculators import estimate
    from sizing.limits import MAX_CONTEXT, MAX_REQUESTS

    calls = []
    real = capacity_module.llamacpp_need
    monkeypatch.setattr(capacity_module, "llamacpp_need", lambda *args: calls.append(1) or real(*args))
    bound = 2 * (math.ceil(math.log2(MAX_REQUESTS)) + math.ceil(math.log2(MAX_CONTEXT))) + 5
    for memory_mib, gpus in ((24564, 1), (81559, 8), (2048, 1)):
        need = estimate("inference", spec("llama-3-1-8b"), 4, 4096, 3, None, 8, engine="llamacpp")
        calls.clear()
        capacity_module._gguf_need.cache_clear()  # each shape's own count (an answer's shapes share theirs)
        need.capacity._on_machine(gpus, memory_mib * MIB, None)
        assert 0 < len(calls) <= bound, (memory_mib, gpus, len(calls))


def test_a_files_layers_add_up_to_its_tensors():
    weights = gguf_weights(spec("llama-3-1-70b"), "Q4_K_M")
    for layer in (0, 41, 79):
        assert weights.layer_bytes(layer) == sum(typed.bytes for typed in weights.tensors
                                                 if typed.tensor.layer == layer)
    assert sum(weights.layer_bytes(layer) for layer in range(80)) + weights.layer_bytes(None) == weights.bytes


def test_an_answers_machine_shapes_share_their_needs(monkeypatch):
    """The capacity searches (most requests at the context, longest context at the requests) ask each
    machine shape the same settings: each need is worked out once for all shapes, so the work of an
    answer grows with the distinct settings asked, not with shapes × probes."""
    from sizing import capacity as capacity_module
    from sizing.capacity import Capacity

    computed = []
    real = capacity_module.llamacpp_need
    monkeypatch.setattr(capacity_module, "llamacpp_need", lambda *args: computed.append(args[1]) or real(*args))
    capacity_module._gguf_need.cache_clear()
    asked = Capacity(spec("llama-3-1-70b"), 4, 16, 32_768, 4, engine="llamacpp")
    shapes = [(gpus, gib * GIB) for gpus in (1, 2, 4, 8) for gib in (24, 40, 48, 80)]
    held = [capacity_module._held.__wrapped__(asked, gpus, memory, None) for gpus, memory in shapes]
    asked_in_all = capacity_module._gguf_need.cache_info()
    assert len(computed) == len(set(computed)) == asked_in_all.misses  # never the same settings twice
    assert asked_in_all.hits + asked_in_all.misses >= 2 * len(computed)  # most probes were another shape's
    assert [h.max_requests_at_context for h in held][-1] >= [h.max_requests_at_context for h in held][0]


def _clear_kept_answers():
    from sizing import capacity as capacity_module
    from sizing.calculators import llamacpp_graph

    capacity_module._held.cache_clear()
    capacity_module._gguf_need.cache_clear()
    llamacpp_graph.compute_buffer_bytes.cache_clear()
    llamacpp_graph._regions.cache_clear()
    llamacpp_graph._aligned_variables.cache_clear()


def _walked_peak(shape):
    """The allocator's walk at these very cells, no region read: the rule as first written."""
    from sizing.calculators.llamacpp_graph import build_graph

    return build_graph(shape).peak()


FLEET = [(gpus, gib * GIB) for gpus in (1, 2, 4, 8) for gib in (12, 16, 24, 40, 48, 80, 94, 141, 192)]
DENSE_FLEET = [(gpus, mib * MIB) for gpus in range(1, 9) for mib in range(6144, 196_608, 4099)]


@pytest.mark.parametrize(("slug", "engine", "context", "requests", "version"), [
    ("llama-3-1-70b", "llamacpp", 32_768, 4, None), ("llama-3-1-8b", "ollama", 8192, 16, None),
    ("gemma-2-9b", "llamacpp", 4096, 2, None), ("llama-3-1-8b", "llamacpp", 8192, 4, None),
    ("mixtral-8x7b", "llamacpp", 8192, 5, None), ("gemma-2-9b", "llamacpp", 4096, 3, "b9500"),
    ("llama-3-1-8b", "ollama", 8192, 3, "0.31.0"), ("deepseek-v3", "llamacpp", 8192, 4, "b9500"),
])
def test_a_llama_cpp_answer_runs_the_allocator_a_bounded_number_of_times_whatever_the_fleet(
        monkeypatch, slug, engine, context, requests, version):
    """Each probe of the capacity searches sizes a new cache, so a new graph; the allocator's peak is read off
    the regions where it takes one path, so an answer runs it a few dozen times at most, on nine machine
    shapes as on three hundred (each probe a walk of two graphs: over a thousand before). A stream per slot
    reserves the micro-batch rounded up to a multiple of -np (`reserved_tokens`) and, from b9460, a row of
    logits per slot: every -np the requests search probes asks a micro-batch and rows of its own, read off
    the same regions (the tokens and rows are variables of the graph as the cells are), not a run or two
    each (201 to 917 runs an answer when each was a graph of its own)."""
    from sizing import capacity as capacity_module
    from sizing.calculators import llamacpp_graph
    from sizing.calculators.llamacpp_builds import NOT_GIVEN, parse_engine_build
    from sizing.capacity import Capacity

    runs, micro_batches = [], set()
    real, real_peak = llamacpp_graph._simulate, llamacpp_graph._peak
    monkeypatch.setattr(llamacpp_graph, "_simulate", lambda *args: runs.append(args[1]) or real(*args))
    monkeypatch.setattr(llamacpp_graph, "_peak",
                        lambda shape: micro_batches.add((shape.tokens, shape.outputs)) or real_peak(shape))
    build = parse_engine_build(engine, version) if version else NOT_GIVEN
    asked = Capacity(spec(slug), 4, 16, context, requests, engine=engine, quantization="Q4_K_M", build=build)
    for fleet in (FLEET, DENSE_FLEET):
        _clear_kept_answers()
        runs.clear()
        held = [capacity_module._held(asked, gpus, memory, None) for gpus, memory in fleet]
        assert any(row.max_requests_at_context for row in held)
        # 56: Gemma 2's sliding-window layers (declared since its catalog row carries them) stop growing at
        # the window plus a micro-batch, one more region in each of the two graphs the build not given walks:
        # 49 runs on nine shapes, 53 on three hundred (24 and 34 when every layer was sized as global).
        assert 0 < len(runs) <= 56, (len(fleet), len(runs))
    if (engine, version) != ("ollama", None):  # Ollama's own runners keep one pool: no stream to round for
        assert len(micro_batches) > 10 and max(micro_batches) > (512, 512)


@pytest.mark.parametrize("slug", ["llama-3-1-8b", "llama-3-1-70b", "gemma-2-9b", "gemma-2-27b", "mixtral-8x7b",
                                  "qwen2-5-7b", "phi-3-mini-4k", "gemma-3-4b", "qwen3-30b-a3b"])
def test_an_answers_capacity_and_buffers_are_those_of_a_walk_at_every_probe(monkeypatch, slug):
    """The most requests, the longest context, the command and every compute buffer a search sized, as the
    allocator's own walk at each probe's cells, micro-batch and rows gives them: one pool, the larger of
    pool and streams (the build not given), a stream per slot with a row of logits per slot (llama-server
    b9500, Ollama 0.31), each -np the requests search probes rounding the micro-batch up to its multiple."""
    from sizing import capacity as capacity_module
    from sizing.calculators import llamacpp_graph
    from sizing.calculators.llamacpp_builds import NOT_GIVEN, parse_engine_build
    from sizing.capacity import Capacity

    model = spec(slug)
    longest = model.max_context or 4096
    queries = [(min(4096, longest), 1, 16, "llamacpp", None), (min(32_768, longest) - 1000, 3, 8, "ollama", None),
               (min(1000, longest), 24, 16, "llamacpp", None), (min(8192, longest), 5, 16, "llamacpp", "b9500"),
               (min(2048, longest), 7, 8, "ollama", "0.31.0")]
    sized = []  # every need a search sized: its settings and compute buffers, in the order asked
    real_need = capacity_module.llamacpp_need

    def sizing(model, settings):
        need = real_need(model, settings)
        sized.append((settings, need.gpu_items[2].bytes, need.pipeline_bytes))
        return need

    monkeypatch.setattr(capacity_module, "llamacpp_need", sizing)
    answers = {}
    for way in ("regions", "walked"):
        if way == "walked":
            monkeypatch.setattr(llamacpp_graph, "_peak", _walked_peak)
        _clear_kept_answers()
        sized.clear()
        answers[way] = [capacity_module._held(Capacity(
            model, 4, kv_bits, context, requests, engine=engine,
            build=parse_engine_build(engine, version) if version else NOT_GIVEN), gpus, memory, None)
            for context, requests, kv_bits, engine, version in queries for gpus, memory in FLEET]
        answers[way + " needs"] = list(sized)
    assert answers["regions"] == answers["walked"]
    assert answers["regions needs"] == answers["walked needs"]
    assert len(answers["regions needs"]) > 50 and any(row.command for row in answers["regions"])


def test_a_build_from_b9460_reserves_one_row_of_logits_per_slot_and_the_f16_mask_alone():
    """llama-server from b9460 (ggml-org/llama.cpp#23861) reserves min(n_ubatch, -np) rows of logits; a build
    before it, or none given, every token of the micro-batch: the default is the sizing it always was."""
    from dataclasses import replace

    from sizing.calculators.llamacpp import reserved_rows
    from sizing.calculators.llamacpp_builds import NOT_GIVEN, ONE_ROW_PER_SLOT, parse_build

    settings = LlamaCppSettings(quant_type="Q4_K_M", context=16384, parallel=4, cache_type_k="q8_0",
                                cache_type_v="q8_0")
    assert settings.reservation == NOT_GIVEN.reservation == parse_build("b9459").reservation
    per_slot = replace(settings, reservation=parse_build("b9460").reservation)
    assert per_slot.reservation == ONE_ROW_PER_SLOT
    assert reserved_rows(settings, 512) == 512 and reserved_rows(per_slot, 512) == 4
    assert reserved_rows(replace(per_slot, parallel=600), 512) == 512  # never more rows than the micro-batch
    whole, slot = (llamacpp_need(spec("qwen2-5-7b"), s).gpu_items[2] for s in (settings, per_slot))
    assert round(whole.bytes / MIB, 2) == 343.01 and round(slot.bytes / MIB, 2) == 148.01
    assert "every token of the micro-batch (reserved so before llama-server build b9460" in whole.formula
    assert "one row per slot, 4 rows (llama-server from build b9460)" in slot.formula


def test_a_kv_stream_per_slot_rounds_each_slots_share_and_keeps_a_window_and_a_micro_batch_in_each():
    """llama-server started with -np and no --kv-unified (Ollama from 0.30.0): llama_context rounds -c up to
    256, then each slot's share up to 256 again; llama_kv_cache_iswa gives a sliding-window layer the window
    plus one micro-batch in each slot's stream, rounded up to 256, where one pool holds the windows of every
    slot plus one micro-batch."""
    from dataclasses import replace

    from sizing.calculators.llamacpp import cache_cells
    from sizing.calculators.llamacpp_builds import KV_STREAMS

    pool = LlamaCppSettings("Q4_K_M", 600, parallel=2)
    streams = replace(pool, kv_layout=KV_STREAMS)
    assert cache_cells(pool) == 768 and cache_cells(streams) == 1024  # 2 × 384 → 2 × 512
    assert cache_cells(replace(streams, context=32768, parallel=4)) == 32768  # whole 256s: the same cells
    assert cache_cells(replace(streams, parallel=1)) == cache_cells(replace(pool, parallel=1)) == 768
    gemma = spec("gemma-3-27b")
    full_layers = sum(1 for layer in range(62) if gemma.architecture.kind_of_layer(layer) == "F")
    per_token = 2 * 16 * 128 * 2
    one_pool = llamacpp_need(gemma, LlamaCppSettings("Q4_K_M", 32768, parallel=4))
    per_slot = llamacpp_need(gemma, LlamaCppSettings("Q4_K_M", 32768, parallel=4, kv_layout=KV_STREAMS))
    assert one_pool.kv_cache_bytes == per_token * (full_layers * 32768 + (62 - full_layers) * 4608)
    assert per_slot.kv_cache_bytes == per_token * (full_layers * 32768 + (62 - full_layers) * 4 * 1536)
    # a slot shorter than its window keeps only its own cells
    short = llamacpp_need(gemma, LlamaCppSettings("Q4_K_M", 4 * 512, parallel=4, kv_layout=KV_STREAMS))
    assert short.kv_cache_bytes == per_token * 62 * 4 * 512
    assert "4 streams × 8,192 cells (-c 32,768, -np 4: a stream per slot" in per_slot.gpu_items[1].formula
    assert "a sliding-window layer's stream 1,536" in per_slot.gpu_items[1].formula
    assert "a sliding-window layer" not in short.gpu_items[1].formula  # its stream is the slot's own 512


@pytest.mark.parametrize(("build", "layout", "kv_mib"), [
    ("", "larger", 5056),  # not given: the larger of the two, the streams' cache
    ("b5912", "pool", 4432),  # before ggml-org/llama.cpp#14363: one pool
    ("b5913", "streams", 5056),
    ("b7000", "streams", 5056),  # four slots: -np 4 is no auto value
    ("b10488", "streams", 5056),
])
def test_llama_server_sizes_its_kv_cache_as_the_build_lays_out_the_commands_slots(build, layout, kv_mib):
    """llama-server -c 32768 -np 4 (the command printed, no --kv-unified): from b5913 a stream per slot,
    the Ollama 0.30.1 figure for the same settings (5,056 MiB); before it one pool (4,432 MiB)."""
    from sizing.calculators.llamacpp_builds import parse_build, parse_ollama_version
    from sizing.calculators.llamacpp_inference import estimate_llamacpp

    gemma = spec("gemma-3-27b")
    answer = estimate_llamacpp(gemma, 4, 8192, 4, engine="llamacpp", quantization="Q4_K_M",
                               build=parse_build(build))
    cache = answer.items[1]
    assert cache.bytes == kv_mib * MIB
    ollama = estimate_llamacpp(gemma, 4, 8192, 4, engine="ollama", quantization="Q4_K_M",
                               build=parse_ollama_version("0.30.1"))
    assert ollama.items[1].bytes == 5056 * MIB  # Ollama 0.30.1, the same settings
    assert answer.items[0].bytes == ollama.items[0].bytes  # the same file
    if layout == "pool":
        assert cache.formula.startswith("32,768 tokens (-c 32,768, 4 parallel slots)")
    else:
        assert cache.formula.startswith("4 streams × 8,192 cells (-c 32,768, -np 4: a stream per slot")
        assert ("the larger of one pool and a stream per slot" in cache.formula) is (layout == "larger")
    words = answer.assumptions[2]
    assert ("larger of llama-server's two layouts" in words) is (layout == "larger")
    assert ("keeps one KV stream per slot (ggml-org/llama.cpp#14363)" in words) is (layout == "streams")
    assert answer.inputs["engine_version"] == (build or None)


def test_a_model_without_sliding_windows_at_whole_256s_keeps_its_cells_and_odd_contexts_round_per_slot():
    """Qwen2.5 7B: 4 slots of 4,096 are the same 16,384 cells in a pool or in streams; 3 slots of 1,000
    tokens (-c 3,000) are 3,072 cells in one pool, 3 × 1,024 in streams (each slot's 1,024 of 3,072 rounded
    up on its own), and 4 slots of 4,000 (-c 16,000) 16,128 in one pool, 4 × 4,096 in streams."""
    from sizing.calculators.llamacpp_builds import parse_build
    from sizing.calculators.llamacpp_inference import estimate_llamacpp

    qwen = spec("qwen2-5-7b")
    per_cell = 28 * 2 * 4 * 128 * 2  # layers × K and V × KV heads × head_dim × f16

    def cache(context, requests, build):
        return estimate_llamacpp(qwen, 4, context, requests, quantization="Q4_K_M",
                                 build=parse_build(build)).items[1]

    for build in ("", "b5912", "b10488"):
        assert cache(4096, 4, build).bytes == 16384 * per_cell
    assert cache(1000, 3, "b5912").bytes == 3072 * per_cell == cache(1000, 3, "b10488").bytes
    assert cache(4000, 4, "b5912").bytes == 16128 * per_cell
    assert cache(4000, 4, "b10488").bytes == cache(4000, 4, "").bytes == 16384 * per_cell
    assert "4 streams × 4,096 cells (-c 16,000, -np 4" in cache(4000, 4, "b10488").formula
    assert cache(1000, 1, "b10488").bytes == 1024 * per_cell == cache(1000, 1, "b5912").bytes


def test_llama_server_b6823_to_b7432_runs_np_1_as_four_slots_over_one_pool():
    """ggml-org/llama.cpp#16736 to #17997: -np 1 without -kvu became four slots over the unified pool, so a
    sliding-window layer of Gemma 3 27B at -c 8192 keeps 4 × 1,024 + 512 cells, not 1,024 + 512; before and
    after, and with more slots, the command's -np holds."""
    from sizing.calculators.llamacpp_builds import (
        KV_AUTO_SLOTS,
        KV_LARGER,
        KV_POOL,
        KV_STREAMS,
        LLAMACPP,
        NOT_GIVEN,
        kv_layout,
        parse_build,
    )
    from sizing.calculators.llamacpp_inference import estimate_llamacpp

    assert [kv_layout(LLAMACPP, parse_build(b), 1) for b in ("b6822", "b6823", "b7432", "b7433")] == [
        KV_STREAMS, KV_AUTO_SLOTS, KV_AUTO_SLOTS, KV_STREAMS]
    assert kv_layout(LLAMACPP, parse_build("b7000"), 2) == KV_STREAMS
    assert kv_layout(LLAMACPP, parse_build("b5000"), 1) == KV_POOL
    assert kv_layout(LLAMACPP, NOT_GIVEN, 1) == kv_layout(LLAMACPP, NOT_GIVEN, 4) == KV_LARGER
    gemma = spec("gemma-3-27b")
    full_layers = sum(1 for layer in range(62) if gemma.architecture.kind_of_layer(layer) == "F")
    per_cell = 2 * 16 * 128 * 2

    def cache(build):
        return estimate_llamacpp(gemma, 4, 8192, 1, quantization="Q4_K_M", build=parse_build(build)).items[1]

    assert cache("b7000").bytes == per_cell * (full_layers * 8192 + (62 - full_layers) * 4608)
    assert cache("b7433").bytes == cache("").bytes == per_cell * (full_layers * 8192 + (62 - full_layers) * 1536)
    assert "llama-server b6823 to b7432 runs -np 1 as 4 slots over one pool" in cache("b7000").formula


def test_a_stream_per_slot_shortens_the_mask_and_the_scores_each_token_attends_over():
    """Each token of the reserved micro-batch attends to its own stream (llama_kv_cache_context: n_kv is one
    stream's size, the mask n_kv × the micro-batch's tokens split over the streams): without flash attention
    a layer's scores are heads × a stream's cells × tokens, a quarter of one pool's at 4 slots. The build not
    given sizes the larger graph, the pool's."""
    from dataclasses import replace

    from sizing.calculators.llamacpp_builds import KV_LARGER, KV_STREAMS, ONE_ROW_PER_SLOT

    qwen = spec("qwen2-5-7b")
    pool = LlamaCppSettings("Q4_K_M", 16384, parallel=4, flash_attention=False)
    one_pool, streams, larger = (llamacpp_need(qwen, s).gpu_items[2].bytes for s in (
        pool, replace(pool, kv_layout=KV_STREAMS), replace(pool, kv_layout=KV_LARGER)))
    heads = 28
    assert one_pool - streams >= heads * (16384 - 4096) * 512 * 4 * 9 // 10
    assert larger == one_pool
    flash = replace(pool, flash_attention=True, cache_type_k="q8_0", cache_type_v="q8_0",
                    reservation=ONE_ROW_PER_SLOT)
    with_flash = [llamacpp_need(qwen, replace(flash, kv_layout=layout)).gpu_items[2].bytes
                  for layout in ("pool", KV_STREAMS)]
    assert with_flash[0] - with_flash[1] == (16384 - 4096) * 512 * 2  # the f16 mask alone (b9410 on)


@pytest.mark.parametrize(("language", "parallel", "words"), [
    ("en", 1, "8,192 tokens (-c 8,192, 1 parallel slot) × K f16 + V f16"),
    ("en", 2, "8,192 tokens (-c 8,192, 2 parallel slots) × K f16 + V f16"),
    ("de", 1, "8.192 Token (-c 8.192, 1 paralleler Slot) × K f16 + V f16"),
    ("de", 2, "8.192 Token (-c 8.192, 2 parallele Slots) × K f16 + V f16"),
])
def test_one_pools_slots_are_counted_in_the_singular_and_the_plural(language, parallel, words):
    from django.utils import translation

    with translation.override(language):
        cache = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192, parallel=parallel)).gpu_items[1]
    assert cache.formula == words


def test_split_by_layers_only_the_last_gpu_holds_the_head_and_reserves_the_logits():
    """--split-mode layer over two GPUs (llama_model::load_tensors): the 32 layers and the output head are
    33 slots, slot i on GPU ⌊2i / 33⌋, so layers 0–16 on the first and 17–31 with the head on the second.
    The first GPU's compute buffer is the graph of its 17 layers without the output rows and logits (the
    pipeline's four copies of its inputs counted); the second's holds them, and is the need per GPU."""
    from dataclasses import replace

    from sizing.calculators.llamacpp import CUDA_CONTEXT_BYTES, PIPELINE_COPIES, split_layers
    from sizing.calculators.llamacpp_graph import GraphShape, build_graph, compute_buffer_bytes, shortened
    from sizing.calculators.llamacpp_inference import estimate_llamacpp

    assert split_layers(0, 32, True, 2) == (range(0, 17), range(17, 32))
    assert split_layers(0, 3, True, 3) == (range(0, 2), range(2, 3), range(0))  # the last: the head alone
    assert split_layers(8, 32, False, 2) == (range(8, 20), range(20, 32))  # -ngl 24: no head, 24 slots
    need = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192))
    first = GraphShape(hidden=4096, heads=32, kv_heads=8, head_dim=128, vocab=128256, layers=(8192,) * 17,
                       intermediate=14336, output_layer=False, copies=PIPELINE_COPIES)
    walked = max(build_graph(shortened(first)).peak(), build_graph(shortened(replace(first, mask_cast=True))).peak())
    assert need.other_gpus_compute_bytes(2) == compute_buffer_bytes(first) == walked == 222_339_072
    head = need.gpu_items[2].bytes + need.pipeline_bytes
    assert head == 371_769_344 and need.other_gpus_compute_bytes(2) < head
    # Each GPU holds its own layers' weights and cache, no longer half of them all (3,531,911,168 bytes when
    # they were divided evenly): the second, 15 layers and the head, needs the most (figures of
    # test_split_by_layers_each_gpu_holds_its_own_layers_weights_and_cache).
    second = need.gpu_needs(2)[1]
    assert second.share.output_head and need.per_gpu_bytes(2) == second.bytes == (
        second.share.weights_bytes + second.share.kv_cache_bytes + head + CUDA_CONTEXT_BYTES)
    assert need.other_gpus_compute_bytes(1) == 0
    partial = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192, gpu_layers=32))  # the head on the host
    assert partial.other_gpus_compute_bytes(2) == 0 and partial.other_gpus_item(2) is None
    item = need.other_gpus_item(2)
    assert item is not None and item.bytes == 222_339_072 and item.per_gpu
    assert item.formula.startswith("the 1 GPU without the output head (llama.cpp puts it on the last): the graph")
    assert need.other_gpus_item(3).formula.startswith("the largest of the 2 GPUs without the output head")
    compute = need.gpu_items[2].formula
    assert ("Split by layers over several GPUs (--split-mode layer), this is the buffer of the last, which holds "
            "the output head; each other GPU reserves its own layers' graph without the output rows and "
            "logits") in compute
    answer = estimate_llamacpp(LLAMA_3_1_8B, 4, 8192, 1, quantization="Q4_K_M")
    assert answer.bytes_per_gpu(2) == need.per_gpu_bytes(2) and answer.bytes_per_gpu(1) == need.per_gpu_bytes(1)
    assert "Split by layers over several GPUs" in answer.items[2].formula
    from django.utils import translation

    with translation.override("de"):
        german = llamacpp_need(LLAMA_3_1_8B, LlamaCppSettings("Q4_K_M", 8192))
        item = german.other_gpus_item(2)
    assert "Nach Schichten auf mehrere GPUs aufgeteilt (--split-mode layer)" in german.gpu_items[2].formula
    assert item is not None and item.name == "Rechenpuffer auf jeder anderen GPU"
    assert item.formula.startswith("die 1 GPU ohne den Ausgabekopf (llama.cpp legt ihn auf die letzte)")


def test_a_stream_per_slot_rounds_the_reserved_micro_batch_up_to_a_multiple_of_the_slots():
    """graph_reserve builds the worst-case micro-batch as n_seqs sequences of equal length, rounding n_tokens
    up to a multiple of n_seqs (ggml-org/llama.cpp#14140), n_seqs being -np wherever the cache keeps a stream
    per slot: -np 3 reserves 513 tokens of a 512 micro-batch, -np 4 the 512. The logits are those of the 513
    under the whole micro-batch (#18536 pads them with the tokens), of 3 rows where a row per slot is
    reserved (b9460 on: min(n_tokens, n_outputs_max) before the rounding); one pool is not rounded."""
    from dataclasses import replace

    from django.utils import translation

    from sizing.calculators.llamacpp import reserved_tokens
    from sizing.calculators.llamacpp_builds import KV_LARGER, KV_STREAMS, ONE_ROW_PER_SLOT
    from sizing.calculators.llamacpp_graph import GraphShape, compute_buffer_bytes

    streams = LlamaCppSettings("Q4_K_M", 3 * 4096, parallel=3, kv_layout=KV_STREAMS)
    assert reserved_tokens(streams, 12288, 3) == 513 and reserved_tokens(streams, 12288, 1) == 512
    assert reserved_tokens(replace(streams, parallel=255), 255 * 256, 255) == 765  # 3 × 255
    assert reserved_tokens(streams, 16384, 4) == 512
    qwen = spec("qwen2-5-7b")
    shape = GraphShape(hidden=3584, heads=28, kv_heads=4, head_dim=128, vocab=152064, layers=(4096,) * 28,
                       intermediate=18944, tokens=513, outputs=513)
    need = llamacpp_need(qwen, streams)
    assert need.gpu_items[2].bytes == compute_buffer_bytes(shape) == 335_161_856
    assert compute_buffer_bytes(replace(shape, tokens=512, outputs=512)) == 334_508_032  # as -np 4 reserves
    per_slot = llamacpp_need(qwen, replace(streams, reservation=ONE_ROW_PER_SLOT))
    assert per_slot.gpu_items[2].bytes == compute_buffer_bytes(replace(shape, outputs=3, f16_mask_only=True))
    pool = llamacpp_need(qwen, replace(streams, kv_layout="pool"))
    assert pool.gpu_items[2].bytes == compute_buffer_bytes(replace(shape, layers=(12288,) * 28, tokens=512,
                                                                   outputs=512))
    assert need.gpu_items[2].formula.startswith("513 tokens (-ub rounded up to a multiple of the 3 streams): ")
    assert pool.gpu_items[2].formula.startswith("512 tokens (-ub): ")
    larger = llamacpp_need(qwen, replace(streams, kv_layout=KV_LARGER))
    assert larger.gpu_items[2].bytes == max(need.gpu_items[2].bytes, pool.gpu_items[2].bytes)
    assert larger.gpu_items[2].formula.startswith(
        "512 tokens (-ub; 513 in a stream per slot, a multiple of the 3 streams): ")
    with translation.override("de"):
        german = llamacpp_need(qwen, streams).gpu_items[2].formula
    assert german.startswith("513 Token (-ub aufgerundet auf ein Vielfaches der 3 Streams): ")


@pytest.mark.parametrize("slug", ["llama-3-1-8b", "gemma-2-9b", "gemma-3-27b", "qwen3-30b-a3b", "mixtral-8x7b"])
def test_the_gpu_holding_the_head_reserves_the_largest_compute_buffer_of_a_split(slug):
    """On two to eight GPUs, at one pool, streams, no flash attention and one row per slot, the GPU with the
    output head and its logits reserves a larger compute buffer than any other; the need per GPU is the
    largest GPU's, which its own layers' weights and cache decide as much (once the head's GPU by rule,
    when they were divided evenly)."""
    from sizing.calculators.llamacpp_builds import KV_LARGER, KV_STREAMS, ONE_ROW_PER_SLOT

    model = spec(slug)
    for settings in (LlamaCppSettings("Q4_K_M", 4096), LlamaCppSettings("Q4_K_M", 12288, parallel=3,
                                                                        kv_layout=KV_STREAMS),
                     LlamaCppSettings("Q4_K_M", 8192, parallel=2, flash_attention=False, kv_layout=KV_LARGER),
                     LlamaCppSettings("Q4_K_M", 32768, parallel=4, kv_layout=KV_STREAMS,
                                      reservation=ONE_ROW_PER_SLOT)):
        need = llamacpp_need(model, settings)
        head = need.gpu_items[2].bytes + need.pipeline_bytes
        for gpus in range(2, 9):
            assert 0 < need.other_gpus_compute_bytes(gpus) < head, (settings, gpus)
            needs = need.gpu_needs(gpus)
            assert need.per_gpu_bytes(gpus) == max(gpu.bytes for gpu in needs)
            assert max(gpu.compute_bytes + gpu.pipeline_bytes for gpu in needs) == head


@pytest.mark.parametrize("engine", ["llamacpp", "ollama"])
def test_a_latent_attention_answer_of_a_build_not_given_runs_the_allocator_a_bounded_number_of_times(
        monkeypatch, engine):
    """Latent attention's absorbed graph has some twenty tensors of distinct widths a layer (the query, its
    absorbed and rotated parts, the concatenated Q, the attention's output and its value projection…): the
    earlier generation's f32 mask, freed after its cast, leaves a hole each of them is held against, so the
    cache lengths split into more regions than a grouped-query graph's. A build not given sizes both
    generations (and, under llama.cpp, both layouts): 83 to 143 runs for the 376 machines of the dense
    fleet (some two seconds), bounded here; a build given (the f16 mask alone) stays within the 48 above."""
    from sizing import capacity as capacity_module
    from sizing.calculators import llamacpp_graph
    from sizing.calculators.llamacpp_builds import NOT_GIVEN
    from sizing.capacity import Capacity

    runs = []
    real = llamacpp_graph._simulate
    monkeypatch.setattr(llamacpp_graph, "_simulate", lambda *args: runs.append(args[1]) or real(*args))
    asked = Capacity(spec("deepseek-v3"), 4, 16, 8192, 4, engine=engine, quantization="Q4_K_M", build=NOT_GIVEN)
    _clear_kept_answers()
    held = [capacity_module._held(asked, gpus, memory, None) for gpus, memory in DENSE_FLEET]
    assert any(row.max_requests_at_context for row in held)
    assert 0 < len(runs) <= 160, len(runs)



@pytest.mark.parametrize(("engine", "build"), [("llamacpp", None), ("llamacpp", 9500), ("ollama", None)])
def test_a_latent_attention_answer_without_flash_attention_runs_the_allocator_a_bounded_number_of_times(
        monkeypatch, engine, build):
    """Without flash attention a V-less build copies the latent of every cell, a size of the cells alone: a
    variable of its own in the regions' walk (every stream's cells, so one template serves every -np). 55
    runs for the 376 machines of the dense fleet with b9500 (20 for the builds that keep V, whose walk has
    no such tensor and whose two generations of the mask are one graph without flash attention: walked
    once), bounded here."""
    from sizing import capacity as capacity_module
    from sizing.calculators import llamacpp_graph
    from sizing.calculators.llamacpp_builds import NOT_GIVEN, LlamaCppBuild
    from sizing.capacity import Capacity

    runs = []
    real = llamacpp_graph._simulate
    monkeypatch.setattr(llamacpp_graph, "_simulate", lambda *args: runs.append(args[1]) or real(*args))
    asked = Capacity(spec("deepseek-v3"), 4, 16, 8192, 4, engine=engine, quantization="Q4_K_M",
                     build=NOT_GIVEN if build is None else LlamaCppBuild(build), flash_attention=False)
    _clear_kept_answers()
    llamacpp_graph._regions.cache_clear()
    held = [capacity_module._held(asked, gpus, memory, None) for gpus, memory in DENSE_FLEET]
    assert any(row.max_requests_at_context for row in held)
    assert 0 < len(runs) <= (64 if build else 24), len(runs)
