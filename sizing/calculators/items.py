"""Breakdown items more than one workload uses: weights, what a quantized format stores beyond them,
the safety margin, a peak beyond the margin, the CUDA runtime and tensor-parallel buffers.

Every size is an exact whole number of bytes: fractional bytes (4-bit weights, QLoRA's 4.127 bits,
the 20 % margin) are rounded up once per item, so the items always add up to the total. Display
rounding to GiB happens in `sizing.units`.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import cast

from .. import nouns
from ..architectures import count_parameters
from ..breakdown import Item
from ..i18n import gettext, gettext_noop
from ..specs import LanguageModelSpec
from ..units import GIB, fmt_gib, fmt_int, general_number
from ..weights import (
    FORMATS,
    INFERENCE_FORMAT,
    ParameterSplit,
    StoredWeights,
    native_format_of,
    native_weight_items,
    split_parameters,
    stored_weights,
)
from .checks import model_value

# Exact bytes per parameter; the floats in specs.BYTES_PER_PARAMETER carry the same values.
WEIGHT_BYTES = {16: Fraction(2), 8: Fraction(1), 4: Fraction(1, 2)}
ACTIVATION_BYTES_PER_VALUE = 2  # 16-bit activations under mixed precision
MARGIN = Fraction(1, 5)
RUNTIME_BYTES = GIB
# Tensor parallelism: NCCL and all-reduce buffers on every GPU of the split. vLLM's memory profile of
# Llama 3 8B (vllm-project/vllm#10511) shows 3.58 GiB of non-PyTorch memory per GPU at 2-way against
# 1.79 GiB on one GPU: 1.79 GiB more, rounded up to 2 GiB.
TENSOR_PARALLEL_BUFFER_BYTES = 2 * GIB

FRAMEWORKS_DIFFER = gettext_noop(
    "Frameworks differ: vLLM reserves a fixed share of each GPU up front (gpu_memory_utilization, "
    "0.9 by default), so it may take more than this need; if you change such settings, keep an eye on "
    "the margin."
)


def bytes_label(bytes_per_value: Fraction) -> str:
    return nouns.byte_count(bytes_per_value)


def weights_item(name: str, parameters: int, precision: int) -> Item:
    bytes_per_parameter = WEIGHT_BYTES[precision]
    return Item(
        name=name,
        formula=gettext("%(parameters)s parameters × %(bytes)s (%(bits)s-bit)") % {
            "parameters": fmt_int(parameters), "bytes": bytes_label(bytes_per_parameter), "bits": precision
        },
        bytes=math.ceil(parameters * bytes_per_parameter),
    )


def margin_item(items: list[Item], covers: str, note: str = "") -> Item:
    covered_bytes = sum(item.bytes for item in items)
    return Item(
        name=gettext("Safety margin"),
        formula=f"20 % × {fmt_gib(covered_bytes)} ({covers}){note}",
        bytes=math.ceil(covered_bytes * MARGIN),
    )


def excess_item(name: str, need_bytes: int, margin: Item, formula: str) -> Item | None:
    """What a peak needs beyond the margin that is meant to cover it; None when the margin suffices."""
    excess = need_bytes - margin.bytes
    if excess <= 0:
        return None
    return Item(
        name=name,
        formula=gettext("%(formula)s = %(need)s, less the %(margin)s the margin covers") % {
            "formula": formula, "need": fmt_gib(need_bytes), "margin": fmt_gib(margin.bytes)
        },
        bytes=excess,
    )


def runtime_item() -> Item:
    return Item(
        name=gettext("CUDA runtime"),
        formula=gettext("1 GiB on every GPU (driver context, kernels, library workspaces)"),
        bytes=RUNTIME_BYTES,
        per_gpu=True,
    )


def tensor_parallel_item() -> Item:
    return Item(
        name=gettext("Tensor-parallel buffers"),
        formula=gettext(
            "2 GiB on every GPU of a split (NCCL and all-reduce buffers; vLLM measures 3.58 GiB of "
            "non-PyTorch memory per GPU at 2-way tensor parallelism against 1.79 GiB on one GPU)"
        ),
        bytes=TENSOR_PARALLEL_BUFFER_BYTES,
        per_gpu=True,
    )


# --- what a quantized format stores beyond every parameter at its nominal width ------------------------

def parameter_split(model: LanguageModelSpec) -> ParameterSplit:
    return split_parameters(
        model.name,
        model_value(model, "parameters"),
        model_value(model, "vocab_size"),
        model_value(model, "hidden_size"),
        model.tied_embeddings,
    )


def sixteen_bit_item(stored: StoredWeights, vocab: int, hidden: int, nominal_label: str) -> Item:
    """The parts a format keeps in 16-bit (embeddings, output head), beyond their nominal width."""
    split = stored.split
    if split.tied:
        parts = gettext("embeddings, tied to the output head")
    else:
        parts = gettext("embeddings + output head")
    return Item(
        name=gettext("16-bit embeddings and output head"),
        formula=gettext(
            "%(vocab)s vocabulary × %(hidden)s hidden%(copies)s = %(kept)s parameters (%(parts)s) stay "
            "16-bit in %(format)s: × (2 − %(nominal)s) bytes more"
        ) % {
            "vocab": fmt_int(vocab), "hidden": fmt_int(hidden), "copies": "" if split.tied else " × 2",
            "kept": fmt_int(stored.kept_16_bit), "parts": parts, "format": gettext(stored.fmt.label),
            "nominal": nominal_label,
        },
        bytes=stored.sixteen_bit_extra_bytes,
    )


def scales_item(stored: StoredWeights, hidden: int) -> Item:
    """The scales (and zero points) of the parts a format quantizes."""
    fmt = stored.fmt
    if fmt.row_scaled:
        per = gettext("one %(bits)s-bit scale per row of at least %(hidden)s values") % {
            "bits": general_number(fmt.scale_bits), "hidden": fmt_int(hidden)
        }
    else:
        per = gettext("(%(scale)s-bit scale + %(zero)s-bit zero) per group of %(group)s") % {
            "scale": general_number(fmt.scale_bits), "zero": general_number(fmt.zero_bits),
            "group": fmt_int(cast(int, fmt.group_size)),  # a grouped format: its group size is set
        }
    return Item(
        name=gettext("Quantization scales"),
        formula=gettext("%(quantized)s quantized parameters × %(per)s = %(bits)s bits each ÷ 8 "
                        "(%(format)s)") % {
            "quantized": fmt_int(stored.quantized), "per": per,
            "bits": general_number(stored.overhead_bits, 6), "format": gettext(fmt.label),
        },
        bytes=stored.scale_bytes,
    )


def format_items(stored: StoredWeights, vocab: int, hidden: int, nominal_label: str) -> list[Item]:
    """What a quantized format stores beyond every parameter at its nominal width."""
    items = []
    if stored.sixteen_bit_extra_bytes:
        items.append(sixteen_bit_item(stored, vocab, hidden, nominal_label))
    if stored.scale_bytes:
        items.append(scales_item(stored, hidden))
    return items


def weight_items(model: LanguageModelSpec,
                 precision: int) -> tuple[list[Item], list[str], StoredWeights | None]:
    """The weights as a published checkpoint stores them: (items, words, stored weights or None when the
    model is run in the format it is published in)."""
    native = native_format_of(model)
    if native is not None and native.bits == precision:
        items, words = native_weight_items(model, count_parameters(model), native)
        return items, words, None
    hidden = model_value(model, "hidden_size")
    weights = weights_item(gettext("Model weights"), model_value(model, "parameters"), precision)
    stored = stored_weights(FORMATS[INFERENCE_FORMAT[precision]], parameter_split(model), hidden)
    nominal = general_number(WEIGHT_BYTES[precision])
    return [weights, *format_items(stored, model_value(model, "vocab_size"), hidden, nominal)], [], stored
