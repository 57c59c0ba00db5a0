"""Holds the sizing engine's estimates against memory measured while the workload really runs.

Every model is built from a configuration reconstructed from the catalog's published figures plus the
architecture's known configuration keys, with random weights (transformers `from_config`): nothing is
downloaded. For each case the sizing engine is called with the same inputs, and a Markdown table of
estimate, measured memory, ratio and the items that explain the difference is written.

    python -m tests.accuracy.measure --device cuda --out accuracy-gpu.md --json accuracy-gpu.json
    python -m tests.accuracy.measure --device cpu --tiny --out /tmp/accuracy.md      # plumbing only
    python -m tests.accuracy.measure --dry-run --out accuracy-plan.md                 # estimates, no runs

On CUDA each case runs in its own process by default, so the driver-level figure includes that
process's CUDA context, as a user's process would. With --tiny the models are a few layers of width 64
and what is measured on the CPU is process memory, not GPU memory: those figures mean nothing.
"""
from __future__ import annotations

import os

# Nothing may be fetched: the models are built from configurations, never from published weights.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import fnmatch  # noqa: E402
import gc  # noqa: E402
import importlib.util  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

from catalog.data.image_pipelines import IMAGE_PIPELINES  # noqa: E402
from catalog.data.language_models import LANGUAGE_MODELS  # noqa: E402
from catalog.data.speech_models import SPEECH_MODELS  # noqa: E402
from catalog.hf_config import estimate_parameters_from_config  # noqa: E402
from sizing.architectures import architecture_from_dict  # noqa: E402
from sizing.breakdown import Breakdown  # noqa: E402
from sizing.calculators import (  # noqa: E402
    DEFAULT_LORA_RANK,
    estimate_finetune,
    estimate_image,
    estimate_inference,
    estimate_speech,
)
from sizing.specs import ImageComponent, ImagePipelineSpec, LanguageModelSpec, SpeechModelSpec  # noqa: E402
from sizing.units import gib_display  # noqa: E402

RESULT_PREFIX = "ACCURACY-RESULT "
DEFAULT_PREFILL_CHUNK = 8192  # tokens per request per forward pass, as serving engines chunk long prefills
TINY_PREFILL_CHUNK = 16
OPTIMIZER_STEPS = 2
GPU_COMMAND = "python -m tests.accuracy.measure --device cuda --out accuracy-gpu.md --json accuracy-gpu.json"

# --- model configurations -------------------------------------------------------------------------------

# Keys the catalog does not hold but the architecture needs to be built as published. Keys that do not
# change memory (rope scaling, norm epsilons) are left at the library's defaults.
LANGUAGE_ARCHITECTURES: dict[str, tuple[str, dict]] = {
    "llama-3-2-1b": ("llama", {"tie_word_embeddings": True}),
    "llama-3-2-3b": ("llama", {"tie_word_embeddings": True}),
    "llama-3-1-8b": ("llama", {"tie_word_embeddings": False}),
    "qwen2-5-7b": ("qwen2", {"tie_word_embeddings": False, "use_sliding_window": False}),
    "qwen2-5-14b": ("qwen2", {"tie_word_embeddings": False, "use_sliding_window": False}),
    "mistral-7b-v0-3": ("mistral", {"tie_word_embeddings": False, "sliding_window": None}),
    "gemma-2-9b": ("gemma2", {
        "tie_word_embeddings": True, "sliding_window": 4096, "query_pre_attn_scalar": 256,
        "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
        "hidden_activation": "gelu_pytorch_tanh",
    }),
    "phi-3-mini-4k": ("phi3", {"tie_word_embeddings": False, "sliding_window": 2047,
                               "original_max_position_embeddings": 4096}),
    # Gemma 3: five sliding-window layers to one global (sliding_window_pattern 6, transformers' default).
    "gemma-3-1b": ("gemma3_text", {"tie_word_embeddings": True, "sliding_window": 512,
                                   "query_pre_attn_scalar": 256}),
    "gemma-3-12b": ("gemma3_text", {"tie_word_embeddings": True, "sliding_window": 1024,
                                    "query_pre_attn_scalar": 256}),
    "gemma-3-27b": ("gemma3_text", {"tie_word_embeddings": True, "sliding_window": 1024,
                                    "query_pre_attn_scalar": 168}),
}
# Checkpoints that load a vision tower with the language model (Gemma 3 4B/12B/27B): the real model nests
# the text configuration and adds SigLIP (27 layers, 1,152 wide, 896 px, no head) and its projector, so the
# parameter count is the catalog's. The tiny stand-ins stay text-only.
VISION_CONFIGS: dict[str, tuple[str, dict]] = {
    slug: ("gemma3", {"vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
                                        "num_attention_heads": 16, "patch_size": 14, "image_size": 896,
                                        "vision_use_head": False},
                      "mm_tokens_per_image": 256, "tie_word_embeddings": True})
    for slug in ("gemma-3-12b", "gemma-3-27b")
}
# Token ids inside every vocabulary, the tiny ones too; they change nothing about memory.
TOKEN_IDS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
LORA_TARGETS = {"phi3": ["qkv_proj", "o_proj"]}  # Phi-3 fuses q, k and v into one projection
DEFAULT_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]

TINY_LANGUAGE = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                 "head_dim": 16, "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 512}
TINY_SLIDING_WINDOW = 24
TINY_WHISPER = {"d_model": 64, "encoder_layers": 2, "decoder_layers": 2, "attention_heads": 4,
                "vocab_size": 256, "num_mel_bins": 16, "max_source_positions": 25, "max_target_positions": 16}

LANGUAGE_BY_SLUG = {row["slug"]: row for row in LANGUAGE_MODELS}
SPEECH_BY_SLUG = {row["slug"]: row for row in SPEECH_MODELS}
IMAGE_BY_SLUG = {row["slug"]: row for row in IMAGE_PIPELINES}


