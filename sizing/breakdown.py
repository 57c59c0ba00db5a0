"""The result of every calculator: items with filled-in formulas, their bytes, and assumptions."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from .kinds import NO_KINDS, KindSpace
from .units import GIB
from .workloads import Workload, workload

if TYPE_CHECKING:
    from .engine_support import GpuArchitecture


@dataclass(frozen=True)
class Item:
    name: str
    formula: str  # filled in with the model's numbers
    bytes: int
    per_gpu: bool = False  # needed once on every GPU (the CUDA runtime), not split by tensor parallelism

    @property
    def gib(self) -> float:
        return self.bytes / GIB


@dataclass(frozen=True)
class GgufFile:
    """The GGUF file an answer under llama.cpp or Ollama assumes: its quant type, name and size as sized
    (`sizing.gguf`), and where one is published for the model, its repository and listed size."""

    quantization: str
    file: str
    bytes: int
    bits_per_weight: Fraction
    repository: str | None = None  # None: no file in this type is published for the model
    published_bytes: int | None = None

    @property
    def published(self) -> bool:
        return self.repository is not None

    def as_dict(self) -> dict[str, Any]:
        return {"quantization": self.quantization, "file": self.file, "bytes": self.bytes,
                "gib": self.bytes / GIB, "bits_per_weight": round(float(self.bits_per_weight), 4),
                "published": self.published, "repository": self.repository,
                "published_bytes": self.published_bytes}


@dataclass(frozen=True)
class Breakdown:
    """Memory needed for one workload.

    `splittable_over_heads` is the attention-head count when tensor parallelism may split the
    work over several GPUs of one machine (language-model inference); None means one GPU only.
    """

    workload: str  # a code of `sizing.workloads`; its capabilities are `self.capabilities`
    title: str
    items: tuple[Item, ...]
    assumptions: tuple[str, ...]
    precision: int | None = None
    splittable_over_heads: int | None = None
    # llama.cpp splits a model by layers (--split-mode layer): over as many GPUs as it has layers.
    split_by_layers: int | None = None
    confidence_hint: str | None = None  # a workload code whose settings the need depends on
    inputs: dict[str, Any] = field(default_factory=dict)
    # Needed on every GPU only when the work is split over two or more (tensor-parallel buffers).
    split_items: tuple[Item, ...] = ()
    # Inference: what a machine holds at this need (`sizing.capacity.Capacity`); None elsewhere.
    capacity: object | None = None
    # Under llama.cpp or Ollama: the GGUF file assumed; None elsewhere.
    gguf: GgufFile | None = None

    @property
    def capabilities(self) -> Workload | None:
        """What the workload takes and answers (`sizing.workloads.Workload`); None for an unknown code."""
        return workload(self.workload)

    @property
    def total_bytes(self) -> int:
        return sum(item.bytes for item in self.items)

    @property
    def total_gib(self) -> float:
        return self.total_bytes / GIB

    @property
    def shared_bytes(self) -> int:
        return sum(item.bytes for item in self.items if not item.per_gpu)

    @property
    def per_gpu_fixed_bytes(self) -> int:
        return sum(item.bytes for item in self.items if item.per_gpu)

    def bytes_per_gpu(self, gpus: int) -> int:
        """Need on each GPU when split evenly over `gpus` GPUs (weights, cache and margin divide;
        each GPU keeps its own runtime, and a split adds its communication buffers on each)."""
        self.check_gpu_count(gpus)
        split_bytes = sum(item.bytes for item in self.split_items) if gpus > 1 else 0
        # Integer ceiling: a float quotient loses bytes past 2**53 (petabyte needs are valid input).
        return -(-self.shared_bytes // gpus) + self.per_gpu_fixed_bytes + split_bytes

    def check_gpu_count(self, gpus: int) -> None:
        """Refuse a GPU count the need cannot be sized at (`bytes_per_gpu`)."""
        if gpus < 1:
            raise ValueError("gpus must be at least 1")
        if gpus > 1 and not self.can_split_over(gpus):
            raise ValueError(f"cannot split this workload over {gpus} GPUs")

    def bytes_per_gpu_by_kind(self, gpu_counts: Sequence[int]) -> tuple[tuple[int, ...], ...]:
        """`bytes_per_gpu` of each of `gpu_kinds`, in their order, at each of `gpu_counts` (the figures fit
        thresholds are made of). Where the kinds share most of their sizing, a need works that out once
        (`VllmBreakdown`)."""
        return tuple(tuple(kind.bytes_per_gpu(gpus) for gpus in gpu_counts) for kind in self.gpu_kinds())

    def per_gpu_shares(self, gpus: int) -> tuple[tuple[str, int], ...]:
        """Each item's bytes on one of `gpus` GPUs (the per-GPU bar): shared items divide, per-GPU items
        and the split's buffers do not."""
        split_items = self.split_items if gpus > 1 else ()
        return tuple(
            (item.name, item.bytes if item.per_gpu or item in split_items else -(-item.bytes // gpus))
            for item in (*self.items, *split_items)
        )

    def kind_space(self) -> KindSpace:
        """The places of a GPU the need depends on (`sizing.kinds`): none by default."""
        return NO_KINDS

    def gpu_kinds(self) -> tuple[Breakdown, ...]:
        """The need on each kind of GPU of `kind_space`, where it depends on the GPU (vLLM's MXFP4 experts,
        padded for the MoE kernel the GPU runs; a split's buffers under vLLM, by what the GPUs are connected
        by): kind k is the k-th, this need the first. One need alone where it holds on every GPU (the
        default)."""
        return (self,)

    def gpu_kind(self, gpu: GpuArchitecture | None, interconnect: str) -> int:
        """Which of `gpu_kinds` a GPU of architecture `gpu` (None: not recorded) whose machine's GPUs are
        connected by `interconnect` (`sizing.calculators.vllm_interconnect.interconnect_of_gpu` of its GPU
        type) loads the workload as."""
        return 0

    @property
    def layers_on_host(self) -> bool:
        """Whether the answer keeps some of the model's layers (or its output head) in host memory, run on
        the CPU (llama.cpp's -ngl, Ollama's num_gpu short of every layer); False where every layer is on the
        GPUs."""
        return False

    def fit_words(self, gpus: int) -> str | None:
        """What a fit on `gpus` GPUs says besides why that many (None: nothing), such as the kernel its
        kind of GPU loads the weights through or the interconnect its split was sized at."""
        return None

    def can_split_over(self, gpus: int) -> bool:
        if gpus == 1:
            return True
        if self.split_by_layers is not None:
            return gpus <= self.split_by_layers
        heads = self.splittable_over_heads
        return heads is not None and heads % gpus == 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "title": self.title,
            "precision": self.precision,
            "total_gib": self.total_gib,
            "total_bytes": self.total_bytes,
            "items": [
                {"name": i.name, "gib": i.gib, "bytes": i.bytes, "formula": i.formula, "per_gpu": i.per_gpu}
                for i in self.items
            ],
            "assumptions": list(self.assumptions),
            "gguf": self.gguf.as_dict() if self.gguf is not None else None,
            # The engine release the answer assumed (vLLM's as asked, or its current stable; SGLang's).
            "engine_version": self.inputs.get("engine_version"),
        }
