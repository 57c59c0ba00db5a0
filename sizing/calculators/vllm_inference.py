"""Inference under vLLM (SPEC §10): the breakdown the wizard shows, vLLM's budget on one GPU item by item
(`sizing.calculators.vllm`), and what a machine holds under it (`sizing.capacity`)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import cast

from .. import nouns
from ..breakdown import Breakdown, Item
from ..capacity import Capacity
from ..engine_support import GpuArchitecture
from ..i18n import gettext
from ..kinds import KindSpace
from ..limits import MAX_GPUS_PER_MACHINE
from ..specs import LanguageModelSpec
from ..units import GIB, fmt_gib, fmt_int, general_number
from ..weights import native_format_of
from .checks import check_inference_inputs
from .inference_words import yarn_words
from .vllm import (
    BLOCK_SIZE,
    DEFAULT_UTILIZATION,
    DRIVER_RESERVED_BYTES,
    NCCL_BYTES,
    VllmBudget,
    VllmSettings,
    budget_under,
    release_words,
    vllm_budget,
)
from .vllm_interconnect import DEFAULT_INTERCONNECT, INTERCONNECTS, PCIE_P2P, SplitCost, interconnect_label
from .vllm_loading import FLASHINFER_SM100, MARLIN, MOE_KERNELS, ROCM_TRITON, MoeKernel, mxfp4_kernel
from .vllm_versions import DEFAULT_RELEASE, SKIP_TOWER_FLAG, VllmRelease

# The machine the wizard sizes for is not known yet: the settings' GPU memory only bounds the check.
_ANY_GPU = 1024 * GIB



@dataclass(frozen=True)
class VllmBreakdown(Breakdown):
    """Inference under vLLM: the need per GPU is the budget at a tensor-parallel size of n (weights and
    KV heads divided, NCCL buffers added) over gpu_memory_utilization, so a machine fits when
    need ≤ utilization × its GPU memory, as the engine's rule has it."""

    spec: LanguageModelSpec | None = None
    utilization: Fraction = DEFAULT_UTILIZATION
    kv_bits: int = 16
    context: int = 0
    requests: int = 0
    release: VllmRelease = DEFAULT_RELEASE  # the vLLM release asked and its switches
    # The MoE kernel MXFP4 experts are sized through (`gpu_kinds`); None: Marlin, the path of Hopper and
    # Ampere, where no GPU is named.
    moe_kernel: MoeKernel | None = None
    # What the GPUs of a split are connected by where a kind of GPU is sized (`gpu_kinds`: the user said
    # none, and each machine is fitted at its GPU type's); None: the release's (as asked, else NVSwitch).
    interconnect: str | None = None

    def settings(self, gpus: int) -> VllmSettings:
        """The engine's settings the need is sized under at a tensor-parallel size of `gpus`."""
        settings = self.release.settings()
        if self.interconnect is not None:
            settings["interconnect"] = self.interconnect
        return VllmSettings(
            **settings,  # type: ignore[arg-type]
            gpu_memory_bytes=_ANY_GPU, tensor_parallel=gpus, gpu_memory_utilization=self.utilization,
            max_model_len=self.context, max_num_seqs=self.requests, moe_kernel=self.moe_kernel,
        )

    def budget(self, gpus: int) -> VllmBudget:
        # estimate_vllm sets the model and the precision (they default only as the dataclass requires)
        spec, precision = cast(LanguageModelSpec, self.spec), cast(int, self.precision)
        return vllm_budget(spec, precision, self.kv_bits, self.settings(gpus))

    @property
    def loads_by_kernel(self) -> bool:
        """Whether the weights depend on the GPU: MXFP4 experts as published, padded for the MoE kernel
        each GPU runs (`sizing.calculators.vllm_loading`)."""
        native = native_format_of(cast(LanguageModelSpec, self.spec))
        return native is not None and native.key == "mxfp4" and self.precision == native.bits

    @property
    def fitted_by_fabric(self) -> bool:
        """Whether each machine is fitted at what its own GPUs are connected by: no interconnect was asked
        and the work may be split over GPUs of one machine (the split's buffers depend on it,
        `vllm_interconnect.SplitCost`)."""
        return self.release.interconnect is None and any(
            self.can_split_over(gpus) for gpus in range(2, MAX_GPUS_PER_MACHINE + 1))

    def kind_space(self) -> KindSpace:
        """A kind per MoE kernel where MXFP4 experts load by it, and per interconnect where each machine is
        fitted at its own (`fitted_by_fabric`)."""
        return KindSpace(len(MOE_KERNELS) if self.loads_by_kernel else 1,
                         len(INTERCONNECTS) if self.fitted_by_fabric else 1)

    def gpu_kinds(self) -> tuple[Breakdown, ...]:
        """One need per kind of `kind_space` (MOE_KERNELS' order, then INTERCONNECTS'); this need, sized
        through Marlin and with NVSwitch, is the first."""
        space = self.kind_space()
        kinds: list[Breakdown] = [self]
        for kind in range(1, space.size):
            kernel, fabric = space.places(kind)
            kinds.append(replace(self, moe_kernel=MOE_KERNELS[kernel] if kernel else self.moe_kernel,
                                 interconnect=INTERCONNECTS[fabric] if fabric else self.interconnect))
        return tuple(kinds)

    def gpu_kind(self, gpu: GpuArchitecture | None, interconnect: str) -> int:
        kernel = MOE_KERNELS.index(mxfp4_kernel(gpu)) if self.loads_by_kernel else 0
        return self.kind_space().index(kernel, INTERCONNECTS.index(interconnect))

    def fit_words(self, gpus: int) -> str | None:
        words = []
        if self.loads_by_kernel:
            words.append(gettext("MXFP4 experts through %(kernel)s: %(weights)s of weights per GPU") % {
                "kernel": gettext((self.moe_kernel or MARLIN).name),
                "weights": fmt_gib(self.budget(gpus).weights.bytes)})
        if gpus > 1 and self.fitted_by_fabric:
            interconnect = self.interconnect or DEFAULT_INTERCONNECT
            words.append(gettext(
                "GPUs connected by %(interconnect)s, as on its GPU type (interconnect= to say otherwise): "
                "the split adds %(bytes)s per GPU of NCCL and all-reduce buffers") % {
                "interconnect": interconnect_label(interconnect),
                "bytes": fmt_gib(SplitCost(interconnect, gpus).bytes)})
        return "; ".join(words) or None

    def need_in_budget(self, gpus: int) -> int:
        return self.held_inside(self.budget(gpus))

    def held_inside(self, budget: VllmBudget) -> int:
        """What `budget` (this need's at some GPU count) holds inside gpu_memory_utilization for the asked
        requests."""
        return budget.inside_bytes + self.requests * budget.layout.request_bytes(self.context)

    def bytes_in(self, budget: VllmBudget) -> int:
        """The need per GPU at `budget`: what it holds inside over gpu_memory_utilization, and what the
        driver keeps."""
        return math.ceil(self.held_inside(budget) / self.utilization) + DRIVER_RESERVED_BYTES

    def per_gpu_shares(self, gpus: int) -> tuple[tuple[str, int], ...]:
        """The budget at a tensor-parallel size of `gpus`, item by item, as one GPU holds it."""
        budget = self.budget(gpus)
        kv = self.requests * budget.layout.request_bytes(self.context)
        need = budget.inside_bytes + kv
        names = [item.name for item in self.items]
        shares = (*(item.bytes for item in budget.inside_items), kv,
                  math.ceil(need / self.utilization) - need, DRIVER_RESERVED_BYTES)
        return tuple(zip(names, shares, strict=True))

    def bytes_per_gpu(self, gpus: int) -> int:
        self.check_gpu_count(gpus)
        return self.bytes_in(self.budget(gpus))

    def bytes_per_gpu_by_kind(self, gpu_counts: Sequence[int]) -> tuple[tuple[int, ...], ...]:
        """As every kind's `bytes_per_gpu`, with each kernel's weights and each fabric's split sized once per
        GPU count (`budget_under`): a need split under vLLM has three fabrics to each kernel, and kinds that
        differ by fabric alone differ only in the split's buffers."""
        spec, precision = cast(LanguageModelSpec, self.spec), cast(int, self.precision)
        kinds = cast(tuple[VllmBreakdown, ...], self.gpu_kinds())
        needs: list[list[int]] = [[] for _ in kinds]
        for gpus in gpu_counts:
            self.check_gpu_count(gpus)
            by_kernel: dict[MoeKernel | None, VllmBudget] = {}
            by_fabric: dict[str, VllmBudget] = {}
            for kind, kind_needs in zip(kinds, needs, strict=True):
                settings = kind.settings(gpus)
                sized = by_kernel.get(kind.moe_kernel)
                if sized is None:
                    budget = by_kernel[kind.moe_kernel] = vllm_budget(spec, precision, self.kv_bits, settings)
                else:
                    budget = budget_under(sized, settings, by_fabric.get(settings.interconnect))
                by_fabric.setdefault(settings.interconnect, budget)
                kind_needs.append(kind.bytes_in(budget))
        return tuple(tuple(kind_needs) for kind_needs in needs)