def language_config(slug: str, tiny: bool = False) -> tuple[str, dict]:
    """(model_type, configuration keys) for a catalog language model, or its tiny stand-in."""
    model_type, architecture = LANGUAGE_ARCHITECTURES[slug]
    row = LANGUAGE_BY_SLUG[slug]
    config = {
        "hidden_size": row["hidden_size"], "num_hidden_layers": row["layers"],
        "num_attention_heads": row["attention_heads"], "num_key_value_heads": row["kv_heads"],
        "head_dim": row["head_dim"], "intermediate_size": row["intermediate_size"],
        "vocab_size": row["vocab_size"], "max_position_embeddings": row["max_context"],
        **architecture, **TOKEN_IDS,
    }
    if tiny:
        config.update(TINY_LANGUAGE)
        if row["kv_heads"] == row["attention_heads"]:
            config["num_key_value_heads"] = config["num_attention_heads"]
        if config.get("sliding_window"):
            config["sliding_window"] = TINY_SLIDING_WINDOW
        if "original_max_position_embeddings" in config:
            config["original_max_position_embeddings"] = config["max_position_embeddings"]
    elif slug in VISION_CONFIGS:
        model_type, outer = VISION_CONFIGS[slug]
        text = {key: value for key, value in config.items() if key not in TOKEN_IDS}
        return model_type, {**outer, "text_config": text, **TOKEN_IDS}
    return model_type, config


def language_spec(slug: str, tiny: bool = False) -> LanguageModelSpec:
    """The spec the sizing engine gets: the catalog's figures, or the tiny configuration's."""
    row = LANGUAGE_BY_SLUG[slug]
    if not tiny:
        return LanguageModelSpec(
            slug=slug, name=row["name"], parameters=row["parameters"], layers=row["layers"],
            attention_heads=row["attention_heads"], kv_heads=row["kv_heads"], head_dim=row["head_dim"],
            hidden_size=row["hidden_size"], intermediate_size=row["intermediate_size"],
            vocab_size=row["vocab_size"], max_context=row["max_context"],
            tied_embeddings=row.get("tied_embeddings", False),
            architecture=architecture_from_dict(row.get("architecture")),
        )
    model_type, config = language_config(slug, tiny=True)
    return LanguageModelSpec(
        slug=f"{slug}-tiny", name=f"{row['name']} (tiny)",
        parameters=estimate_parameters_from_config({"model_type": model_type, **config}),
        layers=config["num_hidden_layers"], attention_heads=config["num_attention_heads"],
        kv_heads=config["num_key_value_heads"], head_dim=config["head_dim"],
        hidden_size=config["hidden_size"], intermediate_size=config["intermediate_size"],
        vocab_size=config["vocab_size"], max_context=config["max_position_embeddings"],
        tied_embeddings=bool(config.get("tie_word_embeddings", False)),
    )


def speech_config(slug: str, tiny: bool = False) -> dict:
    row = {**SPEECH_BY_SLUG[slug]}
    if tiny:
        row.update(TINY_WHISPER)
    # Whisper's feed-forward width is 4 × d_model in every published size; large-v3 listens on 128 mel bins.
    mel_bins = row.get("num_mel_bins") or (128 if slug == "whisper-large-v3" else 80)
    return {
        "d_model": row["d_model"], "encoder_layers": row["encoder_layers"],
        "decoder_layers": row["decoder_layers"], "encoder_attention_heads": row["attention_heads"],
        "decoder_attention_heads": row["attention_heads"], "encoder_ffn_dim": 4 * row["d_model"],
        "decoder_ffn_dim": 4 * row["d_model"], "vocab_size": row["vocab_size"], "num_mel_bins": mel_bins,
        "max_source_positions": row["max_source_positions"],
        "max_target_positions": row["max_target_positions"],
        "decoder_start_token_id": 1, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
        "suppress_tokens": None, "begin_suppress_tokens": None,
    }


def speech_spec(slug: str, tiny: bool = False) -> SpeechModelSpec:
    row = SPEECH_BY_SLUG[slug]
    config = speech_config(slug, tiny)
    if tiny:
        # No published figure exists for the stand-in: count what its configuration builds.
        parameters = count_parameters_on_meta("speech", "whisper", config)
        name, slug = f"{row['name']} (tiny)", f"{slug}-tiny"
    else:
        parameters, name = row["parameters"], row["name"]
    return SpeechModelSpec(
        slug=slug, name=name, parameters=parameters, decoder_layers=config["decoder_layers"],
        d_model=config["d_model"], attention_heads=config["decoder_attention_heads"],
        max_source_positions=config["max_source_positions"],
        max_target_positions=config["max_target_positions"],
    )


def image_spec(slug: str) -> ImagePipelineSpec:
    row = IMAGE_BY_SLUG[slug]
    return ImagePipelineSpec(
        slug=slug, name=row["name"],
        components=tuple(ImageComponent(name, role, parameters) for name, role, parameters in row["components"]),
        native_resolution=row.get("native_resolution"),
    )


# --- cases ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    workload: str  # inference | finetune | speech | qlora | image
    model: str  # catalog slug
    tokens: int = 0  # inference: context per request; fine-tuning: sequence length
    count: int = 1  # requests, batch size or audio streams
    full_logits: bool = False  # inference: logits for every position, as a plain forward call returns

    @property
    def case_id(self) -> str:
        if self.workload in ("inference", "finetune", "qlora"):
            suffix = ":full-logits" if self.full_logits else ""
            return f"{self.workload}:{self.model}:{self.tokens}x{self.count}{suffix}"
        if self.workload == "speech":
            return f"speech:{self.model}:{self.count}"
        return f"{self.workload}:{self.model}"


def _inference(model, *contexts):
    return [Case("inference", model, context, requests) for context, requests in contexts]


GPU_CASES = [
    *_inference("llama-3-2-1b", (4096, 1), (32768, 1), (8192, 16)),
    Case("inference", "llama-3-2-1b", 32768, 1, full_logits=True),
    *_inference("llama-3-2-3b", (4096, 1), (32768, 4)),
    *_inference("llama-3-1-8b", (4096, 1), (32768, 1), (131072, 1)),
    *_inference("qwen2-5-7b", (4096, 1), (32768, 1)),
    *_inference("qwen2-5-14b", (4096, 1), (32768, 1)),
    *_inference("mistral-7b-v0-3", (4096, 1), (32768, 1)),
    *_inference("gemma-2-9b", (4096, 1), (8192, 4)),
    *_inference("phi-3-mini-4k", (2048, 1), (4096, 8)),
    *_inference("gemma-3-27b", (8192, 1), (32768, 1)),
    *_inference("gemma-3-12b", (32768, 1)),
    *_inference("gemma-3-1b", (32768, 1), (8192, 8)),
    Case("finetune", "llama-3-1-8b", 512, 1),
    Case("finetune", "llama-3-1-8b", 512, 8),
    Case("finetune", "llama-3-1-8b", 2048, 1),
    Case("finetune", "llama-3-1-8b", 2048, 8),
    Case("speech", "whisper-large-v3", count=1),
    Case("speech", "whisper-large-v3", count=8),
    Case("qlora", "llama-3-1-8b", 2048, 1),
    Case("image", "stable-diffusion-xl"),
]

