"""Every compute buffer llama.cpp answers give, held to the bytes recorded in
`data/llamacpp_compute_buffers.json`: the allocator's walk is kept per graph and re-walked, its runs cut
where a probe cannot fit anyway, but no answer may move by a byte. The cases cover dense, sliding-window,
mixture-of-experts and latent-attention models over contexts, slots, flash attention, builds (each rule of
the logits reserved, the cache's layout and -ngl's placement), partial offloads and layer splits, and the
capacity rows a wizard answer shows.

Written once from the code before the walk was kept (`write`, run under the test settings), then only
read."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalog.data.language_models import LANGUAGE_MODELS
from catalog.models import LanguageModel
from catalog.rows import language_model_spec
from sizing import capacity as capacity_module
from sizing.calculators import llamacpp, llamacpp_graph
from sizing.calculators.llamacpp import LlamaCppSettings, llamacpp_need, state_checkpoints
from sizing.calculators.llamacpp_builds import NOT_GIVEN, kv_layout, parse_engine_build
from sizing.capacity import Capacity
from sizing.errors import SizingError
from sizing.units import GIB
from tests.sizing.models import DEEPSEEK_V2_LITE

RECORDED = Path(__file__).resolve().parent / "data" / "llamacpp_compute_buffers.json"
ROWS = {row["slug"]: row for row in LANGUAGE_MODELS}

# (slug, contexts, quantization): a dense model, grouped-query and not, sliding windows of each pattern,
# mixtures of experts, latent attention, linear attention beside full attention
MODELS = [
    ("llama-3-1-8b", (512, 4096, 8192, 32768, 131072), "Q4_K_M"),
    ("llama-3-1-70b", (4096, 32768), "Q4_K_M"),
    ("qwen2-5-0-5b", (4096, 32768), "Q8_0"),
    ("phi-3-mini-4k", (2048, 4096), "Q4_K_M"),
    ("gemma-2-9b", (4096, 8192), "Q4_K_M"),
    ("gemma-3-4b", (4096, 32768, 131072), "Q4_K_M"),
    ("gemma-3-27b", (4096, 8192, 32768, 131072), "Q4_K_M"),
    ("mixtral-8x7b", (4096, 32768), "Q4_K_M"),
    ("qwen3-30b-a3b", (4096, 32768), "Q4_K_M"),
    ("gpt-oss-20b", (8192, 131072), "MXFP4_MOE"),
    ("deepseek-v2-lite", (4096, 32768), "Q4_K_M"),
    ("deepseek-v3", (8192, 65536), "Q4_K_M"),
    ("qwen3-next-80b-a3b", (4096, 32768), "Q4_K_M"),
    ("kimi-linear-48b-a3b", (4096, 32768), "Q4_K_M"),
]
# (engine, build): not given; before the streams (b5000); -np 1 run as four slots (b7000); streams with the
# whole micro-batch's logits and the f32 mask (b9000); a row per slot, the f16 mask, the head first (b9500);
# Ollama not given and a release with a stream per slot
BUILDS = [("llamacpp", None), ("llamacpp", "b5000"), ("llamacpp", "b7000"), ("llamacpp", "b9000"),
          ("llamacpp", "b9500"), ("ollama", None), ("ollama", "0.31.0")]
SLOTS = (1, 3, 4)
FLEET = [(gpus, gib * GIB) for gpus in (1, 2, 4) for gib in (12, 24, 48, 80)]


def spec(slug):
    if slug == "deepseek-v2-lite":
        return DEEPSEEK_V2_LITE
    return language_model_spec(LanguageModel(**ROWS[slug]))


def cases():
    """Each case's key and what sizes it: (slug, quantization, engine, build, context, slots, flash attention,
    -ngl, --kv-unified); -ngl 5 and --kv-unified at 3 slots with flash attention."""
    for slug, contexts, quant in MODELS:
        for engine, build in BUILDS:
            for context in contexts:
                for slots in SLOTS:
                    for flash in (True, False):
                        if not flash and engine == "ollama":
                            continue
                        for layers, unified in ((None, False), (5, False), (None, True)):
                            if (layers, unified) != (None, False) and (slots, flash) != (3, True):
                                continue
                            if unified and engine == "ollama":
                                continue
                            yield slug, quant, engine, build, context, slots, flash, layers, unified


def _settings(quant, engine, build_text, context, slots, flash, layers, unified):
    """The settings as the what-if sizes them (`nodelodge.recommendations.llamacpp_capacity.answer`)."""
    build = parse_engine_build(engine, build_text) if build_text else NOT_GIVEN
    return LlamaCppSettings(
        quant_type=quant, context=context, parallel=slots, flash_attention=flash, gpu_layers=layers,
        reservation=build.reservation, kv_layout=kv_layout(engine, build, slots), kv_unified=unified,
        latent_values=build.caches_latent_values, offload=build.offload,
        state_checkpoints=state_checkpoints(engine, build))


def measured(case):
    """The compute buffers of one case: the head's GPU's, the pipeline's copies, the other GPUs' at 2 and 3
    GPUs, and the layers a partial offload keeps on 1 × 24 GiB and 2 × 12 GiB; "refused" where the engine
    refuses the settings."""
    slug, *asked = case
    try:
        need = llamacpp_need(spec(slug), _settings(*asked))
    except SizingError as error:
        return f"refused: {error.field}"
    return [need.gpu_items[2].bytes, need.pipeline_bytes, need.other_gpus_compute_bytes(2),
            need.other_gpus_compute_bytes(3), need.layers_that_fit(1, 24 * GIB), need.layers_that_fit(2, 12 * GIB)]


def rows(slug, engine, build_text, context, requests, flash=True, unified=False):
    """A wizard answer's rows: the most requests and longest context on each machine of `FLEET`."""
    build = parse_engine_build(engine, build_text) if build_text else NOT_GIVEN
    asked = Capacity(spec(slug), 4, 16, context, requests, engine=engine, quantization="Q4_K_M", build=build,
                     flash_attention=flash, kv_unified=unified)
    found = [capacity_module._held.__wrapped__(asked, gpus, memory, None) for gpus, memory in FLEET]
    return [[row.max_requests_at_context, row.max_context_at_requests, row.command] for row in found]


