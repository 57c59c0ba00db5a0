"""The KV cache as breakdown items: one line per kind of layer, each with its formula filled in.

A plain decoder keeps the spec's single line, word for word. Sliding-window and chunked layers hold
min(context, window) tokens, the bound of transformers' static caches (StaticSlidingWindowLayer
allocates min(sliding_window, max_cache_len)); vLLM reserves more on those layers for chunked prefill,
and the assumptions give that figure.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from . import nouns
from .architectures import KIMI_DELTA, PLAIN, cache_groups, expanded_mla_bytes_per_token
from .breakdown import Item
from .errors import SizingError
from .i18n import gettext
from .units import decimal_text, fmt_gib, fmt_int

if TYPE_CHECKING:
    from .architectures import MLA, Architecture, CacheGroup, LinearAttention
    from .specs import LanguageModelSpec

KV_BITS = (16, 8)
# vLLM's default chunked-prefill budget per scheduler step; its sliding and chunked layers keep up to
# window − 1 + this many tokens (SlidingWindowSpec / ChunkedLocalAttentionSpec).
VLLM_BATCHED_TOKENS = 8192


def check_kv_bits(kv_bits: object) -> int:
    if isinstance(kv_bits, bool) or kv_bits not in KV_BITS:
        raise SizingError("kv_bits", gettext("The KV cache precision must be 16-bit or 8-bit."))
    return int(kv_bits)


def _bytes(kv_bytes: int) -> str:
    return nouns.byte_count(kv_bytes)


def is_plain(spec: LanguageModelSpec) -> bool:
    arch = spec.architecture or PLAIN
    return arch.mla is None and set(arch.layer_pattern) == {"F"}


@dataclass(frozen=True)
class _Sized:
    """What every cache line is written with: the model, its architecture and the request's size."""

    spec: LanguageModelSpec
    arch: Architecture
    context: int
    requests: int
    kv_bytes: int

    @property
    def tokens(self) -> str:
        return nouns.tokens(self.context)

    # The calculators check the figures a cache line reads before sizing it (`calculators.checks`), and
    # a latent or linear line is written only for an architecture that has it.
    @property
    def layers(self) -> int:
        return cast(int, self.spec.layers)

    @property
    def kv_heads(self) -> int:
        return cast(int, self.spec.kv_heads)

    @property
    def head_dim(self) -> int:
        return cast(int, self.spec.head_dim)

    @property
    def mla(self) -> MLA:
        return cast("MLA", self.arch.mla)

    @property
    def linear(self) -> LinearAttention:
        return cast("LinearAttention", self.arch.linear_attention)

    @property
    def reqs(self) -> str:
        return nouns.requests(self.requests)


