"""The GPU what-if under SGLang: the weights and the token pool inside `--mem-fraction-static` of the
memory free at start, what is left for activations and CUDA graphs, whether it starts and holds one
request of `--context-length`, the requests of that context at once, and the `sglang.launch_server`
command where it starts on the named GPU. Sized by `sizing.calculators.sglang`."""
from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, cast

from catalog import rows as catalog_rows
from sizing.calculators.sglang import (
    PRECISIONS,
    SGLANG_VERSION,
    SglangPool,
    SglangSettings,
    fraction_words,
    sglang_pool,
)
from sizing.engine_support import SGLANG, alternative_words, refusal_words, runnable_choices, support_for
from sizing.errors import SizingError
from sizing.specs import LanguageModelSpec
from sizing.units import GIB, gib_number

from .query import Conflict

if TYPE_CHECKING:
    from .capacity import CapacityQuery


def settings(query: CapacityQuery) -> SglangSettings:
    fraction = query.mem_fraction_static
    return SglangSettings(
        gpu_memory_bytes=int(query.gpu_memory_gib * GIB), tensor_parallel=query.tensor_parallel,
        mem_fraction_static=Fraction(fraction) if fraction is not None else None,
        context_length=query.max_model_len, max_running_requests=query.parallel_asked,
    )


def _item(item) -> dict:
    return {"name": item.name, "gib": gib_number(item.bytes), "bytes": item.bytes, "formula": item.formula,
            "per_gpu": item.per_gpu}


def answer(spec: LanguageModelSpec, query: CapacityQuery, gpu_type: catalog_rows.UsableMemory | None) -> dict:
    try:
        pool = sglang_pool(spec, query.precision, query.kv_bits, settings(query))
    except SizingError as error:  # values each valid that the model or the engine cannot take together
        raise Conflict({error.field: error.message}) from error
    fits, reason = pool.fit()
    runs, flags, words, alternative = None, (), None, None
    if query.gpu is not None:
        runs, flags, words, alternative = _on_gpu(spec, query, pool, gpu_type)
    return {
        "model": spec.slug,
        "engine": "sglang",
        "engine_version": SGLANG_VERSION,
        "fits": fits,
        "reason": reason,
        "gpu": query.gpu,
        "gpu_memory_source": gpu_type.source if gpu_type is not None else None,
        "gpu_architecture": gpu_type.architecture.label if gpu_type and gpu_type.architecture else None,
        "gpu_memory_gib": float(query.gpu_memory_gib),
        "tensor_parallel": query.tensor_parallel,
        "mem_fraction_static": float(pool.fraction),
        "mem_fraction_static_words": fraction_words(pool),
        "free_at_start_gib": gib_number(pool.free_at_start_bytes),
        "static_gib": gib_number(pool.static_bytes),
        "weights_bytes": pool.weights.bytes,
        "weights_gib": gib_number(pool.weights.bytes),
        "kv_cache_bytes": pool.kv_cache_bytes,
        "kv_cache_gib": gib_number(pool.kv_cache_bytes),
        "kv_cache_tokens": pool.kv_cache_tokens,
        "kv_cache_dtype": "fp8_e5m2" if pool.kv_bits == 8 else "bf16",
        "bytes_per_token": pool.cell_bytes,
        "rest_gib": gib_number(pool.rest_bytes),
        "max_model_len": pool.context_length,
        "max_running_requests": query.parallel_asked,
        "requests_at_once": pool.requests_at_once,
        "items": [_item(item) for item in pool.items()],
        # Only a start that holds a request, on a GPU that runs it (or where no GPU type was named).
        "command": pool.command(spec.hf_id, flags) if spec.hf_id and fits and runs is not False else None,
        "runs_on_gpu": runs,
        "gpu_support_text": words,
        "alternative": alternative,
    }


def _on_gpu(spec: LanguageModelSpec, query: CapacityQuery, pool: SglangPool,
            gpu_type: catalog_rows.UsableMemory | None):
    """Whether the named GPU runs SGLang with the asked weights and KV cache (`sizing.engine_support`), the
    flags its command carries, and where it does not, why and what runs there and starts instead."""
    architecture = gpu_type.architecture if gpu_type is not None else None
    asked = support_for(SGLANG, spec, query.precision, query.kv_bits, architecture)
    if asked.runs:
        return True, asked.dtype_flags, None, None
    alternative, choice, half = None, None, False
    for precision, kv_bits in runnable_choices(SGLANG, spec, query.precision, query.kv_bits, architecture):
        if precision not in PRECISIONS:
            continue
        try:
            other = sglang_pool(spec, precision, kv_bits, settings(query))
        except SizingError:
            continue
        if other.fit()[0]:
            flags = support_for(SGLANG, spec, precision, kv_bits, architecture).dtype_flags
            choice, half = (precision, kv_bits), bool(flags)
            alternative = {"precision": precision, "kv_cache_bits": kv_bits,
                           "command": other.command(spec.hf_id, flags) if spec.hf_id else None}
            break
    words = (refusal_words(SGLANG, cast(str, query.gpu), architecture, asked.refused) + " "
             + alternative_words(choice, half))
    return False, (), words, alternative
