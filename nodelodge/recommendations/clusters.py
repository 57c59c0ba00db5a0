"""Clusters in an answer: for a language model served for inference, the cheapest clusters of identical
machines (one per site) that hold it under vLLM, when no single machine fits (`clusters=auto`, the
default) or always (`clusters=show`). The catalog groups the machines that may form one
(`catalog.clusters.cluster_sites`), read through the fleet reader as machines are; the sizing engine
plans them (`sizing.cluster_search.search_clusters`) and holds each cluster's total price per hour to the
preferences as a machine's hourly price is held (`sizing.preferences.RULE`: the price limit and the
budget), in the listing order (`sizing.preferences.ORDER`). Each machine is priced as a single row is
under the market preference (the cheapest of the markets it lets in, `sizing.markets.priced_in`) and
names its market; a cluster with interruptible machines says what happens when one is taken back.

An answer that needs no cluster reads no cluster site: the sites are read only past `wants_clusters`.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import cast

from django.utils import timezone
from django.utils.translation import gettext, ngettext

from catalog import rows as catalog_rows
from catalog.clusters import MACHINES_PER_SITE, MIN_MACHINES_PER_SITE, site_of, with_machines
from sizing.calculators.vllm import GGUF_ENGINES
from sizing.cluster import (
    ClusterAlternative,
    ClusterPlan,
    cluster_need,
    over_budget_words,
    plan_of,
    release_on,
)
from sizing.cluster_search import search_clusters
from sizing.errors import SizingError
from sizing.markets import INTERRUPTIBLE, market_name
from sizing.reasons import BREAK_BUDGET, BREAK_MAX_PRICE
from sizing.units import MIB, gib_number, money_string
from sizing.wording.common import per_hour
from sizing.wording.empty import Hint
from sizing.wording.machine import BudgetCover, budget_cover

from .fleet import fleet_reader, preferences_for
from .query import CLUSTERS_SHOW, WorkloadQuery

MAX_CLUSTERS = 10  # the clusters an answer shows: the cheapest, one per site


@dataclass(frozen=True)
class ClusterOffer:
    """One planned cluster with what the asked budget covers of it."""

    plan: ClusterPlan
    cover: BudgetCover | None

    @property
    def hours_covered(self):
        """The hours one booking of the whole cluster runs on the budget, cut at its shortest limit."""
        return self.cover.hours_of_one_booking if self.cover is not None else None

    @property
    def shape(self) -> str:
        site = self.plan.site
        return gettext("%(machines)s × (%(gpus)s × %(gpu)s)") % {
            "machines": len(self.plan.machine_ids), "gpus": site.gpu_count, "gpu": site.gpu_type}

    @property
    def price_text(self) -> str:
        return per_hour(self.plan.price_per_hour)

    @property
    def interruptible_machines(self) -> int:
        """Its machines priced in the interruptible market: the provider may take each back."""
        return sum(machine.market == INTERRUPTIBLE for machine in self.plan.machines)

    @property
    def interruption_note(self) -> str | None:
        """What happens when an interruptible machine of it is taken back (None: it has none)."""
        return cluster_interruption_note(self.interruptible_machines, len(self.plan.machine_ids))

    def to_dict(self, *, details: bool = True) -> dict:
        """The cluster as the API writes it; without `details`, what a table row shows (the
        Clusters panel, whose details are loaded when opened): no items, words or commands."""
        plan, need, site = self.plan, self.plan.need, self.plan.site
        row = {
            "machine_ids": list(plan.machine_ids),
            "provider_machine_ids": [machine.provider_machine_id for machine in plan.machines],
            "provider": site.provider,
            "site": site.site,
            "country": site.country,
            "region": site.region,
            "gpu_type": site.gpu_type,
            "gpus_per_machine": site.gpu_count,
            "machines": len(plan.machine_ids),
            "interconnect": site.interconnect,
            "interconnect_gbps": site.interconnect_gbps,
            "tensor_parallel": plan.tensor_parallel,
            "pipeline_parallel": plan.pipeline_parallel,
            "layers_per_stage": list(plan.layers_per_stage),
            "need_per_gpu_bytes": need.need_bytes,
            "need_per_gpu_gib": gib_number(need.need_bytes),
            "budget_per_gpu_bytes": need.budget_bytes,
            "budget_per_gpu_gib": gib_number(need.budget_bytes),
            "usable_memory_per_gpu_gib": gib_number(need.usable_bytes),
            "price_per_hour": money_string(plan.price_per_hour),
            "machine_prices_per_hour": [money_string(price) for price in plan.machine_prices_per_hour],
            # The market of each machine's price, in the order of `machine_ids` (`sizing.markets`).
            "machine_markets": [machine.market for machine in plan.machines],
            "machine_markets_text": [market_name(machine.market) for machine in plan.machines],
            "interruptible_machines": self.interruptible_machines,
            "interruption_note": self.interruption_note,
            "hours_covered": float(self.hours_covered) if self.hours_covered is not None else None,
            "booking_limit_hours": plan.booking_limit_hours,
            "confidence": plan.confidence,
        }
        if details:
            row.update({
                "items": [_item(item) for item in need.items],
                "outside_budget": [_item(item) for item in need.outside],
                "budget_text": self.cover.text if self.cover is not None else None,
                "confidence_reasons": list(plan.confidence_reasons),
                "assumptions": list(plan.assumptions),
                "vllm_commands": list(plan.vllm_commands),
                "sglang_commands": list(plan.sglang_commands),
                "sglang_note": plan.sglang_note,
                "runs_on_gpu": plan.commands.runs_on_gpu,
                "gpu_support_text": plan.commands.gpu_support_text,
                "alternative": _alternative(plan.commands.alternative),
            })
        return row


def cluster_interruption_note(interruptible: int, machines: int) -> str | None:
    """What happens to a cluster of `machines` machines, `interruptible` of them interruptible, when the
    provider takes one back: every machine holds a pipeline stage, so the model stops on all of them,
    and the others are billed until the cluster is stopped. None where none is interruptible."""
    if not interruptible:
        return None
    return ngettext(
        "%(count)s of its %(machines)s machines is interruptible: if the provider takes it back, the model "
        "stops on the whole cluster (every machine holds a stage of its layers), and the other machines "
        "are billed until you stop the cluster in My launches.",
        "%(count)s of its %(machines)s machines are interruptible: if the provider takes one back, the "
        "model stops on the whole cluster (every machine holds a stage of its layers), and the other "
        "machines are billed until you stop the cluster in My launches.",
        interruptible,
    ) % {"count": interruptible, "machines": machines}


def _alternative(alternative: ClusterAlternative | None) -> dict | None:
    """What runs on a cluster's GPUs instead of the asked, with its commands, as the API writes it."""
    if alternative is None:
        return None
    return {"precision": alternative.precision, "kv_cache_bits": alternative.kv_bits,
            "vllm_commands": list(alternative.vllm), "sglang_commands": list(alternative.sglang),
            "sglang_note": alternative.sglang_note}