def estimate_vllm(model: LanguageModelSpec, precision: int, context: int, requests: int, kv_bits: int = 16,
                  utilization: Fraction | None = None,
                  release: VllmRelease = DEFAULT_RELEASE) -> VllmBreakdown:
    """vLLM's budget on one GPU for `requests` requests of `context` tokens, item by item; the last item
    is what gpu_memory_utilization (None: the release's default) leaves outside the budget on a GPU that
    just holds it."""
    utilization = release.utilization if utilization is None else utilization
    precision, context, requests, kv_bits = check_inference_inputs(  # as the transformers estimate's
        model, precision, context, requests, kv_bits)
    shell = VllmBreakdown(workload="inference", title="", items=(), assumptions=(), precision=precision,
                          splittable_over_heads=model.attention_heads, spec=model, utilization=utilization,
                          kv_bits=kv_bits, context=context, requests=requests, release=release)
    budget = shell.budget(1)
    kv = budget.kv_cache_item(context, requests)
    inside = [
        Item(budget.weights.name, budget.weights.formula, budget.weights.bytes),
        budget.activation,
        budget.non_torch,
        *budget.also_inside,  # the release's: the CUDA context before 0.9.2, the graphs' estimate from 0.20
        kv,
    ]
    need = sum(item.bytes for item in inside)
    total = math.ceil(need / utilization)
    headroom = Item(
        name=gettext("Outside gpu_memory_utilization"),
        formula=gettext(
            "%(need)s ÷ %(utilization)s − %(need)s: what the engine leaves to the CUDA context, CUDA graphs "
            "and other processes"
        ) % {"need": fmt_gib(need), "utilization": general_number(float(utilization), 4)},
        bytes=total - need,
    )
    driver = Item(
        name=gettext("Kept by the driver from CUDA"),
        formula=gettext(
            "%(reserved)s per GPU: a machine reports nvidia-smi's total, CUDA gives PyTorch that less this "
            "(an H100 80GB: 81,559 MiB in nvidia-smi, 79.19 GiB to PyTorch)"
        ) % {"reserved": fmt_gib(DRIVER_RESERVED_BYTES)},
        bytes=DRIVER_RESERVED_BYTES,
        per_gpu=True,
    )
    assumptions = [*vllm_words(model, budget, utilization, by_gpu_type=shell.fitted_by_fabric),
                   *yarn_words(model, context)]
    return VllmBreakdown(
        workload="inference",
        title=gettext(
            "%(model)s, inference under vLLM, %(precision)s-bit%(kv)s, %(tokens)s × %(requests)s"
        ) % {
            "model": model.name, "precision": precision,
            "kv": gettext(", 8-bit KV cache") if kv_bits == 8 else "",
            "tokens": nouns.tokens(context), "requests": nouns.requests(requests),
        },
        items=(*inside, headroom, driver),
        assumptions=tuple(assumptions),
        precision=precision,
        splittable_over_heads=model.attention_heads,
        inputs={"model": model.slug, "model_name": model.name, "precision": precision, "context": context,
                "requests": requests, "kv_bits": kv_bits, "engine": "vllm",
                "engine_version": release.version.text, "gpu_memory_utilization": float(utilization)},
        spec=model, utilization=utilization, kv_bits=kv_bits, context=context, requests=requests,
        release=release,
        capacity=Capacity(model, precision, kv_bits, context, requests, engine="vllm",
                          utilization=utilization, release=release),
    )


