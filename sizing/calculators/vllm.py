"""Serving a language model under vLLM: the engine's own memory budget, item by item (SPEC §10).

vLLM (the V1 engine, as of 0.19) starts by loading the weights, then profiles one forward pass of
`max_num_batched_tokens` tokens (chunked prefill) and one sampler step of `max_num_seqs` requests,
and hands the rest of `gpu_memory_utilization` × the GPU's total memory (what CUDA reports,
`torch.cuda.mem_get_info`) to the KV cache:

    KV cache = utilization × total − weights − activation peak − memory outside PyTorch

(`Worker.determine_available_memory` in vllm/v1/worker/gpu_worker.py). The KV cache is cut into
blocks of 16 tokens per layer (`kv_cache_utils.get_kv_cache_config`): with one kind of layer one
group holds them all; with several (full + sliding window, full + chunked local) the layers form
groups of equal size that share every block, and the pool it logs in tokens counts every group as
if it held every token (`num_blocks // groups × block_size`). A request of `n` tokens takes
⌈n / 16⌉ blocks on a full-attention group and ⌈min(window − 1 + batched, n) / 16⌉ + 1 on a
sliding-window one (`SlidingWindowSpec.max_memory_usage_bytes`): the engine's "maximum concurrency".
The CUDA context and the CUDA-graph pool stay outside the budget (they live in what utilization
leaves free).

Every figure here is computed per GPU: weights and attention heads divide over the tensor-parallel
group, layers over the pipeline stages.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import cast

from .. import nouns
from ..architectures import (
    CHUNKED,
    FULL,
    LINEAR,
    PLAIN,
    SLIDING,
    LinearAttention,
    Yarn,
    count_parameters,
)
from ..breakdown import Item
from ..engine_support import GpuArchitecture
from ..errors import SizingError
from ..i18n import gettext, ngettext
from ..kv_cache import check_kv_bits
from ..limits import (
    MAX_BATCHED_TOKENS,
    MAX_CONTEXT,
    MAX_GPU_MEMORY_GIB,
    MAX_NUM_SEQS,
    MAX_PARALLEL,
)
from ..specs import LanguageModelSpec
from ..units import GIB, MIB, fmt_gib, fmt_int, general_number
from ..weights import SIXTEEN_BIT_BYTES, WeightFormat, native_format_of, split_parameters, stored_weights
from .checks import check_count, check_precision, model_value
from .items import weight_items
from .vllm_interconnect import DEFAULT_INTERCONNECT, NVSWITCH_SPLIT_BYTES, SplitCost, check_interconnect
from .vllm_loading import MoeKernel, mxfp4_kernel, mxfp4_loaded, rotary_caches
from .vllm_versions import (
    CUDAGRAPH_SWITCH,
    DEFAULT,
    SKIP_TOWER_FLAG,
    SKIP_TOWER_FROM,
    V1_RUNNER,
    VllmRelease,
    VllmVersion,
    graphs_inside,
    release_env,
    rules_words,
    runner_for,
)

VLLM_VERSION = DEFAULT.text  # the release an answer assumes where none is asked (`vllm_versions`)
BLOCK_SIZE = 16  # tokens per KV-cache block (CacheConfig.block_size on CUDA)
DEFAULT_BATCHED_TOKENS = 8192  # max_num_batched_tokens of `vllm serve` with chunked prefill
# gpu_memory_utilization where none is asked: the default release's (0.92 from 0.20, `vllm_versions`).
DEFAULT_UTILIZATION = DEFAULT.default_utilization
# max_num_seqs: `vllm serve` defaults to 1,024 on GPUs of 70 GiB or more (EngineArgs._set_default_args),
# 256 on smaller ones.
LARGE_GPU_BYTES = 70 * GIB
DEFAULT_SEQS_LARGE_GPU = 1024
DEFAULT_SEQS = 256
ACTIVATION_BYTES = 2  # bf16 activations
# The sampler's profiling step: the 16-bit logits of every request (2 bytes) and three float32 tensors
# of the same shape alive at once (the upcast logits, the probabilities and the exponential noise of
# the Gumbel draw): 14 bytes per logit. Logits are gathered over the whole vocabulary on every GPU.
SAMPLER_BYTES_PER_LOGIT = 14
# Memory outside PyTorch that a forward pass adds (cuBLAS/cuBLASLt workspaces, the attention kernels'
# scratch): 0.24–0.25 GiB per GPU in vLLM's logs of five models on one H100, whatever the model.
NON_TORCH_BYTES = GIB // 4
# Under tensor parallelism NCCL's channel buffers and vLLM's custom all-reduce buffers on every GPU, by what
# the GPUs are connected by (`vllm_interconnect`): with NVSwitch vLLM logs 2.07–2.13 GiB of non-PyTorch
# memory per GPU at 2- and 4-way against 0.25 on one GPU, counted as 2 GiB more (the figure the transformers
# estimate already uses for its split); over PCIe far less.
NCCL_BYTES = NVSWITCH_SPLIT_BYTES
# Outside the budget: the CUDA context (0.51 GiB per GPU logged on one H100; NCCL's communicators raise
# it to 1.5–2.0 GiB under tensor parallelism through NVSwitch, less without it: `vllm_interconnect`) and the
# CUDA-graph pool (0.67–1.79 GiB logged).
CUDA_CONTEXT_BYTES = GIB // 2
CUDA_CONTEXT_SPLIT_BYTES = 3 * GIB // 2
CUDA_GRAPH_BYTES = GIB
# What the driver keeps from CUDA: nvidia-smi's total less the total CUDA reports to PyTorch, which is
# what gpu_memory_utilization multiplies. An H100 80GB shows 81,559 MiB in nvidia-smi and 79.19 GiB
# (81,090 MiB) to PyTorch in vLLM's logs: 469 MiB. Machines report nvidia-smi's figure, so a machine's
# memory less this is what vLLM budgets from (the catalog keeps the measured figure per GPU type).
DRIVER_RESERVED_BYTES = (81_559 - 81_090) * MIB

# vLLM's online FP8 (--quantization fp8): one byte per linear weight and one float32 scale per tensor;
# the embeddings and the output head stay 16-bit.
ONLINE_FP8 = WeightFormat(
    key="fp8-online", label="FP8 (e4m3), dynamic, per tensor", precision=8, payload_bits=Fraction(8),
    group_size=None, source="vLLM --quantization fp8",
)
# vLLM's in-flight 4-bit (--quantization bitsandbytes): NF4 in blocks of 64 with double quantization.
BNB_NF4 = WeightFormat(
    key="bnb-nf4-vllm", label="bitsandbytes NF4", precision=4, payload_bits=Fraction(4), group_size=64,
    scale_bits=Fraction(127, 1000) * 64, source="vLLM --quantization bitsandbytes",
)
QUANTIZATION_FLAG = {8: "fp8", 4: "bitsandbytes"}


@dataclass(frozen=True)
class VllmSettings:
    """The engine's settings that change its memory: those `vllm serve` takes as flags."""

    gpu_memory_bytes: int  # one GPU's total as CUDA reports it
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    gpu_memory_utilization: Fraction = DEFAULT_UTILIZATION
    max_model_len: int | None = None  # None: the model's own maximum
    max_num_batched_tokens: int = DEFAULT_BATCHED_TOKENS
    max_num_seqs: int | None = None  # None: vLLM's default for the GPU's size
    # The GPU's architecture, where known: which kernel loads MXFP4 experts, and so their padded size
    # (`vllm_loading`); None: the Marlin path of Hopper and Ampere.
    gpu: GpuArchitecture | None = None
    # The MoE kernel MXFP4 experts load through, where a kind of GPU rather than one GPU is sized (the
    # wizard's need on each kind: `VllmBreakdown.gpu_kinds`); None: the one vLLM picks on `gpu`.
    moe_kernel: MoeKernel | None = None
    version: VllmVersion = DEFAULT  # the release, and so which memory its budget holds (`vllm_versions`)
    # The CUDA-graph estimate inside the budget: None, the release's default; False, the switch
    # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 (0.20 on).
    cudagraph_estimate: bool | None = None
    skip_vision_tower: bool = False  # every modality limit 0: the vision tower is not loaded
    # What the machine's GPUs are connected by (`vllm_interconnect`): what a tensor-parallel split costs.
    interconnect: str = DEFAULT_INTERCONNECT
    model_runner: str | None = None  # "v1" or "v2"; None: the release's choice for the model (`runner_for`)

    @property
    def release(self) -> VllmRelease:
        """The release and switches these settings were asked with."""
        said = self.interconnect if self.interconnect != DEFAULT_INTERCONNECT else None
        return VllmRelease(self.version, self.cudagraph_estimate, self.skip_vision_tower, said,
                           model_runner=self.model_runner)

    @property
    def split_cost(self) -> SplitCost:
        """What the tensor-parallel split adds per GPU to the memory outside PyTorch."""
        return SplitCost(self.interconnect, self.tensor_parallel)

    @property
    def kernel(self) -> MoeKernel:
        """The kernel MXFP4 experts load through under these settings."""
        return self.moe_kernel or mxfp4_kernel(self.gpu)

    @property
    def seqs(self) -> int:
        if self.max_num_seqs is not None:
            return self.max_num_seqs
        return DEFAULT_SEQS_LARGE_GPU if self.gpu_memory_bytes >= LARGE_GPU_BYTES else DEFAULT_SEQS


