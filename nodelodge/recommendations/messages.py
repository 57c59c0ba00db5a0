"""What a user reads about a workload query: every message about a bad value, the fields' labels
and the summary of errors, in the user's words.

Every message is translated when it is read (the page's or the API caller's language), its figures
written as that language writes numbers (10,000,000 in English, 10.000.000 in German).
"""
from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from sizing.limits import (
    MAX_BATCHED_TOKENS,
    MAX_CONTEXT,
    MAX_GPU_MEMORY_GIB,
    MAX_NUM_SEQS,
    MAX_PARALLEL,
    MAX_REQUESTS,
)

from .parameters import PARAMETERS, filled

__all__ = ["MESSAGES", "filled"]

# The messages of the query's inputs are declared with them (`parameters.PARAMETERS`); the GPU what-if's
# own settings are worded here.
WHAT_IF_MESSAGES = {
    "gpu_memory_gib": {
        "required": _("Enter one GPU's memory in GiB, as CUDA reports it (79.19 for an H100 80GB)."),
        "min_value": _("One GPU's memory must be more than 0 GiB."),
        "max_value": filled(_("One GPU's memory can be at most %(max)s GiB."), max=MAX_GPU_MEMORY_GIB),
        "invalid": _("One GPU's memory must be a number of GiB, such as 79.19."),
        "max_decimal_places": _("One GPU's memory takes at most 2 decimal places."),
        "max_digits": filled(_("One GPU's memory can be at most %(max)s GiB."), max=MAX_GPU_MEMORY_GIB),
        "max_whole_digits": filled(_("One GPU's memory can be at most %(max)s GiB."), max=MAX_GPU_MEMORY_GIB),
    },
    "tensor_parallel": {
        "required": _("Enter the tensor-parallel size, such as 1 or 2."),
        "min_value": _("The tensor-parallel size must be at least 1."),
        "max_value": filled(_("The tensor-parallel size can be at most %(max)s."), max=MAX_PARALLEL),
        "invalid": _("The tensor-parallel size must be a whole number, such as 2."),
    },
    "pipeline_parallel": {
        "required": _("Enter the pipeline-parallel size, such as 1."),
        "min_value": _("The pipeline-parallel size must be at least 1."),
        "max_value": filled(_("The pipeline-parallel size can be at most %(max)s."), max=MAX_PARALLEL),
        "invalid": _("The pipeline-parallel size must be a whole number, such as 1."),
    },
    "gpu_memory_utilization": {
        "required": _("Enter the GPU memory utilization, such as 0.9."),
        "min_value": _("The GPU memory utilization must be more than 0."),
        "max_value": _("The GPU memory utilization can be at most 1."),
        "invalid": _("The GPU memory utilization must be a fraction, such as 0.9."),
        "max_decimal_places": _("The GPU memory utilization takes at most 15 decimal places."),
        "max_digits": _("The GPU memory utilization can be at most 1."),
        "max_whole_digits": _("The GPU memory utilization can be at most 1."),
    },
    "mem_fraction_static": {
        "min_value": _("mem_fraction_static must be more than 0."),
        "max_value": _("mem_fraction_static must be less than 1."),
        "invalid": _("mem_fraction_static must be a fraction, such as 0.88."),
        "max_decimal_places": _("mem_fraction_static takes at most 15 decimal places."),
        "max_digits": _("mem_fraction_static must be less than 1."),
        "max_whole_digits": _("mem_fraction_static must be less than 1."),
    },
    "max_model_len": {
        "min_value": _("max_model_len must be at least 1 token."),
        "max_value": filled(_("max_model_len can be at most %(max)s tokens."), max=MAX_CONTEXT),
        "invalid": _("max_model_len must be a whole number of tokens, such as 8192."),
    },
    "max_num_batched_tokens": {
        "required": _("Enter max_num_batched_tokens, such as 8192."),
        "min_value": _("max_num_batched_tokens must be at least 1."),
        "max_value": filled(_("max_num_batched_tokens can be at most %(max)s."), max=MAX_BATCHED_TOKENS),
        "invalid": _("max_num_batched_tokens must be a whole number, such as 8192."),
    },
    "max_num_seqs": {
        "min_value": _("max_num_seqs must be at least 1."),
        "max_value": filled(_("max_num_seqs can be at most %(max)s."), max=MAX_NUM_SEQS),
        "invalid": _("max_num_seqs must be a whole number, such as 256."),
    },
}
MESSAGES = {
    **{p.name: p.messages for p in PARAMETERS if p.messages},
    **WHAT_IF_MESSAGES,
}


