"""Clusters: one model served by several identical machines at one site (tensor parallel within a
machine, pipeline parallel across machines).

The sizing of one cluster: what each GPU holds (`cluster_need`), the plan of one site's machines
(`ClusterPlan`, `plan_of`) with its words and commands. Which machines may form one, and the sites the
catalog makes of them, are `sizing.cluster_sites`; the search over sites (`plan_clusters`) is
`sizing.cluster_search`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import NamedTuple, cast

from .breakdown import Item
from .calculators.checks import model_value
from .calculators.vllm import (
    ACTIVATION_BYTES,
    NON_TORCH_BYTES,
    VllmBudget,
    VllmSettings,
    model_flags,
    serve_command,
    vllm_budget,
    yarn_override,
)
from .calculators.vllm_interconnect import interconnect_label, interconnect_of_gpu
from .calculators.vllm_versions import DEFAULT_RELEASE, VllmRelease
from .cluster_sites import MIN_CLUSTER_GBPS, ClusterMachine, ClusterSite
from .engine_support import (
    SGLANG,
    VLLM,
    GpuArchitecture,
    alternative_words,
    refusal_words,
    runnable_choices,
    support_for,
)
from .errors import SizingError
from .i18n import gettext, language
from .specs import LanguageModelSpec
from .units import MIB, fmt_gib, fmt_int

# Where the SGLang command's first node listens for the others (`--dist-init-addr`), and Ray's head port.
SGLANG_INIT_PORT = 20000
RAY_PORT = 6379
# Under pipeline parallelism every stage but the first receives the previous stage's hidden states and
# residual for a whole prefill step: vLLM keeps two bf16 tensors of max_num_batched_tokens × hidden
# (`make_empty_intermediate_tensors` at max_num_tokens) on each GPU for them.
PIPELINE_TENSORS = 2


@dataclass(frozen=True)
class ClusterNeed:
    """One GPU of a tensor-parallel × pipeline-parallel split under vLLM: its items and its budget."""

    tensor_parallel: int
    pipeline_parallel: int
    items: tuple[Item, ...]  # Items inside the budget
    outside: tuple[Item, ...]  # Items outside the budget (CUDA context, CUDA graphs)
    budget_bytes: int  # gpu_memory_utilization × the GPU's usable memory
    usable_bytes: int  # the GPU's memory as CUDA reports it
    budget: VllmBudget  # the engine's VllmBudget behind the items

    @property
    def need_bytes(self) -> int:
        return sum(item.bytes for item in self.items)

    @property
    def outside_bytes(self) -> int:
        return sum(item.bytes for item in self.outside)

    @cached_property
    def fits(self) -> bool:  # a shared need is asked once per site of its shape
        return (self.need_bytes <= self.budget_bytes
                and self.outside_bytes <= self.usable_bytes - self.budget_bytes)


def layers_per_stage(layers: int, stages: int) -> tuple[int, ...]:
    """The layers each pipeline stage holds, as vLLM splits them (`get_pp_indices`): evenly, the remainder
    one each to the stages before the last (the last also holds the output head)."""
    split = [layers // stages] * stages
    for index in range(2, layers % stages + 2):
        split[-index] += 1
    return tuple(split)


def cluster_need(model: LanguageModelSpec, precision: int, kv_bits: int, context: int, requests: int, *,
                 gpus_per_machine: int, machines: int, usable_bytes: int,
                 utilization: Fraction | None = None,
                 release: VllmRelease = DEFAULT_RELEASE, gpu: GpuArchitecture | None = None) -> ClusterNeed:
    """One GPU's need when `machines` machines of `gpus_per_machine` GPUs serve the model at tensor
    parallel = GPUs per machine × pipeline parallel = machines (one machine: the ordinary split).
    Raises SizingError where vLLM refuses the split (heads not divisible, more stages than layers).
    `utilization` None: the release's default. `gpu`: the machines' GPU architecture, which decides the
    kernel MXFP4 experts load through and so their padded size (`vllm_loading`), as a single machine's
    GPU does; None: the Marlin path."""
    utilization = release.utilization if utilization is None else utilization
    settings = VllmSettings(
        **release.settings(),  # type: ignore[arg-type]
        gpu_memory_bytes=usable_bytes, tensor_parallel=gpus_per_machine, pipeline_parallel=machines,
        gpu_memory_utilization=utilization, max_model_len=context, max_num_seqs=requests, gpu=gpu,
    )
    budget = vllm_budget(model, precision, kv_bits, settings)
    nccl = budget.non_torch.bytes - NON_TORCH_BYTES
    hidden = model_value(model, "hidden_size")
    pipeline = (PIPELINE_TENSORS * settings.max_num_batched_tokens * hidden * ACTIVATION_BYTES
                if machines > 1 else 0)
    parts = []
    if nccl:
        parts.append(gettext("%(nccl)s NCCL and custom all-reduce buffers under tensor parallelism") % {
            "nccl": fmt_gib(nccl)})
    if pipeline:
        parts.append(gettext(
            "%(tensors)s × %(tokens)s batched tokens × %(hidden)s hidden × 2 bytes: the hidden states and "
            "residual a pipeline stage receives (%(bytes)s)"
        ) % {"tensors": PIPELINE_TENSORS, "tokens": fmt_int(settings.max_num_batched_tokens),
             "hidden": fmt_int(hidden), "bytes": fmt_gib(pipeline)})
    items = [
        budget.weights,
        budget.kv_cache_item(context, requests),
        budget.activation,
        Item(name=gettext("Memory outside PyTorch"),
             formula=gettext("%(base)s (cuBLAS workspaces, kernel scratch)") % {
                 "base": fmt_gib(NON_TORCH_BYTES)},
             bytes=NON_TORCH_BYTES, per_gpu=True),
        *budget.also_inside,  # the release's: the CUDA context before 0.9.2, the graphs' estimate from 0.20
    ]
    if parts:
        items.append(Item(name=gettext("Communication buffers"), formula=" + ".join(parts),
                          bytes=nccl + pipeline, per_gpu=True))
    return ClusterNeed(
        tensor_parallel=gpus_per_machine, pipeline_parallel=machines, items=tuple(items),
        outside=budget.outside, budget_bytes=budget.budget_bytes, usable_bytes=usable_bytes, budget=budget,
    )


@dataclass(frozen=True)
class ClusterPlan:
    """The smallest cluster of one site that holds the workload (its `pipeline_parallel` cheapest machines),
    with what each GPU holds."""

    site: ClusterSite
    need: ClusterNeed
    # The workload it was sized for: what its words and commands are written from. They are written only
    # when read (an answer shows ten of a few hundred plans).
    model: LanguageModelSpec
    precision: int
    kv_bits: int
    context: int
    requests: int
    # Its machines with the provider's ids and booking limits, in the order of `machine_ids`: read only for
    # the plans an answer shows (`with_machines`); empty until then.
    machines: tuple[ClusterMachine, ...] = ()

    def with_machines(self, machines: tuple[ClusterMachine, ...]) -> ClusterPlan:
        if tuple(machine.id for machine in machines) != self.machine_ids:
            raise ValueError("a cluster's machines must be its own, in its order")
        return replace(self, machines=machines)

    @property
    def machine_ids(self) -> tuple[int, ...]:
        return self.site.machine_ids[:self.pipeline_parallel]

    @property
    def machine_prices_per_hour(self) -> tuple[Decimal, ...]:
        """Each machine's price per hour (all its GPUs), in the order of `machine_ids`."""
        gpus = self.site.gpu_count
        return tuple(price * gpus for price in self.site.prices_per_gpu_hour[:self.pipeline_parallel])

    @cached_property
    def layers_per_stage(self) -> tuple[int, ...]:
        return layers_per_stage(cast(int, self.model.layers), self.pipeline_parallel)  # sized: it is set

    @cached_property
    def assumptions(self) -> tuple[str, ...]:
        return cluster_words(self.site, self.need, self.layers_per_stage)

    @cached_property
    def _confidence(self) -> tuple[str, tuple[str, ...]]:
        return cluster_confidence(self.precision, self.tensor_parallel, self.pipeline_parallel)

    @property
    def confidence(self) -> str:
        return self._confidence[0]

    @property
    def confidence_reasons(self) -> tuple[str, ...]:
        return self._confidence[1]

    @cached_property
    def commands(self) -> ClusterCommands:
        """Its start commands on its GPUs, or why none starts there and what does."""
        return cluster_commands(self.model, self.need, self.context, self.requests,
                                self.site.gpu_architecture, self.site.gpu_type)

    @property
    def vllm_commands(self) -> tuple[str, ...]:
        """The Ray head, each worker, then `vllm serve` on the head."""
        return self.commands.vllm

    @property
    def sglang_commands(self) -> tuple[str, ...]:
        """One per node; empty where SGLang cannot take the split."""
        return self.commands.sglang

    @property
    def sglang_note(self) -> str | None:
        """Why there is no SGLang command."""
        return self.commands.sglang_note

    @property
    def tensor_parallel(self) -> int:
        return self.need.tensor_parallel

    @property
    def pipeline_parallel(self) -> int:
        return self.need.pipeline_parallel

    @property
    def gpus(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def price_per_hour(self) -> Decimal:
        return self.site.price_per_hour(self.pipeline_parallel)

    @property
    def booking_limit_hours(self) -> int | None:
        """The shortest booking limit of its machines (None: none has one). Read from `machines`."""
        if not self.machines:
            raise ValueError("a cluster's booking limits are read with its machines (with_machines)")
        limits = [machine.booking_limit_hours for machine in self.machines if machine.booking_limit_hours]
        return min(limits) if limits else None


# The sizings `search_clusters` shares: the same workload on the same shape of machine (with the same GPU
# architecture: MXFP4 experts load at its kernel's sizes) sizes the same, in the same words, whatever the
# site. A few hundred sites come to a few dozen shapes, each worth a vLLM budget with its words; the shapes
# a process asks about repeat from answer to answer.
SHARED_NEEDS = 1024


@lru_cache(maxsize=SHARED_NEEDS)
def _shared_need(words: str, model: LanguageModelSpec, precision: int, kv_bits: int, context: int,
                 requests: int, gpus_per_machine: int, machines: int, usable_bytes: int,
                 utilization: Fraction, release: VllmRelease = DEFAULT_RELEASE,
                 gpu: GpuArchitecture | None = None) -> ClusterNeed | str:
    """`cluster_need`, or why vLLM refuses the split; `words`: the language its texts are written in."""
    try:
        return cluster_need(model, precision, kv_bits, context, requests, gpus_per_machine=gpus_per_machine,
                            machines=machines, usable_bytes=usable_bytes, utilization=utilization,
                            release=release, gpu=gpu)
    except SizingError as error:
        return error.message


def release_on(release: VllmRelease, gpu_type: str, gpus_per_machine: int) -> VllmRelease:
    """The release a cluster of `gpu_type` machines is sized under: the interconnect asked, else, where
    each machine splits the model over its GPUs, what its GPU type's are connected by
    (`vllm_interconnect.interconnect_of_gpu`), as a single machine of the type is fitted."""
    if release.interconnect is not None or gpus_per_machine < 2:
        return release
    return replace(release, interconnect=interconnect_of_gpu(gpu_type))


def plan_of(model: LanguageModelSpec, precision: int, kv_bits: int, context: int, requests: int,
            site: ClusterSite, *, utilization: Fraction | None = None,
            release: VllmRelease = DEFAULT_RELEASE) -> ClusterPlan | str:
    """Every machine `site` lists as one cluster (pipeline parallel = their number), or why vLLM does
    not serve the workload on them (a split it refuses, or more than its budget per GPU)."""
    utilization = release.utilization if utilization is None else utilization
    need = _shared_need(language(), model, precision, kv_bits, context, requests, site.gpu_count,
                        len(site.machine_ids), site.usable_memory_mib * MIB, utilization,
                        release_on(release, site.gpu_type, site.gpu_count), site.gpu_architecture)
    if isinstance(need, str):
        return need
    if not need.fits:
        return over_budget_words(len(site.machine_ids), site.gpu_count, site.gpu_type, need)
    return _plan(model, precision, kv_bits, context, requests, site, need)


def over_budget_words(machines: int, gpus_per_machine: int, gpu_type: str, need: ClusterNeed) -> str:
    """Why a cluster of this shape does not hold the workload: its need per GPU over vLLM's budget."""
    return gettext(
        "%(machines)s machines of %(gpus)s × %(gpu)s need %(need)s per GPU for this workload, more than "
        "vLLM's budget of %(budget)s."
    ) % {"machines": machines, "gpus": gpus_per_machine, "gpu": gpu_type, "need": fmt_gib(need.need_bytes),
         "budget": fmt_gib(need.budget_bytes)}


def _plan(model: LanguageModelSpec, precision: int, kv_bits: int, context: int, requests: int,
          site: ClusterSite, need: ClusterNeed) -> ClusterPlan:
    return ClusterPlan(site=site, need=need, model=model, precision=precision, kv_bits=kv_bits,
                       context=context, requests=requests)


def cluster_confidence(precision: int, tp: int, pp: int) -> tuple[str, tuple[str, ...]]:
    """A cluster is rated low: besides what rates one machine's split medium, the pipeline across machines
    adds buffers and a network path no machine of it has been measured with."""
    reasons = [
        gettext(
            "split over %(gpus)s GPUs on %(machines)s machines: the communication buffers of tensor and "
            "pipeline parallelism are estimated from the engine's code, not measured on these machines"
        ) % {"gpus": tp * pp, "machines": pp},
        gettext(
            "the pipeline's stages talk over the network between machines: whether the engine starts and "
            "how fast it serves depends on the interconnect, which Node Lodge does not test"
        ),
    ]
    if precision in (8, 4):
        reasons.append(gettext(
            "%(bits)s-bit weights: quantized, so the real footprint depends on the quantization format"
        ) % {"bits": precision})
    reasons.append(gettext("%(count)s reasons for medium together make it low") % {"count": len(reasons)})
    return "low", tuple(reasons)


def cluster_words(site: ClusterSite, need: ClusterNeed, stages: tuple[int, ...]) -> tuple[str, ...]:
    tp, pp = need.tensor_parallel, need.pipeline_parallel
    return (
        gettext(
            "Tensor parallel %(tp)s within each machine: every layer's weights and attention heads split "
            "over its %(tp)s GPUs, which exchange partial results twice per layer; that stays on the "
            "machine's own GPU links (NVLink or Infinity Fabric)."
        ) % {"tp": tp},
        gettext(
            "Pipeline parallel %(pp)s across machines: each machine holds a stage of consecutive layers "
            "(%(stages)s) and sends its activations to the next every step, so the machines need the "
            "site's %(interconnect)s at %(gbps)s Gb/s between them (at least %(least)s Gb/s RDMA: over "
            "ordinary Ethernet each step waits on the network)."
        ) % {"pp": pp, "stages": " + ".join(str(count) for count in stages),
             "interconnect": INTERCONNECT_WORDS.get(site.interconnect, site.interconnect),
             "gbps": site.interconnect_gbps, "least": MIN_CLUSTER_GBPS},
        *([gettext(
            "Each machine's %(tp)s GPUs taken to be connected by %(interconnect)s: its split adds %(bytes)s "
            "per GPU of NCCL and all-reduce buffers.") % {
            "tp": tp, "interconnect": interconnect_label(need.budget.settings.interconnect),
            "bytes": fmt_gib(need.budget.settings.split_cost.bytes)}] if tp > 1 else []),
        gettext(
            "Sized as vLLM %(version)s starts on each GPU: the busiest stage's share of the weights and of "
            "the KV cache, one prefill step's activation peak and the buffers, within "
            "gpu_memory_utilization × the GPU's memory as CUDA reports it (%(budget)s of %(usable)s)."
        ) % {"version": need.budget.settings.version.text, "budget": fmt_gib(need.budget_bytes),
             "usable": fmt_gib(need.usable_bytes)},
        gettext("All machines of a cluster must be booked together: with one missing the model does not "
                "start."),
    )


INTERCONNECT_WORDS = {"infiniband": "InfiniBand", "roce": "RoCE"}


class ClusterAlternative(NamedTuple):
    """What runs on a cluster's GPUs and fits them where the asked weights or KV cache do not run there:
    its precision and KV cache and their commands."""

    precision: int
    kv_bits: int
    half: bool
    vllm: tuple[str, ...]
    sglang: tuple[str, ...]
    sglang_note: str | None


class ClusterCommands(NamedTuple):
    """A cluster's start commands, each only where it starts on the cluster's GPUs (`sizing.engine_support`):
    vLLM over Ray (head, workers, serve) and SGLang (one per node), why there is no SGLang command, and,
    where the asked weights or KV cache do not run under vLLM on these GPUs, why (`gpu_support_text`) and
    what runs there and fits instead."""

    vllm: tuple[str, ...]
    sglang: tuple[str, ...]
    sglang_note: str | None
    runs_on_gpu: bool = True
    gpu_support_text: str | None = None
    alternative: ClusterAlternative | None = None


def cluster_commands(model: LanguageModelSpec, need: ClusterNeed, context: int, requests: int,
                     gpu: GpuArchitecture | None, gpu_type: str) -> ClusterCommands:
    """The commands that start the asked workload on the cluster's `gpu_type` GPUs (architecture `gpu`),
    or, where vLLM cannot run it there, why and the commands of the nearest precision and KV cache that run
    there and fit."""
    if not model.hf_id:
        return ClusterCommands((), (), gettext(
            "The catalog names no Hugging Face checkpoint for this model."))
    asked = support_for(VLLM, model, need.budget.precision, need.budget.kv_bits, gpu)
    if asked.runs:
        return ClusterCommands(*_engine_commands(model, need, context, requests, gpu, gpu_type))
    found = _runnable_need(model, need, context, requests, gpu)
    alternative = None
    if found is not None:
        other, flags = found
        alternative = ClusterAlternative(other.budget.precision, other.budget.kv_bits, bool(flags),
                                         *_engine_commands(model, other, context, requests, gpu, gpu_type))
    choice = None if alternative is None else (alternative.precision, alternative.kv_bits)
    words = (refusal_words(VLLM, gpu_type, gpu, asked.refused) + " "
             + alternative_words(choice, alternative is not None and alternative.half, commands=3))
    return ClusterCommands((), (), None, runs_on_gpu=False, gpu_support_text=words, alternative=alternative)


def _runnable_need(model: LanguageModelSpec, need: ClusterNeed, context: int, requests: int,
                   gpu: GpuArchitecture | None) -> tuple[ClusterNeed, tuple[str, ...]] | None:
    """The same cluster's need at the first of `runnable_choices` that fits it, with its dtype flags."""
    budget = need.budget
    for precision, kv_bits in runnable_choices(VLLM, model, budget.precision, budget.kv_bits, gpu):
        try:
            other = cluster_need(model, precision, kv_bits, context, requests,
                                 gpus_per_machine=need.tensor_parallel, machines=need.pipeline_parallel,
                                 usable_bytes=need.usable_bytes,
                                 utilization=budget.settings.gpu_memory_utilization,
                                 release=budget.settings.release, gpu=gpu)
        except SizingError:
            continue
        if other.fits:
            return other, support_for(VLLM, model, precision, kv_bits, gpu).dtype_flags
    return None


def _engine_commands(model: LanguageModelSpec, need: ClusterNeed, context: int, requests: int,
                     gpu: GpuArchitecture | None, gpu_type: str
                     ) -> tuple[tuple[str, ...], tuple[str, ...], str | None]:
    """vLLM over Ray and SGLang for a need whose weights and KV cache vLLM runs on these GPUs; SGLang's
    only where SGLang takes the split, the weights and the GPU."""
    hf_id = cast(str, model.hf_id)  # asked only of a model with a checkpoint
    tp, pp = need.tensor_parallel, need.pipeline_parallel
    budget = need.budget
    flags = support_for(VLLM, model, budget.precision, budget.kv_bits, gpu).dtype_flags
    serve = serve_command(hf_id, budget, max_num_seqs=requests, max_model_len=context, dtype_flags=flags,
                          model_flags=model_flags(model))
    vllm = (
        f"ray start --head --port={RAY_PORT}",
        f"ray start --address=<head>:{RAY_PORT}",
        f"{serve} --distributed-executor-backend ray",
    )
    heads = model_value(model, "attention_heads")
    if heads % (tp * pp):
        return vllm, (), gettext(
            "SGLang's --tp spans every GPU of the cluster (%(gpus)s), which must divide the model's "
            "%(heads)s attention heads: it does not, so SGLang cannot serve this split."
        ) % {"gpus": tp * pp, "heads": heads}
    if budget.quantization not in (None, "fp8"):
        return vllm, (), gettext(
            "The weights are sized as vLLM quantizes them in flight (--quantization %(flag)s): no SGLang "
            "command for that."
        ) % {"flag": budget.quantization}
    sglang_support = support_for(SGLANG, model, budget.precision, budget.kv_bits, gpu)
    if not sglang_support.runs:
        return vllm, (), refusal_words(SGLANG, gpu_type, gpu, sglang_support.refused)
    sglang_flags = [*model_flags(model), *sglang_support.dtype_flags, f"--context-length {context}"]
    if budget.quantization:
        sglang_flags.append(f"--quantization {budget.quantization}")
    if budget.kv_bits == 8:
        sglang_flags.append("--kv-cache-dtype fp8_e5m2")
    if yarn_override(budget, context) is not None and budget.yarn is not None:
        # SGLang reads the override in the config's own names (Qwen's model cards show it so).
        sglang_flags.append("--json-model-override-args '" + json.dumps({"rope_scaling": {
            "rope_type": "yarn", "factor": float(budget.yarn.factor),
            "original_max_position_embeddings": budget.yarn.original_context,
        }}, separators=(", ", ": ")) + "'")
    sglang = tuple(
        f"python -m sglang.launch_server --model-path {hf_id} --tp {tp * pp} --nnodes {pp} "
        f"--node-rank {rank} --dist-init-addr <head>:{SGLANG_INIT_PORT} {' '.join(sglang_flags)}"
        for rank in range(pp)
    )
    return vllm, sglang, None
