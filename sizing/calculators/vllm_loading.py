"""MXFP4 experts as vLLM loads them on each GPU architecture (issue #43).

A checkpoint published with MXFP4 experts (gpt-oss) is not held as stored: vLLM's `Mxfp4MoEMethod`
(vllm/model_executor/layers/quantization/mxfp4.py, `create_weights`) allocates each expert's matrices at
sizes its MoE kernel can run, and the checkpoint is copied into them. The padding depends on the kernel,
and the kernel on the GPU (`get_mxfp4_backend`):

- Marlin, weight-only MXFP4 (`Mxfp4Backend.MARLIN`): the kernel wants n % 256 == 0 and k % 128 == 0 in
  both projections, so the expert width per GPU is rounded up to a multiple of 128 and the hidden size to
  a multiple of 256. vLLM takes it on every NVIDIA GPU without native FP4 (Ampere; Hopper where the
  triton_kernels package is not installed, or with VLLM_MXFP4_USE_MARLIN=1), and
  `prepare_moe_fp4_layer_for_marlin` (utils/marlin_utils_fp4.py) repacks the 4-bit values in place
  (gptq_marlin_repack), keeps one E8M0 byte per 32 values (`mxfp4_marlin_process_scales`) and the 16-bit
  biases: the padded shapes are what stays on the GPU.
- FlashInfer on data-center Blackwell (compute capability 10.x, `SM100_FI_MXFP4_BF16`): both rounded up
  to multiples of 256.
- AMD (ROCm, Triton): both rounded to `get_padding_alignment()`, 128 below gfx950 (MI300X).

Each expert then holds, per GPU of a tensor-parallel group of size tp, with I = ⌈expert width ÷ tp⌉
rounded up and H the hidden size rounded up:

    gate-up (w13): 2I × H values × ½ byte + 2I × H ÷ 32 scales × 1 byte + 2I biases × 2 bytes
    down (w2):     H × I values × ½ byte + H × I ÷ 32 scales × 1 byte + H biases × 2 bytes

Every other module (attention, routers, norms, embeddings, output head) is loaded unquantized in 16 bits
(`Mxfp4Config.get_quant_method`: UnquantizedLinearMethod), as stored, and divides over the group.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from ..architectures import Architecture, ParameterCount, count_parameters
from ..architectures.shapes import MoE, NativeWeights
from ..engine_support import AMD, GpuArchitecture
from ..i18n import gettext, gettext_noop
from ..specs import LanguageModelSpec
from ..units import fmt_int
from ..weights import NATIVE_FORMATS, native_stored_weights
from .checks import model_value

MXFP4_BLOCK = 32  # values sharing one E8M0 scale
EXPERTS_ROLE = "experts"


@dataclass(frozen=True)
class MoeKernel:
    """The MoE kernel vLLM runs MXFP4 experts with on a GPU, and the multiples it pads them to."""

    key: str
    name: str  # as vLLM's log names it; translated where shown
    intermediate_multiple: int  # the expert width per GPU rounded up to this
    hidden_multiple: int  # the hidden size rounded up to this


MARLIN = MoeKernel("marlin", gettext_noop("Marlin (weight-only MXFP4)"), 128, 256)
FLASHINFER_SM100 = MoeKernel("flashinfer-sm100", gettext_noop("FlashInfer MXFP4 (compute capability 10)"),
                             256, 256)
ROCM_TRITON = MoeKernel("rocm-triton", gettext_noop("Triton on ROCm"), 128, 128)
# Every kernel, in the order the wizard numbers the kinds of GPU by (`VllmBreakdown.gpu_kinds`): the
# first is the one assumed where no GPU is named.
MOE_KERNELS = (MARLIN, FLASHINFER_SM100, ROCM_TRITON)
# Compute capabilities that run FlashInfer's MXFP4 MoE (data-center Blackwell): from, and below.
FLASHINFER_FROM, FLASHINFER_BELOW = (10, 0), (11, 0)


def mxfp4_kernel(gpu: GpuArchitecture | None) -> MoeKernel:
    """The kernel vLLM picks for MXFP4 experts on `gpu`; Marlin where no GPU is named (the path of Hopper
    and Ampere, where most of these models are served)."""
    if gpu is None:
        return MARLIN
    if gpu.maker == AMD:
        return ROCM_TRITON
    if gpu.at_least(FLASHINFER_FROM) and not gpu.at_least(FLASHINFER_BELOW):
        return FLASHINFER_SM100
    return MARLIN


def round_up(value: int, multiple: int) -> int:
    return math.ceil(value / multiple) * multiple


@dataclass(frozen=True)
class Mxfp4Loaded:
    """An MXFP4 checkpoint as vLLM holds it on each GPU of a tensor-parallel group."""

    kernel: MoeKernel
    tensor_parallel: int
    moe_layers: int
    experts: int
    width: int  # the expert width per GPU before padding
    padded_width: int
    hidden: int
    padded_hidden: int
    bias: bool
    expert_bytes_per_gpu: int  # every expert of every MoE layer on one GPU
    other_parameters: int  # loaded in 16 bits, divided over the group
    stored_bytes: int  # the checkpoint as published, whole

    @property
    def other_bytes(self) -> int:
        return self.other_parameters * 2

    @property
    def group_bytes(self) -> int:
        """The whole tensor-parallel group's weights: the experts on every GPU and the rest once."""
        return self.expert_bytes_per_gpu * self.tensor_parallel + self.other_bytes

    def formula(self) -> str:
        values = {
            "kernel": gettext(self.kernel.name), "layers": fmt_int(self.moe_layers),
            "experts": fmt_int(self.experts), "width": fmt_int(self.padded_width),
            "hidden": fmt_int(self.padded_hidden),
            "raw_width": fmt_int(self.width), "raw_hidden": fmt_int(self.hidden),
            "width_multiple": self.kernel.intermediate_multiple,
            "hidden_multiple": self.kernel.hidden_multiple,
            "experts_bytes": fmt_int(self.expert_bytes_per_gpu), "other": fmt_int(self.other_parameters),
        }
        text = gettext(
            "MXFP4 experts through %(kernel)s: %(layers)s MoE layers × %(experts)s experts × 3 × %(width)s "
            "expert width × %(hidden)s hidden values × (½ byte + 1 byte per 32 for the E8M0 scales)"
        ) % values
        if self.bias:
            text += gettext(" + biases (2 × %(width)s + %(hidden)s) × 2 bytes") % values
        text += gettext(
            " = %(experts_bytes)s bytes per GPU, the expert width per GPU (%(raw_width)s) padded to a "
            "multiple of %(width_multiple)s and the hidden size (%(raw_hidden)s) to a multiple of "
            "%(hidden_multiple)s; + %(other)s other parameters × 2 bytes (attention, routers, norms, "
            "embeddings and output head in 16 bits)"
        ) % values
        if self.tensor_parallel > 1:
            text += gettext(" ÷ %(tp)s tensor-parallel GPUs") % {"tp": self.tensor_parallel}
        return text


