"""Fine-tuning a language model with LoRA or QLoRA (SPEC §3, §10): base weights, adapters with their
gradients and optimizer states, activations (with, without or offloading gradient checkpointing),
DoRA's norms and outputs, the loss's logits, and the 4-bit base's quantization at load.

How the fine-tune is run (`sizing.training.Training`: checkpointing, loss, LoRA rank and targets, LoRA
or DoRA, the optimizer's states) changes the items named in each function; at the defaults every item
is the documentation's."""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from .. import nouns
from ..architectures import PLAIN
from ..breakdown import Breakdown, Item
from ..errors import SizingError
from ..i18n import gettext
from ..limits import MAX_CONTEXT, MAX_REQUESTS
from ..specs import LanguageModelSpec
from ..training import DEFAULT_LORA_RANK, DEFAULT_TRAINING, Training, checked_training
from ..units import fmt_gib, fmt_int, general_number
from ..weights import FINETUNE_BASE_FORMAT, FORMATS, GPTQ_BASE_FORMAT, stored_weights
from .checks import check_context_limit, check_count, check_precision, model_value
from .finetune_words import finetune_words
from .inference_words import yarn_words
from .items import (
    ACTIVATION_BYTES_PER_VALUE,
    WEIGHT_BYTES,
    format_items,
    margin_item,
    parameter_split,
    runtime_item,
    weights_item,
)

QLORA_BITS_PER_PARAMETER = Fraction(4127, 1000)  # NF4 with double quantization (Dettmers et al. 2023)
TRAINABLE_BYTES_PER_PARAMETER = 16  # 2 weight + 2 gradient + 4 + 4 AdamW moments + 4 fp32 master copy
# Without the moments: 2 weight + 2 gradient + 4 fp32 master copy.
TRAINABLE_BYTES_BEFORE_MOMENTS = 8
# bitsandbytes' 8-bit AdamW (Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization"): each
# of the two moments in one byte plus one fp32 absolute maximum per block of 256 values; tensors of fewer
# than 4,096 values (min_8bit_size) keep both moments in fp32.
EIGHT_BIT_MOMENT_BYTES = 2 * (1 + Fraction(4, 256))
FP32_MOMENT_BYTES = 8
EIGHT_BIT_MIN_VALUES = 4096
# The loss's peak: fp32 logits, their log-softmax and its gradient, 4 bytes each per logit.
LOSS_BYTES_PER_LOGIT = 12
# A fused cross-entropy over the batch's logits: the 16-bit logits and their fp32 upcast, the gradient
# written into them in place (no log-softmax copy).
FUSED_LOSS_BYTES_PER_LOGIT = 6
# DoRA's weight norm, for one adapted matrix at a time: the adapter product B·A in fp32, its scaled copy
# and the sum with the base weight, 4 bytes each per weight value (+2 for a dequantized 4- or 8-bit base).
DORA_NORM_BYTES_PER_WEIGHT = 12
DORA_DEQUANTIZED_BYTES_PER_WEIGHT = 2
# DoRA keeps, per adapted projection and token, the base output (16-bit) and the adapter's output (fp32).
DORA_OUTPUT_BYTES = 6
# torchao's NF4 quantizer (torchtune's QLoRA) per value of the matrix it quantizes: the 16-bit input (2),
# its scaled copy (2), and the distance to each of the 16 levels plus its absolute value (16 × 2 × 2).
NF4_LOAD_BYTES_PER_VALUE = 68
# Activation offloading keeps this many layer inputs on the GPU: one being copied out, one coming back.
OFFLOAD_LAYER_INPUTS_ON_GPU = 2


@dataclass(frozen=True)
class Projection:
    """A linear layer an adapter may sit on: its width in and out, and how many the model has."""

    name: str
    d_in: int
    d_out: int
    count: int  # in the whole model (layers × experts)
    per_layer: int  # in one layer (the most any layer has)


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


