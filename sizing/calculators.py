"""GPU-memory calculators for each workload (SPEC §3).

Every size is an exact whole number of bytes: fractional bytes (4-bit weights, QLoRA's 4.127 bits,
the 20 % margin) are rounded up once per item, so the items always add up to the total. Display
rounding to GiB happens elsewhere.
"""
from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from .architectures import PLAIN, activation_mlp_width, count_parameters
from .breakdown import Breakdown, Item
from .errors import MissingModelValue, SizingError
from .kv_cache import check_kv_bits, is_plain, kv_cache_items
from .specs import PRECISIONS, ImagePipelineSpec, LanguageModelSpec, SpeechModelSpec
from .units import GIB, fmt_int
from .weights import (
    FINETUNE_BASE_FORMAT,
    FORMATS,
    INFERENCE_FORMAT,
    native_format_of,
    native_weight_items,
    precision_choices,
    precision_label,
    split_parameters,
    stored_weights,
)
from .workloads import CODES as WORKLOADS

# Exact bytes per parameter; the floats in specs.BYTES_PER_PARAMETER carry the same values.
WEIGHT_BYTES = {16: Fraction(2), 8: Fraction(1), 4: Fraction(1, 2)}
KV_CACHE_BYTES_PER_VALUE = 2  # the cache's default, 16-bit whatever the weights' precision (8-bit on request)
ACTIVATION_BYTES_PER_VALUE = 2  # 16-bit activations under mixed precision
LOGIT_BYTES_PER_VALUE = 4  # fp32 logits for the loss
# The loss's peak: fp32 logits, their log-softmax and its gradient, 4 bytes each per logit.
LOSS_BYTES_PER_LOGIT = 12
# torchao's NF4 quantizer (torchtune's QLoRA) per value of the matrix it quantizes: the 16-bit input (2),
# its scaled copy (2), and the distance to each of the 16 levels plus its absolute value (16 × 2 × 2).
NF4_LOAD_BYTES_PER_VALUE = 68
MARGIN = Fraction(1, 5)
RUNTIME_BYTES = GIB
QLORA_BITS_PER_PARAMETER = Fraction(4127, 1000)  # NF4 with double quantization (Dettmers et al. 2023)
TRAINABLE_BYTES_PER_PARAMETER = 16  # 2 weight + 2 gradient + 4 + 4 AdamW moments + 4 fp32 master copy
DEFAULT_LORA_RANK = 16

# Prefill, as transformers' generate() runs it (the whole prompt of every request in one forward pass),
# peaks in a decoder layer's gated MLP. Alive at once, per token: four hidden-width tensors (the
# embedding output the model keeps, the layer's input, the residual after attention, the normalised MLP
# input) and three intermediate-width ones (the activated gate, the up projection, their product).
# PyTorch's caching allocator then holds about two more intermediate-width blocks it cannot reuse: the
# KV cache each layer adds is carved out of the segments the previous layer's MLP freed (measured on an
# H200: reserved − allocated was 1.7 to 2.1 such tensors at 32,768 to 131,072 prompt tokens).
PREFILL_HIDDEN_TENSORS = 4
PREFILL_INTERMEDIATE_TENSORS = 3
PREFILL_HELD_INTERMEDIATE_TENSORS = 2
# Tensor parallelism: NCCL and all-reduce buffers on every GPU of the split. vLLM's memory profile of
# Llama 3 8B (vllm-project/vllm#10511) shows 3.58 GiB of non-PyTorch memory per GPU at 2-way against
# 1.79 GiB on one GPU: 1.79 GiB more, rounded up to 2 GiB.
TENSOR_PARALLEL_BUFFER_BYTES = 2 * GIB

# Beyond these the request is a typo, not a workload.
MAX_CONTEXT = 10_000_000
MAX_REQUESTS = 100_000
MAX_LORA_RANK = 65_536
MAX_NOTEBOOK_GIB = 10_000
LARGE_CONTEXT = 32_768
DEFAULT_BEAMS = 5
MAX_BEAMS = 64



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


def _margin_item(items: list[Item], covers: str, note: str = "") -> Item:
    covered_bytes = sum(item.bytes for item in items)
    return Item(
        name="Safety margin",
        formula=f"20 % × {_gib_text(covered_bytes)} ({covers}){note}",
        bytes=math.ceil(covered_bytes * MARGIN),
    )


