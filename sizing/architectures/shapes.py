"""A decoder's architecture as data: layer kinds, experts, latent and linear attention, a vision
tower, native weight formats. A model without one is the spec's plain decoder."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from ..i18n import TranslatedWords, gettext_noop

# One letter per layer kind; a model's `layer_pattern` repeats over its layers.
FULL, SLIDING, CHUNKED, LINEAR = "F", "S", "C", "L"
LAYER_KINDS = TranslatedWords({
    FULL: gettext_noop("full attention"),
    SLIDING: gettext_noop("sliding-window attention"),
    CHUNKED: gettext_noop("chunked local attention"),
    LINEAR: gettext_noop("linear attention"),
})
VISION_KINDS = ("siglip", "llama4", "pixtral")
WEIGHT_FORMATS = ("fp8-block", "mxfp4")
# Modules a native low-precision checkpoint may store quantized.
QUANTIZABLE_ROLES = ("attention", "mlp", "experts", "shared_experts")


@dataclass(frozen=True)
class MoE:
    """Mixture of experts in the MLP. Every expert is held in memory; `experts_per_token` run."""

    experts: int
    experts_per_token: int
    expert_intermediate: int
    shared_intermediate: int = 0  # width of the shared expert(s) MLP; 0 = none
    first_dense_layers: int = 0  # first_k_dense_replace
    # MoE on layers with (i + 1) % step == 0 (interleave_moe_layer_step, decoder_sparse_step)
    layer_step: int = 1
    dense_intermediate: int | None = None  # MLP width of dense layers; None = intermediate_size
    expert_bias: bool = False  # biases on the expert projections (gpt-oss)
    router_bias: bool = False
    shared_expert_gate: bool = False  # a hidden -> 1 gate on the shared expert (Qwen3-Next)
    # DeepSeek-V3 and GLM-4.5 also keep one routing bias per expert (e_score_correction_bias): a buffer,
    # not a parameter, so it is not counted (as transformers counts).

    def is_moe_layer(self, index: int) -> bool:
        return index >= self.first_dense_layers and (index + 1) % self.layer_step == 0


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention: one compressed latent per token and layer is cached."""

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None  # None: queries projected directly from the hidden state

    @property
    def latent_width(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim


# The linear-attention layers the catalog sizes: Gated DeltaNet (Qwen3-Next) and Kimi Delta Attention
# (Kimi-Linear, a Gated DeltaNet whose decay is per channel, with q, k and v each through a short
# convolution).
GATED_DELTANET, KIMI_DELTA = "gated_deltanet", "kda"
LINEAR_KINDS = (GATED_DELTANET, KIMI_DELTA)
STATE_16_BIT = 2  # the model's dtype: vLLM's mamba_cache_dtype "auto"
STATE_FLOAT32 = 4


@dataclass(frozen=True)
class LinearAttention:
    """Linear-attention layers: a fixed recurrent state per sequence, no per-token cache. Gated DeltaNet
    (Qwen3-Next) or Kimi Delta Attention (Kimi-Linear: key and value heads alike, `key_heads` =
    `value_heads` = its num_heads)."""

    key_heads: int
    value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int
    kind: str = GATED_DELTANET

    @property
    def conv_dim(self) -> int:
        """The channels the causal convolution keeps: queries, keys and values side by side."""
        return 2 * self.key_heads * self.key_head_dim + self.value_heads * self.value_head_dim

    @property
    def conv_values(self) -> int:
        """The convolution's last (kernel − 1) inputs (vLLM gated_delta_net_state_shape, kda_state_shape)."""
        return (self.conv_kernel - 1) * self.conv_dim

    @property
    def recurrent_values(self) -> int:
        """The value-heads × d_v × d_k recurrent matrix."""
        return self.value_heads * self.value_head_dim * self.key_head_dim

    @property
    def recurrent_bytes_per_value(self) -> int:
        """vLLM keeps Gated DeltaNet's recurrent state in the model's dtype (gated_delta_net_state_dtype,
        mamba_ssm_cache_dtype "auto"), Kimi Delta Attention's in float32 (kda_state_dtype)."""
        return STATE_FLOAT32 if self.kind == KIMI_DELTA else STATE_16_BIT

    def state_bytes(self) -> int:
        """One layer's state per sequence as vLLM holds it: the convolution window in the model's 16-bit
        dtype and the recurrent matrix in its own dtype."""
        return self.conv_values * STATE_16_BIT + self.recurrent_values * self.recurrent_bytes_per_value


@dataclass(frozen=True)
class VisionTower:
    """The image encoder and projector a multimodal checkpoint loads with its language model."""

    kind: str  # siglip (Gemma 3) | llama4 | pixtral (Mistral Small 3.x)
    layers: int
    hidden: int
    intermediate: int
    patch_size: int
    image_size: int
    projector_input: int = 0  # llama4: the adapter's output width (vision_output_dim)


@dataclass(frozen=True)
class Yarn:
    """RoPE scaling by YaRN as the model's card documents it: `factor` × `original_context` tokens. The
    checkpoint's config does not turn it on; the server is told at start (vLLM's --hf-overrides,
    SGLang's --json-model-override-args, transformers' rope_scaling), with the model's `rope_theta`."""

    factor: int
    original_context: int
    rope_theta: int

    @property
    def context(self) -> int:
        return self.factor * self.original_context


@dataclass(frozen=True)
class NativeWeights:
    """A checkpoint published in a low-precision format, sized as stored."""

    format: str  # fp8-block | mxfp4
    block: int  # fp8-block: square block edge (weight_block_size); mxfp4: elements per shared scale
    quantized: tuple[str, ...]  # roles stored in the format; everything else stays 16-bit


@dataclass(frozen=True)
class Architecture:
    layer_pattern: str = FULL
    sliding_window: int | None = None
    attention_chunk: int | None = None
    mla: MLA | None = None
    linear_attention: LinearAttention | None = None
    moe: MoE | None = None
    native_weights: NativeWeights | None = None
    vision: VisionTower | None = None
    yarn: Yarn | None = None  # the context its card extends to beyond max_context
    # RoPE as the config sets it, where vLLM's cos/sin caches differ from one cache of max_context
    # positions × head_dim (`vllm_loading.rotary_caches`):
    rope_linear_factor: int = 1  # rope_scaling {"rope_type": "linear"}: the cache covers max × factor
    local_rope: bool = False  # sliding layers rotate with their own base: a second cache
    rotary_dim: int | None = None  # head_dim × partial_rotary_factor where below 1
    # No rotary position embedding at all (Kimi-Linear's latent attention, mla_use_nope): vLLM builds no
    # cos/sin cache; the latent's rotary-sized part is cached unrotated.
    no_rope: bool = False
    # How the checkpoint counts: conventions of the architecture, as its modeling code has them (whether
    # the output head is tied to the embeddings is the spec's own `tied_embeddings`).
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False  # a learned RMSNorm of head_dim on queries and keys
    norms_per_layer: int = 2
    attention_output_gate: bool = False  # queries projected twice as wide, half gating the output
    sinks: bool = False  # one learned logit per head and layer (gpt-oss); no cache entries
    mtp_layers: int = 0  # multi-token-prediction layers shipped beside the model, not loaded to serve
    mtp_own_embeddings: bool = False  # those layers carry their own embedding and output head

    def kind_of_layer(self, index: int) -> str:
        return self.layer_pattern[index % len(self.layer_pattern)]

    def layer_counts(self, layers: int) -> dict[str, int]:
        """Layers of each kind among the first `layers`: the pattern's whole repeats and the start of
        one more (worked out per place in the pattern, not per layer: capacity searches ask it often)."""
        counts = dict.fromkeys(LAYER_KINDS, 0)
        repeats, rest = divmod(layers, len(self.layer_pattern))
        for place, kind in enumerate(self.layer_pattern):
            counts[kind] += repeats + (place < rest)
        return counts

    @property
    def family(self) -> str:
        return "moe" if self.moe is not None else "dense"

    def as_dict(self) -> dict[str, Any]:
        """The stored form: only what differs from the defaults."""
        return _strip_defaults(self)


PLAIN = Architecture()


def _strip_defaults(value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in fields(value):
        current = getattr(value, item.name)
        default = item.default
        if current == default:
            continue
        if hasattr(current, "__dataclass_fields__"):
            out[item.name] = asdict(current)
            if isinstance(current, NativeWeights):
                out[item.name]["quantized"] = list(current.quantized)
        else:
            out[item.name] = current
    return out

