"""How a decoder's configuration turns into memory: which layers keep which cache, and how many
parameters it holds, module by module (SPEC §9; reference/KV_ARCHITECTURES.md).

A model without an `Architecture` is the spec's plain decoder: every layer full attention with
grouped-query K/V heads, one dense gated MLP per layer. Everything here is pure arithmetic on the
published figures; `architecture_from_dict` reads the stored form and names the field at fault.
"""
from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields

from .errors import SizingError
from .i18n import TranslatedWords, gettext, gettext_noop

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


@dataclass(frozen=True)
class LinearAttention:
    """Gated DeltaNet layers (Qwen3-Next): a fixed recurrent state per sequence, no per-token cache."""

    key_heads: int
    value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int

    @property
    def conv_dim(self) -> int:
        return 2 * self.key_heads * self.key_head_dim + self.value_heads * self.value_head_dim

    def state_values(self) -> int:
        """Values of one layer's state: the causal convolution's last (kernel − 1) inputs and the
        value-heads × d_v × d_k recurrent matrix (vLLM gated_delta_net_state_shape)."""
        conv = (self.conv_kernel - 1) * self.conv_dim
        recurrent = self.value_heads * self.value_head_dim * self.key_head_dim
        return conv + recurrent


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
        counts = dict.fromkeys(LAYER_KINDS, 0)
        for index in range(layers):
            counts[self.kind_of_layer(index)] += 1
        return counts

    @property
    def family(self) -> str:
        return "moe" if self.moe is not None else "dense"

    def as_dict(self) -> dict:
        """The stored form: only what differs from the defaults."""
        return _strip_defaults(self)


PLAIN = Architecture()


def _strip_defaults(value) -> dict:
    out = {}
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


# --- reading the stored form ----------------------------------------------------------------------

def _fail(path: str, message: str):
    raise SizingError("architecture", f"architecture.{path}: {message}")


def _int(value, path: str, minimum: int = 1, optional: bool = False):
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        _fail(path, gettext("must be a whole number of at least %(minimum)s, not %(value)s.") % {
            "minimum": minimum, "value": repr(value)
        })
    return value


def _bool(value, path: str) -> bool:
    if not isinstance(value, bool):
        _fail(path, gettext("must be true or false, not %(value)s.") % {"value": repr(value)})
    return value


def _part(cls, data, path: str, ints: dict[str, int], bools: tuple[str, ...] = (), optional=()):
    if not isinstance(data, dict):
        _fail(path, gettext("must be an object."))
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        _fail(f"{path}.{unknown[0]}", gettext("is not a figure this architecture knows."))
    defaults = {f.name: f.default for f in fields(cls)}
    values = {}
    for name, minimum in ints.items():
        if name in data:
            values[name] = _int(data[name], f"{path}.{name}", minimum, optional=name in optional)
        elif defaults[name] is MISSING:
            _fail(f"{path}.{name}", gettext("is required."))
    for name in bools:
        if name in data:
            values[name] = _bool(data[name], f"{path}.{name}")
    return cls(**values)