# The same messages where the form's labels say otherwise (fine-tuning, speech recognition).
RENAMED = {
    "finetune": {
        "context": {
            "min_value": _("Sequence length must be at least 1 token."),
            "max_value": filled(_("Sequence length can be at most %(max)s tokens."), max=MAX_CONTEXT),
            "invalid": _("Sequence length must be a whole number of tokens, such as 4096."),
        },
        "requests": {
            "min_value": _("Batch size must be at least 1."),
            "max_value": filled(_("Batch size can be at most %(max)s."), max=MAX_REQUESTS),
            "invalid": _("Batch size must be a whole number, such as 1 or 8."),
        },
    },
    "speech": {
        "requests": {
            "min_value": _("Concurrent audio streams must be at least 1."),
            "max_value": filled(_("Concurrent audio streams can be at most %(max)s."), max=MAX_REQUESTS),
            "invalid": _("Concurrent audio streams must be a whole number, such as 1 or 8."),
        },
    },
}


def _renamed(workload: str | None, model_kind: str | None) -> dict:
    return RENAMED.get(_renamed_as(workload, model_kind), {})


def reworded(name: str, message: str, workload: str | None, model_kind: str | None = None) -> str:
    """A field's message in the words of the form's label for this workload."""
    renamed = _renamed(workload, model_kind).get(name, {})
    for code, text in MESSAGES.get(name, {}).items():
        if code in renamed and str(text) == message:
            return str(renamed[code])
    return message


def messages_for(workload: str | None, model_kind: str | None = None) -> dict[str, dict[str, str]]:
    """Every field's messages as the form for this workload words them (for checks in the browser)."""
    renamed = _renamed(workload, model_kind)
    return {
        name: {code: str(renamed.get(name, {}).get(code, text)) for code, text in codes.items()}
        for name, codes in MESSAGES.items()
    }


def error_words(name: str, *extra: str) -> dict[str, str]:
    found = dict(MESSAGES.get(name, {}))
    for code in extra:
        found.setdefault(code, found.get("invalid", _("Enter a valid value.")))
    return found


# The code of a form error that depends on another field: a value valid alone that does not suit the rest
# (the API answers 422, a bad value 400).
CONFLICT = "conflict"


def only_conflicts(form: forms.Form) -> bool:
    """Whether every error of an invalid form depends on another field (`CONFLICT`)."""
    return {error.code for errors in form.errors.as_data().values() for error in errors} == {CONFLICT}


def form_errors(form: forms.Form) -> dict[str, str]:
    """A form's errors as field name -> one message ("__all__" for the form's own). A message is
    said once: a figure past the limit fails both the limit and the count of digits, in one sentence."""
    return {name: " ".join(dict.fromkeys(str(message) for message in messages))
            for name, messages in form.errors.items()}


# The labels of the context and the requests: sequence length and batch size for fine-tuning,
# concurrent audio streams for speech recognition (keyed as RENAMED is).
LABELS = {
    "finetune": {"context": _("Sequence length (tokens)"), "requests": _("Batch size")},
    "speech": {"context": _("Context (fixed: 30-second window)"), "requests": _("Concurrent audio streams")},
}
USUAL_LABELS = {"context": _("Context per request (tokens)"), "requests": _("Concurrent requests")}


def _renamed_as(workload: str | None, model_kind: str | None) -> str:
    """Which renaming the form's labels follow: a speech model's, else the workload's own."""
    return "speech" if model_kind == "speech" else workload or ""


def field_labels(workload: str, model_kind: str | None) -> dict[str, str]:
    """The labels of the context and the requests as the form for this workload and model shows them."""
    labels = LABELS.get(_renamed_as(workload, model_kind), USUAL_LABELS)
    return {name: str(label) for name, label in labels.items()}


FIELD_WORDS = {p.name: p.words for p in PARAMETERS if p.words is not None}


def error_list(errors: dict[str, str], labels: dict[str, str]) -> list[dict]:
    """Errors for a summary: the field's label as the page shows it, its input's id, the message."""
    found = []
    for name, message in errors.items():
        label = labels.get(name) or FIELD_WORDS.get(name) or pgettext_lazy("form field", "Input")
        anchor = None if name in ("__all__", "workload", "page", "limit") else f"id_{name}"
        if name == "model":
            anchor = "id_q"
        found.append({"name": name, "label": label, "anchor": anchor, "message": message})
    return found
