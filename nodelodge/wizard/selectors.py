"""Reads for the wizard, the API and the CLI: a validated query in, a whole result out.

The database narrows the fleet first (available, fresh, located in the chosen countries, memory
known, enough memory per GPU for the smallest need considered); the pure matching engine in
`sizing` decides fit, price, preferences and order for what is left.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property

from django.conf import settings
from django.db.models import Count, Max, Min, Q
from django.utils import timezone

from catalog import selectors as catalog_selectors
from catalog.models import Machine
from sizing import matching
from sizing.breakdown import Breakdown
from sizing.calculators import estimate
from sizing.matching import Recommendation, recommend
from sizing.offers import Preferences
from sizing.other_calculators import RuleOfThumb, rule_of_thumb
from sizing.specs import PRECISIONS
from sizing.units import GIB, MIB

from .forms import MAX_LIMIT, WorkloadQuery

# Largest split tensor parallelism may use inside one machine.
MAX_GPUS_PER_MACHINE = 16
NO_FREE_GPUS = "no free GPUs"
DEFAULT_LIMIT = 25  # machines listed when the query names no limit; all are counted
MEMORY_SOURCE_SHORT = {"datacenter": "datacenter", "datasheet": "datasheet", "host": "host-reported"}
RULE_OF_THUMB_PRECISION = {16: "FP16", 8: "INT8", 4: "INT4"}


@dataclass
class WizardResult:
    query: WorkloadQuery
    breakdown: Breakdown
    model: object | None  # the catalog row sized, for its name, license and source link
    recommendation: Recommendation | None = None
    freshness: dict = field(default_factory=dict)
    stale_after_minutes: int = 0

    @cached_property
    def data(self) -> dict:
        """The API's JSON, plus the words and links the page shows beside it."""
        data = self.recommendation.to_dict()
        for machine in [*data["machines"], *data["alternatives"]]:
            machine["memory_source_short"] = MEMORY_SOURCE_SHORT.get(machine["memory_source"], "")
        for alternative in data["precision_alternatives"]:
            alternative["query"] = self.query.as_query_string(precision=alternative["precision"])
        return data

    @property
    def more_query(self) -> str:
        return self.query.as_query_string(limit=MAX_LIMIT)

    @cached_property
    def has_community(self) -> bool:
        rec = self.recommendation
        return any(m.offer.tier == "community" for m in [*rec.machines, *rec.alternatives])

    @cached_property
    def bar(self) -> dict | None:
        """Per-GPU need, item by item, against the GPU of the cheapest machine shown."""
        rec = self.recommendation
        shown = rec.machines or rec.alternatives
        if not shown:
            return None
        first = shown[0]
        gpus = first.fit.gpus_used
        memory = first.fit.memory_per_gpu_bytes
        scale = max(memory, first.fit.need_per_gpu_bytes)
        segments, x = [], 0.0
        for item in self.breakdown.items:
            share = item.bytes if item.per_gpu else math.ceil(item.bytes / gpus)
            width = 100.0 * share / scale
            segments.append({"name": item.name, "gib": share / GIB, "x": f"{x:.3f}", "width": f"{width:.3f}"})
            x += width
        return {
            "segments": segments,
            "gpus_used": gpus,
            "gpu_type": first.offer.gpu_type,
            "need_gib": first.fit.need_per_gpu_bytes / GIB,
            "memory_gib": memory / GIB,
            "memory_x": f"{min(99.6, 100.0 * memory / scale):.3f}",
        }

    @cached_property
    def rule_of_thumb(self) -> RuleOfThumb | None:
        """The rule of thumb, shown beside the detailed figure for language-model inference."""
        if self.breakdown.workload != "inference" or self.model is None:
            return None
        parameters = getattr(self.model, "parameters", None)
        label = RULE_OF_THUMB_PRECISION.get(self.query.precision)
        if not parameters or label is None or not hasattr(self.model, "kv_heads"):
            return None
        return rule_of_thumb(parameters, label)