def architecture_from_dict(data: dict | None) -> Architecture:
    """The architecture in its stored form (a JSON object); `{}` or None is the plain decoder."""
    if not data:
        return PLAIN
    if not isinstance(data, dict):
        raise SizingError("architecture", gettext("The architecture must be a JSON object."))
    known = {f.name for f in fields(Architecture)}
    unknown = sorted(set(data) - known)
    if unknown:
        _fail(unknown[0], gettext("is not a figure this architecture knows."))
    values: dict = {}
    pattern = data.get("layer_pattern", FULL)
    if not isinstance(pattern, str) or not pattern or set(pattern) - set(LAYER_KINDS):
        letters = ", ".join(f"{k} ({v})" for k, v in LAYER_KINDS.items())
        _fail("layer_pattern", gettext("must be letters %(letters)s, not %(value)s.") % {
            "letters": letters, "value": repr(pattern)
        })
    values["layer_pattern"] = pattern
    for name in ("sliding_window", "attention_chunk"):
        values[name] = _int(data.get(name), name, optional=True)
    if SLIDING in pattern and values["sliding_window"] is None:
        _fail("sliding_window", gettext("is required when some layers slide (S in layer_pattern)."))
    if CHUNKED in pattern and values["attention_chunk"] is None:
        _fail(
            "attention_chunk", gettext("is required when some layers attend to chunks (C in layer_pattern).")
        )
    if "mla" in data:
        values["mla"] = _part(
            MLA, data["mla"], "mla",
            {"kv_lora_rank": 1, "qk_rope_head_dim": 1, "qk_nope_head_dim": 1, "v_head_dim": 1,
             "q_lora_rank": 1},
            optional=("q_lora_rank",),
        )
    if "linear_attention" in data:
        values["linear_attention"] = _part(
            LinearAttention, data["linear_attention"], "linear_attention",
            {"key_heads": 1, "value_heads": 1, "key_head_dim": 1, "value_head_dim": 1, "conv_kernel": 1},
        )
    if LINEAR in pattern and "linear_attention" not in values:
        _fail(
            "linear_attention",
            gettext("is required when some layers are linear attention (L in layer_pattern)."),
        )
    if "moe" in data:
        moe = _part(
            MoE, data["moe"], "moe",
            {"experts": 1, "experts_per_token": 1, "expert_intermediate": 1, "shared_intermediate": 0,
             "first_dense_layers": 0, "layer_step": 1, "dense_intermediate": 1},
            bools=("expert_bias", "router_bias", "shared_expert_gate"),
            optional=("dense_intermediate",),
        )
        if moe.experts_per_token > moe.experts:
            _fail("moe.experts_per_token", gettext("cannot exceed the number of experts."))
        values["moe"] = moe
    if "vision" in data:
        vision = data["vision"]
        if not isinstance(vision, dict) or vision.get("kind") not in VISION_KINDS:
            _fail(
                "vision.kind", gettext("must be one of %(choices)s.") % {"choices": ", ".join(VISION_KINDS)}
            )
        values["vision"] = VisionTower(
            kind=vision["kind"],
            **{name: _int(vision.get(name), f"vision.{name}") for name in
               ("layers", "hidden", "intermediate", "patch_size", "image_size")},
            projector_input=_int(vision.get("projector_input", 0), "vision.projector_input", 0),
        )
    if "native_weights" in data:
        native = data["native_weights"]
        if not isinstance(native, dict) or native.get("format") not in WEIGHT_FORMATS:
            _fail(
                "native_weights.format",
                gettext("must be one of %(choices)s.") % {"choices": ", ".join(WEIGHT_FORMATS)},
            )
        quantized = native.get("quantized")
        if (not isinstance(quantized, list | tuple) or not quantized
                or set(quantized) - set(QUANTIZABLE_ROLES)):
            _fail(
                "native_weights.quantized",
                gettext("must list some of %(choices)s.") % {"choices": ", ".join(QUANTIZABLE_ROLES)},
            )
        values["native_weights"] = NativeWeights(
            format=native["format"], block=_int(native.get("block"), "native_weights.block"),
            quantized=tuple(sorted(set(quantized), key=QUANTIZABLE_ROLES.index)),
        )
    for name in ("qkv_bias", "o_bias", "qk_norm", "attention_output_gate", "sinks",
                 "mtp_own_embeddings"):
        if name in data:
            values[name] = _bool(data[name], name)
    values["norms_per_layer"] = _int(data.get("norms_per_layer", 2), "norms_per_layer", 0)
    values["mtp_layers"] = _int(data.get("mtp_layers", 0), "mtp_layers", 0)
    return Architecture(**values)


# --- parameters -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ParameterGroup:
    """Parameters of one kind of module over the whole model: its weight matrices (rows, columns,
    how many) and its vectors (biases, norms, per-head scalars)."""

    name: str
    role: str  # embedding | output_head | attention | linear_attention | mlp | experts | shared_experts
    #          | router | norms | vision
    matrices: tuple[tuple[int, int, int], ...] = ()
    vectors: int = 0

    @property
    def parameters(self) -> int:
        return sum(rows * cols * count for rows, cols, count in self.matrices) + self.vectors


@dataclass(frozen=True)
class ParameterCount:
    groups: tuple[ParameterGroup, ...]
    # Parameters used for one text token: all but the routed experts that do not run and the vision tower.
    active: int
    mtp: int = 0  # shipped beside the model, not part of `total`
    details: tuple[str, ...] = field(default=())

    @property
    def total(self) -> int:
        return sum(group.parameters for group in self.groups)

    def of(self, *roles: str) -> int:
        return sum(group.parameters for group in self.groups if group.role in roles)

    @property
    def non_embedding(self) -> int:
        return self.total - self.of("embedding", "output_head")

    @property
    def language_model(self) -> int:
        return self.total - self.of("vision")