def _served(query: WorkloadQuery) -> tuple[int, int, int, int]:
    """(precision, KV-cache bits, context, requests) of a query for a language model served: all set."""
    return cast(int, query.precision), query.kv_bits, cast(int, query.context), cast(int, query.requests)


def _item(item) -> dict:
    return {"name": item.name, "gib": gib_number(item.bytes), "bytes": item.bytes, "formula": item.formula,
            "per_gpu": item.per_gpu}


@dataclass(frozen=True)
class ClusterAnswer:
    """The clusters shown (at most MAX_CLUSTERS, cheapest first) and what the others came to."""

    offers: tuple[ClusterOffer, ...]
    total: int  # clusters within the price limit and the budget
    over_price: int  # clusters planned but over the price limit or the budget
    skipped: tuple[str, ...]  # why a site formed none, once per reason
    over_budget: int = 0  # of those, the clusters within the price limit whose hour the budget does not cover

    @property
    def note(self) -> str | None:
        """A line under the clusters shown: those over the price limit or the budget, or why none was
        planned."""
        if self.over_price:
            over_limit = self.over_price - self.over_budget
            lines = []
            if over_limit:
                lines.append(ngettext(
                    "%(count)s more cluster costs more per hour than the price limit.",
                    "%(count)s more clusters cost more per hour than the price limit.", over_limit,
                ) % {"count": over_limit})
            if self.over_budget:
                lines.append(ngettext(
                    "The budget covers under an hour of %(count)s more cluster.",
                    "The budget covers under an hour of %(count)s more clusters.", self.over_budget,
                ) % {"count": self.over_budget})
            return " ".join(lines)
        if not self.offers and self.skipped:
            return " ".join(self.skipped)
        if not self.offers:
            return gettext("No site has identical machines free that may form a cluster within your "
                           "preferences right now.")
        return None

    def to_dict(self, *, details: bool = True) -> dict:
        return {
            "clusters": [offer.to_dict(details=details) for offer in self.offers],
            "clusters_total": self.total,
            "clusters_over_price": self.over_price,
            "clusters_note": self.note,
        }