def _checked(model: LanguageModelSpec, precision: object, sequence_length: object, batch_size: object,
             training: Training) -> tuple[int, int, int, Training]:
    _refuse_unsized_attention(model)
    precision = check_precision(precision)
    sequence_length = check_count(
        sequence_length, "sequence_length", gettext("The sequence length"), MAX_CONTEXT
    )
    batch_size = check_count(batch_size, "batch_size", gettext("The batch size"), MAX_REQUESTS)
    training = checked_training(training)
    for name in ("parameters", "layers", "attention_heads", "kv_heads", "head_dim", "hidden_size",
                 "intermediate_size", "vocab_size"):
        model_value(model, name)
    training = checked_training(training, model_value(model, "hidden_size")).for_precision(precision)
    if training.base_format == "gptq" and training.adapter == "dora":
        raise SizingError("adapter", gettext(
            "DoRA is not run on a GPTQ base: PEFT's LoRA layer for GPTQ refuses use_dora. Choose LoRA, or "
            "the NF4 base."
        ))
    check_context_limit(model, sequence_length, "sequence_length")
    return precision, sequence_length, batch_size, training


def base_weight_items(model: LanguageModelSpec, precision: int, base_format: str = "nf4") -> list[Item]:
    """The frozen base: 4.127 bits per parameter under QLoRA, else every parameter at the precision;
    then what its stored format keeps beyond that. A GPTQ base (`base_format="gptq"`, 4-bit only) is
    stored as its checkpoint is: 4 bits per parameter, then its 16-bit parts and its scales and zeros."""
    parameters = model_value(model, "parameters")
    hidden = model_value(model, "hidden_size")
    if precision == 4 and base_format == "gptq":
        return _gptq_base_items(model, parameters, hidden)
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


def _gptq_base_items(model: LanguageModelSpec, parameters: int, hidden: int) -> list[Item]:
    """A GPTQ checkpoint as AutoGPTQ and GPTQModel store it (qweight: 4 bits per value; per group of 128
    input values a 16-bit scale and a packed 4-bit zero; embeddings, output head and norms in 16-bit),
    and the one matrix the training kernel dequantizes at a time."""
    fmt = FORMATS[GPTQ_BASE_FORMAT]
    stored = stored_weights(fmt, parameter_split(model), hidden)
    base = weights_item(gettext("Base weights"), parameters, 4)
    base = Item(base.name, gettext("%(formula)s, GPTQ checkpoint, frozen (LoRA)") % {"formula": base.formula},
                base.bytes)
    return [base, *format_items(stored, model_value(model, "vocab_size"), hidden,
                                general_number(WEIGHT_BYTES[4])),
            gptq_dequantized_item(model)]


def gptq_dequantized_item(model: LanguageModelSpec) -> Item:
    """The triton_v2 kernel (the only AutoGPTQ/GPTQModel kernel with a backward pass) dequantizes a whole
    matrix to 16-bit before each matmul, forward and backward, and frees it after: one at a time."""
    hidden = model_value(model, "hidden_size")
    width = max(model_value(model, "intermediate_size"),
                model_value(model, "attention_heads") * model_value(model, "head_dim"))
    return Item(
        name=gettext("Dequantized matrix"),
        formula=gettext(
            "largest matrix %(h)s × %(width)s × 2 bytes (the GPTQ training kernel dequantizes one matrix "
            "at a time to 16-bit before its matmul)"
        ) % {"h": fmt_int(hidden), "width": fmt_int(width)},
        bytes=hidden * width * ACTIVATION_BYTES_PER_VALUE,
    )


# --- which projections carry adapters --------------------------------------------------------------------

def _attention_projections(model: LanguageModelSpec) -> list[Projection]:
    layers, hidden = model_value(model, "layers"), model_value(model, "hidden_size")
    query_width = model_value(model, "attention_heads") * model_value(model, "head_dim")
    kv_width = model_value(model, "kv_heads") * model_value(model, "head_dim")
    return [
        Projection("q", hidden, query_width, layers, 1),
        Projection("k", hidden, kv_width, layers, 1),
        Projection("v", hidden, kv_width, layers, 1),
        Projection("o", query_width, hidden, layers, 1),
    ]