@dataclass(frozen=True)
class KvLayout:
    """The KV cache on one GPU as vLLM lays it out: groups of layers sharing blocks of 16 tokens."""

    page_bytes: int  # one block of one layer
    group_size: int  # layers per group
    groups: tuple[tuple[str, int], ...]  # (kind, number of groups of that kind)
    window: dict[str, int] = field(default_factory=dict)  # kind -> window or chunk
    state_bytes_per_request: int = 0  # linear-attention state, outside the blocks
    batched_tokens: int = DEFAULT_BATCHED_TOKENS

    @property
    def group_count(self) -> int:
        return sum(count for _, count in self.groups)

    @property
    def block_set_bytes(self) -> int:
        """One block id across every group: the unit the pool is counted in."""
        return self.page_bytes * self.group_size

    def blocks_per_request(self, tokens: int) -> int:
        """Blocks (of one layer slot) one request of `tokens` tokens takes, summed over the groups."""
        total = 0
        for kind, count in self.groups:
            if kind == SLIDING:
                held = min(self.window[kind] - 1 + self.batched_tokens, tokens)
                total += count * (math.ceil(held / BLOCK_SIZE) + 1)
            elif kind == CHUNKED:
                held = min(self.window[kind] + self.batched_tokens, tokens)
                total += count * math.ceil(held / BLOCK_SIZE)
            else:
                total += count * math.ceil(tokens / BLOCK_SIZE)
        return total

    def request_bytes(self, tokens: int) -> int:
        return self.blocks_per_request(tokens) * self.block_set_bytes + self.state_bytes_per_request