NO_CLUSTERS = {"clusters": [], "clusters_total": 0, "clusters_over_price": 0, "clusters_note": None}


def clusters_payload(answer, *, details: bool = True) -> dict:
    """An answer's clusters as the API writes them (none where it planned none); without `details`,
    as the Clusters panel lists them (`ClusterOffer.to_dict`)."""
    return answer.clusters.to_dict(details=details) if answer.clusters is not None else dict(NO_CLUSTERS)


def plans_clusters(query: WorkloadQuery, model_row) -> bool:
    """Whether the query may plan clusters at all: a language model served for inference."""
    # Clusters start vLLM over Ray or SGLang: a llama.cpp or Ollama query is not planned across machines.
    return (query.workload == "inference" and getattr(model_row, "kind", None) == "language"
            and query.engine not in GGUF_ENGINES)


def wants_clusters(query: WorkloadQuery, model_row, machines_total: int) -> bool:
    """Clusters are planned when no single machine fits (auto) or when asked for (show)."""
    if not plans_clusters(query, model_row):
        return False
    return query.clusters == CLUSTERS_SHOW or machines_total == 0


def clusters_for(query: WorkloadQuery, model_row, now: datetime | None = None) -> ClusterAnswer:
    """The cheapest clusters, one per site, that hold the query's model within its preferences (the
    tier, the countries, the price limit and the budget, by the rule single machines meet)."""
    sites = fleet_reader().cluster_sites(query, now or timezone.now())
    if not sites:
        return ClusterAnswer(offers=(), total=0, over_price=0, skipped=())
    spec = catalog_rows.language_model_spec(model_row)
    search = search_clusters(spec, *_served(query), sites, release=query.vllm_release)
    shown, total, broken = search.cheapest(preferences_for(query), MAX_CLUSTERS)
    # The machines' ids for the provider, booking limits and markets: read for the clusters shown only.
    offers = tuple(
        ClusterOffer(plan, budget_cover(query.budget, plan.price_per_hour, plan.booking_limit_hours))
        for plan in with_machines(list(shown), query.market)
    )
    return ClusterAnswer(
        offers=offers, total=total, over_price=len(broken),
        over_budget=sum(BREAK_BUDGET in codes and BREAK_MAX_PRICE not in codes for codes in broken),
        skipped=tuple(dict.fromkeys(reason for _site, reason in search.skipped)),
    )