def _mlp_projections(model: LanguageModelSpec) -> list[Projection]:
    """gate, up and down of every MLP: each expert's in a mixture of experts (PEFT's target names match
    every expert's), and the shared expert's."""
    layers, hidden = model_value(model, "layers"), model_value(model, "hidden_size")
    moe = (model.architecture or PLAIN).moe
    if moe is None:
        width = model_value(model, "intermediate_size")
        return [Projection("gate", hidden, width, layers, 1), Projection("up", hidden, width, layers, 1),
                Projection("down", width, hidden, layers, 1)]
    moe_layers = sum(1 for index in range(layers) if moe.is_moe_layer(index))
    dense_layers = layers - moe_layers
    found = []
    if dense_layers:
        width = moe.dense_intermediate or model_value(model, "intermediate_size")
        found += [Projection("gate", hidden, width, dense_layers, 1),
                  Projection("up", hidden, width, dense_layers, 1),
                  Projection("down", width, hidden, dense_layers, 1)]
    if moe_layers:
        e, experts = moe.expert_intermediate, moe.experts
        found += [Projection("expert gate", hidden, e, moe_layers * experts, experts),
                  Projection("expert up", hidden, e, moe_layers * experts, experts),
                  Projection("expert down", e, hidden, moe_layers * experts, experts)]
        if moe.shared_intermediate:
            s = moe.shared_intermediate
            found += [Projection("shared gate", hidden, s, moe_layers, 1),
                      Projection("shared up", hidden, s, moe_layers, 1),
                      Projection("shared down", s, hidden, moe_layers, 1)]
    return found


def adapted_projections(model: LanguageModelSpec, targets: str = "attention") -> list[Projection]:
    """The projections `targets` puts adapters on: q, k, v, o (attention), q and v (qv), the MLP, or
    all of them."""
    attention = _attention_projections(model)
    if targets == "attention":
        return attention
    if targets == "qv":
        return [p for p in attention if p.name in ("q", "v")]
    if targets == "mlp":
        return _mlp_projections(model)
    return attention + _mlp_projections(model)


def lora_trainable_parameters(model: LanguageModelSpec, lora_rank: int, targets: str = "attention",
                              adapter: str = "lora") -> int:
    """Rank-r adapters: r × (d_in + d_out) per adapted projection; DoRA adds a magnitude per output."""
    return sum(p.count * _trainable_of(p, lora_rank, adapter) for p in adapted_projections(model, targets))


def _trainable_of(projection: Projection, rank: int, adapter: str) -> int:
    return rank * (projection.d_in + projection.d_out) + (projection.d_out if adapter == "dora" else 0)


def _trainable_tensors(projection: Projection, rank: int, adapter: str) -> list[int]:
    """The sizes of one adapter's trainable tensors: A (r × d_in), B (d_out × r), DoRA's magnitude."""
    magnitude = [projection.d_out] if adapter == "dora" else []
    return [rank * projection.d_in, rank * projection.d_out, *magnitude]


def _moment_bytes(projections: list[Projection], training: Training) -> tuple[Fraction, int, int]:
    """The optimizer's moments: (bytes, values in 8-bit tensors, values in fp32 tensors)."""
    eight_bit = fp32 = 0
    for projection in projections:
        for size in _trainable_tensors(projection, training.lora_rank, training.adapter):
            if training.optimizer == "adamw8bit" and size >= EIGHT_BIT_MIN_VALUES:
                eight_bit += size * projection.count
            else:
                fp32 += size * projection.count
    return eight_bit * EIGHT_BIT_MOMENT_BYTES + fp32 * FP32_MOMENT_BYTES, eight_bit, fp32


