"""The constraints an answer applied, as (label, value) pairs in words."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..breakdown import Breakdown, GgufFile
from ..calculators.llamacpp_builds import constraint_label, parse_engine_build, reservation_words
from ..calculators.llamacpp_inference import gpu_layers_setting
from ..countries import EU_CODE, EU_MEMBERS, country_name
from ..i18n import format_number, gettext, pgettext
from ..markets import DEFAULT_MARKET, INTERRUPTIBLE, reliability_percent
from ..offers import Preferences
from ..reasons import reason_words
from ..training import ADAPTERS, BASE_FORMATS, GRADIENT_CHECKPOINTING, LORA_TARGETS, LOSSES, OPTIMIZERS
from ..units import (
    fmt_gib,
    money_text,
)
from ..workloads import WORKLOAD_WORDS, Workload

if TYPE_CHECKING:
    pass
from .common import (
    TIER_WORDS,
    bits_words,
    count_text,
    count_words,
    first_of,
    per_hour,
    tokens_words,
)


def gguf_file_words(gguf: GgufFile) -> str:
    """"Llama-3.1-8B-Q4_K_M.gguf (4.58 GiB, published in bartowski/…)" or "… (no published file)"."""
    if gguf.repository is None:
        return gettext("%(file)s (%(size)s; no published file: sized from llama.cpp's own rules)") % {
            "file": gguf.file, "size": fmt_gib(gguf.bytes)}
    return gettext("%(file)s (%(size)s, published in %(repository)s)") % {
        "file": gguf.file, "size": fmt_gib(gguf.bytes), "repository": gguf.repository}


def constraints_applied(
    breakdown: Breakdown, preferences: Preferences, excluded: Mapping[str, int], stale_after_minutes: int
) -> tuple[tuple[str, str], ...]:
    """Everything the answer took into account, as (label, value) pairs in words."""
    inputs = breakdown.inputs
    workload = breakdown.workload
    capabilities = breakdown.capabilities
    takes_memory = capabilities is not None and capabilities.takes_memory
    pairs: list[tuple[str, str]] = [(gettext("Workload"), WORKLOAD_WORDS.get(workload, workload))]
    model = first_of(inputs, "model_name", "model")
    if model is not None and not takes_memory:
        pairs.append((gettext("Model"), str(model)))
    if breakdown.precision is not None and not takes_memory:
        precision = bits_words(breakdown.precision)
        if inputs.get("quantization_asked"):  # the GGUF type asked decides the file, not the precision
            precision = gettext("the GGUF quantization %(type)s (the precision is not read)") % {
                "type": inputs.get("quantization", "")}
        pairs.append((gettext("Precision"), precision))
        if capabilities is not None and capabilities.takes_kv_precision and "kv_bits" in inputs:
            pairs.append((gettext("KV cache"), bits_words(inputs["kv_bits"])))
        if inputs.get("engine") in ("llamacpp", "ollama"):
            pairs.append((gettext("Engine"), _gguf_engine_words(breakdown)))
            if breakdown.gguf is not None:
                pairs.append((gettext("GGUF file"), gguf_file_words(breakdown.gguf)))
            engine = inputs["engine"]
            build = parse_engine_build(engine, inputs.get("engine_version"))
            pairs.append((constraint_label(engine), reservation_words(engine, build)))
        if inputs.get("engine") == "sglang":
            pairs.append((gettext("Engine"), gettext(
                "SGLang (its %(version)s static pool: mem_fraction_static %(fraction)s at --tp 1, lower over "
                "more GPUs, set in each command)"
            ) % {"version": inputs.get("engine_version", ""),
                 "fraction": format_number(inputs.get("mem_fraction_static", 0.88))}))
        if inputs.get("engine") == "vllm":
            pairs.append((gettext("Engine"), gettext(
                "vLLM (its %(version)s budget: gpu_memory_utilization %(utilization)s, blocks of 16 tokens)"
            ) % {"version": inputs.get("engine_version", ""),
                 "utilization": format_number(inputs.get("gpu_memory_utilization", 0.9))}))
    pairs.extend(_input_pairs(breakdown, capabilities))
    pairs.extend(_training_pairs(breakdown, capabilities))
    pairs.append(
        (
            gettext("Budget"),
            money_text(preferences.budget)
            if preferences.budget is not None
            else pgettext("no budget", "none"),
        )
    )
    pairs.append(
        (
            gettext("Maximum price per hour"),
            per_hour(preferences.max_price_per_hour)
            if preferences.max_price_per_hour is not None
            else pgettext("no price limit", "none"),
        )
    )
    pairs.append((gettext("Tier"), TIER_WORDS.get(preferences.tier, preferences.tier)))
    if preferences.market != DEFAULT_MARKET:  # listed only where chosen: other answers keep their words
        if preferences.market == INTERRUPTIBLE:
            markets = gettext("on demand or interruptible, whichever is cheaper per machine")
        else:
            markets = gettext("on demand, interruptible or reserved, whichever is cheapest per machine")
        pairs.append((gettext("Markets"), markets))
    if preferences.min_reliability is not None:  # listed only where chosen: other answers keep their words
        pairs.append((gettext("Reliability"), gettext("at least %(minimum)s, as each feed reports it") % {
            "minimum": reliability_percent(preferences.min_reliability)
        }))
    pairs.append((gettext("Countries"), countries_words(preferences)))
    pairs.append(
        (
            gettext("Availability"),
            gettext(
                "Community machines online, Secure machines in stock, from active providers, heard from "
                "within %(minutes)s minutes"
            ) % {"minutes": format_number(stale_after_minutes)},
        )
    )
    left_out = [
        f"{count_text(count)} {reason_words(reason)}"
        for reason, count in excluded.items()
        if count
    ]
    pairs.append(
        (
            gettext("Not recommended"),
            ", ".join(left_out) if left_out else pgettext("nothing left out", "none"),
        )
    )
    return tuple(pairs)


def _gguf_engine_words(breakdown: Breakdown) -> str:
    """llama.cpp or Ollama as the answer ran it: the GGUF type, where its layers sit (every one on the GPUs,
    or -ngl N's with the rest on the CPU), flash attention on or off and, where asked, --kv-unified's one
    pool."""
    inputs = breakdown.inputs
    engine = inputs["engine"]
    if breakdown.layers_on_host:
        layers = gettext("%(setting)s, the other layers on the CPU") % {
            "setting": gpu_layers_setting(engine, inputs["gpu_layers"])}
    else:
        layers = gettext("every layer on the GPUs")
    words = gettext("%(engine)s (the GGUF file in %(type)s, %(layers)s, %(flash)s)") % {
        "engine": "llama.cpp" if engine == "llamacpp" else "Ollama", "type": inputs.get("quantization", ""),
        "layers": layers,
        "flash": gettext("flash attention on") if inputs.get("flash_attention", True)
        else gettext("flash attention off")}
    if inputs.get("kv_unified"):
        words += gettext("; one KV cache pool the slots share (--kv-unified)")
    return words


def _input_pairs(breakdown: Breakdown, capabilities: Workload | None) -> list[tuple[str, str]]:
    """The workload's own inputs: tokens and requests (or sequence and batch), audio streams, or the
    memory a notebook asked for."""
    inputs = breakdown.inputs
    context = first_of(inputs, "context", "context_tokens", "sequence_length")
    requests = first_of(
        inputs, "requests", "concurrent_requests", "batch_size", "batch", "streams", "audio_streams"
    )
    if capabilities is None:
        return []
    if capabilities.takes_memory:
        return [(gettext("GPU memory needed"), gettext("%(memory)s, as entered") % {
            "memory": fmt_gib(breakdown.total_bytes)
        })]
    pairs = []
    if capabilities.takes_tokens:  # a language model served, or trained (sequence length × batch)
        if capabilities.serves_tokens:
            context_label, requests_label = gettext("Context per request"), gettext("Concurrent requests")
        else:
            context_label, requests_label = gettext("Sequence length"), gettext("Batch size")
        if context is not None:
            pairs.append((context_label, tokens_words(context)))
        if requests is not None:
            pairs.append((requests_label, count_words(requests)))
    elif "speech" in capabilities.kinds:  # a speech model alone: its audio window is fixed
        pairs.append((gettext("Context"), gettext("the model's 30-second audio window (fixed)")))
        if requests is not None:
            pairs.append((gettext("Concurrent audio streams"), count_words(requests)))
    return pairs


def _training_pairs(breakdown: Breakdown, capabilities: Workload | None) -> list[tuple[str, str]]:
    """How a fine-tune is run, each choice as the KV cache's precision is listed: always, for the
    workload that reads it (another workload ignores the fields and lists none)."""
    inputs = breakdown.inputs
    if capabilities is None or not capabilities.takes_training or "gradient_checkpointing" not in inputs:
        return []
    adapter = gettext("%(adapter)s, rank %(rank)s on %(targets)s") % {
        "adapter": ADAPTERS[inputs["adapter"]], "rank": format_number(inputs["lora_rank"]),
        "targets": LORA_TARGETS[inputs["lora_targets"]],
    }
    pairs = [
        (gettext("Gradient checkpointing"), GRADIENT_CHECKPOINTING[inputs["gradient_checkpointing"]]),
        (gettext("Loss"), LOSSES[inputs["loss"]]),
        (gettext("Adapters"), adapter),
        (gettext("Optimizer"), OPTIMIZERS[inputs["optimizer"]]),
    ]
    if "base_format" in inputs:  # a 4-bit base only: another precision has no such choice
        pairs.append((gettext("4-bit base"), BASE_FORMATS[inputs["base_format"]]))
    return pairs


def countries_words(preferences: Preferences) -> str:
    if preferences.countries is None:
        return gettext("anywhere (machines of unknown location are still left out)")
    typed = preferences.countries_input or tuple(sorted(preferences.countries))
    parts = []
    for code in typed:
        if code == EU_CODE:
            parts.append(
                gettext("EU = %(count)s member states: %(codes)s") % {
                    "count": len(EU_MEMBERS), "codes": ", ".join(sorted(EU_MEMBERS))
                }
            )
        else:
            parts.append(f"{code} ({country_name(code)})")
    return "; ".join(parts) + gettext("; machines of unknown location count as outside")