@dataclass(frozen=True)
class VllmBudget:
    """One GPU's budget under vLLM, and what its KV cache holds."""

    settings: VllmSettings
    weights: Item
    activation: Item
    non_torch: Item
    outside: tuple[Item, ...]  # what the release leaves outside the budget (CUDA context, CUDA graphs)
    also_inside: tuple[Item, ...]  # what the release pays inside it besides (CUDA context or graphs)
    layout: KvLayout
    budget_bytes: int  # utilization × total
    max_model_len: int
    model_max_context: int | None
    quantization: str | None
    yarn: Yarn | None  # the model's documented YaRN scaling, turned on where max_model_len needs it
    kv_bits: int
    precision: int = 16  # the weights' precision asked (16, 8 or 4)
    runner: str = V1_RUNNER  # the model runner sized: the one asked, else the release's for the model
    graphs_inside: bool = False  # the CUDA graphs' estimate is paid inside the budget (`vllm_versions`)

    @property
    def inside_items(self) -> tuple[Item, ...]:
        """The budget's items before the KV cache, in the order vLLM subtracts them."""
        return (self.weights, self.activation, self.non_torch, *self.also_inside)

    @property
    def inside_bytes(self) -> int:
        return sum(item.bytes for item in self.inside_items)

    @property
    def kv_cache_bytes(self) -> int:
        """What the budget leaves for the KV cache (negative when it leaves nothing)."""
        return self.budget_bytes - self.inside_bytes

    @property
    def num_blocks(self) -> int:
        free = self.kv_cache_bytes
        if free <= 0:
            return 0
        if self.layout.block_set_bytes == 0:
            return 0
        return free // self.layout.block_set_bytes

    @property
    def kv_cache_tokens(self) -> int:
        """The pool as vLLM logs it ("GPU KV cache size: … tokens")."""
        groups = self.layout.group_count
        if groups == 0:
            return 0
        return self.num_blocks // groups * BLOCK_SIZE

    def max_concurrency(self, tokens: int | None = None) -> Fraction:
        """Requests of `tokens` (default max_model_len) the pool holds at once, as vLLM logs it."""
        per_request = self.layout.blocks_per_request(tokens or self.max_model_len)
        if per_request == 0:
            return Fraction(0)
        return Fraction(self.num_blocks, per_request)

    def max_requests_at_context(self, tokens: int) -> int:
        per_request = self.layout.request_bytes(tokens)
        if self.kv_cache_bytes <= 0 or per_request <= 0:
            return 0
        if self.layout.state_bytes_per_request:
            return self.kv_cache_bytes // per_request
        return self.num_blocks // self.layout.blocks_per_request(tokens)

    def max_context_at_requests(self, requests: int) -> int:
        """The longest context `requests` requests reach at once, capped by max_model_len; 0 if none."""
        if self.max_requests_at_context(1) < requests:
            return 0
        low, high = 1, self.max_model_len
        if self.max_requests_at_context(high) >= requests:
            return high
        while low < high:  # the largest context whose requests still fit
            middle = (low + high + 1) // 2
            if self.max_requests_at_context(middle) >= requests:
                low = middle
            else:
                high = middle - 1
        return low

    def kv_cache_item(self, context: int, requests: int) -> Item:
        """The KV cache of `requests` requests of `context` tokens in the engine's layout."""
        layout = self.layout
        blocks = layout.blocks_per_request(context)
        state = layout.state_bytes_per_request
        formula = gettext(
            "%(requests)s × %(blocks)s blocks of %(block)s tokens (%(groups)s) × %(group_size)s × "
            "%(page)s bytes per block and layer"
        ) % {
            "requests": nouns.requests(requests), "blocks": fmt_int(blocks), "block": BLOCK_SIZE,
            "groups": _groups_words(layout, context), "group_size": nouns.layers(layout.group_size),
            "page": fmt_int(layout.page_bytes),
        }
        if state:
            formula += gettext(" + %(requests)s × %(state)s bytes of linear-attention state") % {
                "requests": nouns.requests(requests), "state": fmt_int(state)
            }
        return Item(name=gettext("KV cache (vLLM blocks)"), formula=formula,
                    bytes=requests * layout.request_bytes(context))

    def fit(self, context: int, requests: int) -> tuple[bool, str | None]:
        """Whether `requests` requests of `context` tokens fit the budget, with the reason when not."""
        need = self.inside_bytes + requests * self.layout.request_bytes(context)
        outside = sum(item.bytes for item in self.outside)
        if self.kv_cache_bytes <= 0:
            return False, gettext(
                "The weights, the activation peak and the memory outside PyTorch%(also)s (%(inside)s) leave "
                "nothing of %(budget)s (gpu_memory_utilization × the GPU's memory) for the KV cache."
            ) % {"inside": fmt_gib(self.inside_bytes), "budget": fmt_gib(self.budget_bytes),
                 "also": "".join(", " + item.name for item in self.also_inside)}
        one = self.layout.request_bytes(self.max_model_len)
        if one > self.kv_cache_bytes:
            return False, gettext(
                "The KV cache left (%(left)s) cannot hold one request of max_model_len %(tokens)s "
                "(%(one)s): vLLM refuses to start."
            ) % {"left": fmt_gib(self.kv_cache_bytes), "tokens": fmt_int(self.max_model_len),
                 "one": fmt_gib(one)}
        if need > self.budget_bytes:
            return False, gettext(
                "%(requests)s of %(tokens)s need %(need)s, more than the %(budget)s of the budget."
            ) % {"requests": nouns.requests(requests), "tokens": nouns.tokens(context),
                 "need": fmt_gib(need), "budget": fmt_gib(self.budget_bytes)}
        headroom = self.settings.gpu_memory_bytes - self.budget_bytes
        if outside > headroom:
            return False, gettext(
                "gpu_memory_utilization leaves %(headroom)s outside the budget, less than the "
                "%(outside)s that %(what)s take there."
            ) % {"headroom": fmt_gib(headroom), "outside": fmt_gib(outside),
                 "what": _outside_words(self.outside)}
        return True, None