def adapters_item(model: LanguageModelSpec, training: Training | int = DEFAULT_TRAINING) -> Item:
    """The trainable parameters with their gradients, optimizer moments and fp32 master copy. Changed
    by the rank, the targets, DoRA's magnitudes and the optimizer's state precision."""
    if isinstance(training, int):  # a rank alone: the documentation's trainer at that rank
        training = Training(lora_rank=training)
    rank = training.lora_rank
    projections = adapted_projections(model, training.lora_targets)
    trainable = lora_trainable_parameters(model, rank, training.lora_targets, training.adapter)
    name = gettext("DoRA adapters") if training.adapter == "dora" else gettext("LoRA adapters")
    if training.lora_targets == "attention" and training.adapter == "lora" and training.optimizer == "adamw":
        head_dim = model_value(model, "head_dim")
        return Item(
            name=name,
            formula=gettext(
                "rank %(rank)s × [q (%(h)s + %(q)s) + k (%(h)s + %(kv)s) + v (%(h)s + %(kv)s) "
                "+ o (%(q)s + %(h)s)] × %(layers)s = %(trainable)s trainable "
                "parameters × %(bytes)s bytes (2 weight + 2 gradient + 4 + 4 AdamW "
                "moments + 4 fp32 master copy)"
            ) % {
                "rank": fmt_int(rank), "h": fmt_int(model_value(model, "hidden_size")),
                "q": fmt_int(model_value(model, "attention_heads") * head_dim),
                "kv": fmt_int(model_value(model, "kv_heads") * head_dim),
                "layers": nouns.layers(model_value(model, "layers")),
                "trainable": fmt_int(trainable), "bytes": TRAINABLE_BYTES_PER_PARAMETER,
            },
            bytes=trainable * TRAINABLE_BYTES_PER_PARAMETER,
        )
    terms = " + ".join(_projection_term(p, training.adapter) for p in projections)
    moments, eight_bit, fp32 = _moment_bytes(projections, training)
    if training.optimizer == "adamw8bit":
        moment_words = gettext(
            "%(eight)s in tensors of at least 4,096 values × %(bytes)s bytes (8-bit AdamW moments, "
            "bitsandbytes: 2 × (1 + 4 ÷ 256 for an fp32 scale per block of 256))"
        ) % {"eight": fmt_int(eight_bit), "bytes": general_number(EIGHT_BIT_MOMENT_BYTES)}
        if fp32:
            moment_words += gettext(" + %(fp32)s in smaller tensors × 8 bytes (fp32 moments)") % {
                "fp32": fmt_int(fp32)}
    else:
        moment_words = gettext("%(trainable)s × 8 bytes (4 + 4 AdamW moments)") % {
            "trainable": fmt_int(trainable)}
    dora = gettext(" + d_out (DoRA's magnitude)") if training.adapter == "dora" else ""
    return Item(
        name=name,
        formula=gettext(
            "rank %(rank)s × (d_in + d_out)%(dora)s per adapted projection: %(terms)s = %(trainable)s "
            "trainable parameters × 8 bytes (2 weight + 2 gradient + 4 fp32 master copy) + %(moments)s"
        ) % {"rank": fmt_int(rank), "dora": dora, "terms": terms, "trainable": fmt_int(trainable),
             "moments": moment_words},
        bytes=math.ceil(trainable * TRAINABLE_BYTES_BEFORE_MOMENTS + moments),
    )


def _projection_term(projection: Projection, adapter: str) -> str:
    dora = f" + {fmt_int(projection.d_out)}" if adapter == "dora" else ""
    widths = f"{fmt_int(projection.d_in)} + {fmt_int(projection.d_out)}{dora}"
    return f"{projection.name} ({widths}) × {fmt_int(projection.count)}"


# --- activations ---------------------------------------------------------------------------------------

def layer_activation_bytes_per_token(model: LanguageModelSpec) -> int:
    """What one layer keeps for its backward pass per token (Korthikanti et al. 2022 with fused
    attention): 17h (11 attention without its scores, 4 the two norms, 2 the MLP input), the gated MLP's
    four I-wide tensors (8I) and a 4-byte log-sum-exp per head. It holds the 16-bit input of every
    projection, as full training keeps them, so it covers adapters on any of them."""
    return (17 * model_value(model, "hidden_size") + 8 * model_value(model, "intermediate_size")
            + 4 * model_value(model, "attention_heads"))


@dataclass(frozen=True)
class LayerKind:
    """Layers that keep the same tensors per token: how many, the bytes per token, and those bytes in
    words."""

    count: int
    bytes_per_token: int
    terms: str


