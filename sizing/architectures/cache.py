"""The KV cache per layer group: what each kind of layer keeps for one request."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from .shapes import (
    CHUNKED,
    FULL,
    LINEAR,
    MLA,
    PLAIN,
    SLIDING,
    Architecture,
    LinearAttention,
)

if TYPE_CHECKING:
    from ..specs import LanguageModelSpec

# --- the KV cache per layer group -----------------------------------------------------------------

@dataclass(frozen=True)
class CacheGroup:
    """One kind of layer and what it keeps per request."""

    kind: str  # full | sliding | chunked | linear | latent
    layers: int
    bytes_per_token: int  # per layer group, at the chosen KV precision (0 for a fixed state)
    tokens_held: int  # per request at the given context (0 for a fixed state)
    fixed_bytes: int  # per request, whatever the context (the linear-attention state)

    def bytes(self, requests: int) -> int:
        return (self.bytes_per_token * self.tokens_held + self.fixed_bytes) * requests


def cache_groups(spec: LanguageModelSpec, context: int, kv_bytes: int) -> list[CacheGroup]:
    """What each kind of layer caches for one request of `context` tokens. Sliding and chunked
    layers hold min(context, window) tokens, the bound of transformers' static caches."""
    arch = spec.architecture or PLAIN
    # The calculators check the figures they read before asking (`calculators.checks.model_value`).
    layers = cast(int, spec.layers)
    counts = arch.layer_counts(layers)
    groups = []
    if arch.mla is not None:
        groups.append(CacheGroup("latent", counts[FULL], arch.mla.latent_width * kv_bytes * counts[FULL],
                                 context, 0))
        groups.extend(_linear_group(arch, counts))  # Kimi-Linear: latent layers among linear ones
        return groups
    per_layer_token = 2 * cast(int, spec.kv_heads) * cast(int, spec.head_dim) * kv_bytes
    if counts[FULL]:
        groups.append(CacheGroup("full", counts[FULL], per_layer_token * counts[FULL], context, 0))
    if counts[SLIDING]:
        groups.append(CacheGroup("sliding", counts[SLIDING], per_layer_token * counts[SLIDING],
                                 min(context, cast(int, arch.sliding_window)), 0))
    if counts[CHUNKED]:
        groups.append(CacheGroup("chunked", counts[CHUNKED], per_layer_token * counts[CHUNKED],
                                 min(context, cast(int, arch.attention_chunk)), 0))
    groups.extend(_linear_group(arch, counts))
    return groups


def _linear_group(arch: Architecture, counts: dict[str, int]) -> list[CacheGroup]:
    """The linear-attention layers' fixed state per request, as vLLM holds it (none without them)."""
    if not counts[LINEAR]:
        return []
    linear = cast(LinearAttention, arch.linear_attention)  # LINEAR layers only where it is set
    return [CacheGroup("linear", counts[LINEAR], 0, 0, linear.state_bytes() * counts[LINEAR])]


def expanded_mla_bytes_per_token(spec: LanguageModelSpec, kv_bytes: int) -> int:
    """What transformers caches for MLA: the up-projected K (nope + rope) and V of every head."""
    mla = cast(MLA, (spec.architecture or PLAIN).mla)  # asked of MLA models only
    per_head = mla.qk_nope_head_dim + mla.qk_rope_head_dim + mla.v_head_dim
    return cast(int, spec.layers) * cast(int, spec.attention_heads) * per_head * kv_bytes


