"""Running a language model (SPEC §3): weights, KV cache, margin, prefill activations beyond the
margin, runtime, and the buffers of a tensor-parallel split."""
from __future__ import annotations

from dataclasses import dataclass

from .. import nouns
from ..architectures import CHUNKED, PLAIN, SLIDING, activation_mlp_width, count_parameters
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
from .inference_words import inference_words, local_prefill_words
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
# Sliding-window and chunked-local layers in the same one-pass prefill (transformers 5, SDPA, its default):
# - DynamicSlidingWindowLayer.update concatenates the layer's keys and values for the whole prompt and
#   keeps a slice of the last window as its cache: a view, so the whole prompt's keys and values stay
#   allocated in every local layer until the first decoding step replaces them;
# - masking_utils builds no mask for the global layers (SDPA's is_causal) but a full boolean
#   [requests, 1, prompt, prompt] mask for the local ones once the prompt reaches the window, alive for the
#   whole forward pass; PyTorch's SDPA turns it into an additive mask in the activations' 16-bit dtype
#   in every local layer (convert_boolean_attn_mask: its logical_not, 1 byte, and the additive mask, 2
#   bytes, per element). Eager attention builds 16-bit masks for both kinds (and the scores: outside
#   these assumptions); FlashAttention builds none.
MASK_BYTES_PER_ELEMENT = 1
MASK_CONVERSION_BYTES_PER_ELEMENT = 1 + 2
# Alive in a local layer's attention, per token: the four hidden-width tensors of the MLP peak, and the
# queries, the keys and values repeated to every head, and the attention output (4 × heads × head_dim).
ATTENTION_HEAD_TENSORS = 4


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


@dataclass(frozen=True)
class LocalPrefill:
    """What a one-pass prefill holds for the sliding-window and chunked-local layers beyond their cache."""

    layers: int  # sliding-window and chunked-local layers
    windows: tuple[int, ...]  # their window or chunk, one per kind present
    retained_bytes: int  # the whole prompt's keys and values beyond the cached window, every local layer
    masks: int  # boolean masks built: one per kind of local layer whose window the prompt reaches
    mask_elements: int  # elements of one mask: requests × prompt × prompt

    @property
    def mask_bytes(self) -> int:
        return self.masks * self.mask_elements * MASK_BYTES_PER_ELEMENT

    @property
    def conversion_bytes(self) -> int:
        return (self.mask_elements if self.masks else 0) * MASK_CONVERSION_BYTES_PER_ELEMENT


def local_prefill(model: LanguageModelSpec, context: int, requests: int) -> LocalPrefill | None:
    """The local layers' part of a prefill of `requests` prompts of `context` tokens; None without such
    layers or when the prompt fits inside their windows."""
    arch = model.architecture or PLAIN
    if arch.mla is not None:
        return None
    counts = arch.layer_counts(model_value(model, "layers"))
    kinds = [(counts[kind], window) for kind, window in (
        (SLIDING, arch.sliding_window), (CHUNKED, arch.attention_chunk)) if counts[kind] and window]
    if not any(context >= window for _, window in kinds):
        return None  # a prompt inside every window: no mask built (is_causal), the cache holds it all
    per_token = _prompt_kv_bytes_per_token(model)
    retained = sum(layers * requests * (context - min(context, window)) * per_token
                   for layers, window in kinds)
    return LocalPrefill(
        layers=sum(layers for layers, _ in kinds),
        windows=tuple(window for _, window in kinds),
        retained_bytes=retained,
        # Attention sinks (gpt-oss) are not in SDPA: a FlashAttention kernel with sinks builds no mask.
        masks=0 if arch.sinks else sum(1 for _, window in kinds if context >= window),
        mask_elements=requests * context * context,
    )


def _prompt_kv_bytes_per_token(model: LanguageModelSpec) -> int:
    """One layer's keys and values of one prompt token, in the activations' 16-bit."""
    return 2 * model_value(model, "kv_heads") * model_value(model, "head_dim") * ACTIVATION_BYTES_PER_VALUE