def routed_layer_kinds(model: LanguageModelSpec) -> list[LayerKind]:
    """Each layer's saved tensors per token as routing makes them: a dense layer keeps
    17h + 8I + 4a (`layer_activation_bytes_per_token`); a mixture-of-experts layer sends each token
    through its k experts, each with its own gathered 16-bit input (2h), its four expert-width tensors
    (8I_e) and its output kept for the routing weight's gradient (2h), beside the router's fp32
    probabilities (4 per expert) and a shared expert's four tensors (8I_s)."""
    hidden, heads = model_value(model, "hidden_size"), model_value(model, "attention_heads")
    moe = (model.architecture or PLAIN).moe
    if moe is None:
        return [LayerKind(model_value(model, "layers"), layer_activation_bytes_per_token(model), gettext(
            "(17 × %(h)s hidden + 8 × %(width)s MLP width + 4 × %(heads)s heads)") % {
            "h": fmt_int(hidden), "width": fmt_int(model_value(model, "intermediate_size")),
            "heads": fmt_int(heads)})]
    moe_layers = sum(1 for index in range(model_value(model, "layers")) if moe.is_moe_layer(index))
    kinds = []
    dense_layers = model_value(model, "layers") - moe_layers
    if dense_layers:
        width = moe.dense_intermediate or model_value(model, "intermediate_size")
        kinds.append(LayerKind(dense_layers, 17 * hidden + 8 * width + 4 * heads, gettext(
            "(17 × %(h)s hidden + 8 × %(width)s MLP width + 4 × %(heads)s heads)") % {
            "h": fmt_int(hidden), "width": fmt_int(width), "heads": fmt_int(heads)}))
    if moe_layers:
        k, e = moe.experts_per_token, moe.expert_intermediate
        shared = moe.shared_intermediate
        per_token = (17 * hidden + 4 * heads + 4 * moe.experts + k * (4 * hidden + 8 * e) + 8 * shared)
        terms = gettext(
            "(17 × %(h)s hidden + 4 × %(heads)s heads + 4 × %(experts)s router probabilities + %(k)s experts "
            "per token × (4 × %(h)s hidden + 8 × %(width)s expert width)%(shared)s)"
        ) % {"h": fmt_int(hidden), "heads": fmt_int(heads), "experts": fmt_int(moe.experts),
             "k": fmt_int(k), "width": fmt_int(e),
             "shared": gettext(" + 8 × %(shared)s shared expert width") % {"shared": fmt_int(shared)}
             if shared else ""}
        kinds.append(LayerKind(moe_layers, per_token, terms))
    return kinds


def _kinds_words(kinds: list[LayerKind]) -> str:
    return " + ".join(f"{kind.terms} × {nouns.layers(kind.count)}" for kind in kinds)


def activations_item(model: LanguageModelSpec, sequence_length: int, batch_size: int,
                     checkpointing: str = "on") -> Item:
    """Gradient checkpointing (Korthikanti et al. 2022): each layer's 16-bit input is kept, and one layer
    is rebuilt at a time during the backward pass. Korthikanti counts a layer at sbh(34 + 5as/h) bytes:
    11 for attention without its scores, 4 for the two layer norms, 19 for a 4h GeLU MLP, and 5as/h for
    the s × s scores. With fused attention (FlashAttention, SDPA) the scores are never stored, only a
    4-byte log-sum-exp per head and token; a gated MLP of width I keeps its input (2h) and four I-wide
    tensors (gate, up, activated gate, product: 8I).

    Without checkpointing (`off`, PEFT's and plain training loops' default) every layer keeps that
    much; offloading (`offload`, Unsloth's and torchtune's) keeps the layer inputs in CPU memory and
    only two of them on the GPU, in transit. Both count a mixture-of-experts layer as routing makes it
    (`routed_layer_kinds`: each token through its k experts); the default (`on`) counts the one recomputed
    layer at one MLP width, as the documentation does."""
    hidden, layers = model_value(model, "hidden_size"), model_value(model, "layers")
    heads = model_value(model, "attention_heads")
    tokens = sequence_length * batch_size
    per_layer = layer_activation_bytes_per_token(model)
    values = {
        "bytes": ACTIVATION_BYTES_PER_VALUE, "s": fmt_int(sequence_length), "b": fmt_int(batch_size),
        "h": fmt_int(hidden), "layers": nouns.layers(layers),
        "width": fmt_int(model_value(model, "intermediate_size")), "heads": fmt_int(heads),
    }
    routed = (model.architecture or PLAIN).moe is not None
    if checkpointing == "off" and routed:
        kinds = routed_layer_kinds(model)
        return Item(
            name=gettext("Activations"),
            formula=gettext(
                "every layer's saved tensors %(s)s tokens × batch %(b)s × [%(kinds)s] bytes (no gradient "
                "checkpointing, Korthikanti et al. 2022, with fused attention; each token through its "
                "experts)"
            ) % {**values, "kinds": _kinds_words(kinds)},
            bytes=tokens * sum(kind.bytes_per_token * kind.count for kind in kinds),
        )
    if checkpointing == "off":
        return Item(
            name=gettext("Activations"),
            formula=gettext(
                "every layer's saved tensors %(s)s tokens × batch %(b)s × (17 × %(h)s hidden + 8 × "
                "%(width)s MLP width + 4 × %(heads)s heads) bytes × %(layers)s (no gradient "
                "checkpointing, Korthikanti et al. 2022, with fused attention)"
            ) % values,
            bytes=tokens * per_layer * layers,
        )
    if checkpointing == "offload":
        in_transit = ACTIVATION_BYTES_PER_VALUE * tokens * hidden * OFFLOAD_LAYER_INPUTS_ON_GPU
        recomputed = recomputed_layer_bytes(model, sequence_length, batch_size, checkpointing)
        if routed:
            largest = max(routed_layer_kinds(model), key=lambda kind: kind.bytes_per_token)
            return Item(
                name=gettext("Activations"),
                formula=gettext(
                    "layer inputs in CPU memory, %(on_gpu)s in transit on the GPU: %(bytes)s bytes × %(s)s "
                    "tokens × batch %(b)s × %(h)s hidden × %(on_gpu)s + one layer recomputed %(s)s × %(b)s "
                    "× %(terms)s bytes (offloaded gradient checkpointing, Korthikanti et al. 2022, with "
                    "fused attention; each token through its experts)"
                ) % {**values, "on_gpu": OFFLOAD_LAYER_INPUTS_ON_GPU, "terms": largest.terms},
                bytes=in_transit + recomputed,
            )
        return Item(
            name=gettext("Activations"),
            formula=gettext(
                "layer inputs in CPU memory, %(on_gpu)s in transit on the GPU: %(bytes)s bytes × %(s)s "
                "tokens × batch %(b)s × %(h)s hidden × %(on_gpu)s + one layer recomputed %(s)s × %(b)s × "
                "(17 × %(h)s hidden + 8 × %(width)s MLP width + 4 × %(heads)s heads) bytes (offloaded "
                "gradient checkpointing, Korthikanti et al. 2022, with fused attention)"
            ) % {**values, "on_gpu": OFFLOAD_LAYER_INPUTS_ON_GPU},
            bytes=in_transit + recomputed,
        )
    stored_inputs = ACTIVATION_BYTES_PER_VALUE * tokens * hidden * layers
    recomputed_layer = tokens * per_layer
    return Item(
        name=gettext("Activations"),
        formula=gettext(
            "layer inputs %(bytes)s bytes × %(s)s tokens × batch %(b)s × %(h)s hidden × "
            "%(layers)s + one layer recomputed %(s)s × %(b)s × (17 × %(h)s hidden + 8 × "
            "%(width)s MLP width + 4 × %(heads)s heads) bytes (gradient checkpointing, "
            "Korthikanti et al. 2022, with fused attention)"
        ) % values,
        bytes=stored_inputs + recomputed_layer,
    )


