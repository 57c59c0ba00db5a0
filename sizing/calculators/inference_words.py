"""The assumptions an inference breakdown states: what its figures take for granted."""
from __future__ import annotations

from typing import cast

from .. import nouns
from ..architectures import PLAIN, MoE, count_parameters
from ..i18n import gettext
from ..specs import LanguageModelSpec
from ..units import fmt_gib, fmt_int, general_number
from ..weights import StoredWeights
from .items import FRAMEWORKS_DIFFER, TENSOR_PARALLEL_BUFFER_BYTES, WEIGHT_BYTES, bytes_label
from .prefill import LocalPrefill

LARGE_CONTEXT = 32_768  # from here on, the KV cache's growth with the context is pointed out


def inference_words(
    model: LanguageModelSpec, precision: int, context: int, requests: int, stored: StoredWeights | None, *,
    kv_cache_bytes: int, weights_bytes: int,
) -> list[str]:
    """In order: margin, prefill, frameworks, experts, quantized format, KV growth, split, context."""
    arch = model.architecture or PLAIN
    words = [
        gettext(
            "The 20 %% safety margin covers activations, temporary buffers and memory fragmentation."
        ) % {},
        prefill_words(context * requests),
        gettext(FRAMEWORKS_DIFFER),
    ]
    if arch.moe is not None:
        words.append(moe_words(model, arch.moe))
    if stored is not None and precision != 16:
        words.append(quantized_words(precision, stored))
    if context >= LARGE_CONTEXT or kv_cache_bytes >= weights_bytes:
        words.append(
            gettext(
                "The KV cache grows with every token of context: %(tokens)s tokens per request costs "
                "%(memory)s here. Size the context to what your requests really use."
            ) % {"tokens": fmt_int(context), "memory": fmt_gib(kv_cache_bytes)}
        )
    words.extend(split_words(model))
    words.extend(yarn_words(model, context))
    if model.max_context is None:
        words.append(gettext(
            "The model's maximum context is not recorded, so the context was not checked against it."
        ))
    return words


def yarn_words(model: LanguageModelSpec, tokens: int) -> list[str]:
    """Where `tokens` of context are beyond the model's own maximum, the YaRN scaling its card documents
    (and what it asks of the server); nothing otherwise."""
    yarn = model.architecture.yarn if model.architecture is not None else None
    if yarn is None or not model.scaled_beyond_native(tokens):
        return []
    return [gettext(
        "%(tokens)s tokens are beyond the %(native)s the model's config allows: its card extends it with "
        "YaRN RoPE scaling (factor %(factor)s over %(original)s tokens, up to %(longest)s), which the server "
        "must turn on (vLLM --hf-overrides, SGLang --json-model-override-args, transformers' rope_scaling "
        "in the config). The KV cache per token is the same; the scaling is static, so it may cost some "
        "quality on short texts."
    ) % {"tokens": fmt_int(tokens), "native": fmt_int(cast(int, model.max_context)),
         "factor": yarn.factor, "original": fmt_int(yarn.original_context), "longest": fmt_int(yarn.context)}]


def prefill_words(prefill_tokens: int) -> str:
    return gettext(
        "Prefill processes the whole prompt of every request in one forward pass, as transformers' "
        "generate() does: %(tokens)s tokens. Its peak is one decoder layer's MLP: four "
        "hidden-width tensors and three MLP-width tensors per token in 16-bit, with attention in a fused "
        "kernel (FlashAttention or SDPA: memory linear in tokens), and logits for the last token only; "
        "PyTorch's caching allocator holds about two more MLP-width blocks that the KV cache fragments. "
        "Where that exceeds the margin, the excess is its own item. Servers that prefill in chunks "
        "(vLLM, "
        "SGLang, TGI; max_num_batched_tokens) need less."
    ) % {"tokens": fmt_int(prefill_tokens)}


