"""The wizard's inference under llama.cpp and Ollama: the need per GPU of the model's GGUF file, as the
fit, the rows and the answer read any breakdown (`sizing.calculators.llamacpp` sizes it)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from .. import nouns
from ..breakdown import Breakdown, GgufFile, Item
from ..capacity import Capacity
from ..gguf import GgufWeights
from ..i18n import gettext, ngettext
from ..specs import LanguageModelSpec
from ..units import fmt_gib, fmt_int
from .checks import check_inference_inputs, model_value
from .llamacpp import (
    CUDA_CONTEXT_BYTES,
    ENGINE_NAMES,
    GpuNeed,
    LlamaCppNeed,
    LlamaCppSettings,
    gguf_file_name,
    gpu_needs,
    largest_need,
    llamacpp_need,
    wizard_settings,
)
from .llamacpp_builds import NOT_GIVEN, LlamaCppBuild, build_for, build_words, check_build_runs


@dataclass(frozen=True)
class LlamaCppBreakdown(Breakdown):
    """Inference under llama.cpp or Ollama: split by layers, each GPU holds the layers llama.cpp gives it,
    their weights and KV cache, the GPU holding the output head its weights and the logits in its compute
    buffer, the others their own layers' graph without them; the need per GPU is the largest GPU's
    (`sizing.calculators.llamacpp.gpu_needs`). The items are the model's in all, on one GPU."""

    spec: LanguageModelSpec | None = None
    settings: LlamaCppSettings | None = None
    offload_text: str | None = None  # -ngl's layers on the GPUs and the rest on the CPU (`offload_words`)

    def _largest_gpu(self, gpus: int) -> GpuNeed | None:
        if gpus < 2 or self.spec is None or self.settings is None:
            return None
        compute = self.items[2].bytes
        pipeline = sum(item.bytes for item in self.split_items)
        return largest_need(gpu_needs(self.spec, self.settings, gpus, compute, pipeline))

    def bytes_per_gpu(self, gpus: int) -> int:
        need = super().bytes_per_gpu(gpus)
        largest = self._largest_gpu(gpus)
        return need if largest is None else largest.bytes

    @property
    def layers_on_host(self) -> bool:
        # `offload_words` words exactly the answers that leave a layer or the head off the GPUs
        return self.offload_text is not None

    def fit_words(self, gpus: int) -> str | None:
        """A row's words where -ngl keeps part of the model off the GPUs (`offload_words`): how many
        layers its GPUs hold, and that the rest run on the CPU."""
        return self.offload_text

    def per_gpu_shares(self, gpus: int) -> tuple[tuple[str, int], ...]:
        """The largest GPU's items (the per-GPU bar): its own layers' weights and KV cache, its compute
        buffer, CUDA context, and the pipeline's copies where it is the GPU holding the head."""
        largest = self._largest_gpu(gpus)
        if largest is None:
            return super().per_gpu_shares(gpus)
        names = [item.name for item in (*self.items, *self.split_items)]
        shares = (largest.share.weights_bytes, largest.share.kv_cache_bytes, largest.compute_bytes,
                  CUDA_CONTEXT_BYTES, *((largest.pipeline_bytes,) if self.split_items else ()))
        return tuple(zip(names, shares, strict=True))


def gguf_file(model: LanguageModelSpec, weights: GgufWeights) -> GgufFile:
    """The file an answer assumes: the published one in the type where the catalog lists it."""
    published = model.published_gguf(weights.quant_type)
    return GgufFile(quantization=weights.quant_type, file=gguf_file_name(model, weights.quant_type),
                    bytes=weights.bytes, bits_per_weight=weights.bits_per_weight,
                    repository=published.repository if published else None,
                    published_bytes=published.bytes if published else None)


def published_words(assumed: GgufFile) -> str:
    """Where the assumed file is published, or that none is in its type (sized all the same)."""
    if assumed.repository is None:
        return gettext(
            "No published file: no GGUF file in %(type)s is listed for this model; sized from llama.cpp's "
            "own rules for the type."
        ) % {"type": assumed.quantization}
    return gettext("The file is published in %(repository)s.") % {"repository": assumed.repository}