def cluster_does_not_hold(query: WorkloadQuery, model_row, *, gpu_type: str, gpus_per_machine: int,
                          memory_per_gpu_mib: int, machines: int) -> str | None:
    """Why `machines` machines of `gpus_per_machine` × `gpu_type` do not serve the query's model as a
    cluster now (the planner's own sizing, at exactly that many machines); None when they do. Booking a
    cluster checks this on the server, whatever the client sent."""
    if not plans_clusters(query, model_row):
        return gettext("Only a language model served for inference runs on a cluster.")
    # The GPU type's recorded usable memory and architecture, as its cluster sites read them
    # (`catalog.clusters`): the architecture decides the kernel MXFP4 experts load through.
    recorded = {usable.gpu_type: usable for usable in catalog_rows.gpu_types_usable()}
    gpu_row = recorded.get(gpu_type)
    usable_mib = catalog_rows.usable_memory_mib(memory_per_gpu_mib, gpu_row.mib if gpu_row else None)
    spec = catalog_rows.language_model_spec(model_row)
    try:
        need = cluster_need(spec, *_served(query),
                            gpus_per_machine=gpus_per_machine, machines=machines,
                            usable_bytes=usable_mib * MIB,
                            release=release_on(query.vllm_release, gpu_type, gpus_per_machine),
                            gpu=gpu_row.architecture if gpu_row else None)
    except SizingError as error:
        return error.message
    if need.fits:
        return None
    return over_budget_words(machines, gpus_per_machine, gpu_type, need)


def cluster_machine_ids(text: str) -> list[int] | None:
    """The machine ids a cluster's address names ("12,34"), or None where it names no cluster: fewer
    than two, more than a site lists, or anything but distinct ids."""
    parts = text.split(",") if text else []
    if not MIN_MACHINES_PER_SITE <= len(parts) <= MACHINES_PER_SITE:
        return None
    if not all(part.isascii() and part.isdigit() and len(part) <= 18 for part in parts):
        return None
    ids = [int(part) for part in parts]
    return ids if len(set(ids)) == len(ids) else None


def cluster_offer_of(query: WorkloadQuery, model_row, machine_ids: list[int]) -> ClusterOffer | str:
    """Exactly these machines as one cluster for the query, with what its budget covers (a cluster's
    details page), or why they are none."""
    if not plans_clusters(query, model_row):
        return gettext("Only a language model served for inference runs on a cluster.")
    site = site_of(machine_ids, query.market)
    if site is None:
        return gettext("These machines do not form a cluster: each must exist, may join one, and all must be "
                       "identical machines of one provider at one site.")
    spec = catalog_rows.language_model_spec(model_row)
    plan = plan_of(spec, *_served(query), site, release=query.vllm_release)
    if isinstance(plan, str):
        return plan
    found = with_machines([plan], query.market)  # site_of has just read every one of them
    if not found:  # one was removed, or repriced, between the two reads
        return gettext("These machines changed while they were read; open the cluster again.")
    return ClusterOffer(found[0], budget_cover(query.budget, found[0].price_per_hour,
                                               found[0].booking_limit_hours))


def cluster_constraint(query: WorkloadQuery) -> tuple[str, str]:
    """The clusters input in "Constraints applied"."""
    if query.clusters == CLUSTERS_SHOW:
        return gettext("Clusters of machines"), gettext("always planned (one per site, cheapest first)")
    return gettext("Clusters of machines"), gettext("planned when no single machine fits")


def cluster_hint(answer: ClusterAnswer) -> Hint:
    """An empty answer's note that a cluster holds the model (the cheapest)."""
    cheapest = answer.offers[0]
    site = cheapest.plan.site
    text = ngettext(
        "a cluster holds it: %(shape)s at %(provider)s, %(site)s, for %(price)s (%(count)s cluster in "
        "Clusters below)",
        "a cluster holds it: %(shape)s at %(provider)s, %(site)s, for %(price)s (%(count)s clusters in "
        "Clusters below)", answer.total,
    ) % {"shape": cheapest.shape, "provider": site.provider, "site": site.site, "price": cheapest.price_text,
         "count": answer.total}
    return Hint(text=text, machines=len(cheapest.plan.machine_ids),
                cheapest_hourly=cheapest.plan.price_per_hour)