def recomputed_layer_bytes(model: LanguageModelSpec, sequence_length: int, batch_size: int,
                           checkpointing: str) -> int:
    """What the one layer rebuilt during the backward pass holds (0 without checkpointing: nothing is
    rebuilt), as `activations_item` counts it."""
    tokens = sequence_length * batch_size
    if checkpointing == "off":
        return 0
    if checkpointing == "offload":
        return tokens * max(kind.bytes_per_token for kind in routed_layer_kinds(model))
    return tokens * layer_activation_bytes_per_token(model)


def layers_kept(model: LanguageModelSpec, checkpointing: str) -> int:
    """Layers whose full set of activations is alive at once: all of them without checkpointing, else
    the one being recomputed."""
    return model_value(model, "layers") if checkpointing == "off" else 1


def dora_item(model: LanguageModelSpec, precision: int, sequence_length: int, batch_size: int,
              training: Training) -> Item | None:
    """DoRA (Liu et al. 2024) as PEFT runs it: each adapted projection scales the base output and the
    adapter's by magnitude ÷ ‖W + s·B·A‖, so it keeps both outputs for the magnitude's gradient, and
    builds the combined weight, one matrix at a time, to take its column norms. None for LoRA."""
    if training.adapter != "dora":
        return None
    projections = adapted_projections(model, training.lora_targets)
    tokens = sequence_length * batch_size
    per_layer_outputs = sum(p.d_out * p.per_layer for p in projections)
    kept = layers_kept(model, training.gradient_checkpointing)
    outputs = tokens * per_layer_outputs * DORA_OUTPUT_BYTES * kept
    largest = max(projections, key=lambda p: p.d_in * p.d_out)
    per_weight = DORA_NORM_BYTES_PER_WEIGHT + (DORA_DEQUANTIZED_BYTES_PER_WEIGHT if precision < 16 else 0)
    norm = largest.d_in * largest.d_out * per_weight
    return Item(
        name=gettext("DoRA outputs and weight norm"),
        formula=gettext(
            "%(s)s tokens × batch %(b)s × %(outputs)s adapted outputs per layer × %(out_bytes)s bytes "
            "(16-bit base output + fp32 adapter output) × %(kept)s + the largest adapted matrix %(d_in)s × "
            "%(d_out)s × %(per_weight)s bytes (B·A, its scaled copy and W + s·B·A in fp32%(dequant)s) for "
            "its column norm"
        ) % {
            "s": fmt_int(sequence_length), "b": fmt_int(batch_size), "outputs": fmt_int(per_layer_outputs),
            "out_bytes": DORA_OUTPUT_BYTES, "kept": nouns.layers(kept), "d_in": fmt_int(largest.d_in),
            "d_out": fmt_int(largest.d_out), "per_weight": per_weight,
            "dequant": gettext(", the base dequantized to 16-bit") if precision < 16 else "",
        },
        bytes=outputs + norm,
    )