def _moe_layers(moe: MoE, layers: int) -> int:
    return sum(1 for index in range(layers) if moe.is_moe_layer(index))


def mxfp4_loaded(model: LanguageModelSpec, tensor_parallel: int, kernel: MoeKernel) -> Mxfp4Loaded:
    """`model` (published with MXFP4 experts) as vLLM loads it on each GPU of `tensor_parallel` through
    `kernel` (`mxfp4_kernel` of the GPU)."""
    arch = cast(Architecture, model.architecture)  # asked only of a model with native MXFP4 weights
    moe = cast(MoE, arch.moe)
    native = cast(NativeWeights, arch.native_weights)
    count = count_parameters(model)
    fmt = NATIVE_FORMATS["mxfp4"]
    stored = native_stored_weights(count, native, fmt)
    stored_bytes = stored.quantized_bytes + stored.scale_bytes + stored.other_bytes
    experts_group = ParameterCount(groups=tuple(g for g in count.groups if g.role == EXPERTS_ROLE), active=0)
    experts_parameters = experts_group.total
    hidden = model_value(model, "hidden_size")
    width = math.ceil(moe.expert_intermediate / tensor_parallel)
    padded_width = round_up(width, kernel.intermediate_multiple)
    padded_hidden = round_up(hidden, kernel.hidden_multiple)
    values = 3 * padded_width * padded_hidden  # gate and up (2I × H) and down (H × I)
    per_expert = values // 2 + values // MXFP4_BLOCK
    if moe.expert_bias:
        per_expert += (2 * padded_width + padded_hidden) * 2
    moe_layers = _moe_layers(moe, model_value(model, "layers"))
    return Mxfp4Loaded(
        kernel=kernel, tensor_parallel=tensor_parallel, moe_layers=moe_layers, experts=moe.experts,
        width=width, padded_width=padded_width, hidden=hidden, padded_hidden=padded_hidden,
        bias=moe.expert_bias, expert_bytes_per_gpu=per_expert * moe.experts * moe_layers,
        other_parameters=count.total - experts_parameters, stored_bytes=stored_bytes,
    )


