"""How published checkpoint formats store a language model's weights (SPEC §9).

Pure rules, no I/O. A format says how many bits each quantized parameter costs (the payload plus
its share of the group's scale and zero point) and which parts of the model it leaves in 16-bit.
Every quantized format published for the models in the catalog (GPTQ, AWQ, bitsandbytes NF4 and
int8) quantizes the linear layers of the decoder blocks and keeps the token embeddings and the
output head in 16-bit; a tied output head shares the embedding matrix and is counted once.

Native formats (`NATIVE_FORMATS`, below) are the ones a model is *published* in: block-scaled FP8
(DeepSeek-V3/R1) and MXFP4 experts (gpt-oss). A model offers its native format as the precision of the
same width, sized module by module as stored; precisions it cannot be run in are refused with the
reason (`precision_choices`).

To add a format, add a `WeightFormat` to `FORMATS` (and, if it is what a precision choice of the
wizard means, point `INFERENCE_FORMAT` or `FINETUNE_BASE_FORMAT` at it). A format that quantizes
other parts (only the experts of a mixture-of-experts model, say) lists what it keeps in 16-bit in
`keeps_16_bit`, and `split_parameters` learns to count that part.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, cast

from .architectures import ParameterCount, ceil_div
from .errors import SizingError
from .i18n import TranslatedWords, gettext, gettext_noop
from .nouns import byte_count
from .units import fmt_int

if TYPE_CHECKING:
    from .architectures import Architecture, NativeWeights
    from .breakdown import Item
    from .specs import LanguageModelSpec

SIXTEEN_BIT_BYTES = 2

# Parts of a language model a format may keep in 16-bit.
EMBEDDINGS = "embeddings"
OUTPUT_HEAD = "output head"


@dataclass(frozen=True)
class WeightFormat:
    key: str
    label: str  # as people name it, e.g. "GPTQ 4-bit, group 128" (English; translated where shown)
    precision: int  # the precision choice it answers to: 16, 8 or 4
    payload_bits: Fraction  # bits of each stored value
    group_size: int | None  # values sharing one scale; None: no scale (16-bit) or one per row (row_scaled)
    scale_bits: Fraction = Fraction(0)  # per group (or per row), including any second-level quantization
    zero_bits: Fraction = Fraction(0)  # per group
    row_scaled: bool = False  # one scale per output row: a row is at least hidden_size values long
    keeps_16_bit: tuple[str, ...] = (EMBEDDINGS, OUTPUT_HEAD)
    source: str = ""

    @property
    def quantized(self) -> bool:
        return self.payload_bits < 16

    def overhead_bits(self, row_length: int | None = None) -> Fraction:
        """Bits per quantized parameter spent on scales and zero points."""
        if self.row_scaled:
            if row_length is None:
                raise ValueError(f"{self.key} needs the row length (hidden size) for its scales")
            return (self.scale_bits + self.zero_bits) / row_length
        if self.group_size is None:
            return Fraction(0)
        return (self.scale_bits + self.zero_bits) / self.group_size

    def bits_per_parameter(self, row_length: int | None = None) -> Fraction:
        return self.payload_bits + self.overhead_bits(row_length)


FORMATS: dict[str, WeightFormat] = {
    f.key: f
    for f in (
        WeightFormat(
            key="bf16", label=gettext_noop("16-bit (BF16/FP16)"), precision=16, payload_bits=Fraction(16),
            group_size=None, keeps_16_bit=(), source=gettext_noop("the checkpoint as published"),
        ),
        WeightFormat(
            key="gptq-int8", label=gettext_noop("GPTQ 8-bit, group 128"), precision=8,
            payload_bits=Fraction(8),
            group_size=128, scale_bits=Fraction(16), zero_bits=Fraction(8),
            source=gettext_noop("GPTQ (Frantar et al. 2022) as AutoGPTQ stores it: a 16-bit scale and a "
                                "packed "
                                "zero per group of 128 input values"),
        ),
        WeightFormat(
            key="gptq-int4", label=gettext_noop("GPTQ/AWQ 4-bit, group 128"), precision=4,
            payload_bits=Fraction(4), group_size=128, scale_bits=Fraction(16), zero_bits=Fraction(4),
            source=gettext_noop("GPTQ (Frantar et al. 2022) and AWQ (Lin et al. 2023): a 16-bit scale and a "
                                "packed 4-bit zero per group of 128 input values"),
        ),
        WeightFormat(
            key="bnb-int8", label=gettext_noop("bitsandbytes int8, per row"), precision=8,
            payload_bits=Fraction(8),
            group_size=None, scale_bits=Fraction(32), row_scaled=True,
            source=gettext_noop("LLM.int8() (Dettmers et al. 2022): one 32-bit scale per output row"),
        ),
        WeightFormat(
            key="bnb-nf4", label=gettext_noop("bitsandbytes NF4, double quantization"), precision=4,
            payload_bits=Fraction(4), group_size=64,
            # an 8-bit scale per block of 64 plus a 32-bit scale per 256 blocks: 8/64 + 32/(64 × 256)
            # = 0.127 bits per parameter as the paper rounds it (and the spec counts it)
            scale_bits=Fraction(127, 1000) * 64,
            source=gettext_noop("QLoRA (Dettmers et al. 2023): 4-bit NormalFloat with double quantization, "
                                "4.127 bits per parameter"),
        ),
    )
}

# What the wizard's precision choice means for inference: the published format of that width that
# costs the most bits (group-128 GPTQ/AWQ), so that any of them fits.
INFERENCE_FORMAT = {16: "bf16", 8: "gptq-int8", 4: "gptq-int4"}
# The frozen base of LoRA (16-bit, or bitsandbytes int8) and QLoRA (NF4).
FINETUNE_BASE_FORMAT = {16: "bf16", 8: "bnb-int8", 4: "bnb-nf4"}
# A fine-tune's 4-bit base given as a published GPTQ checkpoint (`base_format="gptq"`).
GPTQ_BASE_FORMAT = "gptq-int4"


@dataclass(frozen=True)
class ParameterSplit:
    """A language model's parameters by what formats treat differently."""

    embeddings: int  # vocabulary × hidden
    output_head: int  # vocabulary × hidden, or 0 when tied to the embeddings
    decoder: int  # everything else: the blocks' linear layers (and their small norms and biases)
    tied: bool
    tied_known: bool

    @property
    def total(self) -> int:
        return self.embeddings + self.output_head + self.decoder

    def part(self, name: str) -> int:
        return {EMBEDDINGS: self.embeddings, OUTPUT_HEAD: self.output_head}[name]


