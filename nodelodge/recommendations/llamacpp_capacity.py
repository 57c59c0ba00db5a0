"""The GPU what-if under llama.cpp and Ollama: a GGUF file of the model on one GPU type (or several,
the layers split over them), its weights on the GPUs and in host memory, the KV cache in its types,
the compute buffer, whether it starts and, where it does not, how many layers a partial offload keeps
on the GPUs; the `llama-server` command or Ollama's settings. Sized by `sizing.calculators.llamacpp`."""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from django.utils.translation import gettext

from catalog import rows as catalog_rows
from sizing.calculators.llamacpp import (
    GpuNeed,
    LlamaCppNeed,
    LlamaCppSettings,
    gguf_file_name,
    largest_need,
    llamacpp_need,
    state_checkpoints,
)
from sizing.calculators.llamacpp_builds import build_words, check_build_runs, kv_layout
from sizing.errors import SizingError
from sizing.specs import LanguageModelSpec
from sizing.units import GIB, gib_number

from .query import Conflict

if TYPE_CHECKING:
    from .capacity import CapacityQuery

# Ollama's context when none is set (num_ctx, OLLAMA_CONTEXT_LENGTH); llama-server's -c when left out.
DEFAULT_CONTEXT = 4096


def _item(item) -> dict:
    return {"name": item.name, "gib": gib_number(item.bytes), "bytes": item.bytes, "formula": item.formula,
            "per_gpu": item.per_gpu}


def answer(spec: LanguageModelSpec, query: CapacityQuery, gpu_type: catalog_rows.UsableMemory | None) -> dict:
    """The what-if's answer under llama.cpp (max_model_len is -c, shared by the parallel slots) or
    Ollama (max_model_len is num_ctx, each request's; the engine allocates it once per slot), the logits
    reserved and the cache laid out as the build or Ollama release asked does (`llamacpp_builds`)."""
    per_request = query.max_model_len or DEFAULT_CONTEXT
    context = per_request * query.parallel if query.engine == "ollama" else per_request
    settings = LlamaCppSettings(
        quant_type=query.quantization, context=context, parallel=query.parallel,
        cache_type_k=query.kv_cache_type, cache_type_v=query.kv_cache_type,
        flash_attention=query.flash_attention, gpu_layers=query.gpu_layers,
        reservation=query.llamacpp_build.reservation,
        kv_layout=kv_layout(query.engine, query.llamacpp_build, query.parallel), kv_unified=query.kv_unified,
        latent_values=query.llamacpp_build.caches_latent_values,
        offload=query.llamacpp_build.offload,
        state_checkpoints=state_checkpoints(query.engine, query.llamacpp_build),
    )
    try:
        check_build_runs(spec, query.llamacpp_build, query.engine)
        need = llamacpp_need(spec, settings)
    except SizingError as error:  # values each valid that the model or the engine cannot take together
        raise Conflict({error.field: error.message}) from error
    gpus = query.tensor_parallel * query.pipeline_parallel
    memory = int(query.gpu_memory_gib * GIB)
    fits, reason = need.fits(gpus, memory)
    layers_that_fit = need.layers_that_fit(gpus, memory)
    per_gpu = need.gpu_needs(gpus)
    file = gguf_file_name(spec, need.weights.quant_type)
    return {
        "model": spec.slug,
        "engine": query.engine,
        "engine_version": query.llamacpp_build.text or None,
        "engine_version_rules": build_words(query.engine, query.llamacpp_build),
        "fits": fits,
        "reason": reason,
        "gpu": query.gpu,
        "gpu_memory_source": gpu_type.source if gpu_type is not None else None,
        "gpu_memory_gib": float(query.gpu_memory_gib),
        "gpus": gpus,
        "quantization": need.weights.quant_type,
        "file": file,
        "file_repository": _repository(spec, need.weights.quant_type),
        "file_gib": gib_number(need.weights.bytes),
        "bits_per_weight": round(float(need.weights.bits_per_weight), 4),
        "tensor_types": [{"type": name, "gib": gib_number(size), "bytes": size}
                         for name, size in need.weights.bytes_by_type().items()],
        "weights_bytes": need.gpu_items[0].bytes,
        "weights_gib": gib_number(need.gpu_items[0].bytes),
        "host_bytes": need.host_bytes,
        "host_gib": gib_number(need.host_bytes),
        "kv_cache_bytes": need.kv_cache_bytes,
        "kv_cache_gib": gib_number(need.kv_cache_bytes),
        "kv_cache_tokens": need.kv_size,
        "kv_cache_type": query.kv_cache_type,
        "flash_attention": query.flash_attention,
        "max_model_len": per_request,
        "context_per_request": need.context_per_slot,
        "parallel": query.parallel,
        "kv_unified": query.kv_unified,
        "gpu_layers": need.gpu_layers,
        "layers": spec.layers,
        "layers_that_fit": layers_that_fit,
        "gpu_gib": gib_number(need.gpu_bytes),
        "need_per_gpu_bytes": largest_need(per_gpu).bytes,
        "need_per_gpu_gib": gib_number(largest_need(per_gpu).bytes),
        "per_gpu": [_gpu(gpu_need) for gpu_need in per_gpu],
        # the model's items on the GPUs, the weights and cache of all of them together, the compute buffer the
        # head's GPU's; several GPUs holding every layer and the head add the pipeline's input copies
        "items": [_item(item) for item in need.gpu_items]
        + ([_item(need.pipeline_item)] if gpus > 1 and need.pipeline_item else []),
        # split by layers with the head on the last GPU: the others' compute buffer, without the logits (the
        # items' is the last GPU's, the largest)
        "other_gpus_compute": _item(other) if (other := need.other_gpus_item(gpus)) is not None else None,
        "host_items": [_item(item) for item in need.host_items],
        # Only what starts: on the GPUs as asked, or else with the layers that fit there.
        "command": _command(need, file, query) if fits else None,
        "ollama": need.ollama_settings() if fits and query.engine == "ollama" else None,
        "partial_offload": None if fits else _partial(spec, settings, layers_that_fit, file, query),
    }


