"""Fit (SPEC §4): whether a workload's memory fits on one machine, and on how many of its GPUs.

One GPU when its memory holds the whole need. Otherwise, when the breakdown may be split by tensor
parallelism (`splittable_over_heads`), the fewest GPUs n (2 ≤ n ≤ free GPUs, n ≤ MAX_GPUS_PER_MACHINE)
whose count divides the attention heads and where each GPU holds its share plus its own runtime
and the split's communication buffers (`Breakdown.bytes_per_gpu`).

A margin is tight when the headroom left on the fullest GPU is under TIGHT_HEADROOM_FRACTION (10 %)
of that GPU's memory.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from .breakdown import Breakdown
from .i18n import format_number, gettext
from .offers import MachineOffer
from .units import MIB, fmt_gib

TIGHT_HEADROOM_FRACTION = 0.10
# The most GPUs one machine has, and so the widest split tensor parallelism may use.
MAX_GPUS_PER_MACHINE = 16


@dataclass(frozen=True)
class Fit:
    """How a workload sits on one machine. Byte figures are per GPU; every GPU used carries the same
    share, so the fullest GPU is any of them."""

    gpus_used: int
    need_per_gpu_bytes: int
    memory_per_gpu_bytes: int
    headroom_bytes: int
    headroom_fraction: float
    why_gpus: str

    @property
    def tight(self) -> bool:
        return self.headroom_fraction < TIGHT_HEADROOM_FRACTION


class FitPlanner:
    """Fits one breakdown against many machines. Need per GPU count is computed once per call, and
    fits are shared by machines with the same memory and free-GPU count, so a large fleet costs
    one dictionary lookup per machine once the few distinct shapes are known."""

    def __init__(self, breakdown: Breakdown):
        self.breakdown = breakdown
        self.heads = breakdown.splittable_over_heads
        self._need_by_gpus: dict[int, int] = {1: breakdown.bytes_per_gpu(1)}
        self._fits: dict[tuple[int, int], Fit | None] = {}

    def need(self, gpus: int) -> int:
        need = self._need_by_gpus.get(gpus)
        if need is None:
            need = self._need_by_gpus[gpus] = self.breakdown.bytes_per_gpu(gpus)
        return need

    def fit(self, memory_per_gpu_mib: int, free_gpus: int) -> Fit | None:
        key = (memory_per_gpu_mib, free_gpus)
        if key not in self._fits:
            self._fits[key] = self._compute(memory_per_gpu_mib * MIB, free_gpus)
        return self._fits[key]

    def _compute(self, memory: int, free_gpus: int) -> Fit | None:
        if free_gpus < 1:
            return None
        if self.need(1) <= memory:
            return make_fit(1, self.need(1), memory, gettext("one GPU holds it"))
        layers = self.breakdown.split_by_layers
        if layers is not None:  # llama.cpp splits by layers: any GPU count up to the layers
            for gpus in range(2, min(free_gpus, MAX_GPUS_PER_MACHINE, layers) + 1):
                if self.need(gpus) <= memory:
                    return make_fit(gpus, self.need(gpus), memory, gettext(
                        "split over %(gpus)s GPUs by layers (llama.cpp's --split-mode layer); %(fewer)s"
                    ) % {"gpus": gpus, "fewer": (
                        gettext("one GPU would need %(need)s") % {"need": fmt_gib(self.need(1))} if gpus == 2
                        else gettext("%(gpus)s GPUs would need %(need)s each") % {
                            "gpus": gpus - 1, "need": fmt_gib(self.need(gpus - 1))})})
            return None
        if not self.heads:
            return None
        too_small: list[int] = [1]
        not_dividing: list[int] = []
        for gpus in range(2, min(free_gpus, MAX_GPUS_PER_MACHINE) + 1):
            if self.heads % gpus or not self.breakdown.can_split_over(gpus):  # SGLang: the KV heads too
                not_dividing.append(gpus)
                continue
            if self.need(gpus) <= memory:
                return make_fit(
                    gpus, self.need(gpus), memory, self._why_split(gpus, memory, too_small, not_dividing)
                )
            too_small.append(gpus)
        return None

    def _why_split(self, gpus: int, memory: int, too_small: list[int], not_dividing: list[int]) -> str:
        heads = format_number(cast(int, self.heads))  # a split is explained only where heads are known
        parts = [
            gettext("split over %(gpus)s GPUs by tensor parallelism: %(heads)s attention heads divide by "
                    "%(gpus)s")
            % {"gpus": gpus, "heads": heads}
        ]
        needs = [
            gettext("one GPU would need %(need)s") % {"need": fmt_gib(self.need(1))}
            if n == 1
            else gettext("%(gpus)s GPUs would need %(need)s each") % {
                "gpus": n, "need": fmt_gib(self.need(n))
            }
            for n in too_small
        ]
        parts.append(", ".join(needs) + gettext(", more than %(memory)s") % {"memory": fmt_gib(memory)})
        if len(not_dividing) == 1:
            parts.append(
                gettext("%(gpus)s GPUs skipped: %(heads)s heads not divisible by %(gpus)s")
                % {"gpus": not_dividing[0], "heads": heads}
            )
        elif not_dividing:
            parts.append(
                gettext("%(counts)s GPUs skipped: %(heads)s heads divide by none of them")
                % {"counts": join_words([str(n) for n in not_dividing]), "heads": heads}
            )
        return "; ".join(parts)


def join_words(words: list[str]) -> str:
    """"2, 3 and 5" ("2, 3 und 5" in German)."""
    if len(words) == 1:
        return words[0]
    return gettext("%(first)s and %(last)s") % {"first": ", ".join(words[:-1]), "last": words[-1]}


def make_fit(gpus: int, need: int, memory: int, why: str) -> Fit:
    headroom = memory - need
    return Fit(
        gpus_used=gpus,
        need_per_gpu_bytes=need,
        memory_per_gpu_bytes=memory,
        headroom_bytes=headroom,
        headroom_fraction=headroom / memory if memory else 0.0,
        why_gpus=why,
    )


def fit_on_machine(breakdown: Breakdown, offer: MachineOffer) -> Fit | None:
    """How `breakdown` fits on `offer`, or None when it does not (or the machine's memory is unknown:
    the caller counts that as "memory unknown", not as too small)."""
    if offer.memory_per_gpu_mib is None:
        return None
    return FitPlanner(breakdown).fit(offer.memory_per_gpu_mib, offer.free_gpus)


def fit_thresholds(breakdown: Breakdown, max_gpus: int = MAX_GPUS_PER_MACHINE) -> tuple[tuple[int, int], ...]:
    """(GPUs, MiB per GPU) pairs, fewest GPUs first, that decide fit without the engine.

    A machine with m MiB per GPU and f free GPUs fits on the first pair (n, t) with m >= t, using n
    GPUs, when f >= n; when f < n it does not fit at all. Why: need per GPU falls as the GPU count
    grows, so the first pair whose memory the machine reaches is the fewest GPUs it could use, and
    every later pair asks for even more free GPUs. Counts that never lower the need are left out.
    The catalog turns these pairs into SQL (memory bands, a CASE expression); `FitPlanner` is the
    reference, and tests check the two agree.
    """
    pairs: list[tuple[int, int]] = []
    for gpus in range(1, max_gpus + 1):
        if not breakdown.can_split_over(gpus):
            continue
        need_mib = -(-breakdown.bytes_per_gpu(gpus) // MIB)  # ceiling: memory is whole MiB
        if not pairs or need_mib < pairs[-1][1]:
            pairs.append((gpus, need_mib))
    return tuple(pairs)


def gpus_used_by_thresholds(
    thresholds: Sequence[tuple[int, int]], memory_per_gpu_mib: int, free_gpus: int
) -> int | None:
    """What the SQL built from `fit_thresholds` computes for one machine (None: it does not fit)."""
    for gpus, need_mib in thresholds:
        if memory_per_gpu_mib >= need_mib:
            return gpus if free_gpus >= gpus else None
    return None