TINY_CASES = [
    *[Case("inference", slug, 32, 2) for slug in LANGUAGE_ARCHITECTURES],
    Case("inference", "llama-3-2-1b", 32, 2, full_logits=True),
    Case("finetune", "llama-3-2-1b", 16, 2),
    Case("finetune", "phi-3-mini-4k", 16, 2),
    Case("speech", "whisper-large-v3", count=1),
    Case("speech", "whisper-large-v3", count=2),
    Case("qlora", "llama-3-2-1b", 16, 2),
    Case("image", "stable-diffusion-xl"),
]


def select_cases(patterns: list[str] | None, tiny: bool) -> list[Case]:
    cases = TINY_CASES if tiny else GPU_CASES
    if not patterns:
        return list(cases)
    chosen = [case for case in cases if any(fnmatch.fnmatchcase(case.case_id, p) for p in patterns)]
    if not chosen:
        raise SystemExit(f"No case matches {patterns}; known: {', '.join(c.case_id for c in cases)}")
    return chosen


def spec_for(case: Case, tiny: bool):
    if case.workload in ("inference", "finetune", "qlora"):
        return language_spec(case.model, tiny)
    if case.workload == "speech":
        return speech_spec(case.model, tiny)
    return image_spec(case.model)


def estimate_for(case: Case, tiny: bool) -> Breakdown:
    """Our sizing engine's answer for exactly the inputs the case runs."""
    spec = spec_for(case, tiny)
    if case.workload == "inference":
        return estimate_inference(spec, 16, case.tokens, case.count)
    if case.workload in ("finetune", "qlora"):
        precision = 4 if case.workload == "qlora" else 16
        return estimate_finetune(spec, precision, case.tokens, case.count, lora_rank=DEFAULT_LORA_RANK)
    if case.workload == "speech":
        return estimate_speech(spec, 16, case.count, beams=1)  # the run decodes one sequence per stream
    return estimate_image(spec, 16)


def not_measurable_reason(case: Case) -> str | None:
    """Why a case cannot run here, or None when it can."""
    if case.workload == "qlora":
        if importlib.util.find_spec("bitsandbytes") is None:
            return "not measured: bitsandbytes is not installed (carry its wheel to measure QLoRA)"
        return ("not measured: bitsandbytes is installed, but quantizing a randomly initialised model is "
                "not implemented in this script yet")
    if case.workload == "image":
        if importlib.util.find_spec("diffusers") is None:
            return "not measured: diffusers is not installed (carry its wheel to measure image pipelines)"
        return ("not measured: diffusers is installed, but building its pipelines from configurations is "
                "not implemented in this script yet")
    return None


# --- memory probes --------------------------------------------------------------------------------------

class CudaProbe:
    """Peak memory of one case on a CUDA GPU.

    Driver level: the device's used memory, sampled every few milliseconds while the case runs, less
    what was in use before this process created its CUDA context (read through NVML when available).
    It therefore includes the CUDA context, library workspaces and the allocator's cache, as a user
    watching nvidia-smi would see them. Framework level: torch's peak allocated and reserved bytes.
    """

    kind = "cuda"

    def __init__(self, torch, baseline_bytes: int | None, nvml_handle):
        self.torch = torch
        self.baseline_bytes = baseline_bytes
        self.nvml_handle = nvml_handle
        self.peak_used_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample_until_stopped, daemon=True)

    def device_used_bytes(self) -> int:
        if self.nvml_handle is not None:
            import pynvml

            return int(pynvml.nvmlDeviceGetMemoryInfo(self.nvml_handle).used)
        free, total = self.torch.cuda.mem_get_info()
        return int(total - free)

    def sample(self) -> None:
        self.peak_used_bytes = max(self.peak_used_bytes, self.device_used_bytes())

    def _sample_until_stopped(self) -> None:
        while not self._stop.wait(0.005):
            self.sample()

    def __enter__(self):
        self.torch.cuda.synchronize()
        gc.collect()
        self.torch.cuda.empty_cache()
        self.torch.cuda.reset_peak_memory_stats()
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self.torch.cuda.synchronize()
        self.sample()
        self._stop.set()
        self._thread.join()
        return False

    def result(self) -> dict:
        return {
            "kind": self.kind,
            "driver_bytes": self.peak_used_bytes - (self.baseline_bytes or 0),
            "driver_baseline_bytes": self.baseline_bytes,
            "reserved_bytes": int(self.torch.cuda.max_memory_reserved()),
            "allocated_bytes": int(self.torch.cuda.max_memory_allocated()),
        }


class CpuProbe:
    """Growth of the process's peak resident memory during a case. Not GPU memory, and zero when an
    earlier case already pushed the peak higher: on the CPU this only proves the plumbing runs."""

    kind = "cpu-rss"

    def __enter__(self):
        gc.collect()
        self.before = self._peak_rss_bytes()
        return self

    def __exit__(self, *exc_info):
        self.after = self._peak_rss_bytes()
        return False

    def sample(self) -> None:
        """Nothing to sample: the kernel keeps the peak."""

    @staticmethod
    def _peak_rss_bytes() -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB

    def result(self) -> dict:
        return {"kind": self.kind, "driver_bytes": self.after - self.before, "driver_baseline_bytes": None,
                "reserved_bytes": None, "allocated_bytes": None}


def _nvml_handle():
    """NVML handle of GPU 0 and the device's use before this process's CUDA context, when NVML is there."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        return handle, int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
    except Exception:  # NVML missing or not usable in this container: fall back to cudaMemGetInfo
        return None, None


# --- running the workloads ------------------------------------------------------------------------------

def _quiet_libraries() -> None:
    warnings.filterwarnings("ignore")
    try:
        from transformers.utils import logging as transformers_logging

        transformers_logging.set_verbosity_error()
    except ImportError:
        pass


def _build(auto_class, config, torch, device: str):
    import transformers

    dtype_key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    with torch.device(device):
        return auto_class.from_config(config, **{dtype_key: torch.bfloat16})


def count_parameters_on_meta(kind: str, model_type: str, config_keys: dict) -> int:
    """Parameters of the model a configuration builds, without allocating its weights."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSpeechSeq2Seq

    _quiet_libraries()
    config = AutoConfig.for_model(model_type, **config_keys)
    auto_class = AutoModelForSpeechSeq2Seq if kind == "speech" else AutoModelForCausalLM
    model = _build(auto_class, config, torch, "meta")
    return sum(parameter.numel() for parameter in model.parameters())