def _excess_item(name: str, need_bytes: int, margin: Item, formula: str) -> Item | None:
    """What a peak needs beyond the margin that is meant to cover it; None when the margin suffices."""
    excess = need_bytes - margin.bytes
    if excess <= 0:
        return None
    return Item(
        name=name,
        formula=f"{formula} = {_gib_text(need_bytes)}, less the {_gib_text(margin.bytes)} the margin covers",
        bytes=excess,
    )


def _split(model: LanguageModelSpec):
    return split_parameters(
        model.name,
        _model_value(model, "parameters"),
        _model_value(model, "vocab_size"),
        _model_value(model, "hidden_size"),
        model.tied_embeddings,
    )


def _format_items(stored, vocab: int, hidden: int, nominal_label: str) -> list[Item]:
    """What a quantized format stores beyond every parameter at its nominal width: the parts it keeps
    in 16-bit and the scales (and zero points) of the parts it quantizes."""
    items = []
    split = stored.split
    if stored.sixteen_bit_extra_bytes:
        parts = "embeddings, tied to the output head" if split.tied else "embeddings + output head"
        copies = "" if split.tied else " × 2"
        items.append(Item(
            name="16-bit embeddings and output head",
            formula=(
                f"{fmt_int(vocab)} vocabulary × {fmt_int(hidden)} hidden{copies} = "
                f"{fmt_int(stored.kept_16_bit)} parameters ({parts}) stay 16-bit in {stored.fmt.label}: "
                f"× (2 − {nominal_label}) bytes more"
            ),
            bytes=stored.sixteen_bit_extra_bytes,
        ))
    if stored.scale_bytes:
        fmt = stored.fmt
        if fmt.row_scaled:
            per = f"one {float(fmt.scale_bits):g}-bit scale per row of at least {fmt_int(hidden)} values"
        else:
            per = (f"({float(fmt.scale_bits):g}-bit scale + {float(fmt.zero_bits):g}-bit zero) per group of "
                   f"{fmt_int(fmt.group_size)}")
        items.append(Item(
            name="Quantization scales",
            formula=(f"{fmt_int(stored.quantized)} quantized parameters × {per} "
                     f"= {float(stored.overhead_bits):.6g} bits each ÷ 8 ({fmt.label})"),
            bytes=stored.scale_bytes,
        ))
    return items


def _runtime_item() -> Item:
    return Item(
        name="CUDA runtime",
        formula="1 GiB on every GPU (driver context, kernels, library workspaces)",
        bytes=RUNTIME_BYTES,
        per_gpu=True,
    )


def _tensor_parallel_item() -> Item:
    return Item(
        name="Tensor-parallel buffers",
        formula=("2 GiB on every GPU of a split (NCCL and all-reduce buffers; vLLM measures 3.58 GiB of "
                 "non-PyTorch memory per GPU at 2-way tensor parallelism against 1.79 GiB on one GPU)"),
        bytes=TENSOR_PARALLEL_BUFFER_BYTES,
        per_gpu=True,
    )


FRAMEWORKS_DIFFER = (
    "Frameworks differ: vLLM reserves a fixed share of each GPU up front (gpu_memory_utilization, "
    "0.9 by default), so it may take more than this need; if you change such settings, keep an eye on "
    "the margin."
)


# --- language model, inference ---------------------------------------------------------------------------

