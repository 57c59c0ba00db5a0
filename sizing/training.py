"""How a fine-tune is run (SPEC §10): the trainer's choices that change what GPU memory holds.

Each choice is a code with its words; the first code of each is the documentation's own (HF Trainer,
gradient checkpointing on, the full fp32 logits, rank-16 LoRA on q, k, v and o, AdamW with fp32
states), so a query that names none is sized exactly as before. The calculator
(`sizing.calculators.finetune`) turns them into bytes; the query, the form, the API and the commands
read the codes and defaults from here.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from .errors import SizingError
from .i18n import TranslatedWords, gettext, gettext_noop
from .limits import MAX_LORA_RANK
from .units import fmt_int

GRADIENT_CHECKPOINTING = TranslatedWords({
    "on": gettext_noop("on (layers recomputed one at a time)"),
    "off": gettext_noop("off (every layer's activations kept)"),
    "offload": gettext_noop("offload (layer inputs in CPU memory)"),
})
LOSSES = TranslatedWords({
    "full": gettext_noop("full: fp32 logits (transformers)"),
    "fused": gettext_noop("fused: 16-bit logits (Unsloth, FOAK)"),
    "chunked": gettext_noop("chunked: logits never whole (Liger)"),
})
LORA_TARGETS = TranslatedWords({
    "attention": gettext_noop("attention: q, k, v and o"),
    "qv": gettext_noop("q and v only"),
    "mlp": gettext_noop("MLP: gate, up and down"),
    "all": gettext_noop("every linear layer of the blocks"),
})
ADAPTERS = TranslatedWords({
    "lora": gettext_noop("LoRA"),
    "dora": gettext_noop("DoRA (LoRA with a trained magnitude)"),
})
OPTIMIZERS = TranslatedWords({
    "adamw": gettext_noop("AdamW, fp32 states"),
    "adamw8bit": gettext_noop("AdamW 8-bit (bitsandbytes)"),
})
# What a 4-bit base is stored in (the 4-bit precision only): bitsandbytes NF4, quantized at load (QLoRA,
# the documentation's), or a published GPTQ checkpoint (AutoGPTQ/GPTQModel through optimum and PEFT).
BASE_FORMATS = TranslatedWords({
    "nf4": gettext_noop("NF4, bitsandbytes (QLoRA)"),
    "gptq": gettext_noop("GPTQ checkpoint, group 128"),
})
# The only precision whose base the format describes; any other ignores the field.
BASE_FORMAT_PRECISION = 4
DEFAULT_LORA_RANK = 16
DEFAULT_BASE_FORMAT = "nf4"
# The choices a fine-tuning query takes, by field name (the query string's, the API's and the CLI's).
CHOICES = {
    "gradient_checkpointing": GRADIENT_CHECKPOINTING,
    "loss": LOSSES,
    "lora_targets": LORA_TARGETS,
    "adapter": ADAPTERS,
    "optimizer": OPTIMIZERS,
    "base_format": BASE_FORMATS,
}
FIELDS = ("gradient_checkpointing", "loss", "lora_rank", "lora_targets", "adapter", "optimizer",
          "base_format")
# The trainer's own choices (what a preset fills); the base's format is the checkpoint's, not the trainer's.
TRAINER_FIELDS = FIELDS[:-1]


@dataclass(frozen=True)
class Training:
    """One way of running a fine-tune; every field at its default is the documentation's trainer."""

    gradient_checkpointing: str = "on"
    loss: str = "full"
    lora_rank: int = DEFAULT_LORA_RANK
    lora_targets: str = "attention"
    adapter: str = "lora"
    optimizer: str = "adamw"
    base_format: str = DEFAULT_BASE_FORMAT  # read at the 4-bit precision only (`for_precision`)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def for_precision(self, precision: int) -> Training:
        """The choices as a base of this precision reads them: the 4-bit base's format is the default's
        at any other precision (ignored, so neither listed nor carried in an address)."""
        if precision == BASE_FORMAT_PRECISION or self.base_format == DEFAULT_BASE_FORMAT:
            return self
        return replace(self, base_format=DEFAULT_BASE_FORMAT)

    def trainer_values(self) -> dict[str, Any]:
        """The trainer's choices alone (what a preset fills)."""
        return {name: value for name, value in self.as_dict().items() if name in TRAINER_FIELDS}

    def non_default(self) -> dict[str, Any]:
        """The fields that differ from the defaults (what an address must carry)."""
        default = DEFAULT_TRAINING.as_dict()
        return {name: value for name, value in self.as_dict().items() if default[name] != value}


DEFAULT_TRAINING = Training()
DEFAULTS = {name: str(value) for name, value in DEFAULT_TRAINING.as_dict().items()}

# Presets fill the inputs the way a trainer runs by default; they are nothing but these values.
# (torchtune's LoRA recipes put rank 8 on q, v, o and the MLP, which the targets cannot say: no preset.)
PRESETS = {
    "hf-trainer": Training(),
    # Unsloth's notebooks: use_gradient_checkpointing="unsloth", its fused cross-entropy, r=16 on all seven
    # projections, optim="adamw_8bit".
    "unsloth": Training(gradient_checkpointing="offload", loss="fused", lora_targets="all",
                       optimizer="adamw8bit"),
}
PRESET_NAMES = {"hf-trainer": "HF Trainer", "unsloth": "Unsloth"}  # product names, in every language


def rank_subject() -> str:
    return gettext("The LoRA rank")


def choice_error(field: str, value: object) -> SizingError:
    codes = ", ".join(CHOICES[field])
    return SizingError(field, gettext("Choose one of: %(codes)s.") % {"codes": codes})


def checked_training(training: Training, hidden_size: int | None = None) -> Training:
    """The choices, each a known code and the rank a whole number from 1 to the limit and at most the
    model's hidden size (a rank-r adapter factors a matrix of that width); else a SizingError naming
    the field."""
    if not isinstance(training, Training):
        raise TypeError("training must be a Training")
    for field in CHOICES:
        value = getattr(training, field)
        if not isinstance(value, str) or value not in CHOICES[field]:
            raise choice_error(field, value)
    rank = training.lora_rank
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise SizingError("lora_rank", gettext("%(subject)s must be a whole number.") % {
            "subject": rank_subject()})
    if rank < 1:
        raise SizingError("lora_rank", gettext("%(subject)s must be at least 1.") % {
            "subject": rank_subject()})
    if rank > MAX_LORA_RANK:
        raise SizingError("lora_rank", gettext("%(subject)s may be at most %(maximum)s.") % {
            "subject": rank_subject(), "maximum": fmt_int(MAX_LORA_RANK)})
    if hidden_size is not None and rank > hidden_size:
        raise SizingError("lora_rank", gettext(
            "The LoRA rank of %(rank)s is above the model's hidden size of %(hidden)s: a rank that large "
            "factors nothing."
        ) % {"rank": fmt_int(rank), "hidden": fmt_int(hidden_size)})
    return training