def _tensor_bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if t is not None and hasattr(t, "element_size"))


def cache_bytes_and_tokens(cache) -> tuple[int, int]:
    """Bytes a transformers cache holds and the most tokens any of its layers keeps."""
    if cache is None:
        return 0, 0
    parts = [getattr(cache, name, None) for name in ("self_attention_cache", "cross_attention_cache")]
    if any(part is not None for part in parts):  # encoder-decoder cache: add both halves
        results = [cache_bytes_and_tokens(part) for part in parts if part is not None]
        return sum(r[0] for r in results), max(r[1] for r in results)
    tensors = []
    if getattr(cache, "layers", None) is not None:
        for layer in cache.layers:
            tensors += [getattr(layer, "keys", None), getattr(layer, "values", None)]
    else:  # older transformers
        tensors = list(getattr(cache, "key_cache", [])) + list(getattr(cache, "value_cache", []))
    tensors = [t for t in tensors if t is not None and hasattr(t, "shape") and t.dim() >= 3]
    return _tensor_bytes(tensors), max((t.shape[-2] for t in tensors), default=0)


def _model_details(model) -> dict:
    return {
        "parameters_built": sum(p.numel() for p in model.parameters()),
        "weights_bytes": _tensor_bytes(list(model.parameters()) + list(model.buffers())),
        "attention_implementation": getattr(model.config, "_attn_implementation", None),
    }


def _run_inference(case: Case, tiny: bool, torch, device: str, probe, prefill_chunk: int) -> dict:
    from transformers import AutoConfig, AutoModelForCausalLM, DynamicCache

    model_type, keys = language_config(case.model, tiny)
    config = AutoConfig.for_model(model_type, **keys)
    model = _build(AutoModelForCausalLM, config, torch, device).eval()
    details = _model_details(model)
    forward_parameters = inspect.signature(model.forward).parameters
    cache_keyword = "cache" if "cache" in forward_parameters else "past_key_values"
    try:
        cache = DynamicCache(config=config)
    except TypeError:  # older transformers build the layers as tokens arrive
        cache = DynamicCache()
    extra = {}
    if not case.full_logits:
        # generate() and serving engines compute logits for the last position only.
        for name in ("logits_to_keep", "num_logits_to_keep"):
            if name in forward_parameters:
                extra[name] = 1
                break
    chunk = case.tokens if case.full_logits else min(prefill_chunk, case.tokens)
    input_ids = torch.randint(3, config.vocab_size, (case.count, case.tokens), device=device)
    logits_shape = None
    with torch.inference_mode():
        for start in range(0, case.tokens, chunk):
            output = model(input_ids=input_ids[:, start:start + chunk], use_cache=True,
                           **{cache_keyword: cache}, **extra)
            cache = output.past_key_values if output.past_key_values is not None else cache
            logits_shape = list(output.logits.shape)
            probe.sample()
            del output
    if device == "cuda":
        torch.cuda.synchronize()
    kv_cache_bytes, cached_tokens = cache_bytes_and_tokens(cache)
    details.update({
        "kv_cache_bytes": kv_cache_bytes, "most_tokens_cached_per_layer": cached_tokens,
        "prefill_chunk_tokens": chunk, "chunks": -(-case.tokens // chunk), "logits_shape": logits_shape,
    })
    del model, cache, input_ids
    return details


def _run_finetune(case: Case, tiny: bool, torch, device: str, probe) -> dict:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    model_type, keys = language_config(case.model, tiny)
    config = AutoConfig.for_model(model_type, use_cache=False, **keys)
    model = _build(AutoModelForCausalLM, config, torch, device)
    details = _model_details(model)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    lora = LoraConfig(r=DEFAULT_LORA_RANK, lora_alpha=2 * DEFAULT_LORA_RANK, lora_dropout=0.0,
                      target_modules=LORA_TARGETS.get(model_type, DEFAULT_LORA_TARGETS), task_type="CAUSAL_LM")
    model = get_peft_model(model, lora)
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-4)
    losses = []
    for _ in range(OPTIMIZER_STEPS):
        input_ids = torch.randint(3, config.vocab_size, (case.count, case.tokens), device=device)
        output = model(input_ids=input_ids, labels=input_ids)
        output.loss.backward()
        probe.sample()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(output.loss.detach()))
        probe.sample()
        del output, input_ids
    state_tensors = [t for state in optimizer.state.values() for t in state.values() if hasattr(t, "numel")]
    details.update({
        "trainable_parameters": sum(p.numel() for p in trainable),
        "trainable_dtype": str(trainable[0].dtype).replace("torch.", "") if trainable else None,
        "trainable_bytes": _tensor_bytes(trainable),
        "optimizer_state_bytes": _tensor_bytes(state_tensors),
        "optimizer_steps": OPTIMIZER_STEPS, "losses": losses,
        "lora_targets": LORA_TARGETS.get(model_type, DEFAULT_LORA_TARGETS),
    })
    del model, optimizer, trainable, state_tensors
    return details


def _run_speech(case: Case, tiny: bool, torch, device: str, probe) -> dict:
    from transformers import AutoConfig, AutoModelForSpeechSeq2Seq

    keys = speech_config(case.model, tiny)
    config = AutoConfig.for_model("whisper", **keys)
    model = _build(AutoModelForSpeechSeq2Seq, config, torch, device).eval()
    details = _model_details(model)
    frames = 2 * config.max_source_positions  # 30 s of log-mel frames: the encoder halves them to 1500
    features = torch.randn(case.count, config.num_mel_bins, frames, device=device, dtype=torch.bfloat16)
    decoder_ids = torch.randint(3, config.vocab_size, (case.count, config.max_target_positions), device=device)
    with torch.inference_mode():
        encoder_output = model.get_encoder()(input_features=features)
        probe.sample()
        # One decoder pass over all 448 positions fills the cache as far as greedy decoding would.
        output = model(encoder_outputs=encoder_output, decoder_input_ids=decoder_ids, use_cache=True)
        probe.sample()
        kv_cache_bytes, cached_tokens = cache_bytes_and_tokens(output.past_key_values)
        logits_shape = list(output.logits.shape)
        del output, encoder_output
    details.update({"kv_cache_bytes": kv_cache_bytes, "most_tokens_cached_per_layer": cached_tokens,
                    "input_frames": frames, "decoder_positions": config.max_target_positions,
                    "logits_shape": logits_shape})
    del model, features, decoder_ids
    return details


