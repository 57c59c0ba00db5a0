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
from dataclasses import dataclass, replace
from typing import cast

from . import i18n
from .breakdown import Breakdown
from .calculators.vllm_interconnect import interconnect_of_gpu
from .engine_support import gpu_architecture
from .i18n import format_number, gettext
from .kinds import KindSpace
from .limits import MAX_GPUS_PER_MACHINE
from .offers import MachineOffer
from .units import MIB, fmt_gib

TIGHT_HEADROOM_FRACTION = 0.10

# Where the need depends on the kind of GPU (`Breakdown.gpu_kinds`: vLLM's MXFP4 experts, vLLM's split by
# what the GPUs are connected by; `sizing.kinds`), each machine is fitted at its own kind's need. The
# thresholds the database decides fit by (`fit_thresholds`) then give each kind a range of memory of its
# own: a machine of kind k counts as its memory plus k × KIND_MEMORY_STEP, each kind's thresholds are
# raised alike, and a pair that no machine can use (NO_FIT_GPUS) closes each range above the first, so a
# machine fits by its own kind's thresholds alone. Memory per GPU is below MEMORY_BEYOND_ANY MiB on every
# machine (an integer column): a need past it fits nowhere, and is written as it.
KIND_MEMORY_STEP = 2**32
MEMORY_BEYOND_ANY = 2**31
NO_FIT_GPUS = MAX_GPUS_PER_MACHINE + 1


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
    one dictionary lookup per machine once the few distinct shapes are known. Where the need depends on
    the kind of GPU (`Breakdown.gpu_kinds`), a machine is fitted at its own kind's need (`fit_offer`),
    each kind's planned on first use."""

    def __init__(self, breakdown: Breakdown):
        self.breakdown = breakdown
        self.heads = breakdown.splittable_over_heads
        self._need_by_gpus: dict[int, int] = {1: breakdown.bytes_per_gpu(1)}
        self._fits: dict[tuple[int, int], Fit | None] = {}
        self._kinds: dict[int, FitPlanner] = {0: self}
        self._by_kind = bool(breakdown.kind_space())
        self._words: dict[int, str | None] = {}
        # Each GPU type's kind, read once: (name, architecture, compute capability) -> kind.
        self._kind_of: dict[tuple[str, str, str], int] = {}

    def fit_offer(self, offer: MachineOffer) -> Fit | None:
        """How the workload fits on `offer`, at the need of its kind of GPU (None: it does not, or the
        machine's memory is unknown)."""
        if offer.memory_per_gpu_mib is None:
            return None
        if not self._by_kind:  # one need on every GPU: no architecture to read
            return self.fit(offer.memory_per_gpu_mib, offer.free_gpus)
        return self.of_kind(self.kind_of(offer)).fit(offer.memory_per_gpu_mib, offer.free_gpus)

    def kind_of(self, offer: MachineOffer) -> int:
        """Which of the breakdown's kinds of GPU `offer` is: its GPU's kernel (from the architecture) and
        what its GPUs are connected by (from the GPU type's name)."""
        key = (offer.gpu_type, offer.gpu_architecture, offer.gpu_compute_capability)
        kind = self._kind_of.get(key)
        if kind is None:
            gpu = gpu_architecture(offer.gpu_architecture, offer.gpu_compute_capability)
            kind = self._kind_of[key] = self.breakdown.gpu_kind(gpu, interconnect_of_gpu(offer.gpu_type))
        return kind

    def of_kind(self, kind: int) -> FitPlanner:
        """The planner of the need on GPUs of `kind` (this one for kind 0)."""
        if kind not in self._kinds:
            self._kinds[kind] = FitPlanner(self.breakdown.gpu_kinds()[kind])
        return self._kinds[kind]

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
        fit = self._fit_at(memory, free_gpus)
        if fit is None:
            return None
        if fit.gpus_used not in self._words:
            self._words[fit.gpus_used] = self.breakdown.fit_words(fit.gpus_used)
        words = self._words[fit.gpus_used]
        return fit if words is None else replace(fit, why_gpus=f"{fit.why_gpus}; {words}")

    def _fit_at(self, memory: int, free_gpus: int) -> Fit | None:
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
                        # the layers do not split evenly: the need is the one GPU needing the most
                        else gettext("on %(gpus)s GPUs one would need %(need)s") % {
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
    """How `breakdown` fits on `offer` (at its kind of GPU's need), or None when it does not (or the
    machine's memory is unknown: the caller counts that as "memory unknown", not as too small)."""
    return FitPlanner(breakdown).fit_offer(offer)


def fit_thresholds(
    breakdown: Breakdown, max_gpus: int = MAX_GPUS_PER_MACHINE, space: KindSpace | None = None
) -> tuple[tuple[int, int], ...]:
    """(GPUs, MiB per GPU) pairs, fewest GPUs first, that decide fit without the engine.

    A machine with m MiB per GPU and f free GPUs fits on the first pair (n, t) with m >= t, using n
    GPUs, when f >= n; when f < n it does not fit at all. Why: need per GPU falls as the GPU count
    grows, so the first pair whose memory the machine reaches is the fewest GPUs it could use, and
    every later pair asks for even more free GPUs. Counts that never lower the need are left out.
    The catalog turns these pairs into SQL (memory bands, a CASE expression); `FitPlanner` is the
    reference, and tests check the two agree.

    Where the need depends on the kind of GPU (`Breakdown.gpu_kinds`), the pairs are every kind's, each
    in its own range of memory (`by_kind`): m is then the machine's memory raised for its kind
    (`kind_memory`). `space` (None: the breakdown's own, `Breakdown.kind_space`) numbers the kinds; a
    wider one than the breakdown's, shared with other needs (`thresholds_alike`), gives each of its kinds
    the thresholds of the breakdown's kind that GPU is.
    """
    own = breakdown.kind_space()
    space = own if space is None else space
    planned = _thresholds(breakdown, max_gpus)
    if not space:
        return planned[0]
    return by_kind(tuple(planned[own.index(*space.places(kind))] for kind in range(space.size)))


def kind_space_of(breakdowns: Sequence[Breakdown]) -> KindSpace:
    """The kinds of GPU several needs read against one memory tell apart: those any of them does."""
    space = KindSpace()
    for breakdown in breakdowns:
        space = space.union(breakdown.kind_space())
    return space


def thresholds_alike(breakdowns: Sequence[Breakdown]) -> tuple[tuple[tuple[int, int], ...], ...]:
    """`fit_thresholds` of each of several needs read against one memory: where some are by kind of GPU,
    every one in the kinds of all of them (`kind_space_of`), so each reads a machine at the same kind's
    memory; as they are otherwise."""
    space = kind_space_of(breakdowns)
    return tuple(fit_thresholds(breakdown, space=space) for breakdown in breakdowns)


def _thresholds(breakdown: Breakdown, max_gpus: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """The thresholds of each of the breakdown's kinds of GPU (`gpu_kinds`), in their order."""
    counts = [gpus for gpus in range(1, max_gpus + 1) if breakdown.can_split_over(gpus)]
    # Bytes alone: a need by kind of GPU sizes each kind at every GPU count (nine kinds for MXFP4
    # experts split under vLLM, `bytes_per_gpu_by_kind`), and the words of those sizings are never read.
    with i18n.words_unread():
        needs = breakdown.bytes_per_gpu_by_kind(counts)
    return tuple(_falling(counts, kind_needs) for kind_needs in needs)


def _falling(counts: Sequence[int], needs: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """(GPUs, MiB per GPU) of each count in `counts` whose need (`needs`, in bytes) is below every fewer
    count's."""
    pairs: list[tuple[int, int]] = []
    for gpus, need_bytes in zip(counts, needs, strict=True):
        need_mib = -(-need_bytes // MIB)  # ceiling: memory is whole MiB
        if not pairs or need_mib < pairs[-1][1]:
            pairs.append((gpus, need_mib))
    return tuple(pairs)


def by_kind(kinds: Sequence[tuple[tuple[int, int], ...]]) -> tuple[tuple[int, int], ...]:
    """One set of thresholds from each kind's (kind k the k-th): the last kind's first, each raised by
    its kind's range of memory and its range closed below by a pair no machine uses, so a machine of
    kind k (at `kind_memory`) meets kind k's pairs alone. A need past any memory is written as
    MEMORY_BEYOND_ANY, within its kind's range."""
    pairs: list[tuple[int, int]] = []
    for kind in range(len(kinds) - 1, -1, -1):
        base = kind * KIND_MEMORY_STEP
        pairs += [(gpus, base + min(need, MEMORY_BEYOND_ANY)) for gpus, need in kinds[kind]]
        if kind:
            pairs.append((NO_FIT_GPUS, base))
    return tuple(pairs)


def is_by_kind(thresholds: Sequence[tuple[int, int]]) -> bool:
    """Whether `thresholds` are by kind of GPU (`by_kind`), read at `kind_memory`."""
    return any(gpus == NO_FIT_GPUS for gpus, _ in thresholds)


def kind_memory(memory_per_gpu_mib: int, kind: int) -> int:
    """A machine's memory as thresholds by kind read it (`by_kind`)."""
    return memory_per_gpu_mib + kind * KIND_MEMORY_STEP


def lowest_memory(thresholds: Sequence[tuple[int, int]]) -> int:
    """The least memory per GPU on which some GPU count fits, whatever the kind of GPU."""
    return min(need % KIND_MEMORY_STEP for gpus, need in thresholds if gpus != NO_FIT_GPUS)


def gpus_used_by_thresholds(
    thresholds: Sequence[tuple[int, int]], memory_per_gpu_mib: int, free_gpus: int
) -> int | None:
    """What the SQL built from `fit_thresholds` computes for one machine (None: it does not fit)."""
    found = band_of(thresholds, memory_per_gpu_mib, free_gpus)
    return None if found is None else thresholds[found][0]


def band_of(thresholds: Sequence[tuple[int, int]], memory_per_gpu_mib: int, free_gpus: int) -> int | None:
    """The place in `thresholds` of the pair a machine fits by (None: it does not fit)."""
    for index, (gpus, need_mib) in enumerate(thresholds):
        if memory_per_gpu_mib >= need_mib:
            return index if free_gpus >= gpus else None
    return None