def _outside_words(outside: tuple[Item, ...]) -> str:
    return gettext(" and ").join(item.name for item in outside)


def _groups_words(layout: KvLayout, context: int) -> str:
    parts = []
    for kind, count in layout.groups:
        if kind == SLIDING:
            held = min(layout.window[kind] - 1 + layout.batched_tokens, context)
            parts.append(gettext("%(count)s sliding-window group(s): ⌈%(held)s ÷ 16⌉ + 1") % {
                "count": count, "held": fmt_int(held)})
        elif kind == CHUNKED:
            held = min(layout.window[kind] + layout.batched_tokens, context)
            parts.append(gettext("%(count)s chunked-attention group(s): ⌈%(held)s ÷ 16⌉") % {
                "count": count, "held": fmt_int(held)})
        else:
            parts.append(gettext("%(count)s full-attention group(s): ⌈%(tokens)s ÷ 16⌉") % {
                "count": count, "tokens": fmt_int(context)})
    return "; ".join(parts)


# --- checks ------------------------------------------------------------------------------------------

def check_settings(model: LanguageModelSpec, settings: VllmSettings) -> None:
    """Refuse what vLLM refuses at start-up, each naming its field."""
    tp = check_count(settings.tensor_parallel, "tensor_parallel", gettext("The tensor-parallel size"),
                     MAX_PARALLEL)
    pp = check_count(settings.pipeline_parallel, "pipeline_parallel", gettext("The pipeline-parallel size"),
                     MAX_PARALLEL)
    heads = model_value(model, "attention_heads")
    if heads % tp:
        raise SizingError("tensor_parallel", gettext(
            "%(model)s has %(heads)s attention heads: the tensor-parallel size must divide them."
        ) % {"model": model.name, "heads": fmt_int(heads)})
    if pp > model_value(model, "layers"):
        raise SizingError("pipeline_parallel", gettext(
            "%(model)s has %(layers)s: the pipeline-parallel size may be at most that."
        ) % {"model": model.name, "layers": nouns.layers(model_value(model, "layers"))})
    utilization = settings.gpu_memory_utilization
    if not isinstance(utilization, Fraction) or not 0 < utilization <= 1:
        raise SizingError("gpu_memory_utilization", gettext(
            "The GPU memory utilization must be more than 0 and at most 1."))
    check_count(settings.gpu_memory_bytes, "gpu_memory_gib", gettext("The GPU memory"),
                MAX_GPU_MEMORY_GIB * GIB)
    check_count(settings.max_num_batched_tokens, "max_num_batched_tokens",
                gettext("max_num_batched_tokens"), MAX_BATCHED_TOKENS)
    if settings.max_num_seqs is not None:
        check_count(settings.max_num_seqs, "max_num_seqs", gettext("max_num_seqs"), MAX_NUM_SEQS)
    # Switches the release has, for a runner that runs the model (`vllm_versions`).
    graphs_inside(settings.version, settings.cudagraph_estimate,
                  runner_for(model, settings.version, settings.model_runner))
    check_interconnect(settings.interconnect)
    if settings.skip_vision_tower:
        check_skip_vision_tower(model, settings.version)
    if settings.max_model_len is not None:
        check_count(settings.max_model_len, "max_model_len", gettext("max_model_len"), MAX_CONTEXT)
        longest = model.longest_context
        if longest is not None and settings.max_model_len > longest:
            raise SizingError("max_model_len", gettext(
                "%(model)s handles at most %(maximum)s tokens; max_model_len %(tokens)s is above that limit."
            ) % {"model": model.name, "maximum": fmt_int(longest),
                 "tokens": fmt_int(settings.max_model_len)})


def release_words(budget: VllmBudget) -> str:
    """Which memory the assumed release pays inside gpu_memory_utilization for the runner sized, in words
    (the what-if's answer and the wizard's breakdown)."""
    settings = budget.settings
    return rules_words(settings.version, budget.runner, budget.graphs_inside, settings.cudagraph_estimate,
                       settings.model_runner)


def has_vision_tower(model: LanguageModelSpec) -> bool:
    return model.architecture is not None and model.architecture.vision is not None


def check_skip_vision_tower(model: LanguageModelSpec, version: VllmVersion) -> None:
    """Skipping the vision tower: only of a model that has one, in a release that honours it."""
    if not has_vision_tower(model):
        raise SizingError("skip_vision_tower", gettext(
            "%(model)s has no vision tower to skip: it is a language model only.") % {"model": model.name})
    if version.number < SKIP_TOWER_FROM:
        raise SizingError("skip_vision_tower", gettext(
            "vLLM %(version)s loads the vision tower whatever the modality limits; %(flag)s skips it from "
            "0.10.1."
        ) % {"version": version.text, "flag": SKIP_TOWER_FLAG})


def vision_parameters(model: LanguageModelSpec) -> int:
    """The vision encoder's and projector's parameters (0 where the model has none)."""
    if not has_vision_tower(model):
        return 0
    return count_parameters(model).of("vision")


# --- the items -----------------------------------------------------------------------------------------

