"""GGUF files as llama.cpp's quantizer writes them: each tensor of the model in the ggml type the
quant type picks for it, and its bytes from ggml's block layout.

A GGUF "quant type" (Q4_K_M, IQ4_XS, Q8_0, …) names a mix, not one bit width: llama.cpp keeps the
norms and biases in F32, picks the output head's (and, where tied, the embedding's) type apart, and
gives some attention-V and FFN-down layers more bits (`use_more_bits`: the first and last eighth and
every third layer between). So the bits per weight of a file depend on the model's shape: Q4_K_M is
4.89 on Llama 3.1 8B, where a calculator using one figure per quant type says 4.5 or 4.8.

The tables below follow ggml's type traits (elements per block, bytes per block) and llama.cpp's
`llama_ftype_get_default_type` and `llama_tensor_get_type_impl` (src/llama-quant.cpp) for the model
families the catalog holds (dense and mixture-of-experts decoders without imatrix data). Pure Python:
plain values in and out.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction
from typing import cast

from .architectures import KIMI_DELTA, LINEAR, MLA, PLAIN, LinearAttention
from .errors import SizingError
from .i18n import gettext
from .specs import LanguageModelSpec

# ggml type -> (elements per block, bytes per block), from ggml's type traits (ggml.c `type_traits`):
# a K-quant super-block holds 256 values with its scales; the legacy and IQ4_NL blocks 32.
GGML_TYPES: dict[str, tuple[int, int]] = {
    "F32": (1, 4),
    "F16": (1, 2),
    "BF16": (1, 2),
    "Q4_0": (32, 18),
    "Q4_1": (32, 20),
    "Q5_0": (32, 22),
    "Q5_1": (32, 24),
    "Q8_0": (32, 34),
    "Q2_K": (256, 84),
    "Q3_K": (256, 110),
    "Q4_K": (256, 144),
    "Q5_K": (256, 176),
    "Q6_K": (256, 210),
    "IQ1_S": (256, 50),
    "IQ1_M": (256, 56),
    "IQ2_XXS": (256, 66),
    "IQ2_XS": (256, 74),
    "IQ2_S": (256, 82),
    "IQ3_XXS": (256, 98),
    "IQ3_S": (256, 110),
    "IQ4_NL": (32, 18),
    "IQ4_XS": (256, 136),
    "MXFP4": (32, 17),
}

# The quant types a GGUF file is published in (llama.cpp's LLAMA_FTYPE_MOSTLY_*), each with the ggml
# type most of its tensors take (`llama_ftype_get_default_type`).
QUANT_TYPES: dict[str, str] = {
    "F16": "F16", "BF16": "BF16", "Q8_0": "Q8_0",
    "Q4_0": "Q4_0", "Q4_1": "Q4_1", "Q5_0": "Q5_0", "Q5_1": "Q5_1",
    "Q2_K": "Q2_K", "Q2_K_S": "Q2_K",
    "Q3_K_S": "Q3_K", "Q3_K_M": "Q3_K", "Q3_K_L": "Q3_K",
    "Q4_K_S": "Q4_K", "Q4_K_M": "Q4_K", "Q5_K_S": "Q5_K", "Q5_K_M": "Q5_K", "Q6_K": "Q6_K",
    "IQ1_S": "IQ1_S", "IQ1_M": "IQ1_M", "IQ2_XXS": "IQ2_XXS", "IQ2_XS": "IQ2_XS", "IQ2_S": "IQ2_XS",
    "IQ2_M": "IQ2_S", "IQ3_XXS": "IQ3_XXS", "IQ3_XS": "IQ3_S", "IQ3_S": "IQ3_S", "IQ3_M": "IQ3_S",
    "IQ4_NL": "IQ4_NL", "IQ4_XS": "IQ4_XS", "MXFP4_MOE": "MXFP4",
}
DEFAULT_GGUF_TYPE = "Q4_K_M"  # what llama.cpp's and Ollama's model pages offer first
UNQUANTIZED = ("F16", "BF16")
LOW_IQ = ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M")  # their own attention/FFN rules
# The source checkpoint's type for what the quantizer never touches (norms, biases, router): F32.
KEPT = "F32"
# The tensors the quantizer types as attention V (`category_is_attn_v`, src/llama-quant.cpp), counted
# together for its more-bits rule (n_attention_wv): attn_v, and the fused attn_qkv of a linear-attention
# layer (Qwen3-Next's converter writes one per Gated DeltaNet layer).
ATTENTION_V_LIKE = ("attn_v", "attn_qkv")


def model_value(model: LanguageModelSpec, field: str) -> int:
    """The calculators' check of a figure the model must publish, imported when first used: the
    calculators import this module, so a module that imports it first must not start them."""
    from .calculators.checks import model_value as checked

    return checked(model, field)


@dataclass(frozen=True)
class Tensor:
    """One tensor of the file: its role (llama.cpp's name without the layer), layer, row length
    (ne[0], which the block must divide), element count, and whether the quantizer may touch it."""

    role: str
    layer: int | None
    row: int
    elements: int
    quantizable: bool = True
    # A stack of matrices (ne[2] > 1): the experts, and latent attention's per-head k_b and v_b, which
    # the MXFP4_MOE mix types as it types the experts (`llama_tensor_get_type_impl`: ne[2] > 1 → MXFP4).
    stacked: bool = False
    # The type a tensor the quantizer leaves alone keeps: F32 as the converter writes norms, biases,
    # routers and convolutions; a [hidden, 1] matrix it writes in the 16-bit type, which the quantizer
    # then reads as one-dimensional (ggml_n_dims) and copies (Qwen3-Next's shared-expert gate).
    kept: str = KEPT


@dataclass(frozen=True)
class TypedTensor:
    tensor: Tensor
    ggml_type: str

    @property
    def bytes(self) -> int:
        elements, size = GGML_TYPES[self.ggml_type]
        return self.tensor.elements // elements * size


@dataclass(frozen=True)
class GgufWeights:
    """The file's tensors, typed, and what they come to."""

    quant_type: str
    tensors: tuple[TypedTensor, ...]

    @functools.cached_property
    def bytes(self) -> int:
        return sum(typed.bytes for typed in self.tensors)

    @property
    def elements(self) -> int:
        return sum(typed.tensor.elements for typed in self.tensors)

    @property
    def bits_per_weight(self) -> Fraction:
        return Fraction(8 * self.bytes, self.elements)

    def bytes_by_type(self) -> dict[str, int]:
        """The bytes each ggml type holds, largest first (ties by name)."""
        totals: dict[str, int] = {}
        for typed in self.tensors:
            totals[typed.ggml_type] = totals.get(typed.ggml_type, 0) + typed.bytes
        return dict(sorted(totals.items(), key=lambda item: (-item[1], item[0])))

    def layer_bytes(self, layer: int) -> int:
        """One decoder layer's tensors (what `-ngl` moves to the GPU per layer)."""
        return self._bytes_by_layer.get(layer, 0)

    def role_bytes(self, role: str) -> int:
        """The tensors of one role together (the output head's, the token embeddings')."""
        return self._bytes_by_role.get(role, 0)

    @functools.cached_property
    def _bytes_by_role(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for typed in self.tensors:
            totals[typed.tensor.role] = totals.get(typed.tensor.role, 0) + typed.bytes
        return totals

    @functools.cached_property
    def _bytes_by_layer(self) -> dict[int | None, int]:
        """Each layer's bytes, added up once per file: a need reads every layer's, and a capacity search
        asks for hundreds of needs of one file (each reading of the tensors was a pass over all of them)."""
        totals: dict[int | None, int] = {}
        for typed in self.tensors:
            totals[typed.tensor.layer] = totals.get(typed.tensor.layer, 0) + typed.bytes
        return totals


def check_quant_type(quant_type: object) -> str:
    if not isinstance(quant_type, str) or quant_type.upper() not in QUANT_TYPES:
        raise SizingError("quantization", gettext("Choose a GGUF quant type: %(types)s.") % {
            "types": ", ".join(QUANT_TYPES)})
    return quant_type.upper()


def model_tensors(model: LanguageModelSpec) -> list[Tensor]:
    """The tensors llama.cpp's converter writes for a decoder: embeddings, output head (unless tied),
    norms and, per layer, attention (or, where the pattern has linear attention, a Gated DeltaNet or a Kimi
    Delta Attention layer) and the MLP (or the experts, stacked per layer, with their router and the shared
    expert). A router's per-expert score bias (DeepSeek's and Kimi-Linear's e_score_correction_bias, which
    the converter writes as ffn_exp_probs_b, 256 F32 values a layer) is a buffer the catalog does not count
    and is left out with it: 26,624 bytes in Kimi-Linear's file."""
    arch = model.architecture or PLAIN
    linear = arch.linear_attention
    hidden = model_value(model, "hidden_size")
    vocab = model_value(model, "vocab_size")
    layers = model_value(model, "layers")
    tensors = [Tensor("token_embd", None, hidden, vocab * hidden)]
    if not model.tied_embeddings:
        tensors.append(Tensor("output", None, hidden, vocab * hidden))
    tensors.append(Tensor("output_norm", None, hidden, hidden, quantizable=False))
    moe = arch.moe
    attention = _latent_attention if arch.mla is not None else _attention
    for layer in range(layers):
        tensors.append(Tensor("attn_norm", layer, hidden, hidden, quantizable=False))
        if linear is not None and arch.kind_of_layer(layer) == LINEAR:
            linear_layer = _kimi_delta_attention if linear.kind == KIMI_DELTA else _gated_deltanet
            tensors += linear_layer(linear, layer, hidden)
        else:
            tensors += attention(model, layer, hidden)
        tensors.append(Tensor("ffn_norm", layer, hidden, hidden, quantizable=False))
        if moe is not None and moe.is_moe_layer(layer):
            width = moe.expert_intermediate
            tensors += [
                Tensor("ffn_gate_inp", layer, hidden, hidden * moe.experts, quantizable=False),
                Tensor("ffn_gate_exps", layer, hidden, moe.experts * hidden * width, stacked=True),
                Tensor("ffn_up_exps", layer, hidden, moe.experts * hidden * width, stacked=True),
                Tensor("ffn_down_exps", layer, width, moe.experts * width * hidden, stacked=True),
            ]
            if moe.shared_intermediate:
                shared = moe.shared_intermediate
                tensors += [
                    Tensor("ffn_gate_shexp", layer, hidden, hidden * shared),
                    Tensor("ffn_up_shexp", layer, hidden, hidden * shared),
                    Tensor("ffn_down_shexp", layer, shared, shared * hidden),
                ]
                if moe.shared_expert_gate:
                    tensors.append(Tensor("ffn_gate_inp_shexp", layer, hidden, hidden, quantizable=False,
                                          kept="F16"))
        else:
            width = (moe.dense_intermediate if moe is not None and moe.dense_intermediate
                     else model_value(model, "intermediate_size"))
            tensors += [
                Tensor("ffn_gate", layer, hidden, hidden * width),
                Tensor("ffn_up", layer, hidden, hidden * width),
                Tensor("ffn_down", layer, width, width * hidden),
            ]
    return tensors


def _gated_deltanet(linear: LinearAttention, layer: int, hidden: int) -> list[Tensor]:
    """One Gated DeltaNet layer as llama.cpp's converter writes it for the qwen3next architecture
    (conversion/qwen.py, `Qwen3NextModel.modify_tensors`; src/models/qwen3next.cpp's tensors): in_proj_qkvz
    split into attn_qkv (queries, keys and values, what the short convolution reads) and attn_gate (z);
    in_proj_ba as ssm_ba (β and α per value head); the depthwise convolution ssm_conv1d, squeezed to
    kernel × channels and kept in F32; ssm_dt (dt_bias) and ssm_a (−exp(A_log)), one value per value head;
    the gated norm ssm_norm of one value head; ssm_out. Files converted before the split (late 2025) carry
    one ssm_in of as many values instead, quantized as a plain matrix (the split file is the one sized)."""
    value_width = linear.value_heads * linear.value_head_dim
    channels = linear.conv_dim
    return [
        Tensor("attn_qkv", layer, hidden, hidden * channels),
        Tensor("attn_gate", layer, hidden, hidden * value_width),
        Tensor("ssm_conv1d", layer, linear.conv_kernel, linear.conv_kernel * channels, quantizable=False),
        Tensor("ssm_dt", layer, linear.value_heads, linear.value_heads, quantizable=False),
        Tensor("ssm_a", layer, linear.value_heads, linear.value_heads, quantizable=False),
        Tensor("ssm_ba", layer, hidden, hidden * 2 * linear.value_heads),
        Tensor("ssm_norm", layer, linear.value_head_dim, linear.value_head_dim, quantizable=False),
        Tensor("ssm_out", layer, value_width, value_width * hidden),
    ]


def _kimi_delta_attention(linear: LinearAttention, layer: int, hidden: int) -> list[Tensor]:
    """One Kimi Delta Attention layer as llama.cpp's converter writes it for the kimi-linear architecture
    (conversion/kimi_linear.py, `KimiLinearModel.modify_tensors`; src/models/kimi-linear.cpp's tensors):
    attn_q, attn_k and attn_v (attn_v typed as attention V); the three depthwise convolutions ssm_conv1d_q,
    _k and _v, kernel × channels, written and kept in F32; the forget gate's bottleneck ssm_f_a (hidden →
    head_dim) and ssm_f_b (head_dim → heads × head_dim, rows of 128: a K-quant falls back) with its bias
    ssm_dt (one value per channel) and ssm_a (−exp(A_log), one per head); ssm_beta (one per head); the output
    gate's bottleneck ssm_g_a and ssm_g_b; the gated norm ssm_norm of one head; attn_output."""
    heads, head_dim = linear.value_heads, linear.value_head_dim
    width = heads * head_dim
    kernel = linear.conv_kernel
    return [
        Tensor("attn_q", layer, hidden, hidden * width),
        Tensor("attn_k", layer, hidden, hidden * width),
        Tensor("attn_v", layer, hidden, hidden * width),
        *(Tensor(f"ssm_conv1d_{part}", layer, kernel, kernel * width, quantizable=False) for part in "qkv"),
        Tensor("ssm_f_a", layer, hidden, hidden * head_dim),
        Tensor("ssm_f_b", layer, head_dim, head_dim * width),
        Tensor("ssm_dt", layer, width, width, quantizable=False),
        Tensor("ssm_a", layer, 1, heads, quantizable=False),
        Tensor("ssm_beta", layer, hidden, hidden * heads),
        Tensor("ssm_g_a", layer, hidden, hidden * head_dim),
        Tensor("ssm_g_b", layer, head_dim, head_dim * width),
        Tensor("ssm_norm", layer, head_dim, head_dim, quantizable=False),
        Tensor("attn_output", layer, width, width * hidden),
    ]


def _attention(model: LanguageModelSpec, layer: int, hidden: int) -> list[Tensor]:
    """One layer's attention of query, key and value heads: the four projections, and the biases and
    per-head norms the architecture has."""
    arch = model.architecture or PLAIN
    heads = model_value(model, "attention_heads")
    kv_heads = model_value(model, "kv_heads")
    head_dim = model_value(model, "head_dim")
    q_width, kv_width = heads * head_dim, kv_heads * head_dim
    q_out = 2 * q_width if arch.attention_output_gate else q_width
    tensors = [
        Tensor("attn_q", layer, hidden, hidden * q_out),
        Tensor("attn_k", layer, hidden, hidden * kv_width),
        Tensor("attn_v", layer, hidden, hidden * kv_width),
        Tensor("attn_output", layer, q_width, q_width * hidden),
    ]
    if arch.qkv_bias:
        tensors.append(Tensor("attn_qkv_bias", layer, 1, q_width + 2 * kv_width, quantizable=False))
    if arch.qk_norm:
        tensors.append(Tensor("attn_qk_norm", layer, head_dim, 2 * head_dim, quantizable=False))
    return tensors


def _latent_attention(model: LanguageModelSpec, layer: int, hidden: int) -> list[Tensor]:
    """One layer's latent attention as llama.cpp's converter writes it for the deepseek2 architecture
    (convert_hf_to_gguf.py, `DeepseekV2Model.modify_tensors`; src/llama-model.cpp, LLM_ARCH_DEEPSEEK2's
    tensors): the query through its low-rank pair (attn_q_a, its norm, attn_q_b) or, without q_lora_rank
    (DeepSeek-V2-Lite), one attn_q; attn_kv_a_mqa to the latent and the rotary key, the latent's norm;
    kv_b_proj split per head into attn_k_b, transposed (rows of qk_nope_head_dim: a K-quant's 256-value
    block does not divide 128, so the quantizer falls back, `tensor_type_fallback`), and attn_v_b (rows of
    kv_lora_rank), which the absorbed graph multiplies by; the output projection. Files converted before
    the split (early 2025) carry one attn_kv_b instead, as many values: llama.cpp serves those without
    the absorbed attention, and they are not what is sized."""
    mla = cast(MLA, (model.architecture or PLAIN).mla)  # `model_tensors` asks this only of a latent model
    heads = model_value(model, "attention_heads")
    qk_width = heads * (mla.qk_nope_head_dim + mla.qk_rope_head_dim)
    values = heads * mla.v_head_dim
    if mla.q_lora_rank:
        query = [
            Tensor("attn_q_a", layer, hidden, hidden * mla.q_lora_rank),
            Tensor("attn_q_a_norm", layer, mla.q_lora_rank, mla.q_lora_rank, quantizable=False),
            Tensor("attn_q_b", layer, mla.q_lora_rank, mla.q_lora_rank * qk_width),
        ]
    else:
        query = [Tensor("attn_q", layer, hidden, hidden * qk_width)]
    return [
        *query,
        Tensor("attn_kv_a_mqa", layer, hidden, hidden * mla.latent_width),
        Tensor("attn_kv_a_norm", layer, mla.kv_lora_rank, mla.kv_lora_rank, quantizable=False),
        Tensor("attn_k_b", layer, mla.qk_nope_head_dim, heads * mla.qk_nope_head_dim * mla.kv_lora_rank,
               stacked=True),
        Tensor("attn_v_b", layer, mla.kv_lora_rank, heads * mla.kv_lora_rank * mla.v_head_dim, stacked=True),
        Tensor("attn_output", layer, values, values * hidden),
    ]


def _use_more_bits(layer: int, layers: int) -> bool:
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


# A 256-block type whose block does not divide a row's length falls back to a 32-block one.
FALLBACK = {"IQ1_S": "IQ4_NL", "IQ1_M": "IQ4_NL", "IQ2_XXS": "IQ4_NL", "IQ2_XS": "IQ4_NL", "IQ2_S": "IQ4_NL",
            "IQ3_XXS": "IQ4_NL", "IQ3_S": "IQ4_NL", "IQ4_XS": "IQ4_NL", "Q2_K": "Q4_0", "Q3_K": "Q4_0",
            "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}


def _fallback(ggml_type: str, row: int) -> str:
    """A type whose block does not divide the row falls back as the quantizer does."""
    if row % GGML_TYPES[ggml_type][0] == 0:
        return ggml_type
    wider = FALLBACK.get(ggml_type, "F16")
    return wider if row % GGML_TYPES[wider][0] == 0 else "F16"


def _query_groups(model: LanguageModelSpec) -> int:
    """Query heads per key-value head (llama.cpp's n_gqa(), of layer 0), read only for the V-like tensors.
    Kimi-Linear's converter writes a KV head count per layer, 0 for a Kimi Delta Attention layer (1 for a
    latent one), and n_gqa() answers 0 where it is 0: its first layer is one."""
    arch = model.architecture or PLAIN
    if arch.linear_attention is not None and arch.linear_attention.kind == KIMI_DELTA:
        return 0 if arch.kind_of_layer(0) == LINEAR else model_value(model, "attention_heads")
    return model_value(model, "attention_heads") // model_value(model, "kv_heads")


def _pick(model: LanguageModelSpec, quant_type: str, tensor: Tensor, attention_v_index: int,
          attention_v_count: int) -> str:
    """The ggml type llama.cpp's quantizer gives `tensor` in a `quant_type` file (no imatrix):
    `attention_v_index` is the tensor's place among the file's `attention_v_count` V-like tensors
    (ATTENTION_V_LIKE, in layer order), which the more-bits rule of attention V reads."""
    base = QUANT_TYPES[quant_type]
    arch = model.architecture or PLAIN
    layers = model_value(model, "layers")
    experts = arch.moe.experts if arch.moe is not None else 0
    role = tensor.role
    if role == "output" or (role == "token_embd" and model.tied_embeddings):
        if quant_type == "MXFP4_MOE" or tensor.row % GGML_TYPES[base][0]:
            return "Q8_0"
        if quant_type in ("IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M"):
            return "Q5_K"
        return base if base == "Q8_0" else "Q6_K"
    if quant_type == "MXFP4_MOE":
        return "MXFP4" if tensor.stacked else "Q8_0"
    if role == "token_embd":
        if quant_type in ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"):
            return "Q2_K"
        if quant_type in ("IQ2_S", "IQ2_M", "IQ3_XXS"):
            return "IQ3_S"
        return base
    layer = tensor.layer or 0
    down = role.startswith("ffn_down")
    v_like = role in ATTENTION_V_LIKE
    if quant_type in LOW_IQ:
        if v_like:
            if _query_groups(model) >= 4 or experts >= 4:
                return "Q4_K"
            return "IQ3_S" if quant_type in ("IQ2_S", "IQ2_M") else "Q2_K"
        if experts == 8 and role == "attn_k":
            return "Q4_K"
        if down:
            if layer < layers // 8:
                return "IQ3_S" if quant_type in ("IQ2_S", "IQ2_M") else "Q2_K"
            return base
        if role == "attn_output":
            if experts == 8:
                return "Q5_K"
            if quant_type in ("IQ1_S", "IQ1_M"):
                return "IQ2_XXS"
            if quant_type in ("IQ2_S", "IQ2_M"):
                return "IQ3_S"
        return base
    if v_like:
        gqa = _query_groups(model)
        picked = base
        if quant_type == "Q2_K":
            picked = "Q4_K" if gqa >= 4 else "Q3_K"
        elif quant_type == "Q2_K_S" and gqa >= 4:
            picked = "Q4_K"
        elif quant_type == "IQ3_XXS":
            picked = "Q4_K" if gqa >= 4 else "IQ3_S"
        elif quant_type in ("IQ3_XS", "IQ3_S") and gqa >= 4:
            picked = "Q4_K"
        elif quant_type == "IQ3_M":
            picked = "Q4_K"
        elif quant_type == "Q3_K_M":
            picked = "Q5_K" if attention_v_index < 2 else "Q4_K"
        elif quant_type == "Q3_K_L":
            picked = "Q5_K"
        elif quant_type in ("IQ4_NL", "IQ4_XS") and gqa >= 4:
            picked = "Q5_K"
        elif quant_type in ("Q4_K_M", "Q5_K_M") and _use_more_bits(attention_v_index, attention_v_count):
            picked = "Q6_K"
        elif quant_type == "Q4_K_S" and attention_v_index < 4:
            picked = "Q5_K"
        if layers == 80 and picked in ("Q3_K", "Q4_K"):  # llama.cpp's 70B class: 8 heads share attn_v
            picked = "Q5_K"
        return "Q8_0" if experts == 8 else picked
    if role == "attn_k":
        if experts == 8:
            return "Q8_0"
        return {"IQ3_XS": "IQ3_XXS", "IQ3_XXS": "IQ2_S"}.get(quant_type, base)
    if role == "attn_q":
        return {"IQ3_XS": "IQ3_XXS", "IQ3_XXS": "IQ2_S"}.get(quant_type, base)
    if down:
        if quant_type == "Q2_K":
            return "Q3_K"
        if quant_type == "Q2_K_S":
            return "Q4_K" if layer < layers // 8 else base
        if quant_type == "IQ3_XXS":
            return "Q4_K" if layer < layers // 8 else "Q3_K"
        if quant_type == "Q3_K_M":
            return "Q5_K" if layer < layers // 16 else "Q4_K"
        more = experts == 8 and _use_more_bits(layer, layers)
        if quant_type == "IQ3_M" and (layer < layers // 8 or more):
            return "Q4_K"
        if quant_type == "Q3_K_L":
            return "Q5_K"
        if quant_type == "Q4_K_M":
            return "Q6_K" if _use_more_bits(layer, layers) else base
        if quant_type in ("IQ4_NL", "IQ4_XS") and layer < layers // 8:
            return "Q5_K"
        if quant_type == "Q5_K_M" and _use_more_bits(layer, layers):
            return "Q6_K"
        if quant_type == "Q4_K_S" and layer < layers // 8:
            return "Q5_K"
        return base
    if role == "attn_output":
        if experts == 8:
            if quant_type in ("Q2_K", "IQ3_XS", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M",
                              "IQ3_S", "IQ3_M", "IQ4_XS"):
                return "Q5_K"
            return base
        return {"Q2_K": "Q3_K", "IQ3_XXS": "IQ3_S", "Q3_K_M": "Q4_K", "Q3_K_L": "Q5_K",
                "IQ3_M": "Q4_K"}.get(quant_type, base)
    if role in ("ffn_gate", "ffn_up", "ffn_gate_exps", "ffn_up_exps", "ffn_gate_shexp", "ffn_up_shexp"):
        if quant_type == "IQ3_XS" and layers // 8 <= layer < 7 * layers // 8:
            return "IQ3_XXS"
        return base
    return base


def gguf_weights(model: LanguageModelSpec, quant_type: str) -> GgufWeights:
    """Every tensor of `model`'s GGUF file in `quant_type`, typed as llama.cpp's quantizer types it."""
    quant_type = check_quant_type(quant_type)
    typed = []
    tensors = model_tensors(model)
    attention_v_count = sum(1 for tensor in tensors if tensor.role in ATTENTION_V_LIKE)
    attention_v_index = 0
    for tensor in tensors:
        if not tensor.quantizable:
            ggml_type = tensor.kept
        elif quant_type in UNQUANTIZED:
            ggml_type = QUANT_TYPES[quant_type]
        else:
            ggml_type = _fallback(_pick(model, quant_type, tensor, attention_v_index, attention_v_count),
                                  tensor.row)
            if tensor.role in ATTENTION_V_LIKE:
                attention_v_index += 1
        typed.append(TypedTensor(tensor, ggml_type))
    return GgufWeights(quant_type, tuple(typed))