def estimate_llamacpp(model: LanguageModelSpec, precision: int, context: int, requests: int,
                      kv_bits: int = 16, engine: str = "llamacpp",
                      quantization: str | None = None, build: LlamaCppBuild = NOT_GIVEN,
                      flash_attention: bool = True, kv_unified: bool = False,
                      gpu_layers: int | None = None) -> Breakdown:
    """The need per GPU under llama.cpp or Ollama of the model's GGUF file in `quantization` (any GGUF
    type), or else at the wizard's precision (16: F16, 8: Q8_0, 4: Q4_K_M), every layer on the GPUs or,
    with `gpu_layers` (-ngl, Ollama's num_gpu), those -ngl places there as the build does (the rest and
    their cache in host memory, run on the CPU; a count past the layers is every layer, as llama.cpp
    reads it): split by layers, each GPU holds its own layers' weights and KV cache and adds its compute
    buffer and CUDA
    context, its logits reserved and its cache laid out as the llama.cpp `build` does (under Ollama:
    the build the Ollama release in `build` runs), with flash attention on or off and, under llama.cpp,
    --kv-unified's one pool as asked."""
    precision, context, requests, kv_bits = check_inference_inputs(
        model, precision, context, requests, kv_bits)
    build = build_for(engine, build)
    check_build_runs(model, build, engine)
    settings = wizard_settings(precision, context, requests, kv_bits, quantization, build, engine,
                               flash_attention=flash_attention, kv_unified=kv_unified, gpu_layers=gpu_layers)
    need = llamacpp_need(model, settings)
    assumed = gguf_file(model, need.weights)
    file = assumed.file
    weights, cache, compute = need.gpu_items
    context_item = Item(gettext("CUDA context"),
                        gettext("the runtime and cuBLAS on each GPU, outside llama.cpp's buffers"),
                        CUDA_CONTEXT_BYTES, per_gpu=True)
    layers = model_value(model, "layers")
    name = ENGINE_NAMES[engine]
    loaded = {"engine": name, "file": file, "bits": f"{float(need.weights.bits_per_weight):.2f}",
              "embeddings": fmt_gib(need.host_bytes)}
    offloaded = offload_words(engine, need)
    assumptions = (
        gettext(
            "Sized as %(engine)s loads the GGUF file %(file)s (%(bits)s bits per weight, llama.cpp's mix of "
            "tensor types): every layer on the GPUs, split by layers over several; the token embeddings "
            "(%(embeddings)s) stay in host memory."
        ) % loaded if offloaded is None else gettext(
            "Sized as %(engine)s loads the GGUF file %(file)s (%(bits)s bits per weight, llama.cpp's mix of "
            "tensor types), split by layers over several GPUs. %(offload)s."
        ) % {**loaded, "offload": offloaded},
        _cache_assumption(settings, context, requests),
        build_words(engine, build),
        published_words(assumed),
    )
    return LlamaCppBreakdown(
        workload="inference",
        title=gettext(
            "%(model)s, inference under %(engine)s, GGUF %(type)s%(kv)s, %(tokens)s × %(requests)s"
        ) % {
            "model": model.name, "engine": name, "type": need.weights.quant_type,
            "kv": gettext(", q8_0 KV cache") if kv_bits == 8 else "",
            "tokens": nouns.tokens(context), "requests": nouns.requests(requests)},
        items=(weights, cache, replace(compute, per_gpu=True), context_item),
        assumptions=assumptions,
        precision=precision,
        split_by_layers=layers,
        split_items=(need.pipeline_item,) if need.pipeline_item else (),
        inputs={"model": model.slug, "model_name": model.name, "precision": precision, "context": context,
                "requests": requests, "kv_bits": kv_bits, "engine": engine,
                "quantization": need.weights.quant_type, "quantization_asked": bool(quantization),
                "engine_version": build.text or None, "flash_attention": settings.flash_attention,
                "kv_unified": settings.kv_unified, "gpu_layers": gpu_layers},
        gguf=assumed,
        capacity=Capacity(model, precision, kv_bits, context, requests, engine=engine,
                          quantization=need.weights.quant_type if quantization else None,
                          published=model.gguf_files, build=build, flash_attention=settings.flash_attention,
                          kv_unified=settings.kv_unified, gpu_layers=gpu_layers),
        spec=model,
        settings=settings,
        offload_text=offloaded,
    )


