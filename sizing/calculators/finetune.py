"""Fine-tuning a language model with LoRA or QLoRA (SPEC §3): base weights, adapters with their
gradients and optimizer states, activations under gradient checkpointing, the loss's logits, and the
4-bit base's quantization at load."""
from __future__ import annotations

import math
from fractions import Fraction

from .. import nouns
from ..architectures import PLAIN
from ..breakdown import Breakdown, Item
from ..errors import SizingError
from ..i18n import gettext
from ..limits import MAX_CONTEXT, MAX_LORA_RANK, MAX_REQUESTS
from ..specs import LanguageModelSpec
from ..units import fmt_gib, fmt_int, general_number
from ..weights import FINETUNE_BASE_FORMAT, FORMATS, stored_weights
from .checks import check_context_limit, check_count, check_precision, model_value
from .finetune_words import finetune_words
from .items import (
    ACTIVATION_BYTES_PER_VALUE,
    WEIGHT_BYTES,
    format_items,
    margin_item,
    parameter_split,
    runtime_item,
    weights_item,
)

DEFAULT_LORA_RANK = 16
QLORA_BITS_PER_PARAMETER = Fraction(4127, 1000)  # NF4 with double quantization (Dettmers et al. 2023)
TRAINABLE_BYTES_PER_PARAMETER = 16  # 2 weight + 2 gradient + 4 + 4 AdamW moments + 4 fp32 master copy
# The loss's peak: fp32 logits, their log-softmax and its gradient, 4 bytes each per logit.
LOSS_BYTES_PER_LOGIT = 12
# torchao's NF4 quantizer (torchtune's QLoRA) per value of the matrix it quantizes: the 16-bit input (2),
# its scaled copy (2), and the distance to each of the 16 levels plus its absolute value (16 × 2 × 2).
NF4_LOAD_BYTES_PER_VALUE = 68


def _refuse_unsized_attention(model: LanguageModelSpec) -> None:
    arch = model.architecture or PLAIN
    if arch.mla is not None or arch.linear_attention is not None:
        if arch.mla is not None:
            kind = gettext("latent attention (MLA)")
        else:
            kind = gettext("linear-attention layers")
        raise SizingError(
            "model",
            gettext(
                "%(model)s uses %(kind)s; the LoRA sizing covers the q, k, v and o projections of "
                "grouped-query attention only, so fine-tuning it is not sized here."
            ) % {"model": model.name, "kind": kind},
        )


def _checked(model, precision, sequence_length, batch_size, lora_rank) -> tuple[int, int, int, int]:
    _refuse_unsized_attention(model)
    precision = check_precision(precision)
    sequence_length = check_count(
        sequence_length, "sequence_length", gettext("The sequence length"), MAX_CONTEXT
    )
    batch_size = check_count(batch_size, "batch_size", gettext("The batch size"), MAX_REQUESTS)
    lora_rank = check_count(lora_rank, "lora_rank", gettext("The LoRA rank"), MAX_LORA_RANK)
    for name in ("parameters", "layers", "attention_heads", "kv_heads", "head_dim", "hidden_size",
                 "intermediate_size", "vocab_size"):
        model_value(model, name)
    check_context_limit(model, sequence_length, "sequence_length")
    return precision, sequence_length, batch_size, lora_rank


def base_weight_items(model: LanguageModelSpec, precision: int) -> list[Item]:
    """The frozen base: 4.127 bits per parameter under QLoRA, else every parameter at the precision;
    then what its stored format keeps beyond that."""
    parameters = model_value(model, "parameters")
    hidden = model_value(model, "hidden_size")
    fmt = FORMATS[FINETUNE_BASE_FORMAT[precision]]
    stored = stored_weights(fmt, parameter_split(model), hidden, nominal_includes_scales=precision == 4)
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
        base = weights_item(gettext("Base weights"), parameters, precision)
        base = Item(base.name, gettext("%(formula)s, frozen (LoRA)") % {"formula": base.formula}, base.bytes)
        nominal_label = general_number(WEIGHT_BYTES[precision])
    return [base, *format_items(stored, model_value(model, "vocab_size"), hidden, nominal_label)]


def lora_trainable_parameters(model: LanguageModelSpec, lora_rank: int) -> int:
    """Rank-r adapters on q, k, v and o of every layer: r × (d_in + d_out) per projection."""
    layers = model_value(model, "layers")
    hidden = model_value(model, "hidden_size")
    query_width = model_value(model, "attention_heads") * model_value(model, "head_dim")
    kv_width = model_value(model, "kv_heads") * model_value(model, "head_dim")
    per_layer = lora_rank * ((hidden + query_width) + 2 * (hidden + kv_width) + (query_width + hidden))
    return per_layer * layers


def adapters_item(model: LanguageModelSpec, lora_rank: int) -> Item:
    """The trainable parameters with their gradients, AdamW moments and fp32 master copy."""
    trainable = lora_trainable_parameters(model, lora_rank)
    head_dim = model.head_dim
    return Item(
        name=gettext("LoRA adapters"),
        formula=gettext(
            "rank %(rank)s × [q (%(h)s + %(q)s) + k (%(h)s + %(kv)s) + v (%(h)s + %(kv)s) "
            "+ o (%(q)s + %(h)s)] × %(layers)s = %(trainable)s trainable "
            "parameters × %(bytes)s bytes (2 weight + 2 gradient + 4 + 4 AdamW "
            "moments + 4 fp32 master copy)"
        ) % {
            "rank": fmt_int(lora_rank), "h": fmt_int(model.hidden_size),
            "q": fmt_int(model.attention_heads * head_dim), "kv": fmt_int(model.kv_heads * head_dim),
            "layers": nouns.layers(model.layers),
            "trainable": fmt_int(trainable), "bytes": TRAINABLE_BYTES_PER_PARAMETER,
        },
        bytes=trainable * TRAINABLE_BYTES_PER_PARAMETER,
    )


