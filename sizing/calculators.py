"""GPU-memory calculators for each workload (SPEC §3).

Every size is an exact whole number of bytes: fractional bytes (4-bit weights, QLoRA's 4.127 bits,
the 20 % margin) are rounded up once per item, so the items always add up to the total. Display
rounding to GiB happens elsewhere.
"""
from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from .architectures import PLAIN, count_parameters
from .breakdown import Breakdown, Item
from .errors import MissingModelValue, SizingError
from .kv_cache import check_kv_bits, is_plain, kv_cache_items
from .specs import PRECISIONS, ImagePipelineSpec, LanguageModelSpec, SpeechModelSpec
from .units import GIB, fmt_int
from .weights import native_format_of, native_weight_items, precision_choices, precision_label

# Exact bytes per parameter; the floats in specs.BYTES_PER_PARAMETER carry the same values.
WEIGHT_BYTES = {16: Fraction(2), 8: Fraction(1), 4: Fraction(1, 2)}
ACTIVATION_BYTES_PER_VALUE = 2  # 16-bit activations under mixed precision
LOGIT_BYTES_PER_VALUE = 4  # fp32 logits for the loss
MARGIN = Fraction(1, 5)
RUNTIME_BYTES = GIB
QLORA_BITS_PER_PARAMETER = Fraction(4127, 1000)  # NF4 with double quantization (Dettmers et al. 2023)
TRAINABLE_BYTES_PER_PARAMETER = 16  # 2 weight + 2 gradient + 4 + 4 AdamW moments + 4 fp32 master copy
DEFAULT_LORA_RANK = 16

# Beyond these the request is a typo, not a workload.
MAX_CONTEXT = 10_000_000
MAX_REQUESTS = 100_000
MAX_LORA_RANK = 65_536
MAX_NOTEBOOK_GIB = 10_000
LARGE_CONTEXT = 32_768

WORKLOADS = ("inference", "finetune", "image", "notebook", "speech")