def split_parameters(name: str, parameters: int, vocab_size: int, hidden_size: int,
                     tied_embeddings: bool | None) -> ParameterSplit:
    """Embeddings, output head and the rest. An unknown tie counts a separate head (the larger need)."""
    embeddings = vocab_size * hidden_size
    tied = bool(tied_embeddings)
    head = 0 if tied else embeddings
    decoder = parameters - embeddings - head
    if decoder <= 0:
        values = {
            "model": name, "parameters": fmt_int(parameters), "vocab": fmt_int(vocab_size),
            "hidden": fmt_int(hidden_size)
        }
        if tied:
            message = gettext(
                "%(model)s: %(parameters)s parameters cannot hold its embedding matrix of %(vocab)s × "
                "%(hidden)s values."
            )
        else:
            message = gettext(
                "%(model)s: %(parameters)s parameters cannot hold its embedding matrix of %(vocab)s × "
                "%(hidden)s "
                "values and an output head of the same size."
            )
        raise SizingError("model", message % values)
    return ParameterSplit(embeddings, head, decoder, tied, tied_embeddings is not None)


@dataclass(frozen=True)
class StoredWeights:
    """Bytes of a model stored in `fmt`, split so that the spec's own item stays as it is.

    `nominal_bytes` is every parameter at the precision's nominal width (the spec's "Model weights"
    item); `sixteen_bit_extra_bytes` what the parts kept in 16-bit cost beyond that;
    `scale_bytes` the scales and zero points of the quantized parameters.
    """

    fmt: WeightFormat
    split: ParameterSplit
    kept_16_bit: int
    quantized: int
    nominal_bytes: int
    sixteen_bit_extra_bytes: int
    scale_bytes: int
    overhead_bits: Fraction

    @property
    def total_bytes(self) -> int:
        return self.nominal_bytes + self.sixteen_bit_extra_bytes + self.scale_bytes


def stored_weights(fmt: WeightFormat, split: ParameterSplit, row_length: int,
                   nominal_includes_scales: bool = False) -> StoredWeights:
    """Bytes of `split` stored in `fmt`. `nominal_includes_scales`: the nominal width already counts the
    scales (QLoRA's 4.127 bits), so every parameter is counted at that width and no scale item follows."""
    overhead = fmt.overhead_bits(row_length) if fmt.quantized else Fraction(0)
    nominal_bits = fmt.payload_bits + (overhead if nominal_includes_scales else 0)
    nominal = nominal_bits / 8
    kept = sum(split.part(name) for name in fmt.keeps_16_bit) if fmt.quantized else 0
    quantized = split.total - kept
    return StoredWeights(
        fmt=fmt,
        split=split,
        kept_16_bit=kept,
        quantized=quantized,
        nominal_bytes=math.ceil(split.total * nominal),
        sixteen_bit_extra_bytes=math.ceil(kept * (SIXTEEN_BIT_BYTES - nominal)),
        scale_bytes=0 if nominal_includes_scales else math.ceil(quantized * overhead / 8),
        overhead_bits=overhead,
    )


