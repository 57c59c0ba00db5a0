"""What a user reads about a workload query: every message about a bad value, the fields' labels
and the summary of errors, in the user's words.

Every message is translated when it is read (the page's or the API caller's language), its figures
written as that language writes numbers (10,000,000 in English, 10.000.000 in German).
"""
from __future__ import annotations

from django import forms
from django.utils.formats import number_format
from django.utils.functional import lazy
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from sizing.limits import (
    MAX_BATCHED_TOKENS,
    MAX_CONTEXT,
    MAX_GPU_MEMORY_GIB,
    MAX_LIMIT,
    MAX_LORA_RANK,
    MAX_MONEY,
    MAX_NOTEBOOK_GIB,
    MAX_NUM_SEQS,
    MAX_PARALLEL,
    MAX_REDUNDANCY,
    MAX_REQUESTS,
    MAX_TARGET_TOKENS_PER_S,
)

from .sorts import SORTS


def _fill(message, values: dict) -> str:
    return str(message) % {
        name: value if isinstance(value, str) else number_format(value, force_grouping=True)
        for name, value in values.items()
    }


_filled_lazily = lazy(_fill, str)


def filled(message, **values):
    """A translatable message with named figures (and words), filled in when it is read."""
    return _filled_lazily(message, values)


MESSAGES = {
    "context": {
        "min_value": _("Context must be at least 1 token."),
        "max_value": filled(_("Context can be at most %(max)s tokens."), max=MAX_CONTEXT),
        "invalid": _("Context must be a whole number of tokens, such as 4096."),
    },
    "requests": {
        "min_value": _("Concurrent requests must be at least 1."),
        "max_value": filled(_("Concurrent requests can be at most %(max)s."), max=MAX_REQUESTS),
        "invalid": _("Concurrent requests must be a whole number, such as 1 or 8."),
    },
    "memory_gib": {
        "min_value": _("GPU memory must be more than 0 GiB."),
        "max_value": filled(_("GPU memory can be at most %(max)s GiB."), max=MAX_NOTEBOOK_GIB),
        "invalid": _("GPU memory must be a number of GiB, such as 24."),
        "max_decimal_places": _("GPU memory takes at most 2 decimal places."),
        "max_digits": filled(_("GPU memory can be at most %(max)s GiB."), max=MAX_NOTEBOOK_GIB),
        "max_whole_digits": filled(_("GPU memory can be at most %(max)s GiB."), max=MAX_NOTEBOOK_GIB),
    },
    "budget": {
        "min_value": _("The budget must be more than $0; leave it empty for no budget."),
        "max_value": filled(_("The budget can be at most $%(max)s."), max=MAX_MONEY),
        "invalid": _("The budget must be an amount in USD, such as 50 or 12.50."),
        "max_decimal_places": _("The budget takes at most 2 decimal places (cents)."),
        "max_digits": filled(_("The budget can be at most $%(max)s."), max=MAX_MONEY),
        "max_whole_digits": filled(_("The budget can be at most $%(max)s."), max=MAX_MONEY),
    },
    "max_price": {
        "min_value": _("The max price must be more than $0 per hour; leave it empty for no limit."),
        "max_value": filled(_("The max price can be at most $%(max)s per hour."), max=MAX_MONEY),
        "invalid": _("The max price must be an amount in USD per hour, such as 2.50."),
        "max_decimal_places": _("The max price takes at most 2 decimal places (cents)."),
        "max_digits": filled(_("The max price can be at most $%(max)s per hour."), max=MAX_MONEY),
        "max_whole_digits": filled(_("The max price can be at most $%(max)s per hour."), max=MAX_MONEY),
    },
    "min_memory_gib": {
        "min_value": _("Memory per GPU must be more than 0 GiB; leave it empty for any."),
        "max_value": filled(_("Memory per GPU can be at most %(max)s GiB."), max=MAX_NOTEBOOK_GIB),
        "invalid": _("Memory per GPU must be a number of GiB, such as 80."),
        "max_decimal_places": _("Memory per GPU takes at most 2 decimal places."),
        "max_digits": filled(_("Memory per GPU can be at most %(max)s GiB."), max=MAX_NOTEBOOK_GIB),
        "max_whole_digits": filled(_("Memory per GPU can be at most %(max)s GiB."), max=MAX_NOTEBOOK_GIB),
    },
    "limit": {
        "min_value": _("Show at least 1 machine per page."),
        "max_value": filled(_("At most %(max)s machines per page."), max=MAX_LIMIT),
        "invalid": _("Machines per page must be a whole number."),
    },
    "page": {
        "min_value": _("Pages start at 1."),
        "max_value": _("There are not that many pages."),
        "invalid": _("The page must be a whole number, such as 2."),
    },
    "target_tokens": {
        "min_value": _("The throughput to serve must be more than 0 tokens/s; leave it empty for no plan."),
        "max_value": filled(
            _("The throughput to serve can be at most %(max)s tokens/s."), max=MAX_TARGET_TOKENS_PER_S
        ),
        "invalid": _("The throughput to serve must be a number of tokens per second, such as 180000."),
        "max_decimal_places": _("The throughput to serve takes at most 3 decimal places."),
        "max_digits": filled(
            _("The throughput to serve can be at most %(max)s tokens/s."), max=MAX_TARGET_TOKENS_PER_S
        ),
        "max_whole_digits": filled(
            _("The throughput to serve can be at most %(max)s tokens/s."), max=MAX_TARGET_TOKENS_PER_S
        ),
    },
    "efficiency": {
        "min_value": _("The efficiency must be more than 0 percent."),
        "max_value": _("The efficiency can be at most 100 percent."),
        "invalid": _("The efficiency must be a percentage, such as 75."),
        "max_decimal_places": _("The efficiency takes at most 2 decimal places."),
        "max_digits": _("The efficiency can be at most 100 percent."),
        "max_whole_digits": _("The efficiency can be at most 100 percent."),
    },
    "redundancy": {
        "min_value": _("Spare copies cannot be negative; 0 means none."),
        "max_value": filled(_("At most %(max)s spare copies."), max=MAX_REDUNDANCY),
        "invalid": _("Spare copies must be a whole number, such as 1."),
    },
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
        "max_decimal_places": _("The GPU memory utilization takes at most 3 decimal places."),
        "max_digits": _("The GPU memory utilization can be at most 1."),
        "max_whole_digits": _("The GPU memory utilization can be at most 1."),
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
    "engine": {
        "required": _("Choose the engine: transformers or vllm."),
        "invalid_choice": _("Choose the engine: transformers or vllm."),
    },
    "clusters": {"invalid_choice": _("Choose auto (clusters when no single machine fits) or show (always).")},
    "model": {"required": _("Choose a model.")},
    "workload": {"invalid_choice": _("Choose run a model, fine-tune, generate images or notebook.")},
    "precision": {"invalid_choice": _("Choose 16-bit, 8-bit or 4-bit."),
                  "required": _("Choose 16-bit, 8-bit or 4-bit.")},
    "kv_cache": {"invalid_choice": _("Choose a 16-bit or an 8-bit KV cache."),
                 "required": _("Choose a 16-bit or an 8-bit KV cache.")},
    "tier": {"invalid_choice": _("Choose Secure, Community or both.")},
    # How a fine-tune is run (sizing.training); read for the fine-tuning workload only.
    "gradient_checkpointing": {"invalid_choice": _("Choose gradient checkpointing on, off or offload.")},
    "loss": {"invalid_choice": _("Choose the loss: full, fused or chunked.")},
    "lora_rank": {
        "min_value": _("The LoRA rank must be at least 1."),
        "max_value": filled(_("The LoRA rank can be at most %(max)s."), max=MAX_LORA_RANK),
        "invalid": _("The LoRA rank must be a whole number, such as 16."),
    },
    "lora_targets": {"invalid_choice": _("Choose the LoRA targets: attention, qv, mlp or all.")},
    "adapter": {"invalid_choice": _("Choose the adapter: lora or dora.")},
    "optimizer": {"invalid_choice": _("Choose the optimizer: adamw or adamw8bit.")},
    "base_format": {"invalid_choice": _("Choose the 4-bit base: nf4 or gptq.")},
    "sort": {"invalid_choice": filled(_("Sort by one of: %(sorts)s."), sorts=", ".join(SORTS))},
    "group": {"invalid_choice": _("Group by gpu, or leave it empty.")},
    "confidence": {"invalid_choice": _("Confidence filter: high, medium, or empty for any.")},
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


FIELD_WORDS = {
    "workload": _("What you want to do"), "model": _("Model"), "precision": _("Precision"),
    "kv_cache": _("KV cache precision"),
    "memory_gib": _("GPU memory needed"), "budget": _("Budget"), "max_price": _("Max price per hour"),
    "tier": _("Tier"), "countries": _("Countries"), "limit": _("Machines per page"), "sort": _("Sort by"),
    "gpu": _("GPU model"), "min_memory_gib": _("Memory per GPU at least"), "confidence": _("Confidence"),
    "group": _("Group by"), "page": _("Page"), "target_tokens": _("Tokens per second to serve"),
    "efficiency": _("Usable efficiency"), "redundancy": _("Spare copies"),
    "gpu_plans": _("Cheapest plan on each GPU type"),
    "gradient_checkpointing": _("Gradient checkpointing"), "loss": _("Loss"), "lora_rank": _("LoRA rank"),
    "lora_targets": _("LoRA targets"), "adapter": _("Adapter"), "optimizer": _("Optimizer"),
    "base_format": _("4-bit base"),
}


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
