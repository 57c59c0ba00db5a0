"""Weight storage formats: what one stored parameter costs, scales included, and which modules a
format leaves in 16-bit (SPEC §9).

The native formats below are the ones a model is *published* in: block-scaled FP8 (DeepSeek-V3/R1)
and MXFP4 experts (gpt-oss). A model offers its native format as the precision with the same
number of bits; precisions it cannot be run in are refused with the reason.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from .architectures import ParameterCount, ceil_div
from .units import fmt_int


@dataclass(frozen=True)
class NativeFormat:
    key: str
    bits: int  # the precision choice (16 / 8 / 4) this format answers to
    short: str
    label: str
    data_bytes: Fraction  # per quantized parameter, before scales
    scale_bytes: int  # per scale
    explanation: str

    def scales(self, rows: int, cols: int, block: int) -> int:
        """Scales stored for one rows × cols matrix."""
        if self.key == "fp8-block":  # one fp32 scale per block × block tile; edge tiles padded
            return ceil_div(rows, block) * ceil_div(cols, block)
        return rows * ceil_div(cols, block)  # mxfp4: one E8M0 exponent per `block` inputs of a row


NATIVE_FORMATS = {
    "fp8-block": NativeFormat(
        key="fp8-block", bits=8, short="block FP8", label="FP8 (e4m3) with 128 × 128 block scales",
        data_bytes=Fraction(1), scale_bytes=4,
        explanation=(
            "Block FP8 as published: each quantized weight is one byte (e4m3), and every 128 × 128 block "
            "of a matrix carries one fp32 scale (weight_scale_inv); partial edge blocks count as whole."
        ),
    ),
    "mxfp4": NativeFormat(
        key="mxfp4", bits=4, short="MXFP4", label="MXFP4 (E2M1 with E8M0 scales per 32 values)",
        data_bytes=Fraction(1, 2), scale_bytes=1,
        explanation=(
            "MXFP4 as published: two 4-bit (E2M1) values per byte, and one shared 8-bit exponent (E8M0) "
            "per 32 values along each row, so 4.25 bits per expert weight."
        ),
    ),
}

ROLE_WORDS = {
    "attention": "attention projections",
    "mlp": "dense MLPs",
    "experts": "routed experts",
    "shared_experts": "shared experts",
}


@dataclass(frozen=True)
class StoredWeights:
    quantized_parameters: int
    quantized_bytes: int
    scales: int
    scale_bytes: int
    other_parameters: int
    other_bytes: int


def stored_weights(count: ParameterCount, native, fmt: NativeFormat) -> StoredWeights:
    """Bytes of a checkpoint in its native format: the quantized roles' matrices in the format (plus
    their scales); their vectors and every other module in 16-bit."""
    quantized = scales = 0
    other = 0
    for group in count.groups:
        if group.role in native.quantized:
            for rows, cols, times in group.matrices:
                quantized += rows * cols * times
                scales += fmt.scales(rows, cols, native.block) * times
            other += group.vectors
        else:
            other += group.parameters
    return StoredWeights(
        quantized_parameters=quantized,
        quantized_bytes=math.ceil(quantized * fmt.data_bytes),
        scales=scales,
        scale_bytes=scales * fmt.scale_bytes,
        other_parameters=other,
        other_bytes=other * 2,
    )


def quantized_roles_words(native) -> str:
    return ", ".join(ROLE_WORDS[role] for role in native.quantized)


def native_format_of(spec) -> NativeFormat | None:
    arch = spec.architecture
    if arch is None or arch.native_weights is None:
        return None
    return NATIVE_FORMATS[arch.native_weights.format]


def precision_choices(spec) -> dict[int, str | None]:
    """Each precision with None when the model can be run in it, else the reason it cannot."""
    fmt = native_format_of(spec)
    choices: dict[int, str | None] = {16: None, 8: None, 4: None}
    if fmt is not None and fmt.key == "mxfp4":
        choices[8] = (
            f"{spec.name} is published with MXFP4 experts; there is no 8-bit checkpoint, and vLLM and "
            "transformers run it either in MXFP4 (4-bit) or dequantized to 16-bit."
        )
    return choices


def precision_label(spec, bits: int) -> str:
    fmt = native_format_of(spec)
    if fmt is not None and fmt.bits == bits:
        return f"{bits}-bit, {fmt.short} as published"
    if fmt is not None and bits == 16:
        return "16-bit (dequantized from the published checkpoint)"
    return f"{bits}-bit"


def native_weight_items(spec, count: ParameterCount, fmt: NativeFormat):
    """The weights of a checkpoint in its native format, as two items, and what they assume."""
    from .breakdown import Item

    native = spec.architecture.native_weights
    stored = stored_weights(count, native, fmt)
    roles = quantized_roles_words(native)
    data = f"{float(fmt.data_bytes):g} byte" if fmt.data_bytes == 1 else f"{float(fmt.data_bytes):g} bytes"
    scale = "1 byte" if fmt.scale_bytes == 1 else f"{fmt.scale_bytes} bytes"
    items = [
        Item(
            name=f"Model weights, {fmt.short} layers",
            formula=(f"{fmt_int(stored.quantized_parameters)} parameters ({roles}) × {data} + "
                     f"{fmt_int(stored.scales)} scales × {scale}"),
            bytes=stored.quantized_bytes + stored.scale_bytes,
        ),
        Item(
            name="Model weights, 16-bit modules",
            formula=(f"{fmt_int(stored.other_parameters)} parameters × 2 bytes (every module the checkpoint "
                     "leaves unquantized: embeddings, output head, norms, biases, routers"
                     + (", attention" if "attention" not in native.quantized else "") + ")"),
            bytes=stored.other_bytes,
        ),
    ]
    assumptions = [
        fmt.explanation,
        f"Only the {roles} are stored in {fmt.short}; the checkpoint keeps every other module in 16-bit, "
        "and so does this estimate.",
    ]
    return items, assumptions
