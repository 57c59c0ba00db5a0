"""Running a language model (SPEC §3): weights, KV cache, margin, prefill activations beyond the
margin, runtime, and the buffers of a tensor-parallel split."""
from __future__ import annotations

from .. import nouns
from ..architectures import activation_mlp_width
from ..breakdown import Breakdown, Item
from ..capacity import Capacity
from ..i18n import gettext
from ..kv_cache import is_plain, kv_cache_items
from ..specs import LanguageModelSpec
from ..units import fmt_gib, fmt_int
from ..weights import precision_label
from .checks import check_inference_inputs, model_value
from .inference_words import inference_words, local_prefill_words
from .items import (
    ACTIVATION_BYTES_PER_VALUE,
    excess_item,
    margin_item,
    runtime_item,
    tensor_parallel_item,
    weight_items,
)
from .prefill import (
    LOGIT_BYTES_PER_VALUE,
    MASK_BYTES_PER_ELEMENT,
    MASK_CONVERSION_BYTES_PER_ELEMENT,
    PREFILL_HELD_INTERMEDIATE_TENSORS,
    PREFILL_HIDDEN_TENSORS,
    PREFILL_INTERMEDIATE_TENSORS,
    LocalPrefill,
    attention_width,
    local_prefill,
    prefill_activation_bytes,
    prompt_kv_bytes_per_token,
)

__all__ = ["estimate_inference", "inference_margin_item", "local_prefill", "prefill_activation_bytes",
           "prefill_item", "weight_items"]


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
                           values: dict[str, object]) -> str:
    """The prefill's formula for a model with sliding-window or chunked-local layers."""
    context = tokens // requests
    per_token = prompt_kv_bytes_per_token(model)
    mlp = gettext(
        "MLP: %(tokens)s prompt tokens × (%(hidden_tensors)s × %(hidden)s hidden + (%(alive)s alive + "
        "%(held)s held by the allocator) × %(width)s MLP width) × %(activation_bytes)s bytes"
    ) % values
    attention = gettext(
        "local attention: %(tokens)s × %(width)s values × %(bytes)s bytes + %(elements)s mask elements × "
        "%(conversion)s bytes (SDPA's inverted copy and 16-bit additive mask)"
    ) % {
        "tokens": fmt_int(tokens), "width": fmt_int(attention_width(model)),
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


def estimate_inference(
    model: LanguageModelSpec, precision: int, context: int, requests: int, kv_bits: int = 16
) -> Breakdown:
    precision, context, requests, kv_bits = check_inference_inputs(
        model, precision, context, requests, kv_bits)
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
        capacity=Capacity(model, precision, kv_bits, context, requests),
    )