_PROCESS_STATE: dict = {}


def _probe_for(device: str, torch):
    if device != "cuda":
        return CpuProbe()
    if "nvml" not in _PROCESS_STATE:
        _PROCESS_STATE["nvml"] = _nvml_handle()  # before the CUDA context exists
    handle, baseline = _PROCESS_STATE["nvml"]
    return CudaProbe(torch, baseline, handle)


def measure_case(case: Case, device: str, tiny: bool, prefill_chunk: int) -> dict:
    """Run one case in this process and return its measurements (or why it could not run)."""
    reason = not_measurable_reason(case)
    if reason:
        return {"status": "not measured", "reason": reason}
    import torch

    _quiet_libraries()
    torch.manual_seed(0)
    probe = _probe_for(device, torch)
    started = time.monotonic()
    try:
        with probe:
            if case.workload == "inference":
                details = _run_inference(case, tiny, torch, device, probe, prefill_chunk)
            elif case.workload == "finetune":
                details = _run_finetune(case, tiny, torch, device, probe)
            else:
                details = _run_speech(case, tiny, torch, device, probe)
            gc.collect()
    except Exception as error:  # an out-of-memory is a result too: report it and go on
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
        return {"status": "failed", "reason": f"{type(error).__name__}: {str(error).splitlines()[0][:300]}",
                "seconds": round(time.monotonic() - started, 2)}
    if device == "cuda":
        torch.cuda.empty_cache()
    return {"status": "measured", "measured": probe.result(), "details": details,
            "seconds": round(time.monotonic() - started, 2)}


def parameters_of_configuration(case: Case, tiny: bool) -> int:
    """What the case's reconstructed configuration builds, counted on the meta device (no memory)."""
    if case.workload == "speech":
        return count_parameters_on_meta("speech", "whisper", speech_config(case.model, tiny))
    model_type, keys = language_config(case.model, tiny)
    return count_parameters_on_meta("language", model_type, keys)


def plan_case(case: Case, tiny: bool) -> dict:
    """A dry run's row: nothing runs, but the configuration is built on the meta device so the table
    shows whether it matches the catalog's parameter count."""
    built = parameters_of_configuration(case, tiny)
    expected = spec_for(case, tiny).parameters
    check = ("matches the catalog's parameter count" if built == expected
             else f"builds {built:,} parameters where the catalog has {expected:,}")
    return {"status": "planned", "reason": f"not measured yet; its configuration {check}"}


def measure_case_isolated(case: Case, device: str, tiny: bool, prefill_chunk: int, timeout_s: int) -> dict:
    """Run one case in a fresh process, so its CUDA context and allocator start from nothing."""
    command = [sys.executable, "-m", "tests.accuracy.measure", "--run-one", case.case_id, "--device", device,
               "--prefill-chunk", str(prefill_chunk)] + (["--tiny"] if tiny else [])
    root = Path(__file__).resolve().parents[2]
    try:
        completed = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=timeout_s)  # noqa: S603
    except subprocess.TimeoutExpired:
        return {"status": "failed", "reason": f"did not finish within {timeout_s} s"}
    for line in completed.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    tail = (completed.stderr or completed.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"status": "failed", "reason": f"process ended with code {completed.returncode}: {tail[0][:300]}"}


# --- explaining and tabulating --------------------------------------------------------------------------

def _g(n_bytes: int | None) -> str:
    return "—" if n_bytes is None else f"{gib_display(n_bytes)} GiB"


def _item_bytes(breakdown: Breakdown, name: str) -> int:
    return sum(item.bytes for item in breakdown.items if item.name == name)


def explain(case: Case, breakdown: Breakdown, result: dict, spec_parameters: int | None = None) -> str:
    """Which items make up the estimate, and where the measured memory went."""
    composition = " + ".join(f"{item.name.lower()} {_g(item.bytes)}" for item in breakdown.items)
    parts = [f"Estimate: {composition}."]
    if result["status"] != "measured":
        if result.get("reason"):
            parts.append(result["reason"][0].upper() + result["reason"][1:] + ".")
        return " ".join(parts)
    measured, details = result["measured"], result["details"]
    if measured["kind"] != "cuda":
        parts.append("Measured: growth of the process's peak resident memory on the CPU, not GPU memory.")
    parameters = details.get("parameters_built")
    if parameters is not None and spec_parameters is not None and parameters != spec_parameters:
        parts.append(f"The built model has {parameters:,} parameters, the estimate counts {spec_parameters:,}.")
    weights = details.get("weights_bytes")
    if case.workload in ("inference", "speech"):
        cache_name = "KV cache" if case.workload == "inference" else "Decoder KV cache"
        parts.append(f"Held: weights {_g(weights)}, KV cache {_g(details.get('kv_cache_bytes'))} "
                     f"(estimated {_g(_item_bytes(breakdown, cache_name))}; at most "
                     f"{details.get('most_tokens_cached_per_layer'):,} tokens per layer).")
        held = (weights or 0) + (details.get("kv_cache_bytes") or 0)
    else:
        parts.append(f"Held: base weights {_g(weights)}, {details['trainable_parameters']:,} trainable "
                     f"parameters in {details['trainable_dtype']} ({_g(details['trainable_bytes'])}), "
                     f"AdamW state {_g(details['optimizer_state_bytes'])}.")
        held = (weights or 0) + 2 * details["trainable_bytes"] + details["optimizer_state_bytes"]
    if measured["allocated_bytes"] is not None:
        transient = measured["allocated_bytes"] - held
        parts.append(f"Peak allocated {_g(measured['allocated_bytes'])}, of which {_g(transient)} was working "
                     f"memory beyond what is held (margin {_g(_item_bytes(breakdown, 'Safety margin'))}).")
        parts.append(f"The allocator reserved {_g(measured['reserved_bytes'] - measured['allocated_bytes'])} "
                     "more than it handed out.")
        parts.append(f"CUDA context and libraries (driver − reserved): "
                     f"{_g(measured['driver_bytes'] - measured['reserved_bytes'])} (estimate allows "
                     f"{_g(_item_bytes(breakdown, 'CUDA runtime'))}).")
    if case.workload == "inference":
        how = (f"prefill in {details['chunks']} chunk(s) of {details['prefill_chunk_tokens']:,} tokens per "
               f"request, logits {'for every position' if case.full_logits else 'for the last position'}")
        parts.append(f"Run: {how}, attention {details.get('attention_implementation')}.")
    return " ".join(parts)


