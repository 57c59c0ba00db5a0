"""Running a language model (SPEC §3): weights, KV cache, margin, prefill activations beyond the
margin, runtime, and the buffers of a tensor-parallel split."""
from __future__ import annotations

from .. import nouns
from ..architectures import PLAIN, activation_mlp_width, count_parameters
from ..breakdown import Breakdown, Item
from ..errors import SizingError
from ..i18n import gettext
from ..kv_cache import check_kv_bits, is_plain, kv_cache_items
from ..limits import MAX_CONTEXT, MAX_REQUESTS
from ..specs import LanguageModelSpec
from ..units import fmt_gib, fmt_int, general_number
from ..weights import (
    FORMATS,
    INFERENCE_FORMAT,
    native_format_of,
    native_weight_items,
    precision_choices,
    precision_label,
    stored_weights,
)
from .checks import check_context_limit, check_count, check_precision, model_value
from .inference_words import inference_words
from .items import (
    ACTIVATION_BYTES_PER_VALUE,
    WEIGHT_BYTES,
    excess_item,
    format_items,
    margin_item,
    parameter_split,
    runtime_item,
    tensor_parallel_item,
    weights_item,
)

LOGIT_BYTES_PER_VALUE = 4  # fp32 logits of the last position
# Prefill, as transformers' generate() runs it (the whole prompt of every request in one forward pass),
# peaks in a decoder layer's gated MLP. Alive at once, per token: four hidden-width tensors (the
# embedding output the model keeps, the layer's input, the residual after attention, the normalised MLP
# input) and three intermediate-width ones (the activated gate, the up projection, their product).
# PyTorch's caching allocator then holds about two more intermediate-width blocks it cannot reuse: the
# KV cache each layer adds is carved out of the segments the previous layer's MLP freed (measured on an
# H200: reserved − allocated was 1.7 to 2.1 such tensors at 32,768 to 131,072 prompt tokens).
PREFILL_HIDDEN_TENSORS = 4
PREFILL_INTERMEDIATE_TENSORS = 3
PREFILL_HELD_INTERMEDIATE_TENSORS = 2


def _checked(model: LanguageModelSpec, precision, context, requests, kv_bits) -> tuple[int, int, int, int]:
    precision = check_precision(precision)
    context = check_count(context, "context", gettext("The context"), MAX_CONTEXT)
    requests = check_count(requests, "requests", gettext("The number of concurrent requests"), MAX_REQUESTS)
    kv_bits = check_kv_bits(kv_bits)
    model_value(model, "parameters")
    model_value(model, "layers")
    if (model.architecture or PLAIN).mla is None:
        model_value(model, "kv_heads")
        model_value(model, "head_dim")
    model_value(model, "hidden_size")
    activation_mlp_width(model, model_value(model, "intermediate_size"))
    model_value(model, "vocab_size")
    refused = precision_choices(model)[precision]
    if refused:
        raise SizingError("precision", refused)
    check_context_limit(model, context, "context")
    return precision, context, requests, kv_bits


def weight_items(model: LanguageModelSpec, precision: int):
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


def prefill_activation_bytes(model: LanguageModelSpec, tokens: int, requests: int) -> int:
    """Peak working memory of a prefill of `tokens` tokens in one forward pass: one decoder layer's
    gated MLP (see PREFILL_*), plus the fp32 logits of the last position of each request."""
    hidden = model_value(model, "hidden_size")
    intermediate = activation_mlp_width(model, model_value(model, "intermediate_size"))
    vocab = model_value(model, "vocab_size")
    per_token = (PREFILL_HIDDEN_TENSORS * hidden
                 + (PREFILL_INTERMEDIATE_TENSORS + PREFILL_HELD_INTERMEDIATE_TENSORS) * intermediate)
    return tokens * per_token * ACTIVATION_BYTES_PER_VALUE + requests * vocab * LOGIT_BYTES_PER_VALUE


