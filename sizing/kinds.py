"""The kinds of GPU a need may depend on (`Breakdown.gpu_kinds`, `sizing.fit.by_kind`), as two places:

- the MoE kernel vLLM loads MXFP4 experts through (`sizing.calculators.vllm_loading.MOE_KERNELS`), read
  from the GPU's architecture and compute capability;
- what a machine's GPUs are connected by (`sizing.calculators.vllm_interconnect.INTERCONNECTS`), read
  from its GPU type's name, where a tensor-parallel split under vLLM costs each GPU what its fabric does
  and the user said no interconnect.

A need that depends on neither has one kind. One that depends on some has a kind per combination of
the places it depends on: `KindSpace` numbers them kernel first, fabric second (kind = kernel × fabrics
+ fabric), a place it does not depend on counted as 0. Several needs read against one memory (an answer's
precisions) share the space of all of them (`union`). The catalog keeps every machine's kind in the
fullest space (`catalog.counting.gpu_kinds`), from which a narrower one is a division or a remainder.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KindSpace:
    """How many kernels and how many fabrics a need's kinds tell apart (1: it does not depend on it)."""

    kernels: int = 1
    fabrics: int = 1

    @property
    def size(self) -> int:
        return self.kernels * self.fabrics

    def __bool__(self) -> bool:
        """Whether there is more than one kind."""
        return self.size > 1

    def index(self, kernel: int, fabric: int) -> int:
        """The kind of a GPU of kernel place `kernel` and fabric place `fabric` (places this space does
        not tell apart read as 0)."""
        return (kernel if self.kernels > 1 else 0) * self.fabrics + (fabric if self.fabrics > 1 else 0)

    def places(self, kind: int) -> tuple[int, int]:
        """(kernel place, fabric place) of `kind`."""
        return divmod(kind, self.fabrics)

    def union(self, other: KindSpace) -> KindSpace:
        """The space that tells apart whatever either does."""
        return KindSpace(max(self.kernels, other.kernels), max(self.fabrics, other.fabrics))


NO_KINDS = KindSpace()