# --- the rotary embeddings' cos/sin caches --------------------------------------------------------------
#
# "Model loading took … GiB" is the GPU memory PyTorch holds after loading less what it held before, so it
# counts every buffer the model builds besides its weights. Each rotary embedding (vLLM's `get_rope`,
# vllm/model_executor/layers/rotary_embedding) registers a `cos_sin_cache` buffer of one row per position
# it can rotate, `rotary_dim` values wide (cos and sin of rotary_dim ÷ 2 frequencies), cast to the model's
# dtype (`RotaryEmbedding.__init__`: cache.to(dtype)); identical embeddings are built once (`_ROPE_DICT`).
# The rows: max_position_embeddings for the plain, llama3 and dynamic kinds; max_position_embeddings ×
# factor for `linear` scaling (`LinearScalingRotaryEmbedding`); original_max_position_embeddings × factor
# for YaRN. The cache is neither divided over tensor-parallel GPUs nor quantized: every GPU holds it in
# 16 bits.
ROTARY_CACHE_BYTES = 2  # bf16/fp16, the model's dtype whatever the weights' quantization


@dataclass(frozen=True)
class RotaryCaches:
    """The cos/sin caches vLLM builds for a model: the positions each covers, and their width."""

    positions: tuple[int, ...]
    width: int  # rotary_dim
    value_bytes: int = ROTARY_CACHE_BYTES

    @property
    def bytes(self) -> int:
        return sum(self.positions) * self.width * self.value_bytes

    def formula(self) -> str:
        if not self.positions:
            return gettext("(no rotary cos/sin cache: the model's attention has no rotary positions)")
        return gettext(
            "+ rotary cos/sin caches: %(positions)s positions × %(width)s × %(bytes)s bytes, on every GPU"
        ) % {"positions": " + ".join(fmt_int(p) for p in self.positions), "width": fmt_int(self.width),
             "bytes": self.value_bytes}


def rotary_caches(
    model: LanguageModelSpec, yarn_on: bool = False, value_bytes: int = ROTARY_CACHE_BYTES
) -> RotaryCaches:
    """The cos/sin caches of `model` under vLLM (none where its attention rotates nothing): one of its
    maximum positions (× the linear factor where its config scales RoPE linearly, or the YaRN context where
    the server turns YaRN on), and one more of its maximum positions where sliding layers rotate with
    their own base (Gemma 3's rope_local_base_freq). The width is MLA's rotary part of the head where
    keys are latent, else the head's rotary part. `value_bytes`: 2, the model's dtype, under vLLM (SGLang
    keeps them in float32 on CUDA)."""
    arch = model.architecture
    if arch is not None and arch.no_rope:  # NoPE attention (Kimi-Linear): vLLM builds no rotary embedding
        return RotaryCaches(positions=(), width=0)
    positions = model_value(model, "max_context")
    if arch is not None and yarn_on and arch.yarn is not None:
        positions = arch.yarn.context
    global_positions = positions * (arch.rope_linear_factor if arch is not None else 1)
    caches = [global_positions]
    if arch is not None and arch.local_rope:
        caches.append(positions)
    if arch is not None and arch.mla is not None:
        width = arch.mla.qk_rope_head_dim
    elif arch is not None and arch.rotary_dim is not None:
        width = arch.rotary_dim
    else:
        width = model_value(model, "head_dim")
    return RotaryCaches(positions=tuple(caches), width=width, value_bytes=value_bytes)