class QueryError(Exception):
    """The query is valid as a form but cannot be sized (unknown model, missing value...)."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def stale_cutoff(now: datetime) -> datetime:
    return now - timedelta(seconds=settings.MACHINE_STALE_AFTER_SECONDS)


def estimate_for(query: WorkloadQuery, precision: int | None = None) -> tuple[Breakdown, object | None]:
    """The memory breakdown for a query (at another precision when given)."""
    from sizing.errors import SizingError

    model_row = None
    spec = None
    if query.workload != "notebook":
        model_row = model_for_workload(query.model_slug, query.workload)
        if model_row is None:
            raise QueryError({"model": f"No model {query.model_slug!r} in the catalog suits this workload."})
        spec = catalog_selectors.model_spec(model_row)
    try:
        breakdown = estimate(
            query.workload,
            spec,
            precision=precision or query.precision,
            context=query.context,
            requests=query.requests,
            memory_gib=float(query.memory_gib) if query.memory_gib is not None else None,
        )
    except SizingError as error:
        raise QueryError({error.field: error.message})
    return breakdown, model_row


def _smallest_need_per_gpu_bytes(breakdowns: list[Breakdown]) -> int:
    smallest = None
    for breakdown in breakdowns:
        splits = [n for n in range(1, MAX_GPUS_PER_MACHINE + 1) if breakdown.can_split_over(n)]
        need = breakdown.bytes_per_gpu(max(splits))
        smallest = need if smallest is None else min(smallest, need)
    return smallest or 0


def recommendation_for(
    query: WorkloadQuery, now: datetime | None = None, default_limit: int | None = DEFAULT_LIMIT
) -> WizardResult:
    now = now or timezone.now()
    breakdown, model_row = estimate_for(query)
    lower = {}
    if query.precision is not None:
        for precision in PRECISIONS:
            if precision < query.precision:
                try:
                    lower[precision], _ = estimate_for(query, precision)
                except QueryError:
                    continue
    floor_bytes = _smallest_need_per_gpu_bytes([breakdown, *lower.values()])
    floor_mib = math.ceil(floor_bytes / MIB)
    cutoff = stale_cutoff(now)

    live = Q(gone_at__isnull=True)
    available = Q(is_available=True)
    fresh = Q(last_seen_at__gte=cutoff)
    located = ~Q(country="")
    if query.countries is not None:
        located &= Q(country__in=sorted(query.countries))
    known = Q(memory_per_gpu_mib__isnull=False)
    has_free = Q(free_gpus__gte=1)
    big_enough = Q(memory_per_gpu_mib__gte=floor_mib)

    counts = Machine.objects.filter(live).aggregate(
        offline=Count("id", filter=~available),
        stale=Count("id", filter=available & ~fresh),
        outside=Count("id", filter=available & fresh & ~located),
        memory_unknown=Count("id", filter=available & fresh & located & ~known),
        no_free=Count("id", filter=available & fresh & located & known & ~has_free),
        too_small=Count("id", filter=available & fresh & located & known & has_free & ~big_enough),
        newest=Max("last_seen_at", filter=available & fresh),
        oldest=Min("last_seen_at", filter=available & fresh),
    )
    rows = (
        Machine.objects.filter(live & available & fresh & located & known & has_free & big_enough)
        .select_related("provider", "gpu_type")
        .prefetch_related("measured_speeds")
        .order_by("price_per_gpu_hour", "id")
    )
    offers = [catalog_selectors.machine_offer(row) for row in rows]
    excluded_before = {
        matching.OFFLINE: counts["offline"],
        matching.STALE: counts["stale"],
        matching.OUTSIDE_COUNTRIES: counts["outside"],
        matching.MEMORY_UNKNOWN: counts["memory_unknown"],
        NO_FREE_GPUS: counts["no_free"],
        matching.TOO_SMALL: counts["too_small"],
    }
    stale_minutes = settings.MACHINE_STALE_AFTER_SECONDS // 60
    preferences = Preferences(
        budget=query.budget,
        max_price_per_hour=query.max_price,
        tier=query.tier,
        countries=query.countries,
        countries_input=query.countries_input,
    )
    recommendation = recommend(
        breakdown,
        offers,
        preferences,
        lower_precision_breakdowns=lower,
        excluded_before=excluded_before,
        now=now,
        stale_after_minutes=stale_minutes,
        machines_shown=query.limit or default_limit,
    )
    return WizardResult(
        query=query,
        breakdown=breakdown,
        model=model_row,
        recommendation=recommendation,
        freshness={"newest": counts["newest"], "oldest": counts["oldest"], "as_of": now},
        stale_after_minutes=stale_minutes,
    )


# --- the catalog's models, as the wizard and the API list them ------------------------------------

KIND_LABELS = {"language": "Language model", "speech": "Speech recognition", "image": "Image generation"}


def model_for_workload(slug: str | None, workload: str):
    """The active catalog row with this slug, if its kind suits the workload."""
    if not slug:
        return None
    row = catalog_selectors.get_model(slug)
    if row is None or row.kind not in catalog_selectors.KINDS_BY_WORKLOAD.get(workload, ()):
        return None
    return row


def model_of_another_workload(slug: str | None, workload: str) -> bool:
    """True for a catalog model that exists but does not suit this workload."""
    row = catalog_selectors.get_model(slug) if slug else None
    return row is not None and row.kind not in catalog_selectors.KINDS_BY_WORKLOAD.get(workload, ())


def _parameters_display(parameters: int | None, published: str) -> str:
    if published:
        return published
    if parameters is None:
        return "not published"
    for factor, suffix in ((10**9, "B"), (10**6, "M")):
        if parameters >= factor:
            return f"{parameters / factor:.2f}{suffix}"
    return f"{parameters:,}"


def _choice(row) -> dict:
    return {
        "slug": row.slug,
        "name": row.name,
        "kind": row.kind,
        "kind_label": KIND_LABELS[row.kind],
        "parameters": row.parameters,
        "parameters_display": _parameters_display(row.parameters, row.parameters_published),
        "license": row.license,
        "config_url": row.config_url,
        "missing": row.missing_values(),
    }


def model_choices(workload: str, search: str = "") -> list[dict]:
    """Models that suit the workload (none for a notebook), filtered by a name search."""
    if workload not in catalog_selectors.KINDS_BY_WORKLOAD:
        return []
    needle = search.casefold()
    return [
        _choice(row)
        for row in catalog_selectors.models_for_workload(workload)
        if not needle or needle in row.name.casefold() or needle in row.slug
    ]


def model_choice(slug: str | None) -> dict | None:
    row = catalog_selectors.get_model(slug) if slug else None
    return _choice(row) if row is not None else None


FIGURE_FIELDS = {
    "language": ("parameters", "layers", "attention_heads", "kv_heads", "head_dim", "hidden_size",
                 "intermediate_size", "vocab_size", "max_context"),
    "speech": ("parameters", "encoder_layers", "decoder_layers", "d_model", "attention_heads",
               "max_source_positions", "max_target_positions", "vocab_size"),
    "image": ("native_resolution",),
}


def model_listing(workload: str | None) -> list[dict]:
    """Every active model (or those suiting a workload) with its published figures, for the API."""
    workloads = [workload] if workload else ["inference", "finetune", "image"]
    seen: dict[str, dict] = {}
    for name in workloads:
        for row in catalog_selectors.models_for_workload(name):
            entry = seen.get(row.slug)
            if entry is None:
                figures = {field: getattr(row, field) for field in FIGURE_FIELDS[row.kind]}
                if row.kind == "image":
                    figures["components"] = [
                        {"name": c.name, "role": c.role, "parameters": c.parameters}
                        for c in row.components.all()
                    ]
                entry = seen[row.slug] = {
                    **_choice(row),
                    "workloads": [],
                    "parameters_published": row.parameters_published,
                    "figures": figures,
                }
                entry.pop("parameters_display")
                entry.pop("kind_label")
            for suited in ("inference", "finetune", "image"):
                suits = row.kind in catalog_selectors.KINDS_BY_WORKLOAD[suited]
                if suits and suited not in entry["workloads"]:
                    entry["workloads"].append(suited)
    return list(seen.values())
