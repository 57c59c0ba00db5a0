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


WORKLOADS: tuple[Workload, ...] = (
    Workload(
        "inference",
        gettext_lazy("Run a model"),
        gettext_lazy("Run a language model"),
        ("language", "speech"),
    ),
    Workload(
        "finetune",
        gettext_lazy("Fine-tune a model"),
        gettext_lazy("Fine-tune a language model (LoRA / QLoRA)"),
        ("language",),
    ),
    Workload("image", gettext_lazy("Generate images"), gettext_lazy("Generate images"), ("image",)),
    Workload("notebook", gettext_lazy("Open a notebook"), gettext_lazy("Open a notebook"), ()),
    Workload(
        "speech",
        gettext_lazy("Run a speech model"),
        gettext_lazy("Run a speech-recognition model"),
        ("speech",),
        in_wizard=False,
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
TOKEN_WORKLOADS = ("inference", "finetune")
# Workloads the wizard sizes a catalog model for.
WIZARD_MODEL_CODES: tuple[str, ...] = tuple(code for code in WIZARD_CODES if BY_CODE[code].kinds)