def prefill_activation_bytes(model: LanguageModelSpec, tokens: int, requests: int) -> int:
    """Peak working memory of a prefill of `tokens` tokens (`requests` prompts) in one forward pass: the
    larger of one decoder layer's gated MLP (see PREFILL_*) and, with local layers, one local layer's
    attention with its mask converted; plus the local layers' mask and retained keys and values (see
    MASK_*), and the fp32 logits of the last position of each request."""
    hidden = model_value(model, "hidden_size")
    intermediate = activation_mlp_width(model, model_value(model, "intermediate_size"))
    vocab = model_value(model, "vocab_size")
    per_token = (PREFILL_HIDDEN_TENSORS * hidden
                 + (PREFILL_INTERMEDIATE_TENSORS + PREFILL_HELD_INTERMEDIATE_TENSORS) * intermediate)
    mlp = tokens * per_token * ACTIVATION_BYTES_PER_VALUE
    logits = requests * vocab * LOGIT_BYTES_PER_VALUE
    local = local_prefill(model, tokens // requests, requests)
    if local is None:
        return mlp + logits
    if not local.masks:  # no mask to convert: the MLP stays the layer's peak, as in a plain decoder
        return mlp + local.retained_bytes + logits
    attention = tokens * _attention_width(model) * ACTIVATION_BYTES_PER_VALUE + local.conversion_bytes
    return max(mlp, attention) + local.mask_bytes + local.retained_bytes + logits


def _attention_width(model: LanguageModelSpec) -> int:
    """Values per token alive in a local layer's attention (see ATTENTION_HEAD_TENSORS)."""
    heads = model.attention_heads or model_value(model, "kv_heads")
    return (PREFILL_HIDDEN_TENSORS * model_value(model, "hidden_size")
            + ATTENTION_HEAD_TENSORS * heads * model_value(model, "head_dim"))


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
    values = {
        "tokens": fmt_int(tokens), "hidden_tensors": PREFILL_HIDDEN_TENSORS,
        "hidden": fmt_int(hidden),
        "alive": PREFILL_INTERMEDIATE_TENSORS, "held": PREFILL_HELD_INTERMEDIATE_TENSORS,
        "width": fmt_int(intermediate), "activation_bytes": ACTIVATION_BYTES_PER_VALUE,
        "requests": nouns.requests(requests), "vocab": fmt_int(model_value(model, "vocab_size")),
        "logit_bytes": LOGIT_BYTES_PER_VALUE,
    }
    local = local_prefill(model, tokens // requests, requests)
    if local is None:
        formula = gettext(
            "%(tokens)s prompt tokens × (%(hidden_tensors)s × %(hidden)s hidden + (%(alive)s alive + "
            "%(held)s "
            "held by the allocator) × %(width)s MLP width) × %(activation_bytes)s bytes + %(requests)s × "
            "%(vocab)s vocabulary × %(logit_bytes)s bytes (last-token logits)"
        ) % values
    else:
        formula = _local_prefill_formula(model, tokens, requests, local, values)
    need = prefill_activation_bytes(model, tokens, requests)
    return excess_item(gettext("Prefill activations"), need, margin, formula)


def _local_prefill_formula(model: LanguageModelSpec, tokens: int, requests: int, local: LocalPrefill,
                           values: dict) -> str:
    """The prefill's formula for a model with sliding-window or chunked-local layers."""
    context = tokens // requests
    per_token = _prompt_kv_bytes_per_token(model)
    mlp = gettext(
        "MLP: %(tokens)s prompt tokens × (%(hidden_tensors)s × %(hidden)s hidden + (%(alive)s alive + "
        "%(held)s held by the allocator) × %(width)s MLP width) × %(activation_bytes)s bytes"
    ) % values
    attention = gettext(
        "local attention: %(tokens)s × %(width)s values × %(bytes)s bytes + %(elements)s mask elements × "
        "%(conversion)s bytes (SDPA's inverted copy and 16-bit additive mask)"
    ) % {
        "tokens": fmt_int(tokens), "width": fmt_int(_attention_width(model)),
        "bytes": ACTIVATION_BYTES_PER_VALUE, "elements": fmt_int(local.mask_elements),
        "conversion": MASK_CONVERSION_BYTES_PER_ELEMENT,
    }
    masks = gettext(
        "%(masks)s × %(requests)s × %(context)s × %(context)s × %(bytes)s byte (the local layers' boolean "
        "mask)"
    ) % {
        "masks": local.masks, "requests": nouns.requests(requests), "context": fmt_int(context),
        "bytes": MASK_BYTES_PER_ELEMENT,
    }
    retained = gettext(
        "%(layers)s local layers × %(requests)s × (%(context)s − %(window)s window) tokens × %(per_token)s "
        "bytes (keys and values of the whole prompt, kept until the first decoding step)"
    ) % {
        "layers": fmt_int(local.layers), "requests": nouns.requests(requests), "context": fmt_int(context),
        "window": " / ".join(fmt_int(window) for window in local.windows), "per_token": fmt_int(per_token),
    }
    logits = gettext(
        "%(requests)s × %(vocab)s vocabulary × %(logit_bytes)s bytes (last-token logits)"
    ) % values
    if not local.masks:
        return gettext("%(mlp)s + %(retained)s + %(logits)s") % {
            "mlp": mlp, "retained": retained, "logits": logits,
        }
    return gettext("larger of (%(mlp)s; %(attention)s) + %(masks)s + %(retained)s + %(logits)s") % {
        "mlp": mlp, "attention": attention, "masks": masks, "retained": retained, "logits": logits,
    }


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
        *local_prefill_words(local_prefill(model, context, requests)),
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
