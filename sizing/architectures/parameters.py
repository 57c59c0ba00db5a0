"""How many parameters a decoder holds, module by module (SPEC §9), and the widths the activations
reach; Whisper's count from its config."""
from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict, cast

from ..errors import MissingModelValue
from .shapes import (
    KIMI_DELTA,
    LINEAR,
    PLAIN,
    Architecture,
    LinearAttention,
    VisionTower,
)

if TYPE_CHECKING:
    from ..specs import LanguageModelSpec

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


class _Group(TypedDict):
    matrices: dict[tuple[int, int], int]
    vectors: int


class _Accumulator:
    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], _Group] = {}

    def add(self, role: str, name: str, matrices: Iterable[tuple[int, int]] = (), vectors: int = 0,
            times: int = 1) -> None:
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


def _need(spec: LanguageModelSpec, name: str) -> int:
    value: int | None = getattr(spec, name)
    if value is None:
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
    if lin.kind == KIMI_DELTA:
        _kimi_delta_attention(acc, lin, hidden, times)
        return
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


def _kimi_delta_attention(acc: _Accumulator, lin: LinearAttention, hidden: int, times: int) -> None:
    """Kimi Delta Attention (transformers' KimiLinearDeltaAttention, vLLM's KimiDeltaAttention): q, k
    and v projections, one depthwise convolution over all three, the per-channel forget gate through a
    rank-d bottleneck (f_a, f_b) with its dt_bias and A_log, the beta projection, the output gate through
    another bottleneck (g_a, g_b), a gated norm of d and the output projection."""
    heads, head_dim = lin.value_heads, lin.value_head_dim
    width = heads * head_dim
    matrices = [
        (width, hidden), (width, hidden), (width, hidden),  # q_proj, k_proj, v_proj
        (lin.conv_dim, lin.conv_kernel),  # depthwise conv1d over q, k and v
        (head_dim, hidden), (width, head_dim),  # f_a_proj, f_b_proj
        (heads, hidden),  # b_proj
        (head_dim, hidden), (width, head_dim),  # g_a_proj, g_b_proj
        (hidden, width),  # o_proj
    ]
    vectors = width + heads + head_dim  # dt_bias, A_log, o_norm
    acc.add("linear_attention", "Linear attention (Kimi Delta Attention)", matrices, vectors, times)


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


# Kept per model: a need's weights are counted at every GPU count and for every MoE kernel (`vllm_loading`,
# 15 times for an MXFP4 model's fit thresholds), and the count is figures alone, the same in every language.
@functools.lru_cache(maxsize=256)
def count_parameters(spec: LanguageModelSpec) -> ParameterCount:
    """The parameters of a language model from its published figures: the one recount every shipped
    total is checked against. Raises MissingModelValue when a figure it needs is not published."""
    arch = spec.architecture or PLAIN
    layers = _need(spec, "layers")
    hidden = _need(spec, "hidden_size")
    vocab = _need(spec, "vocab_size")
    heads = _need(spec, "attention_heads")
    # Under MLA the heads' widths are the MLA's own: kv_heads and head_dim go unread (0 where unpublished).
    kv_heads = (spec.kv_heads or 0) if arch.mla is not None else _need(spec, "kv_heads")
    head_dim = (spec.head_dim or 0) if arch.mla is not None else _need(spec, "head_dim")
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
        # layer kinds include LINEAR only where the architecture has its linear attention
        _linear_attention(acc, cast(LinearAttention, arch.linear_attention), hidden, linear_layers)
    moe_layers = sum(1 for index in range(layers) if moe and moe.is_moe_layer(index))
    dense_layers = layers - moe_layers
    if dense_layers:
        if dense_width is None:
            raise MissingModelValue(spec.name, "intermediate_size")
        acc.add("mlp", "Dense MLP", _gated_mlp(dense_width, hidden), times=dense_layers)
    routed = 0
    active_routed = 0
    if moe is not None and moe_layers:  # MoE layers only where there is a MoE
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
            # a dense last layer is a dense layer: its width was required above
            layer_acc.add("mlp", "", _gated_mlp(cast(int, dense_width), hidden))
        per_mtp = sum(g.parameters for g in layer_acc.result()) + arch.norms_per_layer * hidden
        per_mtp += 2 * hidden * hidden + 3 * hidden
        if arch.mtp_own_embeddings:
            per_mtp += 2 * vocab * hidden
        mtp = per_mtp * arch.mtp_layers
    vision = sum(group.parameters for group in groups if group.role == "vision")
    return ParameterCount(groups=groups, active=total - vision - routed + active_routed, mtp=mtp)




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


def activation_mlp_width(spec: LanguageModelSpec, intermediate: int) -> int:
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
