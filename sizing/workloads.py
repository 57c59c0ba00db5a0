"""The workloads (SPEC §2), named once: codes, the words the wizard and answers use, and which
catalog kinds suit each.

"speech" is not a step of the wizard: running a speech model is "inference" with a speech model. The
code stays accepted (API, CLI) for callers that ask for speech recognition on its own.
"""
from __future__ import annotations

from dataclasses import dataclass

from .i18n import LazyText, TranslatedWords, gettext_lazy


@dataclass(frozen=True)
class Workload:
    code: str
    label: LazyText  # the wizard's choice, read in the active language
    words: LazyText  # in an answer's "Constraints applied"
    kinds: tuple[str, ...]  # catalog kinds that suit it
    in_wizard: bool = True
    # What behaviour reads, instead of comparing codes:
    takes_tokens: bool = False  # a context (or sequence length) and requests (or a batch size)
    serves_tokens: bool = False  # answers tokens per second: throughput plans, price per million tokens
    takes_kv_precision: bool = False  # the KV cache's precision is a choice
    takes_training: bool = False  # how a fine-tune is run is a choice (`sizing.training`)
    takes_memory: bool = False  # sized by the memory asked for, not by a model
    default_model: str | None = None  # the catalog model a query without one sizes

    @property
    def sizes_model(self) -> bool:
        return bool(self.kinds)


WORKLOADS: tuple[Workload, ...] = (
    Workload(
        "inference",
        gettext_lazy("Run a model"),
        gettext_lazy("Run a language model"),
        ("language", "speech"),
        takes_tokens=True,
        serves_tokens=True,
        takes_kv_precision=True,
        default_model="llama-3-1-8b",
    ),
    Workload(
        "finetune",
        gettext_lazy("Fine-tune a model"),
        gettext_lazy("Fine-tune a language model (LoRA / QLoRA)"),
        ("language",),
        takes_tokens=True,
        takes_training=True,
        default_model="llama-3-1-8b",
    ),
    Workload(
        "image",
        gettext_lazy("Generate images"),
        gettext_lazy("Generate images"),
        ("image",),
        default_model="stable-diffusion-xl",
    ),
    Workload(
        "notebook", gettext_lazy("Open a notebook"), gettext_lazy("Open a notebook"), (), takes_memory=True
    ),
    Workload(
        "speech",
        gettext_lazy("Run a speech model"),
        gettext_lazy("Run a speech-recognition model"),
        ("speech",),
        in_wizard=False,
        takes_kv_precision=True,
    ),
)
BY_CODE = {workload.code: workload for workload in WORKLOADS}
CODES: tuple[str, ...] = tuple(BY_CODE)
WIZARD_CODES: tuple[str, ...] = tuple(w.code for w in WORKLOADS if w.in_wizard)
# Workloads that size a catalog model (all but the notebook).
MODEL_CODES: tuple[str, ...] = tuple(w.code for w in WORKLOADS if w.kinds)
KINDS_BY_WORKLOAD = {workload.code: workload.kinds for workload in WORKLOADS}
WORKLOAD_WORDS = TranslatedWords({workload.code: workload.words.message for workload in WORKLOADS})
# Workloads that take a context (or sequence length) and requests (or batch size) for every model.
TOKEN_WORKLOADS: tuple[str, ...] = tuple(w.code for w in WORKLOADS if w.takes_tokens)
DEFAULT_WORKLOAD = "inference"


def workload(code: str | None) -> Workload | None:
    """The workload named `code`, or None for an unknown or missing code."""
    return BY_CODE.get(code or "")


def known_workload(code: str) -> Workload:
    """The workload named by a code already checked (a parsed query's, a breakdown's, the default);
    KeyError for any other."""
    return BY_CODE[code]


# Workloads the wizard sizes a catalog model for.
WIZARD_MODEL_CODES: tuple[str, ...] = tuple(code for code in WIZARD_CODES if BY_CODE[code].kinds)
