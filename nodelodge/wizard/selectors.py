"""Reads for the wizard, the API and the CLI: a validated query in, a whole result out.

The pure engine in `sizing` turns each breakdown into fit thresholds (fewest GPUs per memory
band); the catalog counts the whole fleet against them in the database and fetches only the
machines the answer shows; the engine then orders, explains and rates those, with the counts
(`recommend_counted`). Nothing loads the whole fleet into Python.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import cached_property

from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, Min, Q
from django.db.models.signals import post_delete, post_save
from django.utils import timezone

from catalog import selectors as catalog_selectors
from catalog.models import ImageComponent, ImagePipeline, LanguageModel, Machine, SpeechModel
from sizing import matching
from sizing.breakdown import Breakdown
from sizing.calculators import estimate
from sizing.errors import SizingError
from sizing.matching import Recommendation, recommend_counted
from sizing.offers import Preferences
from sizing.other_calculators import RuleOfThumb, rule_of_thumb
from sizing.specs import PRECISIONS
from sizing.units import GIB

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


def estimate_for(
    query: WorkloadQuery, precision: int | None = None, model_row=None
) -> tuple[Breakdown, object | None]:
    """The memory breakdown for a query (at another precision when given; `model_row` saves the
    lookup when the caller already has the row)."""
    spec = None
    if query.workload != "notebook":
        model_row = model_row or model_for_workload(query.model_slug, query.workload)
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
                    lower[precision], _ = estimate_for(query, precision, model_row)
                except QueryError:
                    continue
    machines_shown = query.limit or default_limit or MAX_LIMIT
    stale_minutes = settings.MACHINE_STALE_AFTER_SECONDS // 60
    if connection.vendor == "postgresql":
        recommendation, freshness = _recommend_counted_in_sql(query, breakdown, lower, now, machines_shown)
    else:
        # The embedded SQLite run: the counting SQL is written for PostgreSQL, and the fleet is small.
        recommendation, freshness = recommend_over_every_machine(query, breakdown, lower, now, machines_shown)
    return WizardResult(
        query=query,
        breakdown=breakdown,
        model=model_row,
        recommendation=recommendation,
        freshness={**freshness, "as_of": now},
        stale_after_minutes=stale_minutes,
    )


def _recommend_counted_in_sql(
    query: WorkloadQuery,
    breakdown: Breakdown,
    lower: dict[int, Breakdown],
    now: datetime,
    machines_shown: int,
) -> tuple[Recommendation, dict]:
    """PostgreSQL counts the whole fleet and fetches only the machines the answer shows."""
    lower_order = sorted(lower, reverse=True)
    fleet = catalog_selectors.counted_fleet(
        catalog_selectors.FleetQuery(
            stale_cutoff=stale_cutoff(now),
            countries=query.countries,
            fits=tuple(
                matching.fit_thresholds(item, MAX_GPUS_PER_MACHINE)
                for item in [breakdown, *(lower[precision] for precision in lower_order)]
            ),
            tier=query.tier,
            max_price_per_hour=query.max_price,
            budget=query.budget,
            machines_shown=machines_shown,
            alternatives_shown=matching.ALTERNATIVES_SHOWN,
        )
    )
    # The catalog numbers lower precisions by their place in `fits`; the engine keys them by bits.
    counted = replace(
        fleet.counted,
        lower_precisions={
            lower_order[index - 1]: count for index, count in fleet.counted.lower_precisions.items()
        },
    )
    excluded_before = {
        matching.OFFLINE: fleet.left_out[catalog_selectors.OFFLINE],
        matching.STALE: fleet.left_out[catalog_selectors.STALE],
        matching.OUTSIDE_COUNTRIES: fleet.left_out[catalog_selectors.OUTSIDE],
        matching.MEMORY_UNKNOWN: fleet.left_out[catalog_selectors.MEMORY_UNKNOWN],
        NO_FREE_GPUS: fleet.left_out[catalog_selectors.NO_FREE],
    }
    recommendation = recommend_counted(
        breakdown,
        counted,
        preferences_for(query),
        lower_precision_breakdowns=lower,
        excluded_before=excluded_before,
        stale_after_minutes=settings.MACHINE_STALE_AFTER_SECONDS // 60,
        machines_shown=machines_shown,
    )
    return recommendation, {"newest": fleet.newest, "oldest": fleet.oldest}


def recommend_over_every_machine(
    query: WorkloadQuery,
    breakdown: Breakdown,
    lower: dict[int, Breakdown],
    now: datetime,
    machines_shown: int,
    shuffle=None,
) -> tuple[Recommendation, dict]:
    """The engine over every machine the catalog may offer, counted with the ORM: the embedded
    run's path, and the reference the SQL path is tested against (`shuffle` reorders the offers,
    to show the answer does not depend on the order machines come in)."""
    cutoff = stale_cutoff(now)
    live = Q(gone_at__isnull=True)
    available = live & Q(is_available=True)
    fresh = available & Q(last_seen_at__gte=cutoff)
    located = fresh & ~Q(country="")
    if query.countries is not None:
        located &= Q(country__in=sorted(query.countries))
    known = located & Q(memory_per_gpu_mib__isnull=False)
    counts = Machine.objects.aggregate(
        live=Count("id", filter=live),
        available=Count("id", filter=available),
        fresh=Count("id", filter=fresh),
        located=Count("id", filter=located),
        known=Count("id", filter=known),
        no_free=Count("id", filter=known & Q(free_gpus=0)),
        newest=Max("last_seen_at", filter=fresh),
        oldest=Min("last_seen_at", filter=fresh),
    )
    offers = catalog_selectors.machine_offers(Machine.objects.filter(known & Q(free_gpus__gte=1)))
    if shuffle is not None:
        shuffle(offers)
    recommendation = matching.recommend(
        breakdown,
        offers,
        preferences_for(query),
        lower_precision_breakdowns=lower,
        excluded_before={
            matching.OFFLINE: counts["live"] - counts["available"],
            matching.STALE: counts["available"] - counts["fresh"],
            matching.OUTSIDE_COUNTRIES: counts["fresh"] - counts["located"],
            matching.MEMORY_UNKNOWN: counts["located"] - counts["known"],
            NO_FREE_GPUS: counts["no_free"],
        },
        now=now,
        stale_after_minutes=settings.MACHINE_STALE_AFTER_SECONDS // 60,
        machines_shown=machines_shown,
    )
    return recommendation, {"newest": counts["newest"], "oldest": counts["oldest"]}


def preferences_for(query: WorkloadQuery) -> Preferences:
    return Preferences(
        budget=query.budget,
        max_price_per_hour=query.max_price,
        tier=query.tier,
        countries=query.countries,
        countries_input=query.countries_input,
    )


# --- the catalog's models, as the wizard and the API list them ------------------------------------

KIND_LABELS = {"language": "Language model", "speech": "Speech recognition", "image": "Image generation"}


# Catalog models change rarely (an admin edit, a data load) but every wizard request reads one several
# times: keep the rows in this process for a short while, and forget them on any write.
MODEL_CACHE_SECONDS = 30.0
_model_rows: dict[str, tuple[float, object | None]] = {}


def cached_model(slug: str):
    """`catalog.selectors.get_model`, remembered for MODEL_CACHE_SECONDS (None is remembered too).
    Inside a transaction the database is asked: it sees its own writes, and a rollback, which
    sends no signal, must not leave rows in the cache that never existed for anyone else."""
    if connection.in_atomic_block:
        return catalog_selectors.get_model(slug)
    hit = _model_rows.get(slug)
    clock = time.monotonic()
    if hit is not None and hit[0] > clock:
        return hit[1]
    row = catalog_selectors.get_model(slug)
    _model_rows[slug] = (clock + MODEL_CACHE_SECONDS, row)
    return row


def forget_models(**_kwargs) -> None:
    _model_rows.clear()


for _model in (LanguageModel, SpeechModel, ImagePipeline, ImageComponent):
    post_save.connect(forget_models, sender=_model, dispatch_uid=f"wizard-models-{_model.__name__}")
    post_delete.connect(forget_models, sender=_model, dispatch_uid=f"wizard-models-del-{_model.__name__}")


def model_for_workload(slug: str | None, workload: str):
    """The active catalog row with this slug, if its kind suits the workload."""
    if not slug:
        return None
    row = cached_model(slug)
    if row is None or row.kind not in catalog_selectors.KINDS_BY_WORKLOAD.get(workload, ()):
        return None
    return row


def model_of_another_workload(slug: str | None, workload: str) -> bool:
    """True for a catalog model that exists but does not suit this workload."""
    row = cached_model(slug) if slug else None
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
    row = cached_model(slug) if slug else None
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