def vllm_words(model: LanguageModelSpec, budget: VllmBudget, utilization: Fraction,
               by_gpu_type: bool = False) -> list[str]:
    """What the vLLM breakdown takes for granted; `by_gpu_type`: each machine's split is fitted at its GPU
    type's interconnect (`VllmBreakdown.fitted_by_fabric`)."""
    words = [
        gettext(
            "Sized as vLLM %(version)s starts (V1 engine): it loads the weights, profiles one forward pass "
            "of max_num_batched_tokens (%(batched)s, chunked prefill) and one sampler step, and gives the "
            "KV cache what is left of gpu_memory_utilization (%(utilization)s) × the GPU's memory. A machine "
            "fits when this need is within that share of its memory."
        ) % {"version": budget.settings.version.text,
             "batched": fmt_int(budget.settings.max_num_batched_tokens),
             "utilization": general_number(float(utilization), 4)},
        gettext(
            "The KV cache is held in blocks of %(block)s tokens per layer; a request takes whole blocks. "
            "Sliding-window layers keep their window plus one prefill step and one spare block."
        ) % {"block": BLOCK_SIZE},
        release_words(budget),
        split_words(budget.settings.interconnect, by_gpu_type),
    ]
    if budget.settings.skip_vision_tower:
        words.append(gettext(
            "The vision tower is not loaded (%(flag)s): the weights are the language model's."
        ) % {"flag": SKIP_TOWER_FLAG})
    words.append(gettext(
        "Between versions: the V0 engine (before 0.8) profiled a whole prefill of max_num_seqs × "
        "max_model_len unless chunked prefill was on, so its activation peak grew with the context; V1 "
        "always prefills in chunks. Which of the CUDA context and the CUDA-graph pool count inside the "
        "budget has moved at 0.9.2, 0.20, 0.25 and 0.29 (engine_version chooses the release)."
    ))
    native = native_format_of(model)
    if native is not None and native.key == "mxfp4" and budget.precision == native.bits:
        weights = {kernel.key: vllm_budget(model, budget.precision, budget.kv_bits, replace(
            budget.settings, moe_kernel=kernel)).weights.bytes for kernel in MOE_KERNELS}
        words.append(gettext(
            "MXFP4 experts are sized here as vLLM holds them through the Marlin kernel, the path of Ampere "
            "and Hopper (%(marlin)s of weights on one GPU): the expert width per GPU padded to a multiple of "
            "128 and the hidden size to a multiple of 256. Each machine is fitted at the kernel of its own "
            "GPU, and its row names it: a B200 (FlashInfer, both padded to 256) holds %(flashinfer)s, an "
            "MI300X (Triton on ROCm, both to 128) %(rocm)s."
        ) % {"marlin": fmt_gib(weights[MARLIN.key]), "flashinfer": fmt_gib(weights[FLASHINFER_SM100.key]),
             "rocm": fmt_gib(weights[ROCM_TRITON.key])})
    if budget.quantization:
        words.append(gettext(
            "%(bits)s-bit weights mean vLLM quantizing the published 16-bit checkpoint as it loads it "
            "(--quantization %(flag)s); the embeddings and the output head stay 16-bit."
        ) % {"bits": 8 if budget.quantization == "fp8" else 4, "flag": budget.quantization})
    return words