def local_prefill_words(local: LocalPrefill | None) -> list[str]:
    """What a one-pass prefill holds for sliding-window and chunked-local layers (inference.local_prefill)."""
    if local is None:
        return []
    if not local.masks:
        return [gettext(
            "Sliding-window layers (%(layers)s here) cache only their window, but in the one-pass prefill "
            "transformers keeps the keys and values of the whole prompt in each of them until the first "
            "decoding step (its DynamicSlidingWindowLayer caches a view of the prompt's tensors); the "
            "prefill peak counts them. Attention sinks run in a FlashAttention kernel that builds no mask "
            "(SDPA does not take sinks; eager attention would materialise masks and scores: not assumed "
            "here)."
        ) % {"layers": fmt_int(local.layers)}]
    return [gettext(
        "Sliding-window and chunked-local layers (%(layers)s here) cache only their window, but in the "
        "one-pass prefill transformers keeps the keys and values of the whole prompt in each of them "
        "until the first decoding step (its DynamicSlidingWindowLayer caches a view of the prompt's "
        "tensors). With SDPA, transformers' default attention, it builds no mask for the global layers "
        "but a full boolean prompt × prompt mask per request for the local ones, alive for the whole "
        "pass, and PyTorch turns it into a 16-bit additive mask in every local layer. Eager attention "
        "builds 16-bit masks for both kinds of layer (and the attention scores: not assumed here); "
        "FlashAttention builds none and needs less. The prefill peak counts both, beyond the margin where it "
        "exceeds it."
    ) % {"layers": fmt_int(local.layers)}]


def moe_words(model: LanguageModelSpec, moe: MoE) -> str:
    counted = count_parameters(model)
    return gettext(
        "Mixture of experts: every one of the %(experts)s experts of each MoE layer is held in "
        "memory, though %(per_token)s run per token: %(total)s parameters "
        "in all, %(active)s used per token. Under tensor parallelism vLLM splits every "
        "expert's matrices across the GPUs (each GPU holds a slice of all experts); with expert parallelism "
        "whole experts are placed on different GPUs instead. Either way the weights divide evenly."
    ) % {
        "experts": fmt_int(moe.experts), "per_token": fmt_int(moe.experts_per_token),
        "total": fmt_int(counted.total), "active": fmt_int(counted.active),
    }


def quantized_words(precision: int, stored: StoredWeights) -> str:
    """What an 8- or 4-bit choice means: a published quantized checkpoint, and what it keeps in 16-bit."""
    fmt = stored.fmt
    if stored.split.tied:
        tie = gettext("tied to the output head, counted once")
    elif stored.split.tied_known:
        tie = gettext("with a separate output head")
    else:
        tie = gettext("whose tie to the output head is not recorded, counted with a separate head")
    return gettext(
        "%(bits)s-bit means a published %(format)s checkpoint (%(source)s). It quantizes the "
        "linear layers of the decoder blocks; the token embeddings (%(tie)s) stay 16-bit, and the "
        "scales "
        "cost %(overhead)s bits per quantized parameter. The plain count of every "
        "parameter at %(bytes)s is kept as its own item; the two items "
        "after it are what published formats store beyond it."
    ) % {
        "bits": precision, "format": gettext(fmt.label), "source": gettext(fmt.source), "tie": tie,
        "overhead": general_number(stored.overhead_bits, 4),
        "bytes": bytes_label(WEIGHT_BYTES[precision]),
    }


def split_words(model: LanguageModelSpec) -> list[str]:
    """How the need divides under tensor parallelism, or why the model is sized for one GPU."""
    heads = model.attention_heads
    if heads is None:
        return [
            gettext("%(model)s publishes no attention-head count, so it is sized for one GPU only.")
            % {"model": model.name}
        ]
    words = [
        gettext(
            "Split over n GPUs of one machine (tensor parallelism), the weights, KV cache and margin "
            "divide "
            "evenly, each GPU keeps its own 1 GiB runtime and adds %(buffers)s of communication buffers, "
            "and n must divide the %(heads)s attention heads."
        ) % {"buffers": fmt_gib(TENSOR_PARALLEL_BUFFER_BYTES), "heads": fmt_int(heads)}
    ]
    arch = model.architecture or PLAIN
    if arch.mla is None and model.kv_heads is not None and model.kv_heads < min(heads, 8):
        words.append(
            gettext(
                "With more GPUs than its %(kv_heads)s, vLLM copies KV heads so that "
                "every GPU holds at least one; the cache then no longer divides evenly."
            ) % {"kv_heads": nouns.kv_heads(model.kv_heads)}
        )
    return words
