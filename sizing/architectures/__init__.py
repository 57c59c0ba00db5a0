"""How a decoder's configuration turns into memory: which layers keep which cache, and how many
parameters it holds, module by module (SPEC §9; reference/KV_ARCHITECTURES.md).

A model without an `Architecture` is the spec's plain decoder: every layer full attention with
grouped-query K/V heads, one dense gated MLP per layer. Everything here is pure arithmetic on the
published figures.

Modules: `shapes` (the architecture as data), `stored_form` (`architecture_from_dict` reads the
stored form and names the field at fault), `parameters` (the parameter recount and activation
widths), `cache` (what each kind of layer caches).
"""
from .cache import CacheGroup, cache_groups, expanded_mla_bytes_per_token
from .parameters import (
    ParameterCount,
    ParameterGroup,
    activation_mlp_width,
    ceil_div,
    count_parameters,
    count_whisper_parameters,
)
from .shapes import (
    CHUNKED,
    FULL,
    GATED_DELTANET,
    KIMI_DELTA,
    LAYER_KINDS,
    LINEAR,
    LINEAR_KINDS,
    MLA,
    PLAIN,
    QUANTIZABLE_ROLES,
    SLIDING,
    VISION_KINDS,
    WEIGHT_FORMATS,
    Architecture,
    LinearAttention,
    MoE,
    NativeWeights,
    VisionTower,
    Yarn,
)
from .stored_form import architecture_from_dict

__all__ = [
    "CHUNKED",
    "FULL",
    "GATED_DELTANET",
    "KIMI_DELTA",
    "LAYER_KINDS",
    "LINEAR",
    "LINEAR_KINDS",
    "MLA",
    "PLAIN",
    "QUANTIZABLE_ROLES",
    "SLIDING",
    "VISION_KINDS",
    "WEIGHT_FORMATS",
    "Architecture",
    "CacheGroup",
    "LinearAttention",
    "MoE",
    "NativeWeights",
    "ParameterCount",
    "ParameterGroup",
    "VisionTower",
    "Yarn",
    "activation_mlp_width",
    "architecture_from_dict",
    "cache_groups",
    "ceil_div",
    "count_parameters",
    "count_whisper_parameters",
    "expanded_mla_bytes_per_token",
]
