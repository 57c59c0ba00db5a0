"""One entry point for the wizard, the API and the command: the workload's capabilities
(`sizing.workloads`) and the model's kind choose the calculator."""
from __future__ import annotations

from typing import cast

from ..breakdown import Breakdown
from ..errors import SizingError
from ..i18n import gettext
from ..specs import ImagePipelineSpec, LanguageModelSpec, SpeechModelSpec
from ..training import Training
from ..workloads import CODES, Workload
from ..workloads import workload as workload_named
from .checks import renamed, require
from .finetune import estimate_finetune
from .image import estimate_image
from .inference import estimate_inference
from .llamacpp_builds import NOT_GIVEN, LlamaCppBuild
from .llamacpp_inference import estimate_llamacpp
from .notebook import estimate_notebook
from .sglang_inference import estimate_sglang
from .speech import estimate_speech
from .vllm import GGUF_ENGINES, check_engine
from .vllm_inference import estimate_vllm
from .vllm_versions import DEFAULT_RELEASE, VllmRelease

# The catalog kind (as `Workload.kinds` names them) of each kind of model spec.
KIND_OF_SPEC = {LanguageModelSpec: "language", SpeechModelSpec: "speech", ImagePipelineSpec: "image"}


def estimate(
    workload: str,
    model: LanguageModelSpec | SpeechModelSpec | ImagePipelineSpec | None,
    precision: int | None,
    context: int | None,
    requests: int | None,
    memory_gib: float | None,
    kv_bits: int = 16,
    training: Training | None = None,
    engine: str = "transformers",
    quantization: str | None = None,
    vllm_release: VllmRelease = DEFAULT_RELEASE,
    llamacpp_build: LlamaCppBuild = NOT_GIVEN,
    flash_attention: bool = True,
    kv_unified: bool = False,
    gpu_layers: int | None = None,
) -> Breakdown:
    """Errors name this function's own inputs: a fine-tuning sequence length is reported as "context",
    a batch size or audio stream count as "requests", so a form can put the message on its field.
    `training` (how a fine-tune is run) is read by the fine-tuning workload only; others ignore it.
    `quantization` (a GGUF type) is read by llama.cpp and Ollama only: asked of another engine, refused.
    `vllm_release` (the vLLM release and its switches) is read under vLLM only, `llamacpp_build` (the logits
    its llama-server reserves, the cache it lays out) under llama.cpp, or as an Ollama release under Ollama;
    `flash_attention` under llama.cpp and Ollama, `kv_unified` (--kv-unified) under llama.cpp (the query
    refuses them under another engine: `nodelodge.recommendations.llamacpp_switches`), and `gpu_layers`
    (-ngl, Ollama's num_gpu; None: every layer and the output head) under llama.cpp and Ollama too.
    """
    chosen = workload_named(workload) if isinstance(workload, str) else None
    if chosen is None:
        raise SizingError(
            "workload",
            gettext("Unknown workload %(workload)s; choose one of %(choices)s.")
            % {"workload": repr(workload), "choices": ", ".join(CODES)},
        )
    if chosen.takes_memory:
        return estimate_notebook(
            require(memory_gib, "memory_gib", gettext("Enter the GPU memory the notebook needs.")))
    if model is None:
        raise SizingError("model", gettext("Choose a model."))
    spec = model
    precision = require(precision, "precision", gettext("Choose a precision."))
    kind = next((kind for kind_of, kind in KIND_OF_SPEC.items() if isinstance(spec, kind_of)), None)
    if kind not in chosen.kinds:
        raise SizingError("model", _not_sizable(chosen) % {"model": spec.name})
    if kind == "image":
        return estimate_image(cast(ImagePipelineSpec, spec), precision)
    if kind != "language" and check_engine(engine) != "transformers":
        raise SizingError("engine", gettext(
            "vLLM, SGLang, llama.cpp and Ollama are sized for language models only: choose transformers."))
    if quantization and check_engine(engine) not in GGUF_ENGINES:
        raise SizingError("quantization", gettext(
            "A GGUF quantization (%(type)s) is read by llama.cpp and Ollama only: choose the engine llamacpp "
            "or ollama, or leave the quantization empty and choose the precision."
        ) % {"type": quantization})
    if kind == "speech":
        streams = require(requests, "requests", gettext("Enter the number of concurrent audio streams."))
        with renamed({"streams": "requests"}):
            return estimate_speech(cast(SpeechModelSpec, spec), precision, streams, kv_bits=kv_bits)
    if not chosen.serves_tokens:  # a language workload that takes tokens but serves none trains
        sequence_length = require(context, "context", gettext("Enter the sequence length."))
        batch_size = require(requests, "requests", gettext("Enter the batch size."))
        with renamed({"sequence_length": "context", "batch_size": "requests"}):
            return estimate_finetune(cast(LanguageModelSpec, spec), precision, sequence_length, batch_size,
                                     training=training)
    context = require(context, "context", gettext("Enter the context per request."))
    requests = require(requests, "requests", gettext("Enter the number of concurrent requests."))
    language_model = cast(LanguageModelSpec, spec)
    if engine == "sglang":
        return estimate_sglang(language_model, precision, context, requests, kv_bits)
    if check_engine(engine) == "vllm":
        return estimate_vllm(language_model, precision, context, requests, kv_bits, release=vllm_release)
    if engine in GGUF_ENGINES:
        return estimate_llamacpp(language_model, precision, context, requests, kv_bits, engine=engine,
                                 quantization=quantization, build=llamacpp_build,
                                 flash_attention=flash_attention, kv_unified=kv_unified,
                                 gpu_layers=gpu_layers)
    return estimate_inference(language_model, precision, context, requests, kv_bits)


def _not_sizable(chosen: Workload) -> str:
    """Why a model of another kind cannot be sized for this workload (a "%(model)s" message)."""
    if "language" in chosen.kinds:
        if chosen.serves_tokens:
            return gettext("%(model)s cannot be run as a language model.")
        return gettext("%(model)s cannot be fine-tuned.")
    if "image" in chosen.kinds:
        return gettext("%(model)s is not an image-generation model.")
    return gettext("%(model)s is not a speech-recognition model.")
