"""GPU-memory calculators for each workload (SPEC §3).

Every size is an exact whole number of bytes: fractional bytes (4-bit weights, QLoRA's 4.127 bits,
the 20 % margin) are rounded up once per item, so the items always add up to the total. Display
rounding to GiB happens elsewhere.
"""
from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

from . import nouns
from .architectures import PLAIN, activation_mlp_width, count_parameters
from .breakdown import Breakdown, Item
from .errors import MissingModelValue, SizingError, value_words
from .i18n import TranslatedWords, gettext, gettext_noop
from .kv_cache import check_kv_bits, is_plain, kv_cache_items
from .specs import PRECISIONS, ImagePipelineSpec, LanguageModelSpec, SpeechModelSpec
from .units import GIB, fmt_gib, fmt_int, general_number
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
    return fmt_gib(n_bytes)


# --- validation helpers ---------------------------------------------------------------------------------

def _check_precision(precision) -> int:
    if isinstance(precision, bool) or precision not in PRECISIONS:
        raise SizingError("precision", gettext("Precision must be 16-bit, 8-bit or 4-bit."))
    return int(precision)


def _check_count(value, field: str, subject: str, maximum: int) -> int:
    """`subject` names the input as a sentence starts with it ("The context"), translated."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SizingError(field, gettext("%(subject)s must be a whole number.") % {"subject": subject})
    if value < 1:
        raise SizingError(field, gettext("%(subject)s must be at least 1.") % {"subject": subject})
    if value > maximum:
        raise SizingError(
            field, gettext("%(subject)s may be at most %(maximum)s.") % {
                "subject": subject, "maximum": fmt_int(maximum)
            }
        )
    return value


def _model_value(model, name: str) -> int:
    """A published figure the formula needs; missing is an error, never zero."""
    value = getattr(model, name)
    if value is None:
        raise MissingModelValue(model.name, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SizingError(
            "model",
            gettext("%(model)s: the %(value)s must be a positive whole number.")
            % {"model": model.name, "value": value_words(name)},
        )
    return value


def _check_context_limit(model: LanguageModelSpec, tokens: int, field: str) -> None:
    if model.max_context is not None and tokens > model.max_context:
        values = {"model": model.name, "maximum": fmt_int(model.max_context), "tokens": fmt_int(tokens)}
        if field == "sequence_length":
            message = gettext(
                "%(model)s handles at most %(maximum)s tokens; the sequence length of %(tokens)s is above "
                "that limit."
            )
        else:
            message = gettext(
                "%(model)s handles at most %(maximum)s tokens; the context of %(tokens)s is above that limit."
            )
        raise SizingError(field, message % values)


# --- formatting helpers ---------------------------------------------------------------------------------

def _bytes_label(bytes_per_value: Fraction) -> str:
    return nouns.byte_count(bytes_per_value)


def _weights_item(name: str, parameters: int, precision: int) -> Item:
    bytes_per_parameter = WEIGHT_BYTES[precision]
    return Item(
        name=name,
        formula=gettext("%(parameters)s parameters × %(bytes)s (%(bits)s-bit)") % {
            "parameters": fmt_int(parameters), "bytes": _bytes_label(bytes_per_parameter), "bits": precision
        },
        bytes=math.ceil(parameters * bytes_per_parameter),
    )


def _margin_item(items: list[Item], covers: str, note: str = "") -> Item:
    covered_bytes = sum(item.bytes for item in items)
    return Item(
        name=gettext("Safety margin"),
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
        formula=gettext("%(formula)s = %(need)s, less the %(margin)s the margin covers") % {
            "formula": formula, "need": _gib_text(need_bytes), "margin": _gib_text(margin.bytes)
        },
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
        parts = gettext("embeddings, tied to the output head") if split.tied else gettext("embeddings + "
                                                                                          "output head")
        copies = "" if split.tied else " × 2"
        items.append(Item(
            name=gettext("16-bit embeddings and output head"),
            formula=gettext(
                "%(vocab)s vocabulary × %(hidden)s hidden%(copies)s = %(kept)s parameters (%(parts)s) stay "
                "16-bit in %(format)s: × (2 − %(nominal)s) bytes more"
            ) % {
                "vocab": fmt_int(vocab), "hidden": fmt_int(hidden), "copies": copies,
                "kept": fmt_int(stored.kept_16_bit), "parts": parts, "format": gettext(stored.fmt.label),
                "nominal": nominal_label,
            },
            bytes=stored.sixteen_bit_extra_bytes,
        ))
    if stored.scale_bytes:
        fmt = stored.fmt
        if fmt.row_scaled:
            per = gettext("one %(bits)s-bit scale per row of at least %(hidden)s values") % {
                "bits": general_number(fmt.scale_bits), "hidden": fmt_int(hidden)
            }
        else:
            per = gettext("(%(scale)s-bit scale + %(zero)s-bit zero) per group of %(group)s") % {
                "scale": general_number(fmt.scale_bits), "zero": general_number(fmt.zero_bits),
                "group": fmt_int(fmt.group_size),
            }
        items.append(Item(
            name=gettext("Quantization scales"),
            formula=gettext("%(quantized)s quantized parameters × %(per)s = %(bits)s bits each ÷ 8 "
                            "(%(format)s)") % {
                "quantized": fmt_int(stored.quantized), "per": per,
                "bits": general_number(stored.overhead_bits, 6), "format": gettext(fmt.label),
            },
            bytes=stored.scale_bytes,
        ))
    return items


def _runtime_item() -> Item:
    return Item(
        name=gettext("CUDA runtime"),
        formula=gettext("1 GiB on every GPU (driver context, kernels, library workspaces)"),
        bytes=RUNTIME_BYTES,
        per_gpu=True,
    )


def _tensor_parallel_item() -> Item:
    return Item(
        name=gettext("Tensor-parallel buffers"),
        formula=gettext(
            "2 GiB on every GPU of a split (NCCL and all-reduce buffers; vLLM measures 3.58 GiB of "
            "non-PyTorch memory per GPU at 2-way tensor parallelism against 1.79 GiB on one GPU)"
        ),
        bytes=TENSOR_PARALLEL_BUFFER_BYTES,
        per_gpu=True,
    )


FRAMEWORKS_DIFFER = gettext_noop(
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
    context = _check_count(context, "context", gettext("The context"), MAX_CONTEXT)
    requests = _check_count(
        requests, "requests", gettext("The number of concurrent requests"), MAX_REQUESTS
    )
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
    _check_context_limit(model, context, "context")

    native = native_format_of(model)
    native_words: list[str] = []
    fmt = stored = None
    if native is not None and native.bits == precision:
        weight_items, native_words = native_weight_items(model, count_parameters(model), native)
    else:
        weights = _weights_item(gettext("Model weights"), parameters, precision)
        fmt = FORMATS[INFERENCE_FORMAT[precision]]
        stored = stored_weights(fmt, _split(model), hidden)
        nominal = general_number(WEIGHT_BYTES[precision])
        weight_items = [weights, *_format_items(stored, vocab, hidden, nominal)]
    kv_items, kv_words = kv_cache_items(model, context, requests, kv_bits)
    kv_cache_bytes = sum(item.bytes for item in kv_items)
    weights_bytes = sum(item.bytes for item in weight_items)
    prefill_tokens = context * requests
    activation_bytes = prefill_activation_bytes(model, prefill_tokens, requests)
    covered = [*weight_items, *kv_items]
    if len(weight_items) == 1:
        covers = gettext("model weights + KV cache") if is_plain(model) else gettext("model weights + caches")
    else:
        covers = gettext("all weights + KV cache") if is_plain(model) else gettext("all weights + caches")
    margin = _margin_item(
        covered,
        covers,
        gettext("; it covers prefill activations up to its size (here %(activations)s)") % {
            "activations": _gib_text(activation_bytes)
        },
    )
    activations = _excess_item(
        gettext("Prefill activations"),
        activation_bytes,
        margin,
        gettext(
            "%(tokens)s prompt tokens × (%(hidden_tensors)s × %(hidden)s hidden + (%(alive)s alive + "
            "%(held)s "
            "held by the allocator) × %(width)s MLP width) × %(activation_bytes)s bytes + %(requests)s × "
            "%(vocab)s vocabulary × %(logit_bytes)s bytes (last-token logits)"
        ) % {
            "tokens": fmt_int(prefill_tokens), "hidden_tensors": PREFILL_HIDDEN_TENSORS,
            "hidden": fmt_int(hidden),
            "alive": PREFILL_INTERMEDIATE_TENSORS, "held": PREFILL_HELD_INTERMEDIATE_TENSORS,
            "width": fmt_int(intermediate), "activation_bytes": ACTIVATION_BYTES_PER_VALUE,
            "requests": nouns.requests(requests), "vocab": fmt_int(vocab),
            "logit_bytes": LOGIT_BYTES_PER_VALUE,
        },
    )
    items = (*covered, margin, *([activations] if activations else []), _runtime_item())

    heads = model.attention_heads
    assumptions = [
        *kv_words,
        *native_words,
        gettext(
            "The 20 %% safety margin covers activations, temporary buffers and memory fragmentation."
        ) % {},
        gettext(
            "Prefill processes the whole prompt of every request in one forward pass, as transformers' "
            "generate() does: %(tokens)s tokens. Its peak is one decoder layer's MLP: four "
            "hidden-width tensors and three MLP-width tensors per token in 16-bit, with attention in a fused "
            "kernel (FlashAttention or SDPA: memory linear in tokens), and logits for the last token only; "
            "PyTorch's caching allocator holds about two more MLP-width blocks that the KV cache fragments. "
            "Where that exceeds the margin, the excess is its own item. Servers that prefill in chunks "
            "(vLLM, "
            "SGLang, TGI; max_num_batched_tokens) need less."
        ) % {"tokens": fmt_int(prefill_tokens)},
        gettext(FRAMEWORKS_DIFFER),
    ]
    if arch.moe is not None:
        assumptions.append(moe_words(model, arch.moe))
    if stored is not None and precision != 16:
        if stored.split.tied:
            tie = gettext("tied to the output head, counted once")
        elif stored.split.tied_known:
            tie = gettext("with a separate output head")
        else:
            tie = gettext("whose tie to the output head is not recorded, counted with a separate head")
        assumptions.append(
            gettext(
                "%(bits)s-bit means a published %(format)s checkpoint (%(source)s). It quantizes the "
                "linear layers of the decoder blocks; the token embeddings (%(tie)s) stay 16-bit, and the "
                "scales "
                "cost %(overhead)s bits per quantized parameter. The plain count of every "
                "parameter at %(bytes)s is kept as its own item; the two items "
                "after it are what published formats store beyond it."
            ) % {
                "bits": precision, "format": gettext(fmt.label), "source": gettext(fmt.source), "tie": tie,
                "overhead": general_number(stored.overhead_bits, 4),
                "bytes": _bytes_label(WEIGHT_BYTES[precision]),
            }
        )
    if context >= LARGE_CONTEXT or kv_cache_bytes >= weights_bytes:
        assumptions.append(
            gettext(
                "The KV cache grows with every token of context: %(tokens)s tokens per request costs "
                "%(memory)s here. Size the context to what your requests really use."
            ) % {"tokens": fmt_int(context), "memory": _gib_text(kv_cache_bytes)}
        )
    if heads is None:
        assumptions.append(
            gettext("%(model)s publishes no attention-head count, so it is sized for one GPU only.")
            % {"model": model.name}
        )
    else:
        assumptions.append(
            gettext(
                "Split over n GPUs of one machine (tensor parallelism), the weights, KV cache and margin "
                "divide "
                "evenly, each GPU keeps its own 1 GiB runtime and adds %(buffers)s of communication buffers, "
                "and n must divide the %(heads)s attention heads."
            ) % {"buffers": _gib_text(TENSOR_PARALLEL_BUFFER_BYTES), "heads": fmt_int(heads)}
        )
        if arch.mla is None and model.kv_heads is not None and model.kv_heads < min(heads, 8):
            assumptions.append(
                gettext(
                    "With more GPUs than its %(kv_heads)s, vLLM copies KV heads so that "
                    "every GPU holds at least one; the cache then no longer divides evenly."
                ) % {"kv_heads": nouns.kv_heads(model.kv_heads)}
            )
    if model.max_context is None:
        assumptions.append(gettext(
            "The model's maximum context is not recorded, so the context was not checked against it."
        ))

    kv_title = gettext(", 8-bit KV cache") if kv_bits == 8 else ""
    return Breakdown(
        workload="inference",
        title=gettext("%(model)s, inference, %(precision)s%(kv)s, %(tokens)s × %(requests)s") % {
            "model": model.name, "precision": precision_label(model, precision), "kv": kv_title,
            "tokens": nouns.tokens(context), "requests": nouns.requests(requests),
        },
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
    return gettext(
        "Mixture of experts: every one of the %(experts)s experts of each MoE layer is held in "
        "memory, though %(per_token)s run per token: %(total)s parameters "
        "in all, %(active)s used per token. Under tensor parallelism vLLM splits every "
        "expert's matrices across the GPUs (each GPU holds a slice of all experts); with expert parallelism "
        "whole experts are placed on different GPUs instead. Either way the weights divide evenly."
    ) % {
        "experts": fmt_int(moe.experts), "per_token": fmt_int(moe.experts_per_token),
        "total": fmt_int(counted.total), "active": fmt_int(counted.active),
    }


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
        kind = gettext("latent attention (MLA)") if arch.mla is not None else gettext("linear-attention "
                                                                                      "layers")
        raise SizingError(
            "model",
            gettext(
                "%(model)s uses %(kind)s; the LoRA sizing covers the q, k, v and o projections of "
                "grouped-query attention only, so fine-tuning it is not sized here."
            ) % {"model": model.name, "kind": kind},
        )
    precision = _check_precision(precision)
    sequence_length = _check_count(
        sequence_length, "sequence_length", gettext("The sequence length"), MAX_CONTEXT
    )
    batch_size = _check_count(batch_size, "batch_size", gettext("The batch size"), MAX_REQUESTS)
    lora_rank = _check_count(lora_rank, "lora_rank", gettext("The LoRA rank"), MAX_LORA_RANK)
    parameters = _model_value(model, "parameters")
    layers = _model_value(model, "layers")
    heads = _model_value(model, "attention_heads")
    kv_heads = _model_value(model, "kv_heads")
    head_dim = _model_value(model, "head_dim")
    hidden = _model_value(model, "hidden_size")
    intermediate = _model_value(model, "intermediate_size")
    vocab = _model_value(model, "vocab_size")
    _check_context_limit(model, sequence_length, "sequence_length")

    fmt = FORMATS[FINETUNE_BASE_FORMAT[precision]]
    stored = stored_weights(fmt, _split(model), hidden, nominal_includes_scales=precision == 4)
    if precision == 4:
        base = Item(
            name=gettext("Base weights"),
            formula=gettext(
                "%(parameters)s parameters × %(bits)s bits ÷ 8 bits per byte "
                "(QLoRA: 4-bit NormalFloat with double quantization)"
            ) % {"parameters": fmt_int(parameters), "bits": general_number(QLORA_BITS_PER_PARAMETER)},
            bytes=math.ceil(parameters * QLORA_BITS_PER_PARAMETER / 8),
        )
        nominal_label = f"{general_number(QLORA_BITS_PER_PARAMETER)} ÷ 8"
    else:
        base = _weights_item(gettext("Base weights"), parameters, precision)
        base = Item(base.name, gettext("%(formula)s, frozen (LoRA)") % {"formula": base.formula}, base.bytes)
        nominal_label = general_number(WEIGHT_BYTES[precision])
    format_items = _format_items(stored, vocab, hidden, nominal_label)

    rank = fmt_int(lora_rank)
    trainable = lora_trainable_parameters(model, lora_rank)
    query_width = fmt_int(heads * head_dim)
    kv_width = fmt_int(kv_heads * head_dim)
    h = fmt_int(hidden)
    adapters = Item(
        name=gettext("LoRA adapters"),
        formula=gettext(
            "rank %(rank)s × [q (%(h)s + %(q)s) + k (%(h)s + %(kv)s) + v (%(h)s + %(kv)s) "
            "+ o (%(q)s + %(h)s)] × %(layers)s = %(trainable)s trainable "
            "parameters × %(bytes)s bytes (2 weight + 2 gradient + 4 + 4 AdamW "
            "moments + 4 fp32 master copy)"
        ) % {
            "rank": rank, "h": h, "q": query_width, "kv": kv_width, "layers": nouns.layers(layers),
            "trainable": fmt_int(trainable), "bytes": TRAINABLE_BYTES_PER_PARAMETER,
        },
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
        name=gettext("Activations"),
        formula=gettext(
            "layer inputs %(bytes)s bytes × %(s)s tokens × batch %(b)s × %(h)s hidden × "
            "%(layers)s + one layer recomputed %(s)s × %(b)s × (17 × %(h)s hidden + 8 × "
            "%(width)s MLP width + 4 × %(heads)s heads) bytes (gradient checkpointing, "
            "Korthikanti et al. 2022, with fused attention)"
        ) % {
            "bytes": ACTIVATION_BYTES_PER_VALUE, "s": s, "b": b, "h": h, "layers": nouns.layers(layers),
            "width": fmt_int(intermediate), "heads": fmt_int(heads),
        },
        bytes=stored_inputs + recomputed_layer,
    )
    logits = Item(
        name=gettext("Logits"),
        formula=gettext(
            "%(s)s tokens × batch %(b)s × %(vocab)s vocabulary × %(bytes)s bytes "
            "(fp32 logits, their log-softmax and its gradient in the loss)"
        ) % {"s": s, "b": b, "vocab": fmt_int(vocab), "bytes": LOSS_BYTES_PER_LOGIT},
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
                name=gettext("Quantizing the base at load"),
                formula=gettext(
                    "largest matrix %(h)s × %(width)s = %(values)s values × "
                    "%(bytes)s bytes (16-bit copy 2 + scaled copy 2 + distance to "
                    "each of the 16 NF4 levels and its absolute value, 16 × 2 × 2) = "
                    "%(transient)s, less the %(training)s of adapters, activations "
                    "and logits that reuse it"
                ) % {
                    "h": h, "width": fmt_int(largest // hidden), "values": fmt_int(largest),
                    "bytes": NF4_LOAD_BYTES_PER_VALUE, "transient": _gib_text(transient),
                    "training": _gib_text(training),
                },
                bytes=transient - training,
            ))
    covered = [base, *format_items, adapters, activations, logits, *load_items]
    margin = _margin_item(covered, gettext("all items above"))
    items = (*covered, margin, _runtime_item())

    if precision == 4:
        base_words = gettext(
            "QLoRA (Dettmers et al. 2023): the frozen base is stored as 4-bit NormalFloat with double "
            "quantization, 4.127 bits per parameter, for the linear layers of the decoder blocks; the "
            "embeddings "
            "and the output head stay 16-bit."
        )
    elif precision == 16:
        base_words = gettext("LoRA: the frozen base is stored in 16-bit.")
    else:
        base_words = gettext(
            "LoRA on an 8-bit base (bitsandbytes LLM.int8(), Dettmers et al. 2022): the linear layers of "
            "the decoder blocks in 8-bit with one 32-bit scale per row, the embeddings and the output head "
            "in 16-bit."
        )
    assumptions = [
        base_words,
        gettext(
            "LoRA adapters (Hu et al. 2021) of rank %(rank)s sit on the q, k, v and o projections of every "
            "layer; a rank-r adapter on a d_in × d_out projection trains r × (d_in + d_out) parameters. The "
            "MLP "
            "projections carry none."
        ) % {"rank": rank},
        gettext("Each trainable parameter costs 16 bytes under mixed precision with AdamW: 2 (16-bit "
                "weight) + "
        "2 (gradient) + 4 + 4 (the two AdamW moments) + 4 (fp32 master weight), as counted in ZeRO "
        "(Rajbhandari et al. 2020)."),
        gettext("Activations assume gradient checkpointing of every layer (Korthikanti et al. 2022, "
                "\"Reducing "
        "Activation Recomputation in Large Transformer Models\"): each layer's 16-bit input is kept, and "
        "one layer is recomputed at a time. Attention runs in a fused kernel (FlashAttention, Dao et al. "
        "2022, or PyTorch SDPA), so its memory grows linearly with the sequence: Korthikanti's s × s score "
        "term is replaced by a 4-byte log-sum-exp per head and token, and the MLP is counted at the model's "
        "own gated width."),
        gettext("The trainer is assumed to compute the loss as Hugging Face transformers' causal-LM models "
                "(Trainer, "
        "TRL's SFTTrainer) and torchtune's recipes without chunked cross-entropy do: the logits over the "
        "whole vocabulary for every token are upcast to fp32, and the fp32 logits, their log-softmax and its "
        "gradient are alive together (12 bytes per logit). At long sequences they are a common cause of "
        "running out of memory; chunked or fused losses (Liger kernels, torchtune's chunked cross-entropy) "
        "need much less."),
        gettext("The 20 %% safety margin covers temporary buffers and memory fragmentation.") % {},
        gettext("Fine-tuning is sized for one GPU."),
        gettext(
            "Frameworks differ: training scripts may keep extra copies (e.g. a dequantized layer, gradients "
            "in fp32, evaluation batches); if you change such settings, keep an eye on the margin."
        ),
    ]
    if precision == 4:
        assumptions.insert(1, gettext(
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
        title=gettext(
            "%(model)s, fine-tuning (%(method)s), %(bits)s-bit base, %(tokens)s × batch %(batch)s"
        ) % {
            "model": model.name, "method": "QLoRA" if precision == 4 else "LoRA", "bits": precision,
            "tokens": nouns.tokens(sequence_length), "batch": b,
        },
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


ROLE_LABELS = TranslatedWords({
    "denoiser": gettext_noop("Denoiser"),
    "text_encoder": gettext_noop("Text encoder"),
    "autoencoder": gettext_noop("Autoencoder"),
})


def estimate_image(pipeline: ImagePipelineSpec, precision: int) -> Breakdown:
    precision = _check_precision(precision)
    if not pipeline.components:
        raise SizingError("model", gettext("%(model)s lists no networks to load.") % {"model": pipeline.name})
    weight_items = []
    for component in pipeline.components:
        if component.parameters is None:
            raise MissingModelValue(
                pipeline.name,
                f"parameter count of {component.name}",
                gettext("parameter count of %(network)s") % {"network": component.name},
            )
        label = ROLE_LABELS.get(component.role, component.role.replace("_", " ").capitalize())
        weight_items.append(
            _weights_item(
                f"{label}: {component.name}",
                component.parameters,
                precision,
            )
        )
    pixels = _native_pixels(pipeline.native_resolution)
    margin = _margin_item(weight_items, gettext("weights of all networks"))
    decode = None
    if pixels is not None:
        width, height = pixels
        decode = _excess_item(
            gettext("Image decoding at native resolution"),
            width * height * VAE_DECODE_BYTES_PER_PIXEL,
            margin,
            gettext(
                "%(width)s × %(height)s pixels × %(bytes)s bytes "
                "(the autoencoder's last upsampling: 256 channels at full resolution in 32-bit and its "
                "16-bit "
                "copy, 256 × 6, plus its half-resolution source, 256 × 6 ÷ 4)"
            ) % {
                "width": fmt_int(width),
                "height": fmt_int(height),
                "bytes": fmt_int(VAE_DECODE_BYTES_PER_PIXEL),
            },
        )
    items = (*weight_items, margin, *([decode] if decode else []), _runtime_item())

    if pipeline.native_resolution:
        resolution = gettext("its native resolution of %(resolution)s pixels") % {
            "resolution": pipeline.native_resolution
        }
    else:
        resolution = gettext("its native resolution")
    assumptions = (
        gettext(
            "Every network of the pipeline is loaded on the GPU at once, each counted at its exact "
            "parameter count in %(bits)s-bit."
        ) % {"bits": precision},
        gettext(
            "The 20 %% margin is meant for one image at %(resolution)s; larger images and batches of several "
            "images need more."
        ) % {"resolution": resolution},
        gettext("The peak of one image is the autoencoder's decoding at full resolution (the denoiser's "
                "attention "
         "runs in fused kernels at the latent's 1/8 resolution and needs less): in diffusers the "
         "8×-upsampling decoder (128-256-512-512 channels, as in Stable Diffusion 1.5, SDXL, SD 3 and FLUX) "
         "upsamples its 256-channel map to full resolution in 32-bit before casting it back to 16-bit, "
         "%(bytes)s bytes per pixel. Where that exceeds the margin, the excess "
         "is its own item. Tiled VAE decoding needs less.") % {"bytes": fmt_int(VAE_DECODE_BYTES_PER_PIXEL)},
        gettext(
            "Image generation depends strongly on settings (resolution, batch, attention implementation, "
            "offloading), so this estimate has low confidence."
        ),
        gettext("Image pipelines are sized for one GPU."),
    )
    return Breakdown(
        workload="image",
        title=gettext("%(model)s, image generation, %(bits)s-bit") % {
            "model": pipeline.name, "bits": precision
        },
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
    streams = _check_count(
        streams, "streams", gettext("The number of concurrent audio streams"), MAX_REQUESTS
    )
    beams = _check_count(beams, "beams", gettext("The beam size"), MAX_BEAMS)
    parameters = _model_value(model, "parameters")
    decoder_layers = _model_value(model, "decoder_layers")
    d_model = _model_value(model, "d_model")
    self_positions = _model_value(model, "max_target_positions")
    cross_positions = _model_value(model, "max_source_positions")

    weights = _weights_item(gettext("Model weights"), parameters, precision)
    kv_cache = Item(
        name=gettext("Decoder KV cache"),
        formula=gettext(
            "2 (K and V) × %(layers)s decoder layers × %(d_model)s d_model × "
            "%(bytes)s × (%(self)s self-attention positions × "
            "%(beams)s + %(cross)s cross-attention positions) × %(streams)s"
        ) % {
            "layers": fmt_int(decoder_layers), "d_model": fmt_int(d_model),
            "bytes": _bytes_label(Fraction(kv_bytes)),
            "self": fmt_int(self_positions), "beams": nouns.beams(beams), "cross": fmt_int(cross_positions),
            "streams": nouns.streams(streams),
        },
        bytes=(2 * decoder_layers * d_model * kv_bytes
               * (self_positions * beams + cross_positions) * streams),
    )
    margin = _margin_item([weights, kv_cache], gettext("model weights + decoder KV cache"))
    items = (weights, kv_cache, margin, _runtime_item())
    assumptions = (
        gettext(
            "Audio is processed in the model's 30-second window: the decoder caches its own "
            "%(self)s token positions and the %(cross)s encoder frames it attends to."
        ) % {"self": fmt_int(self_positions), "cross": fmt_int(cross_positions)},
        gettext("Each stream decodes with beam search of %(beams)s (the default of openai-whisper's command "
         "line and of faster-whisper): every beam keeps its own self-attention cache, while the encoder "
         "frames' cross-attention cache is computed once per stream and shared by its beams, as "
         "openai-whisper and CTranslate2 do. Count concurrent audio streams, not beams, in the streams "
         "field; transformers' "
         "generate() copies the cross-attention cache for every beam and needs more.") % {
             "beams": fmt_int(beams)
         },
        (gettext("The KV cache is kept in 16-bit whatever the weights' precision.") if kv_bits == 16 else
         gettext("The KV cache is kept in 8-bit (vLLM's fp8 KV cache) whatever the weights' precision.")),
        gettext("The 20 %% safety margin covers the encoder's activations, temporary buffers and "
                "fragmentation.") % {},
        gettext("Speech models are sized for one GPU."),
    )
    return Breakdown(
        workload="speech",
        title=gettext("%(model)s, speech recognition, %(bits)s-bit%(kv)s, %(streams)s") % {
            "model": model.name, "bits": precision, "kv": gettext(", 8-bit KV cache") if kv_bits == 8 else "",
            "streams": nouns.audio_streams(streams),
        },
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
        raise SizingError("memory_gib", gettext("Enter the GPU memory as a number of GiB."))
    if (isinstance(memory_gib, Decimal) and not memory_gib.is_finite()) or not math.isfinite(memory_gib):
        raise SizingError("memory_gib", gettext("Enter the GPU memory as a finite number of GiB."))
    if memory_gib <= 0:
        raise SizingError("memory_gib", gettext("The GPU memory must be more than 0 GiB."))
    if memory_gib > MAX_NOTEBOOK_GIB:
        raise SizingError(
            "memory_gib", gettext("The GPU memory may be at most %(maximum)s GiB.") % {
                "maximum": fmt_int(MAX_NOTEBOOK_GIB)
            }
        )
    requested_bytes = math.ceil(Fraction(memory_gib) * GIB)
    return Breakdown(
        workload="notebook",
        title=gettext("Notebook, %(memory)s of GPU memory") % {"memory": _gib_text(requested_bytes)},
        items=(
            Item(
                gettext("Requested GPU memory"),
                gettext("%(memory)s GiB × 2^30 bytes") % {"memory": general_number(memory_gib)},
                requested_bytes,
            ),
        ),
        assumptions=(
            gettext(
                "The memory you entered is the need: no safety margin or runtime is added, since you sized "
                "it yourself."
            ),
            gettext("A notebook is placed on one GPU."),
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
        raise SizingError(
            "workload",
            gettext("Unknown workload %(workload)s; choose one of %(choices)s.")
            % {"workload": repr(workload), "choices": ", ".join(WORKLOADS)},
        )
    if workload == "notebook":
        if memory_gib is None:
            raise SizingError("memory_gib", gettext("Enter the GPU memory the notebook needs."))
        return estimate_notebook(memory_gib)
    if model is None:
        raise SizingError("model", gettext("Choose a model."))
    if precision is None:
        raise SizingError("precision", gettext("Choose a precision."))

    if workload == "image":
        if not isinstance(model, ImagePipelineSpec):
            raise SizingError("model", gettext("%(model)s is not an image-generation model.") % {
                "model": model.name
            })
        return estimate_image(model, precision)

    if isinstance(model, SpeechModelSpec) and workload in ("inference", "speech"):
        _require(requests, "requests", gettext("Enter the number of concurrent audio streams."))
        with _renamed({"streams": "requests"}):
            return estimate_speech(model, precision, requests, kv_bits=kv_bits)
    if workload == "speech":
        raise SizingError("model", gettext("%(model)s is not a speech-recognition model.") % {
            "model": model.name
        })

    if not isinstance(model, LanguageModelSpec):
        if workload == "finetune":
            message = gettext("%(model)s cannot be fine-tuned.")
        else:
            message = gettext("%(model)s cannot be run as a language model.")
        raise SizingError("model", message % {"model": model.name})
    if workload == "finetune":
        _require(context, "context", gettext("Enter the sequence length."))
        _require(requests, "requests", gettext("Enter the batch size."))
        with _renamed({"sequence_length": "context", "batch_size": "requests"}):
            return estimate_finetune(model, precision, context, requests)
    _require(context, "context", gettext("Enter the context per request."))
    _require(requests, "requests", gettext("Enter the number of concurrent requests."))
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