class _Accumulator:
    def __init__(self):
        self.groups: dict[tuple[str, str], dict] = {}

    def add(self, role: str, name: str, matrices=(), vectors: int = 0, times: int = 1):
        group = self.groups.setdefault((role, name), {"matrices": {}, "vectors": 0})
        for rows, cols in matrices:
            key = (rows, cols)
            group["matrices"][key] = group["matrices"].get(key, 0) + times
        group["vectors"] += vectors * times

    def result(self) -> tuple[ParameterGroup, ...]:
        return tuple(
            ParameterGroup(
                name=name, role=role,
                matrices=tuple((rows, cols, count) for (rows, cols), count in data["matrices"].items()),
                vectors=data["vectors"],
            )
            for (role, name), data in self.groups.items()
        )


def _need(spec, name: str) -> int:
    value = getattr(spec, name)
    if value is None:
        from .errors import MissingModelValue

        raise MissingModelValue(spec.name, name)
    return value


def _attention(acc: _Accumulator, arch: Architecture, hidden: int, heads: int, kv_heads: int,
               head_dim: int, times: int) -> None:
    if arch.mla is not None:
        mla = arch.mla
        qk = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        matrices = []
        vectors = mla.kv_lora_rank  # kv_a_layernorm
        if mla.q_lora_rank:
            matrices += [(mla.q_lora_rank, hidden), (heads * qk, mla.q_lora_rank)]
            vectors += mla.q_lora_rank  # q_a_layernorm
        else:
            matrices.append((heads * qk, hidden))
        matrices += [
            (mla.latent_width, hidden),  # kv_a_proj_with_mqa
            (heads * (mla.qk_nope_head_dim + mla.v_head_dim), mla.kv_lora_rank),  # kv_b_proj
            (hidden, heads * mla.v_head_dim),  # o_proj
        ]
        acc.add("attention", "Attention (latent projections)", matrices, vectors, times)
        return
    q_width, kv_width = heads * head_dim, kv_heads * head_dim
    q_out = 2 * q_width if arch.attention_output_gate else q_width
    matrices = [(q_out, hidden), (kv_width, hidden), (kv_width, hidden), (hidden, q_width)]
    vectors = 0
    if arch.qkv_bias:
        vectors += q_out + 2 * kv_width
    if arch.o_bias:
        vectors += hidden
    if arch.qk_norm:
        vectors += 2 * head_dim
    if arch.sinks:
        vectors += heads
    acc.add("attention", "Attention projections", matrices, vectors, times)


def _linear_attention(acc: _Accumulator, lin: LinearAttention, hidden: int, times: int) -> None:
    key_dim = lin.key_heads * lin.key_head_dim
    value_dim = lin.value_heads * lin.value_head_dim
    matrices = [
        (2 * key_dim + 2 * value_dim, hidden),  # in_proj_qkvz
        (2 * lin.value_heads, hidden),  # in_proj_ba
        (lin.conv_dim, lin.conv_kernel),  # depthwise conv1d
        (hidden, value_dim),  # out_proj
    ]
    vectors = 2 * lin.value_heads + lin.value_head_dim  # dt_bias, A_log, gated norm
    acc.add("linear_attention", "Linear attention (Gated DeltaNet)", matrices, vectors, times)


def _gated_mlp(width: int, hidden: int) -> list[tuple[int, int]]:
    return [(width, hidden), (width, hidden), (hidden, width)]