def build_row(case: Case, tiny: bool, result: dict) -> dict:
    breakdown = estimate_for(case, tiny)
    spec_parameters = getattr(spec_for(case, tiny), "parameters", None)
    row = {
        "case": case.case_id, "workload": case.workload, "model": case.model, "tokens": case.tokens,
        "count": case.count, "full_logits": case.full_logits, "estimate_bytes": breakdown.total_bytes,
        "estimate_items": [{"name": item.name, "bytes": item.bytes} for item in breakdown.items],
        **result,
    }
    measured = result.get("measured")
    # On the CPU the "measurement" is process memory: a ratio against it would only mislead.
    row["ratio"] = (round(breakdown.total_bytes / measured["driver_bytes"], 3)
                    if measured and measured["kind"] == "cuda" and measured["driver_bytes"] > 0 else None)
    row["spec_parameters"] = spec_parameters
    row["explanation"] = explain(case, breakdown, result, spec_parameters)
    return row


def table(rows: list[dict], mode: str) -> str:
    if mode == "cpu":
        measured_heads = ["Measured GiB (process peak RSS growth, not GPU memory)", "Measured GiB (torch reserved)"]
    else:
        measured_heads = ["Measured GiB (driver level, with CUDA context)", "Measured GiB (torch reserved)"]
    heads = ["Case", "Estimate GiB", *measured_heads, "Estimate ÷ measured", "What explains the difference"]
    lines = ["| " + " | ".join(heads) + " |", "|" + "|".join(["---"] * len(heads)) + "|"]
    for row in rows:
        measured = row.get("measured")
        if measured:
            driver = gib_display(measured["driver_bytes"])
            reserved = "—" if measured["reserved_bytes"] is None else gib_display(measured["reserved_bytes"])
        else:
            driver = reserved = {"planned": "not measured yet", "failed": "failed"}.get(row["status"], "not measured")
        ratio = "—" if row.get("ratio") is None else f"{row['ratio']:.2f}"
        cells = [f"`{row['case']}`", gib_display(row["estimate_bytes"]), driver, reserved, ratio,
                 row["explanation"].replace("|", "/")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --- what the GPU run should check ----------------------------------------------------------------------

def expected_gaps() -> list[str]:
    """Suspected differences, worked out from the configurations and the code paths, not measured."""
    notes = []
    full_logit_cases = [c for c in GPU_CASES if c.workload == "inference" and c.full_logits]
    for case in full_logit_cases:
        spec = language_spec(case.model)
        breakdown = estimate_for(case, tiny=False)
        logits16 = case.tokens * case.count * spec.vocab_size * 2
        notes.append(
            f"**Prefill logits over the whole vocabulary are not in the inference estimate.** A plain forward "
            f"call (no `logits_to_keep`) returns logits for every position: for `{case.case_id}` that is "
            f"{case.tokens:,} × {case.count} × {spec.vocab_size:,} × 2 bytes = {_g(logits16)} in 16-bit "
            f"({_g(2 * logits16)} if upcast to fp32), against a margin of "
            f"{_g(_item_bytes(breakdown, 'Safety margin'))} and a total estimate of {_g(breakdown.total_bytes)}. "
            "Expect measured above estimate for this case; serving engines and `generate()` keep only the last "
            "position's logits, which the other inference cases do."
        )
    mlp_rows = []
    for case in GPU_CASES:
        if case.workload != "inference" or case.full_logits:
            continue
        spec = language_spec(case.model)
        chunk = min(DEFAULT_PREFILL_CHUNK, case.tokens)
        mlp_bytes = 3 * chunk * case.count * spec.intermediate_size * 2
        margin = _item_bytes(estimate_for(case, tiny=False), "Safety margin")
        if mlp_bytes > margin // 2:
            mlp_rows.append(f"`{case.case_id}` {_g(mlp_bytes)} against a margin of {_g(margin)}")
    if mlp_rows:
        notes.append(
            "**Prefill working memory of the MLP.** Each forward pass holds the gate and up projections and "
            "their product for every token of the chunk: 3 × tokens × intermediate size × 2 bytes. Where "
            "this reaches half the margin or more, the margin may not cover it: " + "; ".join(mlp_rows) + ". "
            "Unchunked prefill of long contexts makes this larger still."
        )
    gemma = next(c for c in GPU_CASES if c.model == "gemma-2-9b" and c.count > 1)
    gemma_spec = language_spec(gemma.model)
    scores = gemma.count * gemma_spec.attention_heads * min(DEFAULT_PREFILL_CHUNK, gemma.tokens) * gemma.tokens
    notes.append(
        "**Gemma 2 runs eager attention in transformers** (its logit soft-capping), so the attention scores "
        f"are materialised: for `{gemma.case_id}` at least {gemma.count} × {gemma_spec.attention_heads} heads × "
        f"{gemma.tokens:,} × {gemma.tokens:,} × (2 bytes + 4 bytes for the fp32 softmax) = {_g(6 * scores)} "
        f"for one layer, against a margin of {_g(_item_bytes(estimate_for(gemma, False), 'Safety margin'))}. "
        "Expect measured above estimate there; engines with soft-capping flash attention avoid it."
    )
    window_rows = []
    for case in GPU_CASES:
        # Phi-3 mini's row does not declare its window (Gemma 2's declares it, and the estimate sizes it).
        if case.workload != "inference" or case.model != "phi-3-mini-4k":
            continue
        spec = language_spec(case.model)
        window = LANGUAGE_ARCHITECTURES[case.model][1]["sliding_window"]
        per_token = 2 * spec.kv_heads * spec.head_dim * 2 * case.count
        held = spec.layers * per_token * min(case.tokens, window - 1)
        estimated = _item_bytes(estimate_for(case, False), "KV cache")
        if held < estimated:
            window_rows.append(f"`{case.case_id}` holds {_g(held)} where {_g(estimated)} is estimated")
    if window_rows:
        notes.append(
            "**Sliding-window layers keep fewer tokens than the estimate counts** (an over-estimate, on the safe "
            "side): Phi-3 mini uses a 2,047-token window on every layer, which its catalog row does not declare; "
            "transformers' cache keeps window − 1 tokens in those layers. "
            + "; ".join(window_rows) + "."
        )
    finetune_rows = []
    for case in GPU_CASES:
        if case.workload != "finetune":
            continue
        spec = language_spec(case.model)
        breakdown = estimate_for(case, False)
        extra_logits = case.tokens * case.count * spec.vocab_size * (2 + 4 + 2)
        quadratic = 5 * spec.attention_heads * case.tokens**2 * case.count
        finetune_rows.append(
            f"`{case.case_id}`: logits counted {_g(_item_bytes(breakdown, 'Logits'))}, possible extra "
            f"{_g(extra_logits)}; attention-score term counted {_g(quadratic)}; margin "
            f"{_g(_item_bytes(breakdown, 'Safety margin'))}"
        )
    notes.append(
        "**Fine-tuning logits may need more than the fp32 copy we count.** transformers computes the loss on "
        "logits upcast to fp32, so the 16-bit logits (2 bytes), the fp32 copy (4 bytes, counted) and, in the "
        "backward pass, the gradient of the 16-bit logits (2 bytes) and of the fp32 copy (4 bytes) can be "
        "alive at once. Against that, the recomputed layer's 5·a·s² attention-score term is not "
        "materialised when attention runs through SDPA's flash or memory-efficient kernels, so the estimate "
        "counts memory that is not used. Per case: " + "; ".join(finetune_rows) + "."
    )
    notes.append(
        "**LoRA adapters are kept in fp32 by peft** (it upcasts adapter weights of a 16-bit base): 4 bytes "
        "weight + 4 gradient + 8 AdamW moments = 16 bytes per trainable parameter, the same total the "
        "estimate counts with a different split. Phi-3's fused qkv projection gives fewer adapter "
        "parameters than four separate projections."
    )
    notes.append(
        "**The 1 GiB CUDA runtime item** is checked against driver-level use minus torch's reserved memory "
        "(the context, kernels loaded on demand, library handles). No figure is assumed here: the GPU run "
        "measures it."
    )
    whisper = next(c for c in GPU_CASES if c.workload == "speech" and c.count > 1)
    whisper_row = SPEECH_BY_SLUG[whisper.model]
    whisper_logits = whisper.count * whisper_row["max_target_positions"] * whisper_row["vocab_size"] * 2
    notes.append(
        "**Whisper's decoder pass over all 448 positions** returns logits for each position: for "
        f"`{whisper.case_id}` {_g(whisper_logits)} in 16-bit, which greedy decoding (one position at a time) "
        "does not keep. The encoder's activations over 1,500 frames per stream come and go before the "
        "decoder runs; the margin is meant to cover them."
    )
    return notes


# --- the document ---------------------------------------------------------------------------------------

def environment(device: str) -> dict:
    versions = {}
    for package in ("torch", "transformers", "peft", "accelerate"):
        try:
            versions[package] = __import__(package).__version__
        except ImportError:
            versions[package] = "not installed"
    info = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(), "device": device, "versions": versions,
        "command": "python -m tests.accuracy.measure " + " ".join(sys.argv[1:]),
    }
    if device == "cuda":
        import torch

        properties = torch.cuda.get_device_properties(0)
        info.update({"gpu": properties.name, "gpu_memory_bytes": int(properties.total_memory),
                     "cuda": torch.version.cuda})
        try:
            import pynvml

            pynvml.nvmlInit()
            info["driver"] = pynvml.nvmlSystemGetDriverVersion()
        except Exception:  # NVML is optional
            info["driver"] = None
    else:
        info.update({"gpu": None, "cpu": platform.processor() or platform.machine()})
    return info