def activations_item(model: LanguageModelSpec, sequence_length: int, batch_size: int) -> Item:
    """Gradient checkpointing (Korthikanti et al. 2022): each layer's 16-bit input is kept, and one layer
    is rebuilt at a time during the backward pass. Korthikanti counts a layer at sbh(34 + 5as/h) bytes:
    11 for attention without its scores, 4 for the two layer norms, 19 for a 4h GeLU MLP, and 5as/h for
    the s × s scores. With fused attention (FlashAttention, SDPA) the scores are never stored, only a
    4-byte log-sum-exp per head and token; a gated MLP of width I keeps its input (2h) and four I-wide
    tensors (gate, up, activated gate, product: 8I)."""
    hidden, layers, heads = model.hidden_size, model.layers, model.attention_heads
    tokens = sequence_length * batch_size
    stored_inputs = ACTIVATION_BYTES_PER_VALUE * tokens * hidden * layers
    recomputed_layer = tokens * (17 * hidden + 8 * model.intermediate_size + 4 * heads)
    return Item(
        name=gettext("Activations"),
        formula=gettext(
            "layer inputs %(bytes)s bytes × %(s)s tokens × batch %(b)s × %(h)s hidden × "
            "%(layers)s + one layer recomputed %(s)s × %(b)s × (17 × %(h)s hidden + 8 × "
            "%(width)s MLP width + 4 × %(heads)s heads) bytes (gradient checkpointing, "
            "Korthikanti et al. 2022, with fused attention)"
        ) % {
            "bytes": ACTIVATION_BYTES_PER_VALUE, "s": fmt_int(sequence_length), "b": fmt_int(batch_size),
            "h": fmt_int(hidden), "layers": nouns.layers(layers),
            "width": fmt_int(model.intermediate_size), "heads": fmt_int(heads),
        },
        bytes=stored_inputs + recomputed_layer,
    )


def logits_item(model: LanguageModelSpec, sequence_length: int, batch_size: int) -> Item:
    """The loss: fp32 logits over the whole vocabulary, their log-softmax and its gradient."""
    vocab = model.vocab_size
    return Item(
        name=gettext("Logits"),
        formula=gettext(
            "%(s)s tokens × batch %(b)s × %(vocab)s vocabulary × %(bytes)s bytes "
            "(fp32 logits, their log-softmax and its gradient in the loss)"
        ) % {"s": fmt_int(sequence_length), "b": fmt_int(batch_size), "vocab": fmt_int(vocab),
             "bytes": LOSS_BYTES_PER_LOGIT},
        bytes=sequence_length * batch_size * vocab * LOSS_BYTES_PER_LOGIT,
    )


def quantizing_load_item(model: LanguageModelSpec, training_bytes: int) -> Item | None:
    """QLoRA's load-time quantization of the largest matrix, beyond the training items that reuse its
    memory (the two are not alive together: the peak is the larger); None when training needs more."""
    hidden = model.hidden_size
    largest = hidden * max(model.intermediate_size, model.attention_heads * model.head_dim)
    transient = largest * NF4_LOAD_BYTES_PER_VALUE
    if transient <= training_bytes:
        return None
    return Item(
        name=gettext("Quantizing the base at load"),
        formula=gettext(
            "largest matrix %(h)s × %(width)s = %(values)s values × "
            "%(bytes)s bytes (16-bit copy 2 + scaled copy 2 + distance to "
            "each of the 16 NF4 levels and its absolute value, 16 × 2 × 2) = "
            "%(transient)s, less the %(training)s of adapters, activations "
            "and logits that reuse it"
        ) % {
            "h": fmt_int(hidden), "width": fmt_int(largest // hidden), "values": fmt_int(largest),
            "bytes": NF4_LOAD_BYTES_PER_VALUE, "transient": fmt_gib(transient),
            "training": fmt_gib(training_bytes),
        },
        bytes=transient - training_bytes,
    )


def estimate_finetune(
    model: LanguageModelSpec,
    precision: int,
    sequence_length: int,
    batch_size: int,
    lora_rank: int = DEFAULT_LORA_RANK,
) -> Breakdown:
    precision, sequence_length, batch_size, lora_rank = _checked(
        model, precision, sequence_length, batch_size, lora_rank
    )
    training = [
        adapters_item(model, lora_rank),
        activations_item(model, sequence_length, batch_size),
        logits_item(model, sequence_length, batch_size),
    ]
    load = quantizing_load_item(model, sum(item.bytes for item in training)) if precision == 4 else None
    covered = [*base_weight_items(model, precision), *training, *([load] if load else [])]
    margin = margin_item(covered, gettext("all items above"))
    return Breakdown(
        workload="finetune",
        title=gettext(
            "%(model)s, fine-tuning (%(method)s), %(bits)s-bit base, %(tokens)s × batch %(batch)s"
        ) % {
            "model": model.name, "method": "QLoRA" if precision == 4 else "LoRA", "bits": precision,
            "tokens": nouns.tokens(sequence_length), "batch": fmt_int(batch_size),
        },
        items=(*covered, margin, runtime_item()),
        assumptions=tuple(finetune_words(precision, lora_rank)),
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