def _cache_assumption(settings: LlamaCppSettings, context: int, requests: int) -> str:
    """What the answer assumed of the cache: its tokens and type, flash attention on or off (-fa), and
    --kv-unified's one pool where asked."""
    values = {"requests": fmt_int(requests), "context": fmt_int(context),
              "total": fmt_int(context * requests), "type": settings.cache_type_k}
    if settings.flash_attention:
        words = gettext(
            "The KV cache holds %(requests)s × %(context)s tokens (-c %(total)s, -np %(requests)s) in "
            "%(type)s; flash attention on."
        ) % values
    else:
        words = gettext(
            "The KV cache holds %(requests)s × %(context)s tokens (-c %(total)s, -np %(requests)s) in "
            "%(type)s; flash attention off (-fa off): the compute buffer holds the attention scores of the "
            "whole context."
        ) % values
    if settings.kv_unified:
        words += " " + gettext(
            "--kv-unified: one KV pool the %(requests)s slots share, no stream per slot; a request may take "
            "more than %(context)s tokens of it while the others take less."
        ) % values
    return words


def gpu_layers_setting(engine: str, gpu_layers: int) -> str:
    """-ngl N as the engine's command writes it: "-ngl 40", or Ollama's "num_gpu 40"."""
    return f"{'num_gpu' if engine == 'ollama' else '-ngl'} {gpu_layers}"


def offload_words(engine: str, need: LlamaCppNeed) -> str | None:
    """Where -ngl N (Ollama's num_gpu N) leaves part of the model in host memory: how many layers, and
    whether the output head, sit on the GPUs as the build places them (`llamacpp.offload_placement`), and
    that the rest, their KV cache and the token embeddings stay in host memory and run on the CPU, slower.
    None where every layer and the head are on the GPUs."""
    settings = need.settings
    layers = model_value(need.model, "layers")
    if settings.gpu_layers is None or (need.gpu_layers == layers and need.output_on_gpu):
        return None
    asked = gpu_layers_setting(engine, settings.gpu_layers)
    rest = layers - need.gpu_layers
    values = {"setting": asked, "layers": fmt_int(need.gpu_layers), "all": fmt_int(layers),
              "rest": fmt_int(rest), "host": fmt_gib(need.host_bytes)}
    if not rest:
        return gettext(
            "%(setting)s: all %(all)s layers on the GPUs; the output head stays in host memory with the "
            "token embeddings (%(host)s) and runs on the CPU, slower") % values
    if need.output_on_gpu:
        return ngettext(
            "%(setting)s: %(layers)s of %(all)s layers and the output head on the GPUs; the other layer "
            "and its KV cache stay in host memory with the token embeddings (%(host)s) and run on the CPU, "
            "slower",
            "%(setting)s: %(layers)s of %(all)s layers and the output head on the GPUs; the other %(rest)s "
            "layers and their KV cache stay in host memory with the token embeddings (%(host)s) and run on "
            "the CPU, slower", rest) % values
    return ngettext(
        "%(setting)s: %(layers)s of %(all)s layers on the GPUs; the other layer, its KV cache and the "
        "output head stay in host memory with the token embeddings (%(host)s) and run on the CPU, slower",
        "%(setting)s: %(layers)s of %(all)s layers on the GPUs; the other %(rest)s layers, their KV cache "
        "and the output head stay in host memory with the token embeddings (%(host)s) and run on the CPU, "
        "slower", rest) % values