def render_document(rows: list[dict], env: dict, mode: str) -> str:
    """mode: "cuda" (a GPU run), "cpu" (tiny plumbing run) or "plan" (estimates only, nothing run)."""
    lines = ["# Accuracy: our estimates against measured GPU memory", ""]
    if mode == "plan":
        lines += [
            "**The GPU table has not been measured yet.** The estimates below are what our sizing engine "
            "answers for each case; the measured columns stay empty until the command under *How to run "
            "it* has run on a CUDA machine. No figure on this page is a measurement.", "",
        ]
    elif mode == "cpu":
        lines += [
            "**Plumbing run on the CPU with tiny models (2 layers, width 64): the measured figures are process "
            "memory, not GPU memory, and mean nothing about accuracy.** The estimate column is what our "
            "sizing engine answers for those tiny configurations.", "",
        ]
    else:
        lines += [
            "Each case was built from its published configuration with random weights and run once on the "
            "GPU below, in a process of its own; the estimate is our sizing engine's answer for the same "
            "inputs.", "",
        ]
    versions = env["versions"]
    lines += ["## Where and when", ""]
    if env.get("gpu"):
        lines.append(f"- GPU: {env['gpu']}, {_g(env['gpu_memory_bytes'])}; driver {env.get('driver') or 'unknown'},"
                     f" CUDA {env.get('cuda')}")
    else:
        lines.append("- Device: the CPU, no GPU" if mode == "cpu" else
                     "- Device: none; nothing was run, only the estimates were computed (and each configuration "
                     "built on torch's meta device to check its parameter count), with the versions below")
    lines += [
        f"- torch {versions['torch']}, transformers {versions['transformers']}, peft {versions['peft']}, "
        f"accelerate {versions['accelerate']}, Python {env['python']}",
        f"- Date: {env['date']}",
        f"- Command: `{env['command']}`", "",
        "## Table", "",
        table(rows, "cpu" if mode == "cpu" else "cuda"), "",
        "## How it is measured", "",
        "- **Models** are built with `AutoConfig.for_model(model_type, ...)` from the catalog's figures "
        "(layers, heads, KV heads, head dimension, hidden and intermediate size, vocabulary, context) plus the "
        "architecture's own keys (tied embeddings, sliding windows, Gemma 2's soft-capping), then "
        "`from_config(..., dtype=bfloat16)` directly on the device with random weights. Nothing is "
        "downloaded (`HF_HUB_OFFLINE=1`).",
        "- **Inference**: one prefill of `context × requests` tokens into a `DynamicCache`, 16-bit. Long "
        f"prompts are fed in chunks of {DEFAULT_PREFILL_CHUNK:,} tokens per request (chunked prefill, as "
        "serving engines do); logits are kept for the last position only, as `generate()` does, except in "
        "the `full-logits` case, which is one plain forward call.",
        f"- **LoRA fine-tuning**: peft rank {DEFAULT_LORA_RANK} on q, k, v and o, 16-bit base, gradient "
        f"checkpointing, AdamW, {OPTIMIZER_STEPS} optimizer steps on random token ids with the inputs as labels.",
        "- **Whisper**: the encoder over 30 s of random log-mel input per stream, then one decoder pass over "
        "all 448 positions, which fills the self-attention and cross-attention cache as greedy decoding would.",
        "- **Driver level**: the device's used memory (NVML, or `cudaMemGetInfo`), sampled every 5 ms during "
        "the case, less what was in use before the process created its CUDA context: what `nvidia-smi` "
        "shows for the process. **Torch reserved / allocated**: `torch.cuda.max_memory_reserved()` and "
        "`max_memory_allocated()`.",
        "- **Ratio**: estimate ÷ driver-level measurement. Below 1 means a user following the estimate "
        "would run out of memory.",
        "- QLoRA and image pipelines need bitsandbytes and diffusers; without them those rows say so.", "",
        "## What we expect the GPU run to show", "",
        "Worked out from the configurations and the libraries' code paths, not measured. The GPU run "
        "confirms or refutes each; only then may a sizing formula change.", "",
        *[f"- {note}" for note in expected_gaps()], "",
        "## How to run it", "",
        "On a machine with an NVIDIA GPU (80 GB or more; a case that runs out of memory is reported as "
        "failed, with the error, and the run goes on) and CUDA builds of torch, transformers, peft and "
        "accelerate, from the repository root:",
        "", "```", GPU_COMMAND, "```", "",
        "It writes this page and the raw figures (`accuracy-gpu.json`). Every case runs in a process of its own; "
        "`--cases 'inference:llama-3-2-*'` picks cases by pattern, `--no-isolate` runs them in one process "
        "(faster, but later cases then share the first one's CUDA context).", "",
        "The project's own lock (`requirements-accuracy.lock`) pins the CPU build of torch and serves the "
        "test suite; the GPU machine uses its own CUDA build. A machine image that already holds torch, "
        "transformers, peft and accelerate needs no wheels carried for the language-model and Whisper cases "
        "(the script needs nothing else outside the repository: `sizing` and `catalog/data` are plain "
        "Python). To measure QLoRA and image pipelines, carry the `bitsandbytes` and `diffusers` wheels for "
        "the machine's Python and install them first. `nvidia-ml-py` (pynvml), where present, gives the "
        "pre-context baseline.", "",
        "The CPU path runs in the test suite (`tests/accuracy/test_measure_plumbing.py`):", "",
        "```", "python -m tests.accuracy.measure --device cpu --tiny --out /tmp/accuracy-tiny.md", "```", "",
    ]
    return "\n".join(lines)