def prefill_activation_bytes(model: LanguageModelSpec, tokens: int, requests: int) -> int:
    """Peak working memory of a prefill of `tokens` tokens in one forward pass: one decoder layer's
    gated MLP (see PREFILL_*), plus the fp32 logits of the last position of each request."""
    hidden = _model_value(model, "hidden_size")
    intermediate = activation_mlp_width(model, _model_value(model, "intermediate_size"))
    vocab = _model_value(model, "vocab_size")
    per_token = (PREFILL_HIDDEN_TENSORS * hidden
                 + (PREFILL_INTERMEDIATE_TENSORS + PREFILL_HELD_INTERMEDIATE_TENSORS) * intermediate)
    return tokens * per_token * ACTIVATION_BYTES_PER_VALUE + requests * vocab * LOGIT_BYTES_PER_VALUE


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
    hidden = _model_value(model, "hidden_size")
    intermediate = activation_mlp_width(model, _model_value(model, "intermediate_size"))
    vocab = _model_value(model, "vocab_size")
    refused = precision_choices(model)[precision]
    if refused:
        raise SizingError("precision", refused)
    _check_context_limit(model, context, "context", "context")

    native = native_format_of(model)
    native_words: list[str] = []
    fmt = stored = None
    if native is not None and native.bits == precision:
        weight_items, native_words = native_weight_items(model, count_parameters(model), native)
    else:
        weights = _weights_item("Model weights", parameters, precision)
        fmt = FORMATS[INFERENCE_FORMAT[precision]]
        stored = stored_weights(fmt, _split(model), hidden)
        weight_items = [weights, *_format_items(stored, vocab, hidden, f"{float(WEIGHT_BYTES[precision]):g}")]
    kv_items, kv_words = kv_cache_items(model, context, requests, kv_bits)
    kv_cache_bytes = sum(item.bytes for item in kv_items)
    weights_bytes = sum(item.bytes for item in weight_items)
    prefill_tokens = context * requests
    activation_bytes = prefill_activation_bytes(model, prefill_tokens, requests)
    covered = [*weight_items, *kv_items]
    cache_words = "KV cache" if is_plain(model) else "caches"
    margin = _margin_item(
        covered,
        f"model weights + {cache_words}" if len(weight_items) == 1 else f"all weights + {cache_words}",
        f"; it covers prefill activations up to its size (here {_gib_text(activation_bytes)})",
    )
    activations = _excess_item(
        "Prefill activations",
        activation_bytes,
        margin,
        (f"{fmt_int(prefill_tokens)} prompt tokens × ({PREFILL_HIDDEN_TENSORS} × {fmt_int(hidden)} hidden"
         f" + ({PREFILL_INTERMEDIATE_TENSORS} alive + {PREFILL_HELD_INTERMEDIATE_TENSORS} held by the"
         f" allocator) × {fmt_int(intermediate)} MLP width)"
         f" × {ACTIVATION_BYTES_PER_VALUE} bytes + {_plural(requests, 'request')}"
         f" × {fmt_int(vocab)} vocabulary × {LOGIT_BYTES_PER_VALUE} bytes (last-token logits)"),
    )
    items = (*covered, margin, *([activations] if activations else []), _runtime_item())

    heads = model.attention_heads
    assumptions = [
        *kv_words,
        *native_words,
        "The 20 % safety margin covers activations, temporary buffers and memory fragmentation.",
        (f"Prefill processes the whole prompt of every request in one forward pass, as transformers' "
         f"generate() does: {fmt_int(prefill_tokens)} tokens. Its peak is one decoder layer's MLP: four "
         "hidden-width tensors and three MLP-width tensors per token in 16-bit, with attention in a fused "
         "kernel (FlashAttention or SDPA: memory linear in tokens), and logits for the last token only; "
         "PyTorch's caching allocator holds about two more MLP-width blocks that the KV cache fragments. "
         "Where that exceeds the margin, the excess is its own item. Servers that prefill in chunks (vLLM, "
         "SGLang, TGI; max_num_batched_tokens) need less."),
        FRAMEWORKS_DIFFER,
    ]
    if arch.moe is not None:
        assumptions.append(moe_words(model, arch.moe))
    if stored is not None and precision != 16:
        tie = ("tied to the output head, counted once" if stored.split.tied
               else "with a separate output head" if stored.split.tied_known
               else "whose tie to the output head is not recorded, counted with a separate head")
        assumptions.append(
            f"{precision}-bit means a published {fmt.label} checkpoint ({fmt.source}). It quantizes the "
            f"linear layers of the decoder blocks; the token embeddings ({tie}) stay 16-bit, and the scales "
            f"cost {float(stored.overhead_bits):.4g} bits per quantized parameter. The plain count of every "
            f"parameter at {_bytes_label(WEIGHT_BYTES[precision])} is kept as its own item; the two items "
            "after it are what published formats store beyond it."
        )
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
            f"evenly, each GPU keeps its own 1 GiB runtime and adds "
            f"{_gib_text(TENSOR_PARALLEL_BUFFER_BYTES)} of communication buffers, and n must divide the "
            f"{fmt_int(heads)} attention heads."
        )
        if arch.mla is None and model.kv_heads is not None and model.kv_heads < min(heads, 8):
            assumptions.append(
                f"With more GPUs than its {_plural(model.kv_heads, 'KV head')}, vLLM copies KV heads so that "
                "every GPU holds at least one; the cache then no longer divides evenly."
            )
    if model.max_context is None:
        assumptions.append("The model's maximum context is not recorded, so the context was not checked "
                           "against it.")

    kv_title = ", 8-bit KV cache" if kv_bits == 8 else ""
    return Breakdown(
        workload="inference",
        title=(f"{model.name}, inference, {precision_label(model, precision)}{kv_title}, "
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
        split_items=(_tensor_parallel_item(),) if heads is not None else (),
    )


def moe_words(model: LanguageModelSpec, moe) -> str:
    counted = count_parameters(model)
    return (
        f"Mixture of experts: every one of the {fmt_int(moe.experts)} experts of each MoE layer is held in "
        f"memory, though {fmt_int(moe.experts_per_token)} run per token: {fmt_int(counted.total)} parameters "
        f"in all, {fmt_int(counted.active)} used per token. Under tensor parallelism vLLM splits every "
        "expert's matrices across the GPUs (each GPU holds a slice of all experts); with expert parallelism "
        "whole experts are placed on different GPUs instead. Either way the weights divide evenly."
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
    arch = model.architecture or PLAIN
    if arch.mla is not None or arch.linear_attention is not None:
        kind = "latent attention (MLA)" if arch.mla is not None else "linear-attention layers"
        raise SizingError(
            "model",
            f"{model.name} uses {kind}; the LoRA sizing covers the q, k, v and o projections of "
            "grouped-query attention only, so fine-tuning it is not sized here.",
        )
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
    intermediate = _model_value(model, "intermediate_size")
    vocab = _model_value(model, "vocab_size")
    _check_context_limit(model, sequence_length, "sequence_length", "sequence length")

    fmt = FORMATS[FINETUNE_BASE_FORMAT[precision]]
    stored = stored_weights(fmt, _split(model), hidden, nominal_includes_scales=precision == 4)
    if precision == 4:
        base = Item(
            name="Base weights",
            formula=(f"{fmt_int(parameters)} parameters × {float(QLORA_BITS_PER_PARAMETER):g} bits "
                     "÷ 8 bits per byte (QLoRA: 4-bit NormalFloat with double quantization)"),
            bytes=math.ceil(parameters * QLORA_BITS_PER_PARAMETER / 8),
        )
        nominal_label = f"{float(QLORA_BITS_PER_PARAMETER):g} ÷ 8"
    else:
        base = _weights_item("Base weights", parameters, precision)
        base = Item(base.name, f"{base.formula}, frozen (LoRA)", base.bytes)
        nominal_label = f"{float(WEIGHT_BYTES[precision]):g}"
    format_items = _format_items(stored, vocab, hidden, nominal_label)

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

    # Gradient checkpointing (Korthikanti et al. 2022): each layer's 16-bit input is kept, and one layer
    # is rebuilt at a time during the backward pass. Korthikanti counts a layer at sbh(34 + 5as/h)
    # bytes: 11 for attention without its scores, 4 for the two layer norms, 19 for a 4h GeLU MLP, and
    # 5as/h for the s × s scores. With fused attention (FlashAttention, SDPA) the scores are never
    # stored, only a 4-byte log-sum-exp per head and token; a gated MLP of width I keeps its input (2h)
    # and four I-wide tensors (gate, up, activated gate, product: 8I).
    tokens = sequence_length * batch_size
    stored_inputs = ACTIVATION_BYTES_PER_VALUE * tokens * hidden * layers
    recomputed_layer = tokens * (17 * hidden + 8 * intermediate + 4 * heads)
    s = fmt_int(sequence_length)
    b = fmt_int(batch_size)
    activations = Item(
        name="Activations",
        formula=(
            f"layer inputs {ACTIVATION_BYTES_PER_VALUE} bytes × {s} tokens × batch {b} × {h} hidden × "
            f"{_plural(layers, 'layer')} + one layer recomputed {s} × {b} × (17 × {h} hidden + 8 × "
            f"{fmt_int(intermediate)} MLP width + 4 × {fmt_int(heads)} heads) bytes (gradient checkpointing, "
            "Korthikanti et al. 2022, with fused attention)"
        ),
        bytes=stored_inputs + recomputed_layer,
    )
    logits = Item(
        name="Logits",
        formula=(f"{s} tokens × batch {b} × {fmt_int(vocab)} vocabulary × {LOSS_BYTES_PER_LOGIT} bytes "
                 "(fp32 logits, their log-softmax and its gradient in the loss)"),
        bytes=tokens * vocab * LOSS_BYTES_PER_LOGIT,
    )
    load_items = []
    if precision == 4:
        # The load-time transient and the training items are not alive together: the peak is the larger.
        largest = hidden * max(intermediate, heads * head_dim)
        training = adapters.bytes + activations.bytes + logits.bytes
        transient = largest * NF4_LOAD_BYTES_PER_VALUE
        if transient > training:
            load_items.append(Item(
                name="Quantizing the base at load",
                formula=(f"largest matrix {h} × {fmt_int(largest // hidden)} = {fmt_int(largest)} values × "
                         f"{NF4_LOAD_BYTES_PER_VALUE} bytes (16-bit copy 2 + scaled copy 2 + distance to "
                         "each of the 16 NF4 levels and its absolute value, 16 × 2 × 2) = "
                         f"{_gib_text(transient)}, less the {_gib_text(training)} of adapters, activations "
                         "and logits that reuse it"),
                bytes=transient - training,
            ))
    covered = [base, *format_items, adapters, activations, logits, *load_items]
    margin = _margin_item(covered, "all items above")
    items = (*covered, margin, _runtime_item())

    base_words = (
        "QLoRA (Dettmers et al. 2023): the frozen base is stored as 4-bit NormalFloat with double "
        "quantization, 4.127 bits per parameter, for the linear layers of the decoder blocks; the embeddings "
        "and the output head stay 16-bit"
        if precision == 4
        else "LoRA: the frozen base is stored in 16-bit"
        if precision == 16
        else ("LoRA on an 8-bit base (bitsandbytes LLM.int8(), Dettmers et al. 2022): the linear layers of "
              "the decoder blocks in 8-bit with one 32-bit scale per row, the embeddings and the output head "
              "in 16-bit")
    )
    assumptions = [
        base_words + ".",
        f"LoRA adapters (Hu et al. 2021) of rank {rank} sit on the q, k, v and o projections of every "
        "layer; a rank-r adapter on a d_in × d_out projection trains r × (d_in + d_out) parameters. The MLP "
        "projections carry none.",
        "Each trainable parameter costs 16 bytes under mixed precision with AdamW: 2 (16-bit weight) + "
        "2 (gradient) + 4 + 4 (the two AdamW moments) + 4 (fp32 master weight), as counted in ZeRO "
        "(Rajbhandari et al. 2020).",
        "Activations assume gradient checkpointing of every layer (Korthikanti et al. 2022, \"Reducing "
        "Activation Recomputation in Large Transformer Models\"): each layer's 16-bit input is kept, and "
        "one layer is recomputed at a time. Attention runs in a fused kernel (FlashAttention, Dao et al. "
        "2022, or PyTorch SDPA), so its memory grows linearly with the sequence: Korthikanti's s × s score "
        "term is replaced by a 4-byte log-sum-exp per head and token, and the MLP is counted at the model's "
        "own gated width.",
        "The trainer is assumed to compute the loss as Hugging Face transformers' causal-LM models (Trainer, "
        "TRL's SFTTrainer) and torchtune's recipes without chunked cross-entropy do: the logits over the "
        "whole vocabulary for every token are upcast to fp32, and the fp32 logits, their log-softmax and its "
        "gradient are alive together (12 bytes per logit). At long sequences they are a common cause of "
        "running out of memory; chunked or fused losses (Liger kernels, torchtune's chunked cross-entropy) "
        "need much less.",
        "The 20 % safety margin covers temporary buffers and memory fragmentation.",
        "Fine-tuning is sized for one GPU.",
        "Frameworks differ: training scripts may keep extra copies (e.g. a dequantized layer, gradients "
        "in fp32, evaluation batches); if you change such settings, keep an eye on the margin.",
    ]
    if precision == 4:
        assumptions.insert(1, (
            "The 4-bit base is quantized on the GPU while the 16-bit checkpoint loads, as torchtune's QLoRA "
            "recipe does with torchao's NF4 (versions that quantize a matrix in one piece): for the largest "
            "matrix it holds a 16-bit and a scaled copy and the distance of every value to each of the 16 "
            "NF4 levels. The allocator keeps that memory "
            "reserved and training reuses it (torchtune reports 9.13 GB reserved after loading Llama 2 7B "
            "and 9.29 GB at the training peak), so the need is the larger of the two: where the load "
            "needs more than the adapters, activations and logits, the difference is its own item. "
            "bitsandbytes quantizes in a CUDA kernel and needs about 2 bytes per value of that matrix."
        ))
    return Breakdown(
        workload="finetune",
        title=(f"{model.name}, fine-tuning ({'QLoRA' if precision == 4 else 'LoRA'}), {precision}-bit base, "
               f"{_plural(sequence_length, 'token')} × batch {b}"),
        items=items,
        assumptions=tuple(assumptions),
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

# The autoencoder decoder's last upsampling, per output pixel: a 256-channel map at full resolution in
# fp32 (4 bytes) and its 16-bit cast (2), plus the half-resolution source in both (a quarter as many).
VAE_DECODE_BYTES_PER_PIXEL = 256 * 6 + 256 * 6 // 4


def _native_pixels(resolution: str | None) -> tuple[int, int] | None:
    """"1024x1024" -> (1024, 1024); None when not recorded or not of that form."""
    if not resolution:
        return None
    parts = resolution.lower().replace("×", "x").split("x")
    if len(parts) != 2 or not all(part.strip().isdigit() for part in parts):
        return None
    width, height = (int(part) for part in parts)
    return (width, height) if width > 0 and height > 0 else None


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
    pixels = _native_pixels(pipeline.native_resolution)
    margin = _margin_item(weight_items, "weights of all networks")
    decode = None
    if pixels is not None:
        width, height = pixels
        decode = _excess_item(
            "Image decoding at native resolution",
            width * height * VAE_DECODE_BYTES_PER_PIXEL,
            margin,
            (f"{fmt_int(width)} × {fmt_int(height)} pixels × {fmt_int(VAE_DECODE_BYTES_PER_PIXEL)} bytes "
             "(the autoencoder's last upsampling: 256 channels at full resolution in 32-bit and its 16-bit "
             "copy, 256 × 6, plus its half-resolution source, 256 × 6 ÷ 4)"),
        )
    items = (*weight_items, margin, *([decode] if decode else []), _runtime_item())

    resolution = (f"its native resolution of {pipeline.native_resolution} pixels"
                  if pipeline.native_resolution else "its native resolution")
    assumptions = (
        "Every network of the pipeline is loaded on the GPU at once, each counted at its exact "
        f"parameter count in {precision}-bit.",
        f"The 20 % margin is meant for one image at {resolution}; larger images and batches of several "
        "images need more.",
        ("The peak of one image is the autoencoder's decoding at full resolution (the denoiser's attention "
         "runs in fused kernels at the latent's 1/8 resolution and needs less): in diffusers the "
         "8×-upsampling decoder (128-256-512-512 channels, as in Stable Diffusion 1.5, SDXL, SD 3 and FLUX) "
         "upsamples its 256-channel map to full resolution in 32-bit before casting it back to 16-bit, "
         f"{fmt_int(VAE_DECODE_BYTES_PER_PIXEL)} bytes per pixel. Where that exceeds the margin, the excess "
         "is its own item. Tiled VAE decoding needs less."),
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

def estimate_speech(
    model: SpeechModelSpec, precision: int, streams: int, beams: int = DEFAULT_BEAMS, kv_bits: int = 16
) -> Breakdown:
    precision = _check_precision(precision)
    kv_bits = check_kv_bits(kv_bits)
    kv_bytes = kv_bits // 8
    streams = _check_count(streams, "streams", "number of concurrent audio streams", MAX_REQUESTS)
    beams = _check_count(beams, "beams", "beam size", MAX_BEAMS)
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
            f"{_bytes_label(Fraction(kv_bytes))} × ({fmt_int(self_positions)} self-attention positions × "
            f"{_plural(beams, 'beam')} + {fmt_int(cross_positions)} cross-attention positions) × "
            f"{_plural(streams, 'stream')}"
        ),
        bytes=(2 * decoder_layers * d_model * kv_bytes
               * (self_positions * beams + cross_positions) * streams),
    )
    margin = _margin_item([weights, kv_cache], "model weights + decoder KV cache")
    items = (weights, kv_cache, margin, _runtime_item())
    assumptions = (
        f"Audio is processed in the model's 30-second window: the decoder caches its own "
        f"{fmt_int(self_positions)} token positions and the {fmt_int(cross_positions)} encoder frames it "
        "attends to.",
        (f"Each stream decodes with beam search of {fmt_int(beams)} (the default of openai-whisper's command "
         "line and of faster-whisper): every beam keeps its own self-attention cache, while the encoder "
         "frames' cross-attention cache is computed once per stream and shared by its beams, as "
         "openai-whisper and CTranslate2 do. Count concurrent audio streams, not beams, in the streams "
         "field; transformers' "
         "generate() copies the cross-attention cache for every beam and needs more."),
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
                "beams": beams, "kv_bits": kv_bits},
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
            return estimate_speech(model, precision, requests, kv_bits=kv_bits)
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
