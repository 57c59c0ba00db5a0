"""How much one machine holds of a model served for inference: the most concurrent requests at the asked
context, the longest context at the asked requests (capped by the model's longest), and, under vLLM, the
command that starts the engine. Asked of the machines an answer shows, against the same need that decided
their fit: the transformers estimate's items, or vLLM's budget at the machine's split."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cached_property
from typing import cast

from .architectures import cache_groups
from .calculators.items import MARGIN, RUNTIME_BYTES, TENSOR_PARALLEL_BUFFER_BYTES, weight_items
from .calculators.llamacpp import (
    LlamaCppNeed,
    LlamaCppSettings,
    engine_command,
    gguf_file_name,
    llamacpp_need,
    wizard_quant_type,
    wizard_settings,
)
from .calculators.llamacpp_builds import NOT_GIVEN, LlamaCppBuild
from .calculators.prefill import prefill_activation_bytes
from .calculators.sglang import MAX_RUNNING_REQUESTS, sglang_pool
from .calculators.sglang import wizard_settings as sglang_wizard_settings
from .calculators.vllm import (
    DEFAULT_UTILIZATION,
    DRIVER_RESERVED_BYTES,
    GGUF_ENGINES,
    VllmBudget,
    VllmSettings,
    model_flags,
    serve_command,
    vllm_budget,
)
from .calculators.vllm_interconnect import DEFAULT_INTERCONNECT
from .calculators.vllm_versions import DEFAULT_RELEASE, VllmRelease
from .engine_support import SGLANG, VLLM, GpuArchitecture, RunnableAlternative, runnable_choices, support_for
from .errors import SizingError
from .kv_cache import is_plain
from .limits import MAX_CONTEXT, MAX_REQUESTS
from .specs import LanguageModelSpec, PublishedGguf


@dataclass(frozen=True)
class MachineCapacity:
    max_requests_at_context: int
    max_context_at_requests: int
    command: str | None = None  # only one that starts on the machine's GPU
    # Under vLLM: whether the asked weights and KV cache run on the GPU (None where not asked), what does
    # not (`sizing.engine_support` codes) and, when they do not, what runs there and fits instead.
    runs_on_gpu: bool | None = None
    refused: tuple[str, ...] = ()
    alternative: RunnableAlternative | None = None
    # Under llama.cpp or Ollama: the GGUF type and file the row assumes, and whether that file is published.
    quantization: str | None = None
    gguf_file: str | None = None
    gguf_published: bool | None = None


@dataclass(frozen=True)
class Capacity:
    """The questions a machine row answers, for one sized query."""

    spec: LanguageModelSpec
    precision: int
    kv_bits: int
    context: int
    requests: int
    engine: str = "transformers"
    utilization: Fraction = DEFAULT_UTILIZATION
    quantization: str | None = None  # llama.cpp and Ollama: the GGUF type asked (None: the precision's)
    # The model's published GGUF files: part of what a row's answer is kept by (`_held`), as the spec
    # compares without them and staff may edit them.
    published: tuple[PublishedGguf, ...] = ()
    release: VllmRelease = DEFAULT_RELEASE  # under vLLM: the release asked and its switches
    # under llama.cpp the build asked, under Ollama the release (the logits reserved, the cache's layout)
    build: LlamaCppBuild = NOT_GIVEN
    flash_attention: bool = True  # llama.cpp and Ollama: -fa, OLLAMA_FLASH_ATTENTION
    kv_unified: bool = False  # llama.cpp: --kv-unified, one KV pool the slots share
    gpu_layers: int | None = None  # llama.cpp's -ngl, Ollama's num_gpu; None: every layer and the head

    @cached_property
    def weights_bytes(self) -> int:
        """The transformers estimate's weight items, summed once for every machine asked."""
        items, _words, _stored = weight_items(self.spec, self.precision)
        return sum(item.bytes for item in items)

    @property
    def longest(self) -> int:
        """The model's longest context (with its documented YaRN scaling), within the longest any query
        may ask (Llama 4 Scout's 10,485,760 tokens are past it)."""
        return min(self.spec.longest_context or MAX_CONTEXT, MAX_CONTEXT)

    def on_machine(self, gpus: int, memory_bytes: int, gpu: GpuArchitecture | None = None,
                   interconnect: str | None = None) -> MachineCapacity:
        """What `gpus` GPUs of `memory_bytes` each hold, of architecture `gpu` (None: not recorded, where
        no command is offered), connected by `interconnect` (the machine's GPU type's, read under vLLM
        where the query asks none; None: the query's). Each answer asks it of the few shapes it shows,
        and the next answers ask the same again: kept per process (`_held`, pure and bounded)."""
        capacity = self
        if (self.engine == VLLM and gpus > 1 and interconnect not in (None, DEFAULT_INTERCONNECT)
                and self.release.interconnect is None):
            capacity = replace(self, release=replace(self.release, interconnect=interconnect))
        return _held(capacity, gpus, memory_bytes, gpu if self.engine in (VLLM, SGLANG) else None)

    def _on_machine(self, gpus: int, memory_bytes: int, gpu: GpuArchitecture | None) -> MachineCapacity:
        if self.engine == VLLM:
            return self._vllm(gpus, memory_bytes, gpu)
        if self.engine in GGUF_ENGINES:
            return self._gguf(gpus, memory_bytes)
        if self.engine == SGLANG:
            return self._sglang(gpus, memory_bytes, gpu)
        need = _TransformersNeed(self.spec, self.weights_bytes, self.kv_bits, gpus)
        return MachineCapacity(
            max_requests_at_context=_largest(lambda r: need(self.context, r) <= memory_bytes, MAX_REQUESTS),
            max_context_at_requests=_largest(lambda c: need(c, self.requests) <= memory_bytes, self.longest),
        )

    def _vllm(self, gpus: int, memory_bytes: int, gpu: GpuArchitecture | None) -> MachineCapacity:
        """`memory_bytes` is the machine's figure (nvidia-smi's); vLLM budgets from what CUDA reports. The
        command is offered only where the GPU runs it (`sizing.engine_support`); elsewhere the nearest
        precision and KV cache that run there and fit, with theirs."""
        memory_bytes -= DRIVER_RESERVED_BYTES
        if memory_bytes < 1:
            return MachineCapacity(0, 0, None)
        budget = self._budget(self.precision, self.kv_bits, gpus, memory_bytes, self.longest, gpu)
        requests = min(budget.max_requests_at_context(self.context), MAX_REQUESTS)
        context = budget.max_context_at_requests(self.requests)
        asked = support_for(VLLM, self.spec, self.precision, self.kv_bits, gpu)
        if asked.runs:
            command = self._command(budget, asked.dtype_flags)
            return MachineCapacity(requests, context, command, runs_on_gpu=True)
        return MachineCapacity(requests, context, None, runs_on_gpu=False, refused=asked.refused,
                               alternative=self._alternative(gpus, memory_bytes, gpu))

    def _budget(self, precision: int, kv_bits: int, gpus: int, memory_bytes: int,
                max_model_len: int, gpu: GpuArchitecture | None) -> VllmBudget:
        return vllm_budget(self.spec, precision, kv_bits, VllmSettings(
            **self.release.settings(),  # type: ignore[arg-type]
            gpu_memory_bytes=memory_bytes, tensor_parallel=gpus, gpu_memory_utilization=self.utilization,
            max_model_len=max_model_len, max_num_seqs=self.requests, gpu=gpu,
        ))

    def _command(self, budget: VllmBudget, dtype_flags: tuple[str, ...]) -> str | None:
        if not self.spec.hf_id:
            return None
        return serve_command(self.spec.hf_id, budget, max_num_seqs=self.requests, max_model_len=self.context,
                             dtype_flags=dtype_flags, model_flags=model_flags(self.spec))

    def _alternative(self, gpus: int, memory_bytes: int,
                     gpu: GpuArchitecture | None) -> RunnableAlternative | None:
        """The first of `runnable_choices` whose command starts on these GPUs at the asked context and
        requests (its budget sized at --max-model-len = the asked context, as its command sets it)."""
        for precision, kv_bits in runnable_choices(VLLM, self.spec, self.precision, self.kv_bits, gpu):
            try:
                budget = self._budget(precision, kv_bits, gpus, memory_bytes, self.context, gpu)
            except SizingError:  # a split this precision's model refuses
                continue
            if not budget.fit(self.context, self.requests)[0]:
                continue
            flags = support_for(VLLM, self.spec, precision, kv_bits, gpu).dtype_flags
            return RunnableAlternative(
                precision=precision, kv_bits=kv_bits, half=bool(flags), command=self._command(budget, flags),
                max_requests_at_context=min(budget.max_requests_at_context(self.context), MAX_REQUESTS),
                max_context_at_requests=budget.max_context_at_requests(self.requests),
            )
        return None


    def _gguf(self, gpus: int, memory_bytes: int) -> MachineCapacity:
        """Under llama.cpp or Ollama (`sizing.calculators.llamacpp`): `memory_bytes` is the machine's
        figure, each GPU holding the layers llama.cpp gives it of those -ngl puts on the GPUs (every layer
        where not asked; the rest in host memory); llama.cpp runs on every GPU the catalog lists."""

        def need(context: int, requests: int) -> LlamaCppNeed | None:
            return _gguf_need(self.spec, wizard_settings(
                self.precision, context, requests, self.kv_bits, self.quantization, self.build, self.engine,
                flash_attention=self.flash_attention, kv_unified=self.kv_unified, gpu_layers=self.gpu_layers))

        def holds(context: int, requests: int) -> bool:
            found = need(context, requests)
            return found is not None and found.holds(gpus, memory_bytes)

        quant_type = wizard_quant_type(self.precision, self.quantization)
        file = gguf_file_name(self.spec, quant_type)
        asked = need(self.context, self.requests)
        command = None
        if asked is not None and asked.holds(gpus, memory_bytes):
            command = engine_command(self.engine, asked, file)
        return MachineCapacity(
            max_requests_at_context=_largest(lambda r: holds(self.context, r), MAX_REQUESTS),
            max_context_at_requests=_largest(lambda c: holds(c, self.requests), self.longest),
            command=command, quantization=quant_type, gguf_file=file,
            gguf_published=self.spec.published_gguf(quant_type) is not None,
        )


    def _sglang(self, gpus: int, memory_bytes: int, gpu: GpuArchitecture | None) -> MachineCapacity:
        """Under SGLang (`sizing.calculators.sglang_inference`): the token pool at the wizard's
        mem_fraction_static for --tp gpus on these GPUs (the machine's nvidia-smi figure less what the
        driver keeps); requests and context as the pool holds them; the command only where the pool holds
        the asked requests and the GPU runs SGLang with the asked weights and cache."""
        memory_bytes -= DRIVER_RESERVED_BYTES
        if memory_bytes < 1:
            return MachineCapacity(0, 0, None)
        try:
            pool = sglang_pool(self.spec, self.precision, self.kv_bits,
                               sglang_wizard_settings(memory_bytes, gpus, self.context, self.requests))
        except SizingError:  # a split SGLang refuses
            return MachineCapacity(0, 0, None)
        tokens = pool.kv_cache_tokens
        requests = min(tokens // self.context, MAX_REQUESTS, MAX_RUNNING_REQUESTS)
        context = min(tokens // self.requests, self.longest)
        asked = support_for(SGLANG, self.spec, self.precision, self.kv_bits, gpu)
        holds = tokens >= self.context * self.requests
        if not asked.runs:
            return MachineCapacity(requests, context, None, runs_on_gpu=False, refused=asked.refused)
        command = pool.command(self.spec.hf_id, asked.dtype_flags) if holds and self.spec.hf_id else None
        return MachineCapacity(requests, context, command, runs_on_gpu=True)


@functools.lru_cache(maxsize=4096)
def _held(capacity: Capacity, gpus: int, memory_bytes: int, gpu: GpuArchitecture | None) -> MachineCapacity:
    """`Capacity.on_machine`, kept: the same query (its model's figures included) on the same shape and
    architecture holds the same, so a swap back to an earlier query, or its next page, works none of it
    out again. Its words are written by the caller, in the answer's language."""
    return capacity._on_machine(gpus, memory_bytes, gpu)


@functools.lru_cache(maxsize=4096)
def _gguf_need(spec: LanguageModelSpec, settings: LlamaCppSettings) -> LlamaCppNeed | None:
    """llama.cpp's need under `settings`, None past the engine's limits; kept, because an answer's
    capacity searches ask the same settings of every machine shape (a shape's GPUs and memory only decide
    whether the need fits): about 40 needs a shape, over a few dozen shapes, a few milliseconds each."""
    try:
        return llamacpp_need(spec, settings)
    except SizingError:  # past the engine's limits: nothing holds it
        return None


def _largest(holds: Callable[[int], bool], upper: int) -> int:
    """The largest n in 1..upper for which holds(n) (holds falls from true to false as n grows); 0 if none."""
    if not holds(1):
        return 0
    if holds(upper):
        return upper
    low, high = 1, upper
    while high - low > 1:
        middle = (low + high) // 2
        if holds(middle):
            low = middle
        else:
            high = middle
    return low


class _TransformersNeed:
    """The transformers estimate's need per GPU (`Breakdown.bytes_per_gpu`) for any context and request
    count, in bytes only: weights, KV cache, the 20 % margin, prefill beyond it, runtime and buffers."""

    def __init__(self, spec: LanguageModelSpec, weights_bytes: int, kv_bits: int, gpus: int):
        self.spec, self.kv_bytes, self.gpus = spec, kv_bits // 8, gpus
        self.weights = weights_bytes
        self.plain = is_plain(spec)
        self.fixed = RUNTIME_BYTES + (TENSOR_PARALLEL_BUFFER_BYTES if gpus > 1 else 0)

    def kv(self, context: int, requests: int) -> tuple[int, int]:
        """(the cache that divides over the GPUs, the latent cache every GPU keeps whole)."""
        spec = self.spec
        if self.plain:
            # figures the estimate checked before it made this need
            layers, kv_heads = cast(int, spec.layers), cast(int, spec.kv_heads)
            return 2 * layers * kv_heads * cast(int, spec.head_dim) * self.kv_bytes * context * requests, 0
        shared = whole = 0
        for group in cache_groups(spec, context, self.kv_bytes):
            if group.kind == "latent":
                whole += group.bytes(requests)
            else:
                shared += group.bytes(requests)
        return shared, whole

    def __call__(self, context: int, requests: int) -> int:
        shared, whole = self.kv(context, requests)
        covered = self.weights + shared + whole
        margin = math.ceil(covered * MARGIN)
        excess = max(0, prefill_activation_bytes(self.spec, context * requests, requests) - margin)
        return -(-(self.weights + shared + margin + excess) // self.gpus) + whole + self.fixed
