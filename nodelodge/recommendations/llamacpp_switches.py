"""llama.cpp's and Ollama's switches read by the wizard's query (page, /estimate, /recommendations,
`estimate`, `recommend`, watches) and the GPU what-if (`/api/v1/capacity`) alike: `flash_attention` (-fa on
or off, Ollama's OLLAMA_FLASH_ATTENTION; on when left empty) and `kv_unified` (llama-server's --kv-unified,
one KV pool the slots share; off when left empty), and `gpu_layers` (llama-server's -ngl, Ollama's
num_gpu: the decoder layers on the GPUs; every layer and the head when left empty). One rule for all three:
refused beside their field where the engine or the build has no such setting (values each valid alone: a
conflict)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext

from sizing.calculators.llamacpp_builds import (
    LLAMACPP,
    OLLAMA,
    STREAMS_FROM,
    LlamaCppBuild,
    unified_flag_known,
)

ON_OFF = {"on": True, "off": False}
GGUF_ENGINES = (LLAMACPP, OLLAMA)
SWITCHES = ("flash_attention", "kv_unified")
# Every input of the query only llama.cpp or Ollama reads: ignored by a workload that serves no tokens.
GGUF_INPUTS = (*SWITCHES, "gpu_layers")


def flash_attention(values: Mapping[str, Any]) -> bool:
    """Flash attention as asked in `values` ("on", "off"; empty: on, as the answers always assumed)."""
    return ON_OFF.get(values.get("flash_attention") or "on", True)


def kv_unified(values: Mapping[str, Any]) -> bool:
    """--kv-unified as asked in `values` ("on", "off"; empty: off, the build's own layout)."""
    return ON_OFF.get(values.get("kv_unified") or "off", False)


def switch_refusals(engine: str | None, asked: Mapping[str, Any], build: LlamaCppBuild) -> dict[str, str]:
    """The switches asked (`asked`: the values the request named) that `engine` or llama.cpp's `build`
    does not read, by field: flash_attention under an engine other than llama.cpp and Ollama, kv_unified
    under any but llama.cpp, kv_unified=on before b5913 (its cache is one pool already), and gpu_layers
    (-ngl, num_gpu) under an engine other than llama.cpp and Ollama (they keep every layer on the GPUs)."""
    refusals: dict[str, str] = {}
    if engine not in GGUF_ENGINES and asked.get("flash_attention") not in (None, ""):
        refusals["flash_attention"] = gettext(
            "flash_attention is llama.cpp's -fa and Ollama's OLLAMA_FLASH_ATTENTION (engine=llamacpp or "
            "engine=ollama); the other engines set no such option.")
    if engine not in GGUF_ENGINES and asked.get("gpu_layers") not in (None, ""):
        refusals["gpu_layers"] = gettext(
            "gpu_layers is llama.cpp's -ngl and Ollama's num_gpu (engine=llamacpp or engine=ollama); the "
            "other engines keep every layer on the GPUs.")
    if engine != LLAMACPP:
        if asked.get("kv_unified") not in (None, ""):
            refusals["kv_unified"] = gettext(
                "%(name)s is llama-server's --kv-unified (engine=llamacpp); Ollama and the other engines "
                "set no such option.") % {"name": "kv_unified"}
    elif kv_unified(asked) and not unified_flag_known(build):
        refusals["kv_unified"] = gettext(
            "llama.cpp builds before b%(from)s have no --kv-unified: their KV cache is one pool the slots "
            "share already. Leave kv_unified empty, or ask a later build.") % {"from": STREAMS_FROM}
    return refusals


def switch_params(engine: str, flash: bool, unified: bool, written_out: bool = False) -> dict[str, str]:
    """The query-string values that ask for these switches under `engine`: those off their defaults, or
    with `written_out` every one the engine reads (a watch keeps its meaning if a default changes)."""
    params: dict[str, str] = {}
    if engine in GGUF_ENGINES and (written_out or not flash):
        params["flash_attention"] = "on" if flash else "off"
    if engine == LLAMACPP and (written_out or unified):
        params["kv_unified"] = "on" if unified else "off"
    return params