# --- command line ---------------------------------------------------------------------------------------

def run(args) -> tuple[list[dict], str]:
    cases = select_cases(args.cases, args.tiny)
    isolate = args.isolate if args.isolate is not None else (args.device == "cuda")
    prefill_chunk = args.prefill_chunk or (TINY_PREFILL_CHUNK if args.tiny else DEFAULT_PREFILL_CHUNK)
    rows = []
    for case in cases:
        if args.dry_run:
            reason = not_measurable_reason(case)
            result = {"status": "not measured", "reason": reason} if reason else plan_case(case, args.tiny)
        elif isolate and not_measurable_reason(case) is None:
            result = measure_case_isolated(case, args.device, args.tiny, prefill_chunk, args.case_timeout)
        else:
            result = measure_case(case, args.device, args.tiny, prefill_chunk)
        row = build_row(case, args.tiny, result)
        rows.append(row)
        print(f"{row['case']}: {row['status']}, estimate {gib_display(row['estimate_bytes'])} GiB"
              + (f", measured {gib_display(row['measured']['driver_bytes'])} GiB" if row.get("measured") else ""),
              file=sys.stderr, flush=True)
    mode = "plan" if args.dry_run else ("cpu" if args.device == "cpu" else "cuda")
    env = environment("none" if args.dry_run else args.device)
    document = render_document(rows, env, mode)
    if args.out:
        Path(args.out).write_text(document, encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps({"environment": env, "mode": mode, "rows": rows}, indent=2),
                                   encoding="utf-8")
    return rows, document


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tests.accuracy.measure", description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--tiny", action="store_true", help="tiny stand-in models (figures mean nothing)")
    parser.add_argument("--cases", nargs="+", metavar="PATTERN", help="case ids or shell-style patterns")
    parser.add_argument("--out", help="write the Markdown document here (e.g. accuracy-gpu.md)")
    parser.add_argument("--json", help="write the raw rows here")
    parser.add_argument("--dry-run", action="store_true", help="estimates only; build and run nothing")
    parser.add_argument("--isolate", dest="isolate", action="store_true", default=None,
                        help="one process per case (default on CUDA)")
    parser.add_argument("--no-isolate", dest="isolate", action="store_false")
    parser.add_argument("--prefill-chunk", type=int, default=0, help="prefill tokens per request per pass")
    parser.add_argument("--case-timeout", type=int, default=600, help="seconds per isolated case")
    parser.add_argument("--run-one", help=argparse.SUPPRESS)  # used by --isolate's child processes
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.device == "cuda" and not args.dry_run:
        _PROCESS_STATE["nvml"] = _nvml_handle()  # the baseline, before torch creates a CUDA context
        import torch

        if not torch.cuda.is_available():
            print("No CUDA device is visible to torch; use --device cpu --tiny to test the plumbing.",
                  file=sys.stderr)
            return 2
    if args.run_one:
        (case,) = [c for c in (TINY_CASES if args.tiny else GPU_CASES) if c.case_id == args.run_one]
        result = measure_case(case, args.device, args.tiny, args.prefill_chunk or DEFAULT_PREFILL_CHUNK)
        print(RESULT_PREFIX + json.dumps(result), flush=True)
        return 0
    run(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