def split_words(interconnect: str, by_gpu_type: bool = False) -> str:
    """What a tensor-parallel split costs each GPU on GPUs connected by `interconnect`, in words; with
    `by_gpu_type`, that each machine is fitted at its own GPU type's interconnect instead."""
    words = gettext(
        "Split over n GPUs (tensor parallelism), the weights and the KV heads divide by n (a KV head is "
        "copied when there are fewer than GPUs) and each GPU adds the NCCL and all-reduce buffers of its "
        "interconnect: %(nccl)s where NVSwitch links every GPU to every other (as measured on H100), "
        "%(p2p)s at 2 GPUs over PCIe with peer-to-peer, none over PCIe without it (NCCL keeps them in host "
        "memory)."
    ) % {"nccl": fmt_gib(NCCL_BYTES), "p2p": fmt_gib(SplitCost(PCIE_P2P, 2).bytes)}
    if by_gpu_type:
        return words + " " + gettext(
            "Sized for: %(interconnect)s where no machine is named; each machine is fitted at what its own "
            "GPU type's GPUs are connected by (GeForce cards: PCIe without peer-to-peer; cards sold for PCIe "
            "slots: PCIe with peer-to-peer; others: NVSwitch), and its row names it (interconnect= sizes "
            "every machine for one).") % {"interconnect": interconnect_label(interconnect)}
    return words + " " + gettext("Sized for: %(interconnect)s.") % {
        "interconnect": interconnect_label(interconnect)}