# --- native formats: checkpoints published in low precision -------------------------------------------

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
        key="fp8-block", bits=8, short=gettext_noop("block FP8"),
        label=gettext_noop("FP8 (e4m3) with 128 × 128 block scales"),
        data_bytes=Fraction(1), scale_bytes=4,
        explanation=gettext_noop(
            "Block FP8 as published: each quantized weight is one byte (e4m3), and every 128 × 128 block "
            "of a matrix carries one fp32 scale (weight_scale_inv); partial edge blocks count as whole."
        ),
    ),
    "mxfp4": NativeFormat(
        key="mxfp4", bits=4, short="MXFP4", label=gettext_noop("MXFP4 (E2M1 with E8M0 scales per 32 values)"),
        data_bytes=Fraction(1, 2), scale_bytes=1,
        explanation=gettext_noop(
            "MXFP4 as published: two 4-bit (E2M1) values per byte, and one shared 8-bit exponent (E8M0) "
            "per 32 values along each row, so 4.25 bits per expert weight."
        ),
    ),
}

ROLE_WORDS = TranslatedWords({
    "attention": gettext_noop("attention projections"),
    "mlp": gettext_noop("dense MLPs"),
    "experts": gettext_noop("routed experts"),
    "shared_experts": gettext_noop("shared experts"),
})


@dataclass(frozen=True)
class NativeStored:
    quantized_parameters: int
    quantized_bytes: int
    scales: int
    scale_bytes: int
    other_parameters: int
    other_bytes: int


def native_stored_weights(count: ParameterCount, native: NativeWeights, fmt: NativeFormat) -> NativeStored:
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
    return NativeStored(
        quantized_parameters=quantized,
        quantized_bytes=math.ceil(quantized * fmt.data_bytes),
        scales=scales,
        scale_bytes=scales * fmt.scale_bytes,
        other_parameters=other,
        other_bytes=other * 2,
    )


def quantized_roles_words(native: NativeWeights) -> str:
    return ", ".join(ROLE_WORDS[role] for role in native.quantized)


def native_format_of(spec: LanguageModelSpec) -> NativeFormat | None:
    arch = spec.architecture
    if arch is None or arch.native_weights is None:
        return None
    return NATIVE_FORMATS[arch.native_weights.format]


def precision_choices(spec: LanguageModelSpec) -> dict[int, str | None]:
    """Each precision with None when the model can be run in it, else the reason it cannot."""
    fmt = native_format_of(spec)
    choices: dict[int, str | None] = {16: None, 8: None, 4: None}
    if fmt is not None and fmt.key == "mxfp4":
        choices[8] = gettext(
            "%(model)s is published with MXFP4 experts; there is no 8-bit checkpoint, and vLLM and "
            "transformers run it either in MXFP4 (4-bit) or dequantized to 16-bit."
        ) % {"model": spec.name}
    return choices


def precision_label(spec: LanguageModelSpec, bits: int) -> str:
    fmt = native_format_of(spec)
    if fmt is not None and fmt.bits == bits:
        return gettext("%(bits)s-bit, %(format)s as published") % {"bits": bits, "format": gettext(fmt.short)}
    if fmt is not None and bits == 16:
        return gettext("16-bit (dequantized from the published checkpoint)")
    return gettext("%(bits)s-bit") % {"bits": bits}


def native_weight_items(spec: LanguageModelSpec, count: ParameterCount,
                        fmt: NativeFormat) -> tuple[list[Item], list[str]]:
    """The weights of a checkpoint in its native format, as two items, and what they assume."""
    from .breakdown import Item

    # asked only of a model published in a native format (`native_format_of`)
    native = cast("NativeWeights", cast("Architecture", spec.architecture).native_weights)
    stored = native_stored_weights(count, native, fmt)
    roles = quantized_roles_words(native)
    data = byte_count(fmt.data_bytes)
    scale = byte_count(fmt.scale_bytes)
    short = gettext(fmt.short)
    if "attention" in native.quantized:
        unquantized = gettext(
            "%(parameters)s parameters × 2 bytes (every module the checkpoint leaves unquantized: "
            "embeddings, "
            "output head, norms, biases, routers)"
        )
    else:
        unquantized = gettext(
            "%(parameters)s parameters × 2 bytes (every module the checkpoint leaves unquantized: "
            "embeddings, "
            "output head, norms, biases, routers, attention)"
        )
    items = [
        Item(
            name=gettext("Model weights, %(format)s layers") % {"format": short},
            formula=gettext(
                "%(parameters)s parameters (%(roles)s) × %(data)s + %(scales)s scales × %(scale)s"
            ) % {
                "parameters": fmt_int(stored.quantized_parameters), "roles": roles, "data": data,
                "scales": fmt_int(stored.scales), "scale": scale,
            },
            bytes=stored.quantized_bytes + stored.scale_bytes,
        ),
        Item(
            name=gettext("Model weights, 16-bit modules"),
            formula=unquantized % {"parameters": fmt_int(stored.other_parameters)},
            bytes=stored.other_bytes,
        ),
    ]
    assumptions = [
        gettext(fmt.explanation),
        gettext(
            "Only the %(roles)s are stored in %(format)s; the checkpoint keeps every other module in 16-bit, "
            "and so does this estimate."
        ) % {"roles": roles, "format": short},
    ]
    return items, assumptions