def _gpu(need: GpuNeed) -> dict:
    """One GPU of the split (`GpuShareOut`): its buffer with the pipeline's copies of its inputs."""
    share = need.share
    return {"gpu": need.index + 1, "first_layer": share.layers[0] if share.layers else None,
            "last_layer": share.layers[-1] if share.layers else None, "output_head": share.output_head,
            "weights_bytes": share.weights_bytes, "kv_cache_bytes": share.kv_cache_bytes,
            "compute_bytes": need.compute_bytes + need.pipeline_bytes, "need_bytes": need.bytes,
            "need_gib": gib_number(need.bytes)}


def _repository(spec: LanguageModelSpec, quant_type: str) -> str | None:
    published = spec.published_gguf(quant_type)
    return published.repository if published is not None else None


def _command(need: LlamaCppNeed, file: str, query: CapacityQuery) -> str | None:
    return need.server_command(file) if query.engine == "llamacpp" else None


def _partial(spec: LanguageModelSpec, settings: LlamaCppSettings, layers: int, file: str,
             query: CapacityQuery) -> dict | None:
    """Where every layer does not fit: the most that do, with what stays in host memory and the command
    or settings that start it so (slower: the other layers run on the CPU)."""
    if layers < 1:
        return None
    need = llamacpp_need(spec, replace(settings, gpu_layers=layers))
    return {
        "gpu_layers": layers,
        # what -ngl N puts there as the build places it (`llamacpp.offload_placement`)
        "layers_on_gpus": need.gpu_layers,
        "output_head_on_gpus": need.output_on_gpu,
        "gpu_gib": gib_number(need.gpu_bytes),
        "host_gib": gib_number(need.host_bytes),
        "command": _command(need, file, query),
        "ollama": need.ollama_settings() if query.engine == "ollama" else None,
        "words": (gettext(
            "-ngl %(ngl)s: %(layers)s of %(all)s layers and the output head fit on the GPUs; the rest and "
            "their KV cache stay in host memory (%(host)s GiB) and run on the CPU, slower."
        ) if need.output_on_gpu else gettext(
            "%(layers)s of %(all)s layers fit on the GPUs; the rest and their KV cache stay in host memory "
            "(%(host)s GiB) and run on the CPU, slower."
        )) % {"ngl": layers, "layers": need.gpu_layers, "all": spec.layers,
              "host": gib_number(need.host_bytes)},
    }
