"""The KV cache as breakdown items: one line per kind of layer, each with its formula filled in.

A plain decoder keeps the spec's single line, word for word. Sliding-window and chunked layers hold
min(context, window) tokens, the bound of transformers' static caches (StaticSlidingWindowLayer
allocates min(sliding_window, max_cache_len)); vLLM reserves more on those layers for chunked prefill,
and the assumptions give that figure.
"""
from __future__ import annotations

from .architectures import PLAIN, cache_groups, expanded_mla_bytes_per_token
from .breakdown import Item
from .errors import SizingError
from .units import GIB, fmt_int

KV_BITS = (16, 8)
# vLLM's default chunked-prefill budget per scheduler step; its sliding and chunked layers keep up to
# window − 1 + this many tokens (SlidingWindowSpec / ChunkedLocalAttentionSpec).
VLLM_BATCHED_TOKENS = 8192


def check_kv_bits(kv_bits) -> int:
    if isinstance(kv_bits, bool) or kv_bits not in KV_BITS:
        raise SizingError("kv_bits", "The KV cache precision must be 16-bit or 8-bit.")
    return int(kv_bits)


def _plural(count: int, singular: str, plural: str | None = None) -> str:
    return f"{fmt_int(count)} {singular if count == 1 else (plural or singular + 's')}"


def _bytes(kv_bytes: int) -> str:
    return "1 byte" if kv_bytes == 1 else f"{kv_bytes} bytes"