# --- the loss ------------------------------------------------------------------------------------------

def liger_chunk_tokens(model: LanguageModelSpec, tokens: int) -> int:
    """Liger's fused linear cross-entropy works on chunks of next_power_of_2(⌈tokens ÷ ⌈V ÷ h⌉⌉) tokens,
    so a chunk's logits are about as many values as the batch's hidden states."""
    per = math.ceil(model_value(model, "vocab_size") / model_value(model, "hidden_size"))
    chunk = math.ceil(tokens / per)
    return min(tokens, 1 << (chunk - 1).bit_length())


def logits_item(model: LanguageModelSpec, sequence_length: int, batch_size: int, loss: str = "full") -> Item:
    """The loss: `full` holds the fp32 logits over the whole vocabulary, their log-softmax and its
    gradient; `fused` the batch's 16-bit logits and their fp32 upcast, with the gradient written in
    place; `chunked` never holds the batch's logits, only one chunk's, and the gradient of the hidden
    states it computes on the way."""
    vocab = model_value(model, "vocab_size")
    tokens = sequence_length * batch_size
    values = {"s": fmt_int(sequence_length), "b": fmt_int(batch_size), "vocab": fmt_int(vocab)}
    if loss == "fused":
        return Item(
            name=gettext("Logits"),
            formula=gettext(
                "%(s)s tokens × batch %(b)s × %(vocab)s vocabulary × %(bytes)s bytes (16-bit logits and "
                "their fp32 upcast, 2 + 4; the fused cross-entropy writes the gradient in place)"
            ) % {**values, "bytes": FUSED_LOSS_BYTES_PER_LOGIT},
            bytes=tokens * vocab * FUSED_LOSS_BYTES_PER_LOGIT,
        )
    if loss == "chunked":
        chunk = liger_chunk_tokens(model, tokens)
        gradient = ACTIVATION_BYTES_PER_VALUE * tokens * model_value(model, "hidden_size")
        return Item(
            name=gettext("Logits"),
            formula=gettext(
                "one chunk of %(chunk)s tokens × %(vocab)s vocabulary × %(bytes)s bytes (its fp32 logits, "
                "softmax and gradient) + the hidden states' gradient %(two)s bytes × %(s)s tokens × batch "
                "%(b)s × %(h)s hidden (chunked loss: the batch's logits never exist whole)"
            ) % {**values, "chunk": fmt_int(chunk), "bytes": LOSS_BYTES_PER_LOGIT,
                 "two": ACTIVATION_BYTES_PER_VALUE, "h": fmt_int(model_value(model, "hidden_size"))},
            bytes=chunk * vocab * LOSS_BYTES_PER_LOGIT + gradient,
        )
    return Item(
        name=gettext("Logits"),
        formula=gettext(
            "%(s)s tokens × batch %(b)s × %(vocab)s vocabulary × %(bytes)s bytes "
            "(fp32 logits, their log-softmax and its gradient in the loss)"
        ) % {**values, "bytes": LOSS_BYTES_PER_LOGIT},
        bytes=tokens * vocab * LOSS_BYTES_PER_LOGIT,
    )