# vLLM's in-flight quantization of a 16-bit checkpoint, by bits: the format it stores and its flag.
IN_FLIGHT = {8: (ONLINE_FP8, QUANTIZATION_FLAG[8]), 4: (BNB_NF4, QUANTIZATION_FLAG[4])}


def loaded_bytes(model: LanguageModelSpec, precision: int,
                 in_flight: dict[int, tuple[WeightFormat, str]] = IN_FLIGHT) -> tuple[int, str, str | None]:
    """The whole model's weights as a serving engine loads them (vLLM's, or SGLang's with its own
    `in_flight` formats): a native checkpoint as stored, 16-bit as parameters × 2 bytes, else quantized
    as it loads: (bytes, formula, --quantization flag)."""
    native = native_format_of(model)
    if native is not None and native.bits == precision:
        items, _words, _stored = weight_items(model, precision)
        total = sum(item.bytes for item in items)
        return total, gettext("%(format)s checkpoint as stored: %(bytes)s") % {
            "format": gettext(native.short), "bytes": fmt_gib(total)}, None
    parameters = model_value(model, "parameters")
    if precision == 16:
        return parameters * SIXTEEN_BIT_BYTES, gettext("%(parameters)s parameters × 2 bytes (bf16)") % {
            "parameters": fmt_int(parameters)}, None
    hidden = model_value(model, "hidden_size")
    split = split_parameters(model.name, parameters, model_value(model, "vocab_size"), hidden,
                             model.tied_embeddings)
    fmt, flag = in_flight[precision]
    stored = stored_weights(fmt, split, hidden)
    per = general_number(fmt.bits_per_parameter(hidden), 4)
    formula = gettext(
        "%(quantized)s linear-layer parameters × %(bits)s bits (%(format)s) + %(kept)s embedding and "
        "output-head parameters × 2 bytes"
    ) % {"quantized": fmt_int(stored.quantized), "bits": per, "format": fmt.source,
         "kept": fmt_int(stored.kept_16_bit)}
    return stored.total_bytes, formula, flag


def _tower_bytes_per_parameter(model: LanguageModelSpec, precision: int, flag: str | None) -> Fraction:
    """What each vision-tower parameter was counted at in the loaded weights: 2 bytes in 16 bits and in a
    checkpoint as stored (the tower is published unquantized), the in-flight format's bits where vLLM
    quantizes the 16-bit checkpoint as it loads it (its linear layers, the tower's among them)."""
    if flag is None:
        return Fraction(SIXTEEN_BIT_BYTES)
    fmt, _flag = IN_FLIGHT[precision]
    return fmt.bits_per_parameter(model_value(model, "hidden_size")) / 8


def _stage_share(model: LanguageModelSpec, total: int, pp: int) -> Fraction:
    """The share of the weights the busiest pipeline stage holds: ⌈layers ÷ pp⌉ layers' worth of the
    decoder plus a vocabulary × hidden matrix (the embeddings on the first stage, the output head on the
    last, which loads its own copy where the two are tied)."""
    if pp == 1:
        return Fraction(1)
    layers = model_value(model, "layers")
    embeddings = model_value(model, "vocab_size") * model_value(model, "hidden_size") * SIXTEEN_BIT_BYTES
    decoder = max(total - embeddings * (1 if model.tied_embeddings else 2), 0)
    stage = Fraction(decoder * math.ceil(layers / pp), layers) + embeddings
    return min(Fraction(1), stage / total)


def weights_item(model: LanguageModelSpec, precision: int, settings: VllmSettings) -> tuple[Item, str | None]:
    tp, pp = settings.tensor_parallel, settings.pipeline_parallel
    native = native_format_of(model)
    if native is not None and native.key == "mxfp4" and precision == native.bits:
        # MXFP4 experts are held at the padded sizes the GPU's MoE kernel runs (`vllm_loading`).
        loaded = mxfp4_loaded(model, tp, settings.kernel)
        total, formula, flag = loaded.group_bytes, loaded.formula(), None
        divided_in_formula = True
    else:
        total, formula, flag = loaded_bytes(model, precision)
        divided_in_formula = False
    if settings.skip_vision_tower:
        # Every modality limit at 0, the vision encoder and its projector are not built: the weights lose
        # the tower at the bytes per parameter they were counted at.
        tower = vision_parameters(model)
        per = _tower_bytes_per_parameter(model, precision, flag)
        total -= math.ceil(tower * per)
        formula += gettext(
            " − %(tower)s vision-tower parameters × %(bytes)s bytes (not loaded: %(flag)s)") % {
            "tower": fmt_int(tower), "bytes": general_number(float(per), 4), "flag": SKIP_TOWER_FLAG}
    share = _stage_share(model, total, pp)
    per_gpu = math.ceil(total * share / tp)
    split = ""
    if pp > 1:
        split += gettext(" × %(share)s on the busiest of %(pp)s pipeline stages") % {
            "share": general_number(float(share), 4), "pp": pp}
    if tp > 1 and not divided_in_formula:
        split += gettext(" ÷ %(tp)s tensor-parallel GPUs") % {"tp": tp}
    # What "Model loading took" counts beyond the weights: the rotary embeddings' cos/sin caches, whole on
    # every GPU (`vllm_loading`).
    yarn_on = settings.max_model_len is not None and model.scaled_beyond_native(settings.max_model_len)
    rotary = rotary_caches(model, yarn_on)
    return Item(
        name=gettext("Model weights as loaded"),
        formula=formula + split + " " + rotary.formula(),
        bytes=per_gpu + rotary.bytes,
        per_gpu=True,
    ), flag