def inference_margin_item(
    model: LanguageModelSpec, covered: list[Item], weights: int, activations: int
) -> Item:
    """20 % of the weights and caches; it covers prefill activations up to its size."""
    if weights == 1:
        covers = gettext("model weights + KV cache") if is_plain(model) else gettext("model weights + caches")
    else:
        covers = gettext("all weights + KV cache") if is_plain(model) else gettext("all weights + caches")
    note = gettext("; it covers prefill activations up to its size (here %(activations)s)") % {
        "activations": fmt_gib(activations)
    }
    return margin_item(covered, covers, note)


def prefill_item(model: LanguageModelSpec, tokens: int, requests: int, margin: Item) -> Item | None:
    """Prefill activations beyond the margin; None when the margin covers them."""
    hidden = model_value(model, "hidden_size")
    intermediate = activation_mlp_width(model, model_value(model, "intermediate_size"))
    return excess_item(
        gettext("Prefill activations"),
        prefill_activation_bytes(model, tokens, requests),
        margin,
        gettext(
            "%(tokens)s prompt tokens × (%(hidden_tensors)s × %(hidden)s hidden + (%(alive)s alive + "
            "%(held)s "
            "held by the allocator) × %(width)s MLP width) × %(activation_bytes)s bytes + %(requests)s × "
            "%(vocab)s vocabulary × %(logit_bytes)s bytes (last-token logits)"
        ) % {
            "tokens": fmt_int(tokens), "hidden_tensors": PREFILL_HIDDEN_TENSORS,
            "hidden": fmt_int(hidden),
            "alive": PREFILL_INTERMEDIATE_TENSORS, "held": PREFILL_HELD_INTERMEDIATE_TENSORS,
            "width": fmt_int(intermediate), "activation_bytes": ACTIVATION_BYTES_PER_VALUE,
            "requests": nouns.requests(requests), "vocab": fmt_int(model_value(model, "vocab_size")),
            "logit_bytes": LOGIT_BYTES_PER_VALUE,
        },
    )


def _capacity(model, precision, kv_bits, context, requests):
    from ..capacity import Capacity  # sizing.capacity imports this module

    return Capacity(model, precision, kv_bits, context, requests)


def estimate_inference(
    model: LanguageModelSpec, precision: int, context: int, requests: int, kv_bits: int = 16
) -> Breakdown:
    precision, context, requests, kv_bits = _checked(model, precision, context, requests, kv_bits)
    weights, native_words, stored = weight_items(model, precision)
    kv_items, kv_words = kv_cache_items(model, context, requests, kv_bits)
    covered = [*weights, *kv_items]
    activation_bytes = prefill_activation_bytes(model, context * requests, requests)
    margin = inference_margin_item(model, covered, len(weights), activation_bytes)
    activations = prefill_item(model, context * requests, requests, margin)
    heads = model.attention_heads
    assumptions = [
        *kv_words,
        *native_words,
        *inference_words(
            model, precision, context, requests, stored,
            kv_cache_bytes=sum(item.bytes for item in kv_items),
            weights_bytes=sum(item.bytes for item in weights),
        ),
    ]
    return Breakdown(
        workload="inference",
        title=gettext("%(model)s, inference, %(precision)s%(kv)s, %(tokens)s × %(requests)s") % {
            "model": model.name, "precision": precision_label(model, precision),
            "kv": gettext(", 8-bit KV cache") if kv_bits == 8 else "",
            "tokens": nouns.tokens(context), "requests": nouns.requests(requests),
        },
        items=(*covered, margin, *([activations] if activations else []), runtime_item()),
        assumptions=tuple(assumptions),
        precision=precision,
        splittable_over_heads=heads,
        inputs={
            "model": model.slug,
            "model_name": model.name,
            "precision": precision,
            "context": context,
            "requests": requests,
            "kv_bits": kv_bits,
        },
        split_items=(tensor_parallel_item(),) if heads is not None else (),
        capacity=_capacity(model, precision, kv_bits, context, requests),
    )