def loss_after_forward_item(model: LanguageModelSpec, sequence_length: int, batch_size: int,
                            training: Training) -> Item:
    """The loss on a base whose residual stream stays 16-bit (a GPTQ base): the loss is done, and its
    logits freed, before the backward pass rebuilds the first layer, so with checkpointing the peak is
    the larger of the two, not their sum. What a chunked loss keeps for the backward pass (the hidden
    states' gradient) is alive with the layer and stays counted. Without checkpointing every layer's
    tensors are alive at the loss: the whole loss counts."""
    logits = logits_item(model, sequence_length, batch_size, training.loss)
    layer = recomputed_layer_bytes(model, sequence_length, batch_size, training.gradient_checkpointing)
    if not layer:
        return logits
    kept = (ACTIVATION_BYTES_PER_VALUE * sequence_length * batch_size * model_value(model, "hidden_size")
            if training.loss == "chunked" else 0)
    apart = logits.bytes - kept
    beyond = max(0, apart - layer)
    return Item(
        name=logits.name,
        formula=gettext(
            "%(formula)s; %(apart)s of it is freed before the first layer is recomputed (%(layer)s), so "
            "only what it needs beyond that layer counts: max(0, %(apart)s − %(layer)s)%(kept)s"
        ) % {
            "formula": logits.formula, "apart": fmt_gib(apart), "layer": fmt_gib(layer),
            "kept": gettext(" + the hidden states' gradient %(kept)s") % {"kept": fmt_gib(kept)}
            if kept else "",
        },
        bytes=kept + beyond,
    )


def quantizing_load_item(model: LanguageModelSpec, training_bytes: int) -> Item | None:
    """QLoRA's load-time quantization of the largest matrix, beyond the training items that reuse its
    memory (the two are not alive together: the peak is the larger); None when training needs more."""
    hidden = model_value(model, "hidden_size")
    largest = hidden * max(model_value(model, "intermediate_size"),
                           model_value(model, "attention_heads") * model_value(model, "head_dim"))
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
    lora_rank: int | None = None,
    training: Training | None = None,
) -> Breakdown:
    """`training`: how the fine-tune is run (default: the documentation's trainer); `lora_rank` alone
    sets the rank of the default trainer."""
    if training is None:
        training = Training(lora_rank=DEFAULT_LORA_RANK if lora_rank is None else lora_rank)
    elif lora_rank is not None:
        raise TypeError("give the rank in `training`")
    precision, sequence_length, batch_size, training = _checked(
        model, precision, sequence_length, batch_size, training
    )
    dora = dora_item(model, precision, sequence_length, batch_size, training)
    gptq = precision == 4 and training.base_format == "gptq"
    training_items = [
        adapters_item(model, training),
        activations_item(model, sequence_length, batch_size, training.gradient_checkpointing),
        *([dora] if dora else []),
        loss_after_forward_item(model, sequence_length, batch_size, training) if gptq
        else logits_item(model, sequence_length, batch_size, training.loss),
    ]
    # a GPTQ checkpoint is loaded quantized: nothing is quantized at load
    load = (quantizing_load_item(model, sum(item.bytes for item in training_items))
            if precision == 4 and not gptq else None)
    covered = [*base_weight_items(model, precision, training.base_format), *training_items,
               *([load] if load else [])]
    margin = margin_item(covered, gettext("all items above"))
    method = ("QDoRA" if training.adapter == "dora" else "QLoRA") if precision == 4 else (
        "DoRA" if training.adapter == "dora" else "LoRA")
    if gptq:
        method = "GPTQ-LoRA"
    return Breakdown(
        workload="finetune",
        title=gettext(
            "%(model)s, fine-tuning (%(method)s), %(bits)s-bit base, %(tokens)s × batch %(batch)s"
        ) % {
            "model": model.name, "method": method, "bits": precision,
            "tokens": nouns.tokens(sequence_length), "batch": fmt_int(batch_size),
        },
        items=(*covered, margin, runtime_item()),
        assumptions=(*finetune_words(precision, training), *yarn_words(model, sequence_length)),
        precision=precision,
        splittable_over_heads=None,
        confidence_hint="finetune",
        inputs={
            "model": model.slug,
            "model_name": model.name,
            "precision": precision,
            "sequence_length": sequence_length,
            "batch_size": batch_size,
            # the base's format only where it is read (the 4-bit precision), so other answers are as before
            **{name: value for name, value in training.as_dict().items()
               if name != "base_format" or precision == 4},
        },
    )