def _forward_values_per_token(model: LanguageModelSpec, tp: int) -> tuple[int, str]:
    """Values alive per token at a decoder layer's MLP peak on one GPU (besides the residual and
    the layer's input): the gate-up output and the activated product, or, under a mixture of experts,
    the fused-MoE kernel's three work buffers for each routed expert of the token."""
    hidden = model_value(model, "hidden_size")
    arch = model.architecture or PLAIN
    if arch.moe is None:
        intermediate = model_value(model, "intermediate_size")
        return 3 * intermediate // tp, gettext("3 × %(width)s MLP width ÷ %(tp)s") % {
            "width": fmt_int(intermediate), "tp": tp}
    moe = arch.moe
    routed = moe.experts_per_token * (3 * moe.expert_intermediate // tp + hidden)
    shared = 3 * moe.shared_intermediate // tp
    return routed + shared, gettext(
        "%(k)s experts × (3 × %(width)s expert width ÷ %(tp)s + %(hidden)s)%(shared)s"
    ) % {"k": moe.experts_per_token, "width": fmt_int(moe.expert_intermediate), "tp": tp,
         "hidden": fmt_int(hidden),
         "shared": f" + 3 × {fmt_int(moe.shared_intermediate)} ÷ {tp}" if shared else ""}


def activation_item(model: LanguageModelSpec, settings: VllmSettings) -> Item:
    """The peak PyTorch reaches in the profiling step: the larger of one layer's MLP over
    max_num_batched_tokens tokens and the sampler over max_num_seqs requests (the hidden states of
    the batch are still held then)."""
    tokens = settings.max_num_batched_tokens
    seqs = min(settings.seqs, tokens)
    hidden = model_value(model, "hidden_size")
    vocab = model_value(model, "vocab_size")
    mlp_values, mlp_words = _forward_values_per_token(model, settings.tensor_parallel)
    forward = tokens * (2 * hidden + mlp_values) * ACTIVATION_BYTES
    sampler = seqs * vocab * SAMPLER_BYTES_PER_LOGIT + tokens * hidden * ACTIVATION_BYTES
    values = {
        "tokens": fmt_int(tokens), "hidden": fmt_int(hidden), "mlp": mlp_words,
        "seqs": fmt_int(seqs), "vocab": fmt_int(vocab), "per_logit": SAMPLER_BYTES_PER_LOGIT,
        "forward": fmt_gib(forward), "sampler": fmt_gib(sampler),
    }
    formula = ngettext(
        "max(forward: %(tokens)s batched tokens × (2 × %(hidden)s hidden + %(mlp)s) × 2 bytes = "
        "%(forward)s; sampler: %(seqs)s sequence × %(vocab)s vocabulary × %(per_logit)s bytes + "
        "%(tokens)s × %(hidden)s × 2 bytes = %(sampler)s)",
        "max(forward: %(tokens)s batched tokens × (2 × %(hidden)s hidden + %(mlp)s) × 2 bytes = "
        "%(forward)s; sampler: %(seqs)s sequences × %(vocab)s vocabulary × %(per_logit)s bytes + "
        "%(tokens)s × %(hidden)s × 2 bytes = %(sampler)s)", seqs,
    ) % values
    return Item(name=gettext("Activation peak (profiling step)"), formula=formula,
                bytes=max(forward, sampler), per_gpu=True)


def non_torch_item(settings: VllmSettings) -> Item:
    split = settings.split_cost
    # Alone, the item's figure is its own: the formula names what it holds, not the figure again.
    formula = gettext("cuBLAS workspaces, kernel scratch")
    if split.split:
        formula = gettext("%(base)s (cuBLAS workspaces, kernel scratch)") % {"base": fmt_gib(NON_TORCH_BYTES)}
        formula += split.formula()
    return Item(name=gettext("Memory outside PyTorch"), formula=formula, bytes=NON_TORCH_BYTES + split.bytes,
                per_gpu=True)


def _context_item(settings: VllmSettings) -> Item:
    split = settings.tensor_parallel > 1 or settings.pipeline_parallel > 1
    cost = SplitCost(settings.interconnect, max(settings.tensor_parallel, settings.pipeline_parallel))
    context = cost.context_bytes(CUDA_CONTEXT_SPLIT_BYTES) if split else CUDA_CONTEXT_BYTES
    inside = settings.version.context_inside
    name = (gettext("CUDA context (inside the budget before 0.9.2)") if inside
            else gettext("CUDA context (outside the budget)"))
    formula = gettext("%(bytes)s per GPU%(split)s") % {
        "bytes": fmt_gib(context), "split": gettext(", with NCCL's communicators") if split else ""}
    if split:
        formula += cost.context_formula(CUDA_CONTEXT_SPLIT_BYTES)
    if inside:
        formula += gettext(
            ": vLLM %(version)s counts every byte outside PyTorch after its profiling pass (total used less "
            "PyTorch's), the context the process created at start among them") % {
            "version": settings.version.text}
    return Item(name=name, formula=formula, bytes=context, per_gpu=True)


def _graphs_item(settings: VllmSettings, inside: bool) -> Item:
    if inside:
        return Item(
            name=gettext("CUDA graphs (estimated inside the budget)"),
            formula=gettext(
                "about %(bytes)s per GPU: vLLM %(version)s captures its graphs once before sizing the KV "
                "cache and subtracts the estimate (%(switch)s=0 turns it off)") % {
                "bytes": fmt_gib(CUDA_GRAPH_BYTES), "version": settings.version.text,
                "switch": CUDAGRAPH_SWITCH},
            bytes=CUDA_GRAPH_BYTES, per_gpu=True)
    return Item(name=gettext("CUDA graphs (outside the budget)"),
                formula=gettext("about %(bytes)s per GPU for the captured decode batch sizes") % {
                    "bytes": fmt_gib(CUDA_GRAPH_BYTES)},
                bytes=CUDA_GRAPH_BYTES, per_gpu=True)


def outside_items(settings: VllmSettings, graphs: bool) -> tuple[Item, ...]:
    """What the release leaves in the memory gpu_memory_utilization leaves free (`vllm_versions`); `graphs`:
    whether the runner sized pays the CUDA graphs' estimate inside."""
    items = []
    if not settings.version.context_inside:
        items.append(_context_item(settings))
    if not graphs:
        items.append(_graphs_item(settings, graphs))
    return tuple(items)


def also_inside_items(settings: VllmSettings, graphs: bool) -> tuple[Item, ...]:
    """What the release pays inside the budget besides the weights, activations and memory outside
    PyTorch: the CUDA context before 0.9.2, the CUDA graphs' estimate from 0.20 where the runner sized
    estimates them (`vllm_versions`)."""
    items = []
    if settings.version.context_inside:
        items.append(_context_item(settings))
    if graphs:
        items.append(_graphs_item(settings, graphs))
    return tuple(items)


def kv_layout(model: LanguageModelSpec, kv_bits: int, settings: VllmSettings) -> KvLayout:
    """The engine's KV-cache groups on one GPU."""
    arch = model.architecture or PLAIN
    tp, pp = settings.tensor_parallel, settings.pipeline_parallel
    kv_bytes = kv_bits // 8
    layers = model_value(model, "layers")
    counts = {kind: math.ceil(count / pp) for kind, count in arch.layer_counts(layers).items() if count}
    if arch.mla is not None:  # one latent per token and layer, on every GPU of the group
        page = BLOCK_SIZE * arch.mla.latent_width * kv_bytes
        attention = {FULL: sum(c for k, c in counts.items() if k != LINEAR)}
    else:
        kv_heads = model_value(model, "kv_heads")
        heads_per_gpu = math.ceil(kv_heads / tp)  # replicated when there are fewer KV heads than GPUs
        page = BLOCK_SIZE * 2 * heads_per_gpu * model_value(model, "head_dim") * kv_bytes
        attention = {kind: count for kind, count in counts.items() if kind != LINEAR}
    state = 0
    if LINEAR in counts:
        linear = cast(LinearAttention, arch.linear_attention)  # LINEAR layers only where it is set
        state = linear.state_bytes() * counts[LINEAR] // tp
    sizes = sorted(attention.values())
    if len(sizes) == 1:
        group_size = sizes[0]
    else:  # kv_cache_utils: near-equal kinds share the larger size, otherwise the smallest kind's
        group_size = sizes[-1] if sizes[-1] < sizes[0] * 5 // 4 else sizes[0]
    groups = tuple((kind, math.ceil(count / group_size)) for kind, count in attention.items())
    window: dict[str, int] = {}  # a kind's layers are there only where its window or chunk is set
    if SLIDING in attention:
        window[SLIDING] = cast(int, arch.sliding_window)
    if CHUNKED in attention:
        window[CHUNKED] = cast(int, arch.attention_chunk)
    return KvLayout(page_bytes=page, group_size=group_size, groups=groups, window=window,
                    state_bytes_per_request=state, batched_tokens=settings.max_num_batched_tokens)


def vllm_budget(model: LanguageModelSpec, precision: int, kv_bits: int, settings: VllmSettings) -> VllmBudget:
    precision = check_precision(precision)
    kv_bits = check_kv_bits(kv_bits)
    check_settings(model, settings)
    weights, flag = weights_item(model, precision, settings)
    max_model_len = settings.max_model_len or model_value(model, "max_context")
    runner = runner_for(model, settings.version, settings.model_runner)
    graphs = graphs_inside(settings.version, settings.cudagraph_estimate, runner)
    non_torch, outside, also_inside = interconnect_items(settings, graphs)
    return VllmBudget(
        settings=settings,
        weights=weights,
        activation=activation_item(model, settings),
        non_torch=non_torch,
        outside=outside,
        also_inside=also_inside,
        layout=kv_layout(model, kv_bits, settings),
        budget_bytes=math.floor(settings.gpu_memory_utilization * settings.gpu_memory_bytes),
        max_model_len=max_model_len,
        model_max_context=model.max_context,
        quantization=flag,
        yarn=model.architecture.yarn if model.architecture is not None else None,
        kv_bits=kv_bits,
        precision=precision,
        runner=runner,
        graphs_inside=graphs,
    )


def interconnect_items(
    settings: VllmSettings, graphs: bool
) -> tuple[Item, tuple[Item, ...], tuple[Item, ...]]:
    """The budget's items that what the GPUs are connected by changes (a split's buffers in the memory
    outside PyTorch, the CUDA context with NCCL's communicators), with the rest of the release's: (memory
    outside PyTorch, outside the budget, also inside it). `graphs`: as `outside_items`."""
    return non_torch_item(settings), outside_items(settings, graphs), also_inside_items(settings, graphs)


def budget_under(budget: VllmBudget, settings: VllmSettings, like: VllmBudget | None = None) -> VllmBudget:
    """`vllm_budget` of `budget`'s model, precision and KV cache under `settings`, which differ from
    `budget.settings` in what the GPUs are connected by alone: the weights, activations and KV-cache layout
    kept, the `interconnect_items` sized again, or taken from `like` (None: none at hand), a budget sized
    under `settings` with another MoE kernel (those items do not read the kernel). The kinds of GPU of a
    need (`VllmBreakdown.bytes_per_gpu_by_kind`) so size each kernel's weights and each fabric's split once
    per GPU count."""
    if replace(settings, interconnect=budget.settings.interconnect) != budget.settings:
        raise ValueError("the settings differ from the budget's beyond the interconnect")
    if like is None:
        check_interconnect(settings.interconnect)
        non_torch, outside, also_inside = interconnect_items(settings, budget.graphs_inside)
    elif replace(like.settings, moe_kernel=settings.moe_kernel) != settings:
        raise ValueError("the settings differ from the like budget's beyond the MoE kernel")
    else:
        non_torch, outside, also_inside = like.non_torch, like.outside, like.also_inside
    return replace(budget, settings=settings, non_torch=non_torch, outside=outside, also_inside=also_inside)


def budget_item(budget: VllmBudget) -> str:
    """The budget in words: utilization × the GPU's memory."""
    return gettext("%(utilization)s × %(total)s = %(budget)s") % {
        "utilization": general_number(exact_decimal(budget.settings.gpu_memory_utilization)),
        "total": fmt_gib(budget.settings.gpu_memory_bytes), "budget": fmt_gib(budget.budget_bytes)}


def exact_decimal(value: Fraction) -> Decimal:
    """A fraction given in decimals (0.9764) as that decimal again, every digit kept; one with no
    finite decimal (1/3) to 28 significant digits."""
    with localcontext() as context:
        context.prec = 28
        return (Decimal(value.numerator) / Decimal(value.denominator)).normalize()


def plain_number(value: Fraction) -> str:
    """A fraction as a command line takes it: dot decimals whatever the page's language, every digit
    the user gave (0.95, 0.9764)."""
    return f"{exact_decimal(value):f}"


TRUST_REMOTE_CODE = "--trust-remote-code"


def model_flags(model: LanguageModelSpec) -> tuple[str, ...]:
    """What the model itself asks of every engine's command (vLLM's and SGLang's alike):
    --trust-remote-code where its repository's own code loads it."""
    return (TRUST_REMOTE_CODE,) if model.trust_remote_code else ()


def serve_command(hf_id: str, budget: VllmBudget, max_num_seqs: int | None = None,
                  max_model_len: int | None = None, dtype_flags: tuple[str, ...] = (),
                  model_flags: tuple[str, ...] = ()) -> str:
    """`vllm serve` with the model's own flags (`model_flags`), the flags this budget was sized for (the
    asked context as --max-model-len where given: the budget itself does not depend on it), and the GPU's
    own (`--dtype half` below compute capability 8.0: `sizing.engine_support.Support.dtype_flags`)."""
    settings = budget.settings
    # vLLM's switches are environment variables: the estimate's set where it turns the release's default
    # off, the runner's wherever one is asked (`vllm_versions.release_env`).
    parts = [
        *release_env(settings.version, settings.cudagraph_estimate, settings.model_runner),
        "vllm serve", hf_id, *model_flags, *dtype_flags,
        f"--tensor-parallel-size {settings.tensor_parallel}",
    ]
    if settings.pipeline_parallel > 1:
        parts.append(f"--pipeline-parallel-size {settings.pipeline_parallel}")
    parts.append(f"--max-model-len {max_model_len or budget.max_model_len}")
    seqs = max_num_seqs if max_num_seqs is not None else settings.seqs
    parts.append(f"--max-num-seqs {seqs}")
    parts.append(f"--gpu-memory-utilization {plain_number(settings.gpu_memory_utilization)}")
    if settings.max_num_batched_tokens != DEFAULT_BATCHED_TOKENS:
        parts.append(f"--max-num-batched-tokens {settings.max_num_batched_tokens}")
    if budget.kv_bits == 8:
        parts.append("--kv-cache-dtype fp8")
    if budget.quantization:
        parts.append(f"--quantization {budget.quantization}")
    if settings.skip_vision_tower:
        parts.append(SKIP_TOWER_FLAG)
    scaling = yarn_override(budget, max_model_len or budget.max_model_len)
    if scaling is not None:
        parts.append(f"--hf-overrides '{scaling}'")
    return " ".join(parts)


def yarn_override(budget: VllmBudget, tokens: int) -> str | None:
    """The model's documented YaRN scaling as the config override that turns it on, where `tokens` of
    context are beyond the model's own maximum (None otherwise): the rope parameters as vLLM's current
    configs name them (`rope_parameters`, with the model's rope_theta; releases before its
    transformers-5 configs took `rope_scaling` and `rope_theta` apart)."""
    yarn = budget.yarn
    if yarn is None or budget.model_max_context is None or tokens <= budget.model_max_context:
        return None
    return json.dumps({"rope_parameters": {
        "rope_type": "yarn", "factor": float(yarn.factor),
        "original_max_position_embeddings": yarn.original_context, "rope_theta": yarn.rope_theta,
    }}, separators=(", ", ": "))


# --- the engines the wizard sizes inference for (the breakdown under vLLM: `vllm_inference`) -----------

ENGINES = ("transformers", "vllm", "sglang", "llamacpp", "ollama")
DEFAULT_ENGINE = "transformers"
GGUF_ENGINES = ("llamacpp", "ollama")  # GGUF files: `sizing.calculators.llamacpp`


def check_engine(engine: object) -> str:
    if not isinstance(engine, str) or engine not in ENGINES:
        raise SizingError("engine", gettext(
            "Choose the engine: transformers, vllm, sglang, llamacpp or ollama."))
    return engine