def _gib(n_bytes: int) -> str:
    from decimal import ROUND_HALF_UP, Decimal

    value = (Decimal(n_bytes) / Decimal(GIB)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{value:,} GiB"


def is_plain(spec) -> bool:
    arch = spec.architecture or PLAIN
    return arch.mla is None and set(arch.layer_pattern) == {"F"}


def kv_cache_items(spec, context: int, requests: int, kv_bits: int) -> tuple[list[Item], list[str]]:
    """The cache items and what they assume, for `requests` requests of `context` tokens."""
    kv_bytes = kv_bits // 8
    arch = spec.architecture or PLAIN
    tokens = _plural(context, "token")
    reqs = _plural(requests, "request")
    precision_words = (
        f"The KV cache is kept in 16-bit ({_bytes(kv_bytes)} per value) whatever the weights' precision."
        if kv_bits == 16 else
        "The KV cache is kept in 8-bit (1 byte per value), as vLLM's fp8 KV cache (kv_cache_dtype=fp8) "
        "stores it, whatever the weights' precision; 16-bit is the default."
    )
    assumptions = [precision_words]
    if is_plain(spec):
        layers, kv_heads, head_dim = spec.layers, spec.kv_heads, spec.head_dim
        item = Item(
            name="KV cache",
            formula=(
                f"2 × {_plural(layers, 'layer')} × {_plural(kv_heads, 'KV head')} × "
                f"{fmt_int(head_dim)} head dim × {_bytes(kv_bytes)} × {tokens} × {reqs}"
            ),
            bytes=2 * layers * kv_heads * head_dim * kv_bytes * context * requests,
        )
        return [item], assumptions

    items = []
    for group in cache_groups(spec, context, kv_bytes):
        layers = _plural(group.layers, "layer")
        heads = f"{_plural(spec.kv_heads, 'KV head')} × {fmt_int(spec.head_dim)} head dim" \
            if group.kind != "latent" else ""
        if group.kind == "latent":
            mla = arch.mla
            items.append(Item(
                name="KV cache, latent attention (MLA)",
                formula=(f"{layers} × ({fmt_int(mla.kv_lora_rank)} latent + {fmt_int(mla.qk_rope_head_dim)} "
                         f"rotary dims) × {_bytes(kv_bytes)} × {tokens} × {reqs}"),
                bytes=group.bytes(requests),
                per_gpu=True,
            ))
            expanded = expanded_mla_bytes_per_token(spec, kv_bytes)
            latent = group.bytes_per_token
            assumptions += [
                f"Latent attention caches one compressed vector of {fmt_int(mla.latent_width)} values per "
                "token and layer, shared by all heads, as vLLM and SGLang store it (no factor 2: keys and "
                "values are rebuilt from it).",
                "transformers' 4.x releases instead cache the expanded keys and values of all "
                f"{fmt_int(spec.attention_heads)} heads "
                f"({fmt_int(mla.qk_nope_head_dim + mla.qk_rope_head_dim)} + {fmt_int(mla.v_head_dim)} "
                f"values per head): {fmt_int(expanded)} bytes per token instead of {fmt_int(latent)}, "
                f"{expanded / latent:.0f}× more (transformers 5 caches the latent too). Serve it with an "
                "MLA-aware engine.",
                "Under tensor parallelism every GPU keeps the whole latent cache (it is not split by heads), "
                "so it is counted on each GPU.",
            ]
        elif group.kind == "full":
            items.append(Item(
                name="KV cache, full-attention layers",
                formula=f"2 × {layers} × {heads} × {_bytes(kv_bytes)} × {tokens} × {reqs}",
                bytes=group.bytes(requests),
            ))
        elif group.kind in ("sliding", "chunked"):
            window = arch.sliding_window if group.kind == "sliding" else arch.attention_chunk
            what = "window" if group.kind == "sliding" else "chunk"
            label = "sliding-window layers" if group.kind == "sliding" else "chunked local-attention layers"
            items.append(Item(
                name=f"KV cache, {label}",
                formula=(f"2 × {layers} × {heads} × {_bytes(kv_bytes)} × "
                         f"min({tokens}, {fmt_int(window)} {what}) = "
                         f"{_plural(group.tokens_held, 'token')} × {reqs}"),
                bytes=group.bytes(requests),
            ))
            vllm_tokens = min(window - 1 + VLLM_BATCHED_TOKENS, context) if group.kind == "sliding" \
                else min(window + VLLM_BATCHED_TOKENS, context)
            extra = max(0, vllm_tokens - group.tokens_held) * group.bytes_per_token * requests
            kind_words = ("attend only to the last" if group.kind == "sliding"
                          else "attend only within their")
            assumptions.append(
                f"{_plural(group.layers, 'layer')} {kind_words} {fmt_int(window)}-token {what}, so they hold "
                f"min(context, {what}) tokens: the bound of transformers' static cache. vLLM's hybrid cache "
                f"manager reserves up to {what} + {fmt_int(VLLM_BATCHED_TOKENS)} batched prefill tokens on "
                "them"
                + (f", {_gib(extra)} more here; the margin must cover it." if extra else ", no more here.")
            )
        elif group.kind == "linear":
            lin = arch.linear_attention
            items.append(Item(
                name="Recurrent state, linear-attention layers",
                formula=(f"{layers} × [convolution ({fmt_int(lin.conv_kernel)} − 1) × "
                         f"{fmt_int(lin.conv_dim)} channels + state {fmt_int(lin.value_heads)} heads × "
                         f"{fmt_int(lin.value_head_dim)} × {fmt_int(lin.key_head_dim)}] × 2 bytes × {reqs}"),
                bytes=group.bytes(requests),
            ))
            state = lin.value_heads * lin.value_head_dim * lin.key_head_dim
            transformers_bytes = group.layers * (lin.conv_kernel * lin.conv_dim * 2 + state * 4)
            assumptions.append(
                f"{_plural(group.layers, 'linear-attention layer')} (Gated DeltaNet) keep a fixed state per "
                "sequence whatever the context, in 16-bit as vLLM holds it (mamba_cache_dtype follows the "
                "model, not the KV cache precision). transformers keeps the whole convolution window and a "
                f"float32 state: {fmt_int(transformers_bytes)} bytes per sequence."
            )
    return items, assumptions
