"""Prefill's working memory in transformers (SPEC §3): the activations of one forward pass over the
whole prompt, and what the sliding-window and chunked-local layers hold beside their cache. The
inference breakdown shows it beyond the margin; `sizing.capacity` asks it at any context."""
from __future__ import annotations

from dataclasses import dataclass

from ..architectures import CHUNKED, PLAIN, SLIDING, activation_mlp_width
from ..specs import LanguageModelSpec
from .checks import model_value
from .items import ACTIVATION_BYTES_PER_VALUE

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
    per_token = prompt_kv_bytes_per_token(model)
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


def prompt_kv_bytes_per_token(model: LanguageModelSpec) -> int:
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
    attention = tokens * attention_width(model) * ACTIVATION_BYTES_PER_VALUE + local.conversion_bytes
    return max(mlp, attention) + local.mask_bytes + local.retained_bytes + logits


def attention_width(model: LanguageModelSpec) -> int:
    """Values per token alive in a local layer's attention (see ATTENTION_HEAD_TENSORS)."""
    heads = model.attention_heads or model_value(model, "kv_heads")
    return (PREFILL_HIDDEN_TENSORS * model_value(model, "hidden_size")
            + ATTENTION_HEAD_TENSORS * heads * model_value(model, "head_dim"))
