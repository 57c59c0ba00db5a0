"""The search over sites for clusters: for each site the fewest of its machines that hold the workload
(`search_clusters`), cheapest first, and the sites that cannot form one with the reason. Each cluster is
sized in `sizing.cluster`; the sites are `sizing.cluster_sites`.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from operator import itemgetter
from typing import Any

from .calculators.checks import model_value
from .calculators.vllm_versions import DEFAULT_RELEASE, VllmRelease
from .cluster import ClusterNeed, ClusterPlan, _plan, _shared_need, release_on
from .cluster_sites import ClusterSite
from .engine_support import GpuArchitecture
from .i18n import gettext, language
from .offers import Preferences
from .preferences import breaks_checker
from .specs import LanguageModelSpec
from .units import MIB


@dataclass(frozen=True)
class ClusterSearch:
    """The plans, cheapest first, and the sites that could not form one, each with its reason. A plan is
    made when read: an answer shows ten of a few hundred (`cheapest`)."""

    # (`ClusterSite.order_key`, site, need), in the listing order: its key's first value is the hourly price
    found: tuple[tuple[tuple[Any, ...], ClusterSite, ClusterNeed], ...]
    skipped: tuple[tuple[ClusterSite, str], ...]
    # what the plans were sized for: model, precision, kv_bits, context, requests
    workload: tuple[LanguageModelSpec, int, int, int, int]

    @cached_property
    def plans(self) -> tuple[ClusterPlan, ...]:
        return tuple(self._plan(site, need) for _key, site, need in self.found)

    def cheapest(
        self, preferences: Preferences, count: int
    ) -> tuple[tuple[ClusterPlan, ...], int, tuple[tuple[str, ...], ...]]:
        """The `count` cheapest plans that meet every preference (`sizing.preferences.RULE`, as a machine
        costing the cluster's total per hour would: the price limit and the budget on that total), how
        many do, and the codes each of the others breaks, in the listing order."""
        check = breaks_checker(preferences)
        within, broken = [], []
        for key, site, need in self.found:
            codes = check(site, key[0])
            if codes:
                broken.append(codes)
            else:
                within.append((site, need))
        return tuple(self._plan(site, need) for site, need in within[:count]), len(within), tuple(broken)

    def _plan(self, site: ClusterSite, need: ClusterNeed) -> ClusterPlan:
        return _plan(*self.workload, site, need)


def search_clusters(model: LanguageModelSpec, precision: int, kv_bits: int, context: int, requests: int,
                    sites: Iterable[ClusterSite], *, utilization: Fraction | None = None,
                    release: VllmRelease = DEFAULT_RELEASE) -> ClusterSearch:
    """For each site the fewest of its machines (two or more, cheapest first) whose GPUs hold the model at
    tensor parallel = GPUs per machine × pipeline parallel = machines under vLLM's budget, on the memory
    CUDA reports (`ClusterSite.usable_memory_mib`); `utilization` None: the release's default."""
    utilization = release.utilization if utilization is None else utilization
    # Sites of one shape (GPUs per machine, usable memory, interconnect, GPU architecture: which kernel
    # loads MXFP4 experts) differ only in how many machines they list: per shape, the counts sized so far
    # (walking up from two) and the first that holds the workload or that vLLM refuses, (count, need or why
    # not); None until one is found.
    walked: dict[tuple[int, int, str | None, GpuArchitecture | None], list[Any]] = {}
    too_few: dict[tuple[int, int, str], str] = {}
    words = language()
    found_needs: list[tuple[tuple[Any, ...], ClusterSite, ClusterNeed]] = []
    skipped: list[tuple[ClusterSite, str]] = []
    for site in sites:
        usable = site.usable_memory_mib
        top = min(len(site.machine_ids), model_value(model, "layers"))
        on = release_on(release, site.gpu_type, site.gpu_count)  # its GPU type's interconnect where not asked
        gpu = site.gpu_architecture
        shape = walked.setdefault((site.gpu_count, usable, on.interconnect, gpu), [1, None])
        while shape[1] is None and shape[0] < top:
            shape[0] += 1
            need = _shared_need(words, model, precision, kv_bits, context, requests, site.gpu_count, shape[0],
                                usable * MIB, utilization, on, gpu)  # answers share them too
            if isinstance(need, str) or need.fits:
                shape[1] = (shape[0], need)
        if shape[1] is None or shape[1][0] > top:
            key = (top, site.gpu_count, site.gpu_type)
            if key not in too_few:
                too_few[key] = _too_few_words(site, top)
            skipped.append((site, too_few[key]))
            continue
        found = shape[1][1]
        if isinstance(found, str):
            skipped.append((site, found))
            continue
        found_needs.append((site.order_key(found.pipeline_parallel), site, found))
    found_needs.sort(key=itemgetter(0))  # keys are unique: a site's machine ids are its own
    return ClusterSearch(found=tuple(found_needs), skipped=tuple(skipped),
                         workload=(model, precision, kv_bits, context, requests))


def plan_clusters(model: LanguageModelSpec, precision: int, kv_bits: int, context: int, requests: int,
                  sites: Iterable[ClusterSite], *, utilization: Fraction | None = None,
                  release: VllmRelease = DEFAULT_RELEASE) -> tuple[ClusterPlan, ...]:
    """One plan per site that can hold the workload, cheapest first (`search_clusters`)."""
    return search_clusters(model, precision, kv_bits, context, requests, sites, utilization=utilization,
                           release=release).plans


def _too_few_words(site: ClusterSite, top: int) -> str:
    return gettext("%(count)s machines of %(gpus)s × %(gpu)s do not hold it together.") % {
        "count": top, "gpus": site.gpu_count, "gpu": site.gpu_type}