def _vision(acc: _Accumulator, vision: VisionTower, text_hidden: int) -> None:
    h, i, p = vision.hidden, vision.intermediate, vision.patch_size
    patches = (vision.image_size // p) ** 2
    name = "Vision encoder and projector"
    if vision.kind == "siglip":  # Gemma 3: SigLIP without head, projector to the text width
        per_layer = [(h, h)] * 4 + [(i, h), (h, i)]
        # patch conv with bias, learned positions, post norm
        acc.add("vision", name, [(h, 3 * p * p)], h + patches * h + 2 * h)
        acc.add("vision", name, per_layer, 4 * h + i + h + 2 * 2 * h, vision.layers)  # biases, 2 layer norms
        acc.add("vision", name, [(text_hidden, h)], h)  # mm_input_projection, soft-embedding norm
    elif vision.kind == "llama4":
        positions = patches + 1  # with the class token
        per_layer = [(h, h)] * 4 + [(i, h), (h, i)]
        # class token, positions, pre and post norms
        acc.add("vision", name, [(h, 3 * p * p)], h + positions * h + 2 * 2 * h)
        acc.add("vision", name, per_layer, 4 * h + i + h + 2 * 2 * h, vision.layers)
        out = vision.projector_input
        # pixel-shuffle adapter (4 patches merged), then the projector to the text width
        acc.add("vision", name, [(out, 4 * h), (out, out), (text_hidden, out)])
    elif vision.kind == "pixtral":
        per_layer = [(h, h)] * 4 + _gated_mlp(i, h)
        acc.add("vision", name, [(h, 3 * p * p)], h)  # patch conv, pre norm
        acc.add("vision", name, per_layer, 2 * h, vision.layers)  # 2 RMS norms
        # projector: norm, 2x2 patch merger, two linear layers
        acc.add("vision", name, [(h, 4 * h), (text_hidden, h), (text_hidden, text_hidden)], h)


def count_parameters(spec) -> ParameterCount:
    """The parameters of a language model from its published figures: the one recount every shipped
    total is checked against. Raises MissingModelValue when a figure it needs is not published."""
    arch = spec.architecture or PLAIN
    layers = _need(spec, "layers")
    hidden = _need(spec, "hidden_size")
    vocab = _need(spec, "vocab_size")
    heads = _need(spec, "attention_heads")
    kv_heads = spec.kv_heads if arch.mla is not None else _need(spec, "kv_heads")
    head_dim = spec.head_dim if arch.mla is not None else _need(spec, "head_dim")
    moe = arch.moe
    dense_width = (moe.dense_intermediate if moe and moe.dense_intermediate else spec.intermediate_size)

    acc = _Accumulator()
    acc.add("embedding", "Embeddings", [(vocab, hidden)])
    kinds = [arch.kind_of_layer(index) for index in range(layers)]
    attention_layers = sum(1 for kind in kinds if kind != LINEAR)
    linear_layers = layers - attention_layers
    if attention_layers:
        _attention(acc, arch, hidden, heads, kv_heads, head_dim, attention_layers)
    if linear_layers:
        _linear_attention(acc, arch.linear_attention, hidden, linear_layers)
    moe_layers = sum(1 for index in range(layers) if moe and moe.is_moe_layer(index))
    dense_layers = layers - moe_layers
    if dense_layers:
        if dense_width is None:
            from .errors import MissingModelValue

            raise MissingModelValue(spec.name, "intermediate_size")
        acc.add("mlp", "Dense MLP", _gated_mlp(dense_width, hidden), times=dense_layers)
    routed = 0
    active_routed = 0
    if moe_layers:
        e = moe.expert_intermediate
        expert_vectors = (2 * e + hidden) if moe.expert_bias else 0
        acc.add("experts", "Routed experts", _gated_mlp(e, hidden), expert_vectors, moe.experts * moe_layers)
        per_expert = 3 * hidden * e + expert_vectors
        routed = per_expert * moe.experts * moe_layers
        active_routed = per_expert * moe.experts_per_token * moe_layers
        router_vectors = moe.experts if moe.router_bias else 0
        acc.add("router", "Routers", [(moe.experts, hidden)], router_vectors, moe_layers)
        if moe.shared_intermediate:
            gate = [(1, hidden)] if moe.shared_expert_gate else []
            acc.add("shared_experts", "Shared experts", _gated_mlp(moe.shared_intermediate, hidden) + gate,
                    times=moe_layers)
    acc.add("norms", "Norms", vectors=arch.norms_per_layer * hidden * layers + hidden)
    if not spec.tied_embeddings:
        acc.add("output_head", "Output head", [(vocab, hidden)])
    if arch.vision is not None:
        _vision(acc, arch.vision, hidden)
    groups = acc.result()
    total = sum(group.parameters for group in groups)

    mtp = 0
    if arch.mtp_layers:
        # One more decoder layer (the model's last kind), its projection of [embedding; hidden] and
        # two norms, plus a norm before its head; with its own embedding and head where it carries them.
        last = layers - 1
        layer_acc = _Accumulator()
        _attention(layer_acc, arch, hidden, heads, kv_heads, head_dim, 1)
        if moe and moe.is_moe_layer(last):
            e = moe.expert_intermediate
            layer_acc.add("experts", "", _gated_mlp(e, hidden), (2 * e + hidden) if moe.expert_bias else 0,
                          moe.experts)
            layer_acc.add("router", "", [(moe.experts, hidden)],
                          moe.experts if moe.router_bias else 0)
            if moe.shared_intermediate:
                layer_acc.add("shared", "", _gated_mlp(moe.shared_intermediate, hidden))
        else:
            layer_acc.add("mlp", "", _gated_mlp(dense_width, hidden))
        per_mtp = sum(g.parameters for g in layer_acc.result()) + arch.norms_per_layer * hidden
        per_mtp += 2 * hidden * hidden + 3 * hidden
        if arch.mtp_own_embeddings:
            per_mtp += 2 * vocab * hidden
        mtp = per_mtp * arch.mtp_layers
    vision = sum(group.parameters for group in groups if group.role == "vision")
    return ParameterCount(groups=groups, active=total - vision - routed + active_routed, mtp=mtp)


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


LINEAR_STATE_BYTES = 2  # vLLM keeps the Gated DeltaNet state in the model's 16-bit dtype (mamba_cache_dtype)


def cache_groups(spec, context: int, kv_bytes: int) -> list[CacheGroup]:
    """What each kind of layer caches for one request of `context` tokens. Sliding and chunked
    layers hold min(context, window) tokens, the bound of transformers' static caches."""
    arch = spec.architecture or PLAIN
    layers = spec.layers
    counts = arch.layer_counts(layers)
    groups = []
    if arch.mla is not None:
        groups.append(CacheGroup("latent", counts[FULL], arch.mla.latent_width * kv_bytes * counts[FULL],
                                 context, 0))
        return groups
    per_layer_token = 2 * spec.kv_heads * spec.head_dim * kv_bytes
    if counts[FULL]:
        groups.append(CacheGroup("full", counts[FULL], per_layer_token * counts[FULL], context, 0))
    if counts[SLIDING]:
        groups.append(CacheGroup("sliding", counts[SLIDING], per_layer_token * counts[SLIDING],
                                 min(context, arch.sliding_window), 0))
    if counts[CHUNKED]:
        groups.append(CacheGroup("chunked", counts[CHUNKED], per_layer_token * counts[CHUNKED],
                                 min(context, arch.attention_chunk), 0))
    if counts[LINEAR]:
        state = arch.linear_attention.state_values() * LINEAR_STATE_BYTES * counts[LINEAR]
        groups.append(CacheGroup("linear", counts[LINEAR], 0, 0, state))
    return groups


def expanded_mla_bytes_per_token(spec, kv_bytes: int) -> int:
    """What transformers caches for MLA: the up-projected K (nope + rope) and V of every head."""
    mla = spec.architecture.mla
    per_head = mla.qk_nope_head_dim + mla.qk_rope_head_dim + mla.v_head_dim
    return spec.layers * spec.attention_heads * per_head * kv_bytes


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def count_whisper_parameters(encoder_layers: int, decoder_layers: int, d_model: int, vocab: int,
                             mel_bins: int, source_positions: int, target_positions: int) -> int:
    """Whisper's parameters from its config: two convolutions and learned positions before the encoder,
    token and position embeddings before the decoder (the output head shares the token embedding).
    Attention: q, v and o carry biases, k does not; MLPs are 4 × d_model wide; LayerNorms have biases."""
    d = d_model
    attention = 4 * d * d + 3 * d
    mlp = 2 * 4 * d * d + 4 * d + d
    norm = 2 * d
    encoder = (mel_bins * d * 3 + d) + (d * d * 3 + d) + source_positions * d
    encoder += encoder_layers * (attention + norm + mlp + norm) + norm
    decoder = vocab * d + target_positions * d
    decoder += decoder_layers * (2 * (attention + norm) + mlp + norm) + norm
    return encoder + decoder


def activation_mlp_width(spec, intermediate: int) -> int:
    """The widest MLP activation one token makes in a layer: the dense MLP, or under a mixture of
    experts the experts that run for it side by side (plus the shared expert)."""
    arch = spec.architecture or PLAIN
    moe = arch.moe
    if moe is None:
        return intermediate
    routed = moe.experts_per_token * moe.expert_intermediate + moe.shared_intermediate
    layers = spec.layers or 0
    has_dense = any(not moe.is_moe_layer(index) for index in range(layers))
    dense = (moe.dense_intermediate or intermediate) if has_dense else 0
    return max(routed, dense)