ROW_CASES = [("gemma-3-27b", "llamacpp", None, 8192, 4), ("gemma-3-27b", "ollama", "0.31.0", 4096, 2),
             ("llama-3-1-8b", "llamacpp", "b9500", 8192, 3), ("qwen3-30b-a3b", "llamacpp", None, 32768, 1),
             ("deepseek-v3", "llamacpp", None, 8192, 4), ("deepseek-v2-lite", "llamacpp", None, 8192, 4),
             ("deepseek-v2-lite", "ollama", "0.31.0", 32768, 2), ("llama-3-1-8b", "llamacpp", None, 8192, 4, False),
             ("gemma-3-27b", "llamacpp", None, 8192, 4, True, True), ("qwen3-next-80b-a3b", "ollama", None, 8192, 2),
             ("deepseek-v2-lite", "llamacpp", "b9500", 8192, 2, False), ("kimi-linear-48b-a3b", "llamacpp", None, 8192, 2),
             ("gemma-2-9b", "llamacpp", "b7000", 4096, 1)]


def _key(case):
    return "|".join(str(part) for part in case)


def _forget():
    """Every answer kept in the process, so that each case is worked out from nothing."""
    capacity_module._held.cache_clear()
    capacity_module._gguf_need.cache_clear()
    for name in ("_buffer_over", "gpu_shares", "offload_placement"):
        getattr(llamacpp, name).cache_clear()
    for name in dir(llamacpp_graph):
        kept = getattr(llamacpp_graph, name)
        if hasattr(kept, "cache_clear"):
            kept.cache_clear()


def _recorded():
    return json.loads(RECORDED.read_text())


def test_every_compute_buffer_is_the_bytes_recorded_before_the_walk_was_kept():
    recorded = _recorded()["buffers"]
    keys = [_key(case) for case in cases()]
    assert sorted(keys) == sorted(recorded) and len(keys) > 1000
    _forget()
    differ = {key: (measured(case), recorded[key]) for key, case in zip(keys, cases(), strict=True)
              if measured(case) != recorded[key]}
    assert not differ, list(differ.items())[:5]
    assert sum(isinstance(value, list) and value[0] > 0 for value in recorded.values()) > 1000


@pytest.mark.parametrize("row_case", ROW_CASES, ids=lambda case: _key(case))
def test_a_wizard_answers_rows_are_those_recorded_before_the_walk_was_kept(row_case):
    _forget()
    assert rows(*row_case) == _recorded()["rows"][_key(row_case)]


def write() -> None:
    """Record the buffers and rows as the code gives them now (run under Django's settings)."""
    _forget()
    buffers = {_key(case): measured(case) for case in cases()}
    found = {_key(case): rows(*case) for case in ROW_CASES}
    RECORDED.write_text(json.dumps({"buffers": buffers, "rows": found}, indent=0, sort_keys=True) + "\n")
    print(len(buffers), "cases,", len(found), "answers")