def _gib_text(n_bytes: int) -> str:
    """GiB with two decimals, halves rounded up (15.625 GiB shows as 15.63, as people round)."""
    value = (Decimal(n_bytes) / Decimal(GIB)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{value:,} GiB"


# --- validation helpers ---------------------------------------------------------------------------------

def _check_precision(precision) -> int:
    if isinstance(precision, bool) or precision not in PRECISIONS:
        raise SizingError("precision", "Precision must be 16-bit, 8-bit or 4-bit.")
    return int(precision)


def _check_count(value, field: str, label: str, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SizingError(field, f"The {label} must be a whole number.")
    if value < 1:
        raise SizingError(field, f"The {label} must be at least 1.")
    if value > maximum:
        raise SizingError(field, f"The {label} may be at most {fmt_int(maximum)}.")
    return value


def _model_value(model, name: str) -> int:
    """A published figure the formula needs; missing is an error, never zero."""
    value = getattr(model, name)
    if value is None:
        raise MissingModelValue(model.name, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        label = name.replace("_", " ")
        raise SizingError("model", f"{model.name}: the {label} must be a positive whole number.")
    return value


def _check_context_limit(model: LanguageModelSpec, tokens: int, field: str, label: str) -> None:
    if model.max_context is not None and tokens > model.max_context:
        raise SizingError(
            field,
            f"{model.name} handles at most {fmt_int(model.max_context)} tokens; "
            f"the {label} of {fmt_int(tokens)} is above that limit.",
        )


# --- formatting helpers ---------------------------------------------------------------------------------

def _bytes_label(bytes_per_value: Fraction) -> str:
    number = f"{float(bytes_per_value):g}"
    return f"{number} byte" if bytes_per_value == 1 else f"{number} bytes"


def _plural(count: int, singular: str, plural: str | None = None) -> str:
    return f"{fmt_int(count)} {singular if count == 1 else (plural or singular + 's')}"


def _weights_item(name: str, parameters: int, precision: int) -> Item:
    bytes_per_parameter = WEIGHT_BYTES[precision]
    return Item(
        name=name,
        formula=f"{fmt_int(parameters)} parameters × {_bytes_label(bytes_per_parameter)} ({precision}-bit)",
        bytes=math.ceil(parameters * bytes_per_parameter),
    )


def _margin_item(items: list[Item], covers: str) -> Item:
    covered_bytes = sum(item.bytes for item in items)
    return Item(
        name="Safety margin",
        formula=f"20 % × {_gib_text(covered_bytes)} ({covers})",
        bytes=math.ceil(covered_bytes * MARGIN),
    )


def _runtime_item() -> Item:
    return Item(
        name="CUDA runtime",
        formula="1 GiB on every GPU (driver context, kernels, library workspaces)",
        bytes=RUNTIME_BYTES,
        per_gpu=True,
    )


FRAMEWORKS_DIFFER = (
    "Frameworks differ: vLLM reserves a fixed share of each GPU up front (gpu_memory_utilization, "
    "0.9 by default), so it may take more than this need; if you change such settings, keep an eye on "
    "the margin."
)


# --- language model, inference ---------------------------------------------------------------------------

def estimate_inference(
    model: LanguageModelSpec, precision: int, context: int, requests: int, kv_bits: int = 16
) -> Breakdown:
    precision = _check_precision(precision)
    context = _check_count(context, "context", "context", MAX_CONTEXT)
    requests = _check_count(requests, "requests", "number of concurrent requests", MAX_REQUESTS)
    kv_bits = check_kv_bits(kv_bits)
    arch = model.architecture or PLAIN
    parameters = _model_value(model, "parameters")
    _model_value(model, "layers")
    if arch.mla is None:
        _model_value(model, "kv_heads")
        _model_value(model, "head_dim")
    refused = precision_choices(model)[precision]
    if refused:
        raise SizingError("precision", refused)
    _check_context_limit(model, context, "context", "context")

    native = native_format_of(model)
    assumptions = []
    if native is not None and native.bits == precision:
        weight_items, weight_words = native_weight_items(model, count_parameters(model), native)
        assumptions += weight_words
    else:
        weight_items = [_weights_item("Model weights", parameters, precision)]
    kv_items, kv_words = kv_cache_items(model, context, requests, kv_bits)
    kv_cache_bytes = sum(item.bytes for item in kv_items)
    weights_bytes = sum(item.bytes for item in weight_items)
    covers = "model weights + KV cache" if is_plain(model) else "model weights + caches"
    margin = _margin_item([*weight_items, *kv_items], covers)
    items = (*weight_items, *kv_items, margin, _runtime_item())

    heads = model.attention_heads
    assumptions = kv_words + assumptions + [
        "The 20 % safety margin covers activations, temporary buffers and memory fragmentation.",
        FRAMEWORKS_DIFFER,
    ]
    if arch.moe is not None:
        assumptions.append(moe_words(model, arch.moe))
    if context >= LARGE_CONTEXT or kv_cache_bytes >= weights_bytes:
        assumptions.append(
            f"The KV cache grows with every token of context: {fmt_int(context)} tokens per request costs "
            f"{_gib_text(kv_cache_bytes)} here. Size the context to what your requests really use."
        )
    if heads is None:
        assumptions.append(
            f"{model.name} publishes no attention-head count, so it is sized for one GPU only."
        )
    else:
        assumptions.append(
            "Split over n GPUs of one machine (tensor parallelism), the weights, KV cache and margin divide "
            f"evenly, each GPU keeps its own 1 GiB runtime, and n must divide the {fmt_int(heads)} "
            "attention heads."
        )
        if arch.mla is None and model.kv_heads is not None and model.kv_heads < min(heads, 8):
            assumptions.append(
                f"With more GPUs than its {_plural(model.kv_heads, 'KV head')}, vLLM copies KV heads so that "
                "every GPU holds at least one; the cache then no longer divides evenly."
            )
    if model.max_context is None:
        assumptions.append("The model's maximum context is not recorded, so the context was not checked "
                           "against it.")

    kv_words_title = ", 8-bit KV cache" if kv_bits == 8 else ""
    return Breakdown(
        workload="inference",
        title=(f"{model.name}, inference, {precision_label(model, precision)}{kv_words_title}, "
               f"{_plural(context, 'token')} × {_plural(requests, 'request')}"),
        items=items,
        assumptions=tuple(assumptions),
        precision=precision,
        splittable_over_heads=heads,
        inputs={
            "model": model.slug,
            "model_name": model.name,
            "precision": precision,
            "context": context,
            "requests": requests,
            "kv_bits": kv_bits,
        },
    )


def moe_words(model: LanguageModelSpec, moe) -> str:
    counted = count_parameters(model) if model.hidden_size and model.vocab_size else None
    figures = (f" {fmt_int(counted.total)} parameters in all, {fmt_int(counted.active)} used per token"
               if counted else "")
    return (
        f"Mixture of experts: every one of the {fmt_int(moe.experts)} experts of each MoE layer is held in "
        f"memory, though {fmt_int(moe.experts_per_token)} run per token;{figures}. Under tensor parallelism "
        "vLLM splits every expert's matrices across the GPUs (each GPU holds a slice of all experts); with "
        "expert parallelism whole experts are placed on different GPUs instead. Either way the weights "
        "divide evenly."
    )


# --- language model, fine-tuning (LoRA / QLoRA) ----------------------------------------------------------

def lora_trainable_parameters(model: LanguageModelSpec, lora_rank: int) -> int:
    """Rank-r adapters on q, k, v and o of every layer: r × (d_in + d_out) per projection."""
    layers = _model_value(model, "layers")
    hidden = _model_value(model, "hidden_size")
    heads = _model_value(model, "attention_heads")
    kv_heads = _model_value(model, "kv_heads")
    head_dim = _model_value(model, "head_dim")
    query_width = heads * head_dim
    kv_width = kv_heads * head_dim
    per_layer = lora_rank * ((hidden + query_width) + 2 * (hidden + kv_width) + (query_width + hidden))
    return per_layer * layers


def estimate_finetune(
    model: LanguageModelSpec,
    precision: int,
    sequence_length: int,
    batch_size: int,
    lora_rank: int = DEFAULT_LORA_RANK,
) -> Breakdown:
    precision = _check_precision(precision)
    sequence_length = _check_count(sequence_length, "sequence_length", "sequence length", MAX_CONTEXT)
    batch_size = _check_count(batch_size, "batch_size", "batch size", MAX_REQUESTS)
    lora_rank = _check_count(lora_rank, "lora_rank", "LoRA rank", MAX_LORA_RANK)
    parameters = _model_value(model, "parameters")
    layers = _model_value(model, "layers")
    heads = _model_value(model, "attention_heads")
    kv_heads = _model_value(model, "kv_heads")
    head_dim = _model_value(model, "head_dim")
    hidden = _model_value(model, "hidden_size")
    vocab = _model_value(model, "vocab_size")
    _check_context_limit(model, sequence_length, "sequence_length", "sequence length")

    if precision == 4:
        base = Item(
            name="Base weights",
            formula=(f"{fmt_int(parameters)} parameters × {float(QLORA_BITS_PER_PARAMETER):g} bits "
                     "÷ 8 bits per byte (QLoRA: 4-bit NormalFloat with double quantization)"),
            bytes=math.ceil(parameters * QLORA_BITS_PER_PARAMETER / 8),
        )
    else:
        base = _weights_item("Base weights", parameters, precision)
        base = Item(base.name, f"{base.formula}, frozen (LoRA)", base.bytes)

    rank = fmt_int(lora_rank)
    trainable = lora_trainable_parameters(model, lora_rank)
    query_width = fmt_int(heads * head_dim)
    kv_width = fmt_int(kv_heads * head_dim)
    h = fmt_int(hidden)
    adapters = Item(
        name="LoRA adapters",
        formula=(
            f"rank {rank} × [q ({h} + {query_width}) + k ({h} + {kv_width}) + v ({h} + {kv_width}) "
            f"+ o ({query_width} + {h})] × {_plural(layers, 'layer')} = {fmt_int(trainable)} trainable "
            f"parameters × {TRAINABLE_BYTES_PER_PARAMETER} bytes (2 weight + 2 gradient + 4 + 4 AdamW "
            "moments + 4 fp32 master copy)"
        ),
        bytes=trainable * TRAINABLE_BYTES_PER_PARAMETER,
    )

    # Korthikanti et al. 2022 with full recomputation: keep each layer's 16-bit input, and rebuild one
    # layer's activations, s·b·h·(34 + 5·a·s/h) bytes, during the backward pass. 5·a·s/h·s·b·h = 5·a·s²·b,
    # so the total is a whole number of bytes.
    stored_inputs = ACTIVATION_BYTES_PER_VALUE * sequence_length * batch_size * hidden * layers
    recomputed_layer = (sequence_length * batch_size * hidden * 34
                        + 5 * heads * sequence_length**2 * batch_size)
    s = fmt_int(sequence_length)
    b = fmt_int(batch_size)
    activations = Item(
        name="Activations",
        formula=(
            f"layer inputs {ACTIVATION_BYTES_PER_VALUE} bytes × {s} tokens × batch {b} × {h} hidden × "
            f"{_plural(layers, 'layer')} + one layer recomputed {s} × {b} × {h} × (34 + 5 × {fmt_int(heads)} "
            f"heads × {s} ÷ {h}) bytes (gradient checkpointing, Korthikanti et al. 2022)"
        ),
        bytes=stored_inputs + recomputed_layer,
    )
    logits = Item(
        name="Logits",
        formula=(f"{s} tokens × batch {b} × {fmt_int(vocab)} vocabulary × {LOGIT_BYTES_PER_VALUE} bytes "
                 "(fp32 logits for the loss)"),
        bytes=sequence_length * batch_size * vocab * LOGIT_BYTES_PER_VALUE,
    )
    margin = _margin_item([base, adapters, activations, logits], "all items above")
    items = (base, adapters, activations, logits, margin, _runtime_item())

    base_words = (
        "QLoRA (Dettmers et al. 2023): the frozen base is stored as 4-bit NormalFloat with double "
        "quantization, 4.127 bits per parameter; all parameters are counted at that rate, though "
        "embeddings and the output layer often stay 16-bit"
        if precision == 4
        else f"LoRA: the frozen base is stored in {precision}-bit"
    )
    assumptions = (
        base_words + ".",
        f"LoRA adapters (Hu et al. 2021) of rank {rank} sit on the q, k, v and o projections of every "
        "layer; a rank-r adapter on a d_in × d_out projection trains r × (d_in + d_out) parameters. The MLP "
        "projections carry none.",
        "Each trainable parameter costs 16 bytes under mixed precision with AdamW: 2 (16-bit weight) + "
        "2 (gradient) + 4 + 4 (the two AdamW moments) + 4 (fp32 master weight), as counted in ZeRO "
        "(Rajbhandari et al. 2020).",
        "Activations assume gradient checkpointing of every layer (Korthikanti et al. 2022, \"Reducing "
        "Activation Recomputation in Large Transformer Models\"): each layer's 16-bit input is kept, and "
        "one layer is recomputed at a time. No flash-attention saving is assumed; with it, the 5·a·s/h "
        "term largely disappears.",
        "The fp32 logits over the whole vocabulary are counted as their own item: at long sequences they "
        "are a common cause of running out of memory.",
        "The 20 % safety margin covers temporary buffers and memory fragmentation.",
        "Fine-tuning is sized for one GPU.",
        "Frameworks differ: training scripts may keep extra copies (e.g. a dequantized layer, gradients "
        "in fp32, evaluation batches); if you change such settings, keep an eye on the margin.",
    )
    return Breakdown(
        workload="finetune",
        title=(f"{model.name}, fine-tuning ({'QLoRA' if precision == 4 else 'LoRA'}), {precision}-bit base, "
               f"{_plural(sequence_length, 'token')} × batch {b}"),
        items=items,
        assumptions=assumptions,
        precision=precision,
        splittable_over_heads=None,
        confidence_hint="finetune",
        inputs={
            "model": model.slug,
            "model_name": model.name,
            "precision": precision,
            "sequence_length": sequence_length,
            "batch_size": batch_size,
            "lora_rank": lora_rank,
        },
    )


# --- image generation ------------------------------------------------------------------------------------

ROLE_LABELS = {"denoiser": "Denoiser", "text_encoder": "Text encoder", "autoencoder": "Autoencoder"}


def estimate_image(pipeline: ImagePipelineSpec, precision: int) -> Breakdown:
    precision = _check_precision(precision)
    if not pipeline.components:
        raise SizingError("model", f"{pipeline.name} lists no networks to load.")
    weight_items = []
    for component in pipeline.components:
        if component.parameters is None:
            raise MissingModelValue(pipeline.name, f"parameter count of {component.name}")
        label = ROLE_LABELS.get(component.role, component.role.replace("_", " ").capitalize())
        weight_items.append(_weights_item(f"{label}: {component.name}", component.parameters, precision))
    margin = _margin_item(weight_items, "weights of all networks")
    items = (*weight_items, margin, _runtime_item())

    resolution = (f"its native resolution of {pipeline.native_resolution} pixels"
                  if pipeline.native_resolution else "its native resolution")
    assumptions = (
        "Every network of the pipeline is loaded on the GPU at once, each counted at its exact "
        f"parameter count in {precision}-bit.",
        f"The 20 % margin is meant for one image at {resolution}; larger images and batches of several "
        "images need more.",
        "Image generation depends strongly on settings (resolution, batch, attention implementation, "
        "offloading), so this estimate has low confidence.",
        "Image pipelines are sized for one GPU.",
    )
    return Breakdown(
        workload="image",
        title=f"{pipeline.name}, image generation, {precision}-bit",
        items=items,
        assumptions=assumptions,
        precision=precision,
        splittable_over_heads=None,
        confidence_hint="image",
        inputs={"model": pipeline.slug, "model_name": pipeline.name, "precision": precision},
    )


# --- speech recognition ----------------------------------------------------------------------------------

def estimate_speech(model: SpeechModelSpec, precision: int, streams: int, kv_bits: int = 16) -> Breakdown:
    precision = _check_precision(precision)
    kv_bits = check_kv_bits(kv_bits)
    kv_bytes = kv_bits // 8
    streams = _check_count(streams, "streams", "number of concurrent audio streams", MAX_REQUESTS)
    parameters = _model_value(model, "parameters")
    decoder_layers = _model_value(model, "decoder_layers")
    d_model = _model_value(model, "d_model")
    self_positions = _model_value(model, "max_target_positions")
    cross_positions = _model_value(model, "max_source_positions")

    weights = _weights_item("Model weights", parameters, precision)
    kv_cache = Item(
        name="Decoder KV cache",
        formula=(
            f"2 (K and V) × {fmt_int(decoder_layers)} decoder layers × {fmt_int(d_model)} d_model × "
            f"{_bytes_label(Fraction(kv_bytes))} × ({fmt_int(self_positions)} self-attention positions + "
            f"{fmt_int(cross_positions)} cross-attention positions) × {_plural(streams, 'stream')}"
        ),
        bytes=(2 * decoder_layers * d_model * kv_bytes
               * (self_positions + cross_positions) * streams),
    )
    margin = _margin_item([weights, kv_cache], "model weights + decoder KV cache")
    items = (weights, kv_cache, margin, _runtime_item())
    assumptions = (
        f"Audio is processed in the model's 30-second window: the decoder caches its own "
        f"{fmt_int(self_positions)} token positions and the {fmt_int(cross_positions)} encoder frames it "
        "attends to.",
        "Greedy decoding with one sequence per stream; beam search multiplies the cache by the beam count.",
        ("The KV cache is kept in 16-bit whatever the weights' precision." if kv_bits == 16 else
         "The KV cache is kept in 8-bit (vLLM's fp8 KV cache) whatever the weights' precision."),
        "The 20 % safety margin covers the encoder's activations, temporary buffers and fragmentation.",
        "Speech models are sized for one GPU.",
    )
    return Breakdown(
        workload="speech",
        title=(f"{model.name}, speech recognition, {precision}-bit"
               f"{', 8-bit KV cache' if kv_bits == 8 else ''}, {_plural(streams, 'audio stream')}"),
        items=items,
        assumptions=assumptions,
        precision=precision,
        splittable_over_heads=None,
        inputs={"model": model.slug, "model_name": model.name, "precision": precision, "streams": streams,
                "kv_bits": kv_bits},
    )


# --- notebook --------------------------------------------------------------------------------------------

def estimate_notebook(memory_gib: float) -> Breakdown:
    if isinstance(memory_gib, bool) or not isinstance(memory_gib, int | float | Decimal):
        raise SizingError("memory_gib", "Enter the GPU memory as a number of GiB.")
    if (isinstance(memory_gib, Decimal) and not memory_gib.is_finite()) or not math.isfinite(memory_gib):
        raise SizingError("memory_gib", "Enter the GPU memory as a finite number of GiB.")
    if memory_gib <= 0:
        raise SizingError("memory_gib", "The GPU memory must be more than 0 GiB.")
    if memory_gib > MAX_NOTEBOOK_GIB:
        raise SizingError("memory_gib", f"The GPU memory may be at most {fmt_int(MAX_NOTEBOOK_GIB)} GiB.")
    requested_bytes = math.ceil(Fraction(memory_gib) * GIB)
    return Breakdown(
        workload="notebook",
        title=f"Notebook, {_gib_text(requested_bytes)} of GPU memory",
        items=(Item("Requested GPU memory", f"{memory_gib:g} GiB × 2^30 bytes", requested_bytes),),
        assumptions=(
            "The memory you entered is the need: no safety margin or runtime is added, since you sized "
            "it yourself.",
            "A notebook is placed on one GPU.",
        ),
        precision=None,
        splittable_over_heads=None,
        inputs={"memory_gib": memory_gib},
    )


# --- dispatch --------------------------------------------------------------------------------------------

def estimate(
    workload: str,
    model,
    precision: int | None,
    context: int | None,
    requests: int | None,
    memory_gib: float | None,
    kv_bits: int = 16,
) -> Breakdown:
    """One entry point for the wizard, the API and the command.

    Errors name this function's own inputs: a fine-tuning sequence length is reported as "context",
    a batch size or audio stream count as "requests", so a form can put the message on its field.
    """
    if workload not in WORKLOADS:
        raise SizingError("workload", f"Unknown workload {workload!r}; choose one of {', '.join(WORKLOADS)}.")
    if workload == "notebook":
        if memory_gib is None:
            raise SizingError("memory_gib", "Enter the GPU memory the notebook needs.")
        return estimate_notebook(memory_gib)
    if model is None:
        raise SizingError("model", "Choose a model.")
    if precision is None:
        raise SizingError("precision", "Choose a precision.")

    if workload == "image":
        if not isinstance(model, ImagePipelineSpec):
            raise SizingError("model", f"{model.name} is not an image-generation model.")
        return estimate_image(model, precision)

    if isinstance(model, SpeechModelSpec) and workload in ("inference", "speech"):
        _require(requests, "requests", "Enter the number of concurrent audio streams.")
        with _renamed({"streams": "requests"}):
            return estimate_speech(model, precision, requests, kv_bits)
    if workload == "speech":
        raise SizingError("model", f"{model.name} is not a speech-recognition model.")

    if not isinstance(model, LanguageModelSpec):
        verb = "fine-tuned" if workload == "finetune" else "run as a language model"
        raise SizingError("model", f"{model.name} cannot be {verb}.")
    if workload == "finetune":
        _require(context, "context", "Enter the sequence length.")
        _require(requests, "requests", "Enter the batch size.")
        with _renamed({"sequence_length": "context", "batch_size": "requests"}):
            return estimate_finetune(model, precision, context, requests)
    _require(context, "context", "Enter the context per request.")
    _require(requests, "requests", "Enter the number of concurrent requests.")
    return estimate_inference(model, precision, context, requests, kv_bits)


def _require(value, field: str, message: str) -> None:
    if value is None:
        raise SizingError(field, message)


class _renamed:
    """Re-raise a SizingError under the caller's field name (the message stays as written)."""

    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        if exc is not None and isinstance(exc, SizingError) and exc.field in self.mapping:
            exc.field = self.mapping[exc.field]
        return False