def kv_cache_items(spec: LanguageModelSpec, context: int, requests: int,
                   kv_bits: int) -> tuple[list[Item], list[str]]:
    """The cache items and what they assume, for `requests` requests of `context` tokens."""
    sized = _Sized(spec, spec.architecture or PLAIN, context, requests, kv_bits // 8)
    assumptions = [_precision_words(kv_bits)]
    if is_plain(spec):
        return [_plain_item(sized)], assumptions
    items = []
    for group in cache_groups(spec, context, sized.kv_bytes):
        item, words = GROUP_LINES[group.kind](sized, group)
        items.append(item)
        assumptions += words
    return items, assumptions


def _precision_words(kv_bits: int) -> str:
    if kv_bits == 16:
        return gettext(
            "The KV cache is kept in 16-bit (%(bytes)s per value) whatever the weights' precision."
        ) % {"bytes": _bytes(2)}
    return gettext(
        "The KV cache is kept in 8-bit (1 byte per value), as vLLM's fp8 KV cache (kv_cache_dtype=fp8) "
        "stores it, whatever the weights' precision; 16-bit is the default."
    )


def _plain_item(sized: _Sized) -> Item:
    """The spec's single line: every layer full attention with grouped-query K/V heads."""
    kv_bytes = sized.kv_bytes
    layers, kv_heads, head_dim = sized.layers, sized.kv_heads, sized.head_dim
    return Item(
        name=gettext("KV cache"),
        formula=gettext(
            "2 × %(layers)s × %(kv_heads)s × %(head_dim)s head dim × %(bytes)s × %(tokens)s × "
            "%(requests)s"
        ) % {
            "layers": nouns.layers(layers), "kv_heads": nouns.kv_heads(kv_heads),
            "head_dim": fmt_int(head_dim),
            "bytes": _bytes(kv_bytes), "tokens": sized.tokens, "requests": sized.reqs,
        },
        bytes=2 * layers * kv_heads * head_dim * kv_bytes * sized.context * sized.requests,
    )


def _heads(sized: _Sized) -> str:
    return gettext("%(kv_heads)s × %(head_dim)s head dim") % {
        "kv_heads": nouns.kv_heads(sized.kv_heads), "head_dim": fmt_int(sized.head_dim)
    }


def _latent_line(sized: _Sized, group: CacheGroup) -> tuple[Item, list[str]]:
    """Latent attention (MLA): one compressed vector per token and layer, on every GPU."""
    spec, kv_bytes = sized.spec, sized.kv_bytes
    layers, tokens, reqs, requests = nouns.layers(group.layers), sized.tokens, sized.reqs, sized.requests
    items = []
    mla = sized.mla
    if sized.arch.no_rope:  # NoPE (Kimi-Linear): the rotary-sized part is kept, never rotated
        formula = gettext(
            "%(layers)s × (%(latent)s latent + %(rotary)s unrotated key dims) × %(bytes)s × %(tokens)s × "
            "%(requests)s")
    else:
        formula = gettext(
            "%(layers)s × (%(latent)s latent + %(rotary)s rotary dims) × %(bytes)s × %(tokens)s × "
            "%(requests)s")
    items.append(Item(
        name=gettext("KV cache, latent attention (MLA)"),
        formula=formula % {
            "layers": layers, "latent": fmt_int(mla.kv_lora_rank),
            "rotary": fmt_int(mla.qk_rope_head_dim),
            "bytes": _bytes(kv_bytes), "tokens": tokens, "requests": reqs,
        },
        bytes=group.bytes(requests),
        per_gpu=True,
    ))
    expanded = expanded_mla_bytes_per_token(spec, kv_bytes)
    latent = group.bytes_per_token
    assumptions = [
        gettext(
            "Latent attention caches one compressed vector of %(width)s values per "
            "token and layer, shared by all heads, as vLLM and SGLang store it (no factor 2: keys "
            "and "
            "values are rebuilt from it)."
        ) % {"width": fmt_int(mla.latent_width)},
        gettext(
            "transformers' 4.x releases instead cache the expanded keys and values of all "
            "%(heads)s heads (%(key_width)s + %(value_width)s values per head): %(expanded)s bytes "
            "per "
            "token instead of %(latent)s, %(factor)s× more (transformers 5 caches the latent too). "
            "Serve it with an MLA-aware engine."
        ) % {
            "heads": fmt_int(cast(int, spec.attention_heads)),
            "key_width": fmt_int(mla.qk_nope_head_dim + mla.qk_rope_head_dim),
            "value_width": fmt_int(mla.v_head_dim), "expanded": fmt_int(expanded),
            "latent": fmt_int(latent), "factor": decimal_text(expanded / latent, 0),
        },
        gettext(
            "Under tensor parallelism every GPU keeps the whole latent cache (it is not split by "
            "heads), "
            "so it is counted on each GPU."
        ),
    ]
    return items[0], assumptions


def _full_line(sized: _Sized, group: CacheGroup) -> tuple[Item, list[str]]:
    item = Item(
        name=gettext("KV cache, full-attention layers"),
        formula=f"2 × {nouns.layers(group.layers)} × {_heads(sized)} × {_bytes(sized.kv_bytes)} × "
                f"{sized.tokens} × {sized.reqs}",
        bytes=group.bytes(sized.requests),
    )
    return item, []


def _windowed_line(sized: _Sized, group: CacheGroup) -> tuple[Item, list[str]]:
    """Sliding-window or chunked layers: min(context, window) tokens, and what vLLM reserves more."""
    arch, kv_bytes, requests = sized.arch, sized.kv_bytes, sized.requests
    layers, heads, tokens, reqs = nouns.layers(group.layers), _heads(sized), sized.tokens, sized.reqs
    items = []
    sliding = group.kind == "sliding"
    window = cast(int, arch.sliding_window if sliding else arch.attention_chunk)  # the group's own kind
    values = {
        "layers": layers, "heads": heads, "bytes": _bytes(kv_bytes), "tokens": tokens,
        "window": fmt_int(window), "held": nouns.tokens(group.tokens_held), "requests": reqs,
    }
    if sliding:
        items.append(Item(
            name=gettext("KV cache, sliding-window layers"),
            formula=gettext(
                "2 × %(layers)s × %(heads)s × %(bytes)s × min(%(tokens)s, %(window)s window) = "
                "%(held)s × %(requests)s"
            ) % values,
            bytes=group.bytes(requests),
        ))
    else:
        items.append(Item(
            name=gettext("KV cache, chunked local-attention layers"),
            formula=gettext(
                "2 × %(layers)s × %(heads)s × %(bytes)s × min(%(tokens)s, %(window)s chunk) = "
                "%(held)s × %(requests)s"
            ) % values,
            bytes=group.bytes(requests),
        ))
    return items[0], [_windowed_words(sized, group, window, layers)]


def _windowed_words(sized: _Sized, group: CacheGroup, window: int, layers: str) -> str:
    """What a sliding or chunked group holds, and what vLLM's hybrid cache manager reserves beyond it."""
    sliding, context, requests = group.kind == "sliding", sized.context, sized.requests
    vllm_tokens = min(window - 1 + VLLM_BATCHED_TOKENS, context) if sliding \
        else min(window + VLLM_BATCHED_TOKENS, context)
    extra = max(0, vllm_tokens - group.tokens_held) * group.bytes_per_token * requests
    values = {
        "layers": layers, "window": fmt_int(window), "batched": fmt_int(VLLM_BATCHED_TOKENS),
        "extra": fmt_gib(extra),
    }
    if sliding and extra:
        words = gettext(
            "%(layers)s attend only to the last %(window)s-token window, so they hold min(context, "
            "window) "
            "tokens: the bound of transformers' static cache. vLLM's hybrid cache manager reserves "
            "up to "
            "window + %(batched)s batched prefill tokens on them, %(extra)s more here; the margin "
            "must "
            "cover it."
        )
    elif sliding:
        words = gettext(
            "%(layers)s attend only to the last %(window)s-token window, so they hold min(context, "
            "window) "
            "tokens: the bound of transformers' static cache. vLLM's hybrid cache manager reserves "
            "up to "
            "window + %(batched)s batched prefill tokens on them, no more here."
        )
    elif extra:
        words = gettext(
            "%(layers)s attend only within their %(window)s-token chunk, so they hold min(context, "
            "chunk) "
            "tokens: the bound of transformers' static cache. vLLM's hybrid cache manager reserves "
            "up to "
            "chunk + %(batched)s batched prefill tokens on them, %(extra)s more here; the margin "
            "must "
            "cover it."
        )
    else:
        words = gettext(
            "%(layers)s attend only within their %(window)s-token chunk, so they hold min(context, "
            "chunk) "
            "tokens: the bound of transformers' static cache. vLLM's hybrid cache manager reserves "
            "up to "
            "chunk + %(batched)s batched prefill tokens on them, no more here."
        )
    return words % values


def _linear_line(sized: _Sized, group: CacheGroup) -> tuple[Item, list[str]]:
    """Linear-attention layers: a fixed recurrent state per sequence, whatever the context."""
    lin = sized.linear
    values = {
        "layers": nouns.layers(group.layers), "kernel": fmt_int(lin.conv_kernel),
        "channels": fmt_int(lin.conv_dim), "heads": fmt_int(lin.value_heads),
        "value_dim": fmt_int(lin.value_head_dim), "key_dim": fmt_int(lin.key_head_dim),
        "requests": sized.reqs, "state_layers": nouns.linear_attention_layers(group.layers),
    }
    if lin.kind == KIMI_DELTA:
        formula = gettext(
            "%(layers)s × [convolution (%(kernel)s − 1) × %(channels)s channels × 2 bytes + state %(heads)s "
            "heads × %(value_dim)s × %(key_dim)s × 4 bytes] × %(requests)s")
        words = gettext(
            "%(state_layers)s (Kimi Delta Attention) keep a fixed state per sequence whatever the "
            "context, as vLLM holds it: the last %(kernel)s − 1 inputs of the short convolutions over "
            "queries, keys and values in 16-bit, and the recurrent matrix of each head in float32 "
            "(kda_state_dtype), whatever the KV cache precision.") % values
    else:
        formula = gettext(
            "%(layers)s × [convolution (%(kernel)s − 1) × %(channels)s channels + state %(heads)s heads × "
            "%(value_dim)s × %(key_dim)s] × 2 bytes × %(requests)s")
        transformers_bytes = group.layers * (lin.conv_kernel * lin.conv_dim * 2 + lin.recurrent_values * 4)
        words = gettext(
            "%(layers)s (Gated DeltaNet) keep a fixed state per sequence whatever the context, in "
            "16-bit "
            "as vLLM holds it (mamba_cache_dtype follows the model, not the KV cache precision). "
            "transformers keeps the whole convolution window and a float32 state: %(bytes)s bytes "
            "per "
            "sequence."
        ) % {"layers": values["state_layers"], "bytes": fmt_int(transformers_bytes)}
    item = Item(name=gettext("Recurrent state, linear-attention layers"), formula=formula % values,
                bytes=group.bytes(sized.requests))
    return item, [words]


GROUP_LINES = {
    "latent": _latent_line,
    "full": _full_line,
    "sliding": _windowed_line,
    "chunked": _windowed_line,
    "linear": _linear_line,
}
