"""Reads from the catalog. This is the one place catalog rows become the plain values `sizing` works on."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from typing import NamedTuple

from django.db import connection
from django.db.models import F, QuerySet
from django.utils.translation import gettext_lazy

from catalog import availability, fleet_counts, latest_speeds
from catalog.models import ImagePipeline, LanguageModel, Machine, MeasuredSpeed, SpeechModel
from sizing import fit, matching, offers, reasons, specs
from sizing.limits import PRICE_UNITS
from sizing.speeds import speed_for
from sizing.workloads import CODES as WORKLOADS
from sizing.workloads import KINDS_BY_WORKLOAD

KIND_ORDER = {"language": 0, "speech": 1, "image": 2}
# The model list's groups, in the order it shows them: language models split by whether every
# parameter runs for every token (dense) or only the experts routed to it (mixture of experts).
MODEL_GROUPS = {
    "dense": gettext_lazy("Dense language models"),
    "moe": gettext_lazy("Mixture-of-experts language models"),
    "speech": gettext_lazy("Speech recognition"),
    "image": gettext_lazy("Image generation"),
}
GROUP_ORDER = {group: index for index, group in enumerate(MODEL_GROUPS)}


def model_group(row) -> str:
    return row.family if row.kind == "language" else row.kind

CatalogModel = LanguageModel | ImagePipeline | SpeechModel
ModelSpec = specs.LanguageModelSpec | specs.ImagePipelineSpec | specs.SpeechModelSpec


def language_model_spec(row: LanguageModel) -> specs.LanguageModelSpec:
    return specs.LanguageModelSpec(
        slug=row.slug,
        name=row.name,
        parameters=row.parameters,
        layers=row.layers,
        attention_heads=row.attention_heads,
        kv_heads=row.kv_heads,
        head_dim=row.head_dim,
        hidden_size=row.hidden_size,
        intermediate_size=row.intermediate_size,
        vocab_size=row.vocab_size,
        max_context=row.max_context,
        tied_embeddings=row.tied_embeddings,
        architecture=row.parsed_architecture() if row.architecture else None,
        active_parameters=row.active_parameters,
    )


def image_pipeline_spec(row: ImagePipeline) -> specs.ImagePipelineSpec:
    # .all() uses prefetched components when present; the model orders them by `order`.
    components = sorted(row.components.all(), key=lambda component: (component.order, component.pk))
    return specs.ImagePipelineSpec(
        slug=row.slug,
        name=row.name,
        components=tuple(
            specs.ImageComponent(name=c.name, role=c.role, parameters=c.parameters) for c in components
        ),
        native_resolution=row.native_resolution or None,
    )


def speech_model_spec(row: SpeechModel) -> specs.SpeechModelSpec:
    return specs.SpeechModelSpec(
        slug=row.slug,
        name=row.name,
        parameters=row.parameters,
        decoder_layers=row.decoder_layers,
        d_model=row.d_model,
        attention_heads=row.attention_heads,
        max_source_positions=row.max_source_positions,
        max_target_positions=row.max_target_positions,
        extra={"encoder_layers": row.encoder_layers, "vocab_size": row.vocab_size},
    )


def model_spec(row: CatalogModel) -> ModelSpec:
    """The sizing spec for a row of any of the three kinds."""
    if isinstance(row, LanguageModel):
        return language_model_spec(row)
    if isinstance(row, ImagePipeline):
        return image_pipeline_spec(row)
    return speech_model_spec(row)


# What the engine's record of a measured speed holds: its fields, the model's columns alike.
SPEED_FIELDS = (
    "model_slug", "precision", "value", "unit", "measured_at", "gpus", "engine", "engine_version",
    "concurrency", "input_tokens", "output_tokens", "measured_by", "source",
)


def measured_speed(row: MeasuredSpeed) -> offers.MeasuredSpeed:
    return offers.MeasuredSpeed(**{field: getattr(row, field) for field in SPEED_FIELDS})


# What an offer reads of a machine: offer field -> the machine's column, through its relations.
# Both ways of reading machines below go through this one table.
OFFER_COLUMNS = {
    "id": "id",
    "provider": "provider__name",
    "tier": "tier",
    "provider_machine_id": "provider_machine_id",
    "gpu_type": "gpu_type__name",
    "gpu_count": "gpu_count",
    "free_gpus": "free_gpus",
    "memory_per_gpu_mib": "memory_per_gpu_mib",
    "memory_source": "memory_source",
    "country": "country",
    "region": "region",
    "price_per_gpu_hour": "price_per_gpu_hour",
    "interruptible": "interruptible",
    "booking_limit_hours": "booking_limit_hours",
    "last_seen": "last_seen_at",
    "datasheet_memory_mib": "gpu_type__memory_mib",
    "memory_flag": "memory_flag",
    "is_available": "is_available",
    "provider_active": "provider_is_active",
    "gone": "gone_at",
}


def _offer(values: dict, speeds: tuple) -> offers.MachineOffer:
    """An offer from its columns (`OFFER_COLUMNS`' values as keys) and its measured speeds."""
    fields = {field: values[column] for field, column in OFFER_COLUMNS.items()}
    fields.update(
        country=fields["country"] or None, memory_flag=fields["memory_flag"] or None,
        gone=fields["gone"] is not None, measured_speeds=speeds,
    )
    return offers.MachineOffer(**fields)


def machine_offer(row: Machine) -> offers.MachineOffer:
    """One machine's offer (Launch's re-check under the row lock)."""
    values = {}
    for column in OFFER_COLUMNS.values():
        value = row
        for part in column.split("__"):
            value = getattr(value, part)
        values[column] = value
    speeds = row.measured_speeds.order_by("model_slug", "precision", "pk")
    return _offer(values, tuple(measured_speed(speed) for speed in speeds))


def machine_offers(queryset: QuerySet[Machine] | None = None) -> list[offers.MachineOffer]:
    """The offers of the machines in `queryset`, in its order: their columns read as values (model
    instances cost four times as much to build for the answer's hundred machines), their speeds in
    one more query."""
    queryset = Machine.objects.all() if queryset is None else queryset
    rows = list(queryset.values(*OFFER_COLUMNS.values()))
    if not rows:
        return []
    speeds: dict[int, list] = {}
    measured = MeasuredSpeed.objects.filter(machine__in=queryset.values("id"))
    # Ordered by machine first, so the planner reads the few machines' speeds through the machine
    # index whatever its statistics say (ordered by model first it may walk every speed in the table).
    # Read as values too, each straight into the engine's record.
    for machine_id, *fields in measured.order_by("machine_id", "model_slug", "precision", "pk").values_list(
        "machine_id", *SPEED_FIELDS
    ):
        speed = offers.MeasuredSpeed(**dict(zip(SPEED_FIELDS, fields, strict=True)))
        speeds.setdefault(machine_id, []).append(speed)
    return [_offer(values, tuple(speeds.get(values["id"], ()))) for values in rows]


def _first_active(model, slug: str):
    queryset = model.objects.filter(slug=slug, is_active=True)
    if model is ImagePipeline:
        queryset = queryset.prefetch_related("components")
    return queryset.first()


def get_model(slug: str) -> CatalogModel | None:
    """The active catalog row with this slug, whichever kind it is; None when there is none."""
    for model in (LanguageModel, SpeechModel, ImagePipeline):
        row = _first_active(model, slug)
        if row is not None:
            return row
    return None


def get_model_spec(slug: str) -> ModelSpec | None:
    row = get_model(slug)
    return None if row is None else model_spec(row)


def _sort_key(row: CatalogModel) -> tuple:
    parameters = row.parameters
    # Unpublished totals sort last within their kind.
    return (GROUP_ORDER[model_group(row)], parameters is None, parameters or 0, row.name, row.slug)


def models_for_workload(workload: str) -> list[CatalogModel]:
    """Active catalog rows suited to a workload, ordered by group (MODEL_GROUPS), parameters, then name."""
    if workload not in KINDS_BY_WORKLOAD:
        raise ValueError(f"Unknown workload {workload!r}; expected one of {', '.join(WORKLOADS)}.")
    rows: list[CatalogModel] = []
    kinds = KINDS_BY_WORKLOAD[workload]
    if "language" in kinds:
        rows += LanguageModel.objects.filter(is_active=True)
    if "speech" in kinds:
        rows += SpeechModel.objects.filter(is_active=True)
    if "image" in kinds:
        rows += ImagePipeline.objects.filter(is_active=True).prefetch_related("components")
    return sorted(rows, key=_sort_key)


# --- The wizard's fleet, counted in the database ---------------------------------------------------
#
# The matching engine decides fit from a machine's memory per GPU and free GPUs alone, through the
# thresholds of `sizing.fit.fit_thresholds`. Here those thresholds become SQL, so PostgreSQL
# counts every machine and returns only the few the answer describes (`sizing.matching.CountedFleet`).

# Memory per GPU is an integer column: no machine reaches 2^31 MiB, so every larger need fits
# nowhere alike and is counted as this one (the bands are bigint: this edge is past integer).
MEMORY_MIB_BEYOND_ANY = 2**31


@dataclass(frozen=True)
class FleetQuery:
    """One wizard query as the database sees it. `fits` holds one entry per precision considered:
    the chosen one first, then lower ones; each is `fit_thresholds` of that precision's breakdown."""

    stale_cutoff: datetime
    countries: frozenset[str] | None
    fits: tuple[tuple[tuple[int, int], ...], ...]
    tier: str  # "secure", "community" or "both"
    max_price_per_hour: Decimal | None
    budget: Decimal | None
    machines_shown: int
    alternatives_shown: int
    lower_shown: int = 1  # machines fetched per lower precision (the cheapest; 0 for counts alone)


@dataclass
class FleetCount:
    """What one wizard query needs from the catalog: the engine's counts, the machines to describe,
    the catalog's own exclusion counts (by status constant) and the freshness of what was seen."""

    counted: matching.CountedFleet
    left_out: dict[str, int]  # reason (`sizing.reasons`) -> machines the availability rule left out
    newest: datetime | None
    oldest: datetime | None
    # place in `fits` -> the cheapest hourly price among the machines that fit and meet every
    # preference there (absent where none does)
    cheapest_meeting: dict[int, Decimal] = field(default_factory=dict)


def _gpus_used_sql(thresholds: tuple[tuple[int, int], ...]) -> tuple[str, list]:
    """CASE expression: GPUs used on a machine, NULL when the workload does not fit on it."""
    if not thresholds:
        return "NULL::integer", []
    parts, params = [], []
    for gpus, need_mib in thresholds:
        parts.append("WHEN m.memory_per_gpu_mib >= %s THEN (CASE WHEN m.free_gpus >= %s THEN %s END)")
        params += [need_mib, gpus, gpus]
    return "(CASE " + " ".join(parts) + " END)", params


def _screened_sql(query: FleetQuery) -> tuple[str, list]:
    return availability.available_sql(query.stale_cutoff, query.countries)


def _first_price_over(limit: Decimal, gpus: int) -> Decimal:
    """The lowest price per GPU-hour (prices have 4 places) whose hourly price on `gpus` GPUs is over
    `limit`: price × gpus > limit exactly when price >= this. Exact, through integers of 1/10,000."""
    units = Fraction(limit) * PRICE_UNITS / gpus
    return Decimal(math.floor(units) + 1) / PRICE_UNITS


def _breaks(query: FleetQuery, tier: str, gpus: int, price_bucket: int, edges: dict) -> tuple[str, ...]:
    """The preference codes a machine using `gpus` GPUs breaks, in the engine's order."""
    over_price = query.max_price_per_hour is not None and price_bucket >= edges[("max_price", gpus)]
    over_budget = query.budget is not None and price_bucket >= edges[("budget", gpus)]
    return tuple(
        code
        for code, broken in (
            (reasons.BREAK_TIER, query.tier != "both" and tier != query.tier),
            (reasons.BREAK_MAX_PRICE, over_price),
            (reasons.BREAK_BUDGET, over_budget),
        )
        if broken
    )


def _meets_sql(query: FleetQuery, gpus: int) -> tuple[str, list]:
    """Meets every preference on a machine using `gpus` GPUs."""
    parts, params = ["TRUE"], []
    if query.tier != "both":
        parts.append("m.tier = %s")
        params.append(query.tier)
    for limit in (query.max_price_per_hour, query.budget):
        if limit is not None:
            parts.append("m.price_per_gpu_hour * %s <= %s")
            params += [gpus, limit]
    return " AND ".join(parts), params


def _band_sql(thresholds: tuple[tuple[int, int], ...], index: int) -> tuple[str, list]:
    """Machines that use exactly the index-th threshold's GPU count."""
    gpus, need_mib = thresholds[index]
    sql, params = "m.memory_per_gpu_mib >= %s AND m.free_gpus >= %s", [need_mib, gpus]
    if index:
        sql += " AND m.memory_per_gpu_mib < %s"
        params.append(thresholds[index - 1][1])
    return sql, params


def counted_fleet(query: FleetQuery, by_scan: bool = False) -> FleetCount:
    """Counts the whole fleet for a wizard query, then fetches only the machines the answer
    describes: three to five queries whatever the fleet's size.

    The counts group machines by status, tier, memory band and free GPUs (and, with a price limit
    or budget, price band), where the bands' edges are every fit threshold and every price at which
    some GPU count crosses a limit. Each group then has one fit and one set of broken preferences
    per precision, worked out here from its edges; the database only counts. They come from the
    counts the writes keep per shape of machine (`catalog.fleet_counts`), a few thousand rows
    whatever the fleet's size; `by_scan` counts the machines themselves in one grouped scan instead
    (the reference the kept counts are tested against).
    """
    memory_edges = sorted(
        {min(need, MEMORY_MIB_BEYOND_ANY) for thresholds in query.fits for _, need in thresholds}
    )
    gpu_counts = sorted({gpus for thresholds in query.fits for gpus, _ in thresholds})
    price_limits = [(name, limit) for name, limit in (("max_price", query.max_price_per_hour),
                                                      ("budget", query.budget)) if limit is not None]
    crossings = {
        (name, gpus): _first_price_over(limit, gpus) for name, limit in price_limits for gpus in gpu_counts
    }
    price_edges = sorted(set(crossings.values()))
    # width_bucket counts the edges at or below a value: price >= edge number j <=> bucket >= j.
    price_bucket_of = {key: price_edges.index(edge) + 1 for key, edge in crossings.items()}

    status_sql, status_params = availability.status_sql(query.stale_cutoff, query.countries)
    if by_scan:
        groups = _scanned_groups(query, status_sql, status_params, memory_edges, price_edges)
    else:
        sql, params = fleet_counts.grouped_sql(
            status_sql, status_params, memory_edges, price_edges, availability.SCREENED
        )
        with connection.cursor() as cursor:
            fleet_counts.merge_pending(cursor)
            cursor.execute(sql, params)
            groups = [_from_units(row, bool(price_edges)) for row in cursor.fetchall()]
    keys = 5 if price_edges else 4
    return _tally(query, groups, keys, memory_edges, price_edges, price_bucket_of, by_scan)


def _from_units(row: tuple, priced: bool) -> tuple:
    """A row of the kept counts with its prices in dollars, as the scan gives them."""
    keys = 5 if priced else 4
    count, cheapest, most_memory, seen_max, seen_min, dearest = row[keys:]
    return (*row[:keys], count, fleet_counts.from_units(cheapest), most_memory, seen_max, seen_min,
            fleet_counts.from_units(dearest))


def _scanned_groups(
    query: FleetQuery, status_sql: str, status_params: list, memory_edges: list[int],
    price_edges: list[Decimal],
) -> list[tuple]:
    in_fleet = availability.in_fleet_sql()
    details = ["m.tier", "width_bucket(m.memory_per_gpu_mib, %s::bigint[])", "m.free_gpus"]
    detail_params: list = [memory_edges or [0]]
    if price_edges:
        details.append("width_bucket(m.price_per_gpu_hour, %s::numeric[])")
        detail_params.append(price_edges)
    keys = 1 + len(details)
    aggregates = (
        "COUNT(*), MIN(m.price_per_gpu_hour), MAX(m.memory_per_gpu_mib), MAX(m.last_seen_at), "
        "MIN(m.last_seen_at), MAX(m.price_per_gpu_hour)"
    )
    group_by = ", ".join(str(n) for n in range(1, keys + 1))
    # Built from fixed SQL only; every value travels as a parameter.
    if query.countries is None:
        sql = (
            f"SELECT {status_sql}, {', '.join(details)}, {aggregates} "  # noqa: S608  # nosec B608
            f"FROM catalog_machine m WHERE {in_fleet} GROUP BY {group_by}"
        )
        params = status_params + detail_params
    else:
        # With a choice of countries most machines are left out; they need only a count, so the
        # status is worked out once per machine (OFFSET 0 keeps the subquery apart) and the
        # detail keys only for the machines screened in.
        screened = availability.SCREENED
        guarded = ", ".join(f"CASE WHEN m.status = {screened} THEN {detail} END" for detail in details)
        sql = (
            f"SELECT m.status, {guarded}, {aggregates} FROM ("  # noqa: S608  # nosec B608
            f"SELECT {status_sql} AS status, m.tier, m.memory_per_gpu_mib, m.free_gpus, "
            f"m.price_per_gpu_hour, m.last_seen_at FROM catalog_machine m WHERE {in_fleet} "
            f"OFFSET 0) AS m GROUP BY {group_by}"
        )
        params = detail_params + status_params
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _tally(
    query: FleetQuery,
    groups: list[tuple],
    keys: int,
    memory_edges: list[int],
    price_edges: list[Decimal],
    price_bucket_of: dict,
    by_scan: bool,
) -> FleetCount:
    left_out = dict.fromkeys(availability.COUNTED_REASONS, 0)
    not_fresh = {availability.STATUS_OF_REASON[reasons.OFFLINE], availability.STATUS_OF_REASON[reasons.STALE]}
    newest = oldest = None
    considered = too_small = fitting = 0
    largest = None
    first: dict[str, int] = {}
    only: dict[str, int] = {}
    only_cheapest: dict[str, Decimal] = {}
    lower_fitting = [0] * (len(query.fits) - 1)
    # (precision index, band index, meets every preference) -> cheapest and dearest price per
    # GPU-hour there, to fetch only from bands that hold machines, and only within their prices
    bands: dict[tuple[int, int, bool], tuple[Decimal, Decimal]] = {}
    band_sizes: dict[tuple[int, int, bool], int] = {}
    band_index = [{gpus: index for index, (gpus, _) in enumerate(thresholds)} for thresholds in query.fits]
    fits_of: dict[tuple[int, int], list[int | None]] = {}
    for row in groups:
        status, tier, memory_bucket, free_gpus = row[:4]
        price_bucket = row[4] if price_edges else 0
        count, cheapest_price, most_memory, seen_max, seen_min, dearest_price = row[keys:]
        if status not in not_fresh:
            newest = seen_max if newest is None else max(newest, seen_max)
            oldest = seen_min if oldest is None else min(oldest, seen_min)
        if status != availability.SCREENED:
            left_out[availability.REASON_OF_STATUS[status]] += count
            continue
        considered += count
        largest = most_memory if largest is None else max(largest, most_memory)
        shape = (memory_bucket, free_gpus)
        if shape not in fits_of:
            # Any memory in the bucket fits like its lower edge: every threshold is an edge.
            memory = memory_edges[memory_bucket - 1] if memory_bucket else 0
            fits_of[shape] = [
                fit.gpus_used_by_thresholds(thresholds, memory, free_gpus) for thresholds in query.fits
            ]
        for fit_index, gpus in enumerate(fits_of[shape]):
            if gpus is None:
                if fit_index == 0:
                    too_small += count
                continue
            breaks = _breaks(query, tier, gpus, price_bucket, price_bucket_of)
            key = (fit_index, band_index[fit_index][gpus], not breaks)
            low, high = bands.get(key, (cheapest_price, dearest_price))
            bands[key] = (min(low, cheapest_price), max(high, dearest_price))
            band_sizes[key] = band_sizes.get(key, 0) + count
            if fit_index:
                if not breaks:
                    lower_fitting[fit_index - 1] += count
                continue
            if not breaks:
                fitting += count
                continue
            first[breaks[0]] = first.get(breaks[0], 0) + count
            if len(breaks) == 1:
                code = breaks[0]
                only[code] = only.get(code, 0) + count
                hourly = cheapest_price * gpus
                if code not in only_cheapest or hourly < only_cheapest[code]:
                    only_cheapest[code] = hourly

    only_at_cheapest = (
        _count_at_cheapest(query, only_cheapest, by_scan) if not fitting and only_cheapest else {}
    )
    sparse = {key for key, size in band_sizes.items() if size <= SPARSE_BAND_MACHINES}
    ids = _describe_ids(query, bands, {} if by_scan or not sparse else _band_prices(query, bands, sparse))
    counted = matching.CountedFleet(
        offers=tuple(machine_offers(Machine.objects.filter(pk__in=ids))) if ids else (),
        considered=considered,
        largest_memory_mib=largest,
        too_small=too_small,
        fitting=fitting,
        breaking_first=first,
        breaking_only=only,
        breaking_only_cheapest=only_cheapest,
        breaking_only_at_cheapest=only_at_cheapest,
        lower_precisions={
            index: matching.PrecisionCount(count) for index, count in enumerate(lower_fitting, start=1)
        },
    )
    cheapest_meeting: dict[int, Decimal] = {}
    for (fit_index, band, meets), (cheapest_price, _) in bands.items():
        if meets:
            hourly = cheapest_price * query.fits[fit_index][band][0]
            if fit_index not in cheapest_meeting or hourly < cheapest_meeting[fit_index]:
                cheapest_meeting[fit_index] = hourly
    return FleetCount(
        counted=counted, left_out=left_out, newest=newest, oldest=oldest, cheapest_meeting=cheapest_meeting
    )


# A band holding at most this many machines is read at the prices the kept counts list for it
# (an index probe per price) rather than by walking every machine between its cheapest and dearest.
SPARSE_BAND_MACHINES = 256
# Up to this many chosen countries, a band is read country by country (`_describe_ids`).
COUNTRY_WALKS = 3


def _band_prices(
    query: FleetQuery, bands: dict[tuple[int, int, bool], tuple[Decimal, Decimal]], sparse: set
) -> dict[tuple[int, int, bool], list[Decimal]]:
    """For each sparse band, every price per GPU-hour at which the kept counts hold one of its
    machines (those the rule lets through, of the band's GPUs used, meeting every preference or not
    as the band says): one statement for all of them."""
    status_sql, status_params = availability.status_sql(query.stale_cutoff, query.countries)
    parts, params, keys = [], [], sorted(sparse)
    for number, (fit_index, band, meets) in enumerate(keys):
        thresholds = query.fits[fit_index]
        gpus = thresholds[band][0]
        band_sql, band_params = _band_sql(thresholds, band)
        meets_parts, meets_params = ["TRUE"], []
        if query.tier != "both":
            meets_parts.append("m.tier = %s")
            meets_params.append(query.tier)
        for limit in (query.max_price_per_hour, query.budget):
            if limit is not None:
                meets_parts.append(f"u.p * {int(gpus)} <= %s")
                meets_params.append(fleet_counts.to_units(limit))
        meets_sql = " AND ".join(meets_parts)
        if not meets:
            meets_sql = f"NOT ({meets_sql})"
        low, high = bands[fit_index, band, meets]
        parts.append(
            f"SELECT {int(number)} AS band, u.p FROM {fleet_counts.SHAPES} m "  # noqa: S608  # nosec B608
            "CROSS JOIN LATERAL unnest(m.prices) AS u(p) "
            f"WHERE {status_sql} = {availability.SCREENED} AND {band_sql} "
            f"AND u.p >= %s AND u.p <= %s AND {meets_sql}"
        )
        params += [*status_params, *band_params, fleet_counts.to_units(low), fleet_counts.to_units(high),
                   *meets_params]
    prices: dict[tuple[int, int, bool], set] = {key: set() for key in keys}
    with connection.cursor() as cursor:
        cursor.execute(" UNION ".join(parts), params)
        for number, units in cursor.fetchall():
            prices[keys[number]].add(fleet_counts.from_units(units))
    return {key: sorted(found) for key, found in prices.items()}


def _describe_ids(
    query: FleetQuery,
    bands: dict[tuple[int, int, bool], tuple[Decimal, Decimal]],
    band_prices: dict[tuple[int, int, bool], list[Decimal]],
) -> list[int]:
    """Ids of the machines the answer describes: the first `machines_shown` meeting every
    preference, the first alternatives, and the cheapest meeting every preference at each lower
    precision, all in the engine's order (hourly price, price per GPU-hour, provider name, machine id,
    our id). Within a band of GPUs used, hourly price is a fixed multiple of the price per GPU-hour,
    so each band is read in price order from the price index, between the band's cheapest and
    dearest price (big GPUs cost more; the index would otherwise walk past every cheaper machine
    first, and past every dearer one when the band holds fewer machines than it may show), and the
    bands are merged by a window over the few rows they return."""
    screened, screened_params = _screened_sql(query)
    parts, params = [], []
    limits = {}
    # A choice of a few countries: each band is walked country by country (the index by country and
    # price), so the walk never passes the other countries' machines. With more, one walk over all.
    countries = sorted(query.countries) if query.countries is not None else []
    by_country = " AND m.country = c.code" if 0 < len(countries) <= COUNTRY_WALKS else ""
    for (fit_index, band, meets), (cheapest_price, dearest_price) in sorted(bands.items()):
        if fit_index == 0:
            kind = 0 if meets else 1
            limit = query.machines_shown if meets else query.alternatives_shown
        elif meets:
            kind, limit = fit_index + 1, query.lower_shown  # the cheapest at a lower precision
        else:
            continue
        if limit <= 0:
            continue
        limits[kind] = limit
        thresholds = query.fits[fit_index]
        gpus = thresholds[band][0]
        band_sql, band_params = _band_sql(thresholds, band)
        meets_sql, meets_params = _meets_sql(query, gpus)
        if not meets:
            meets_sql = f"NOT ({meets_sql})"
        at_prices, price_params = "", []
        if (fit_index, band, meets) in band_prices:
            # A sparse band: only the prices its machines have, each an index probe.
            at_prices, price_params = " AND m.price_per_gpu_hour = ANY(%s::numeric[])", [
                band_prices[fit_index, band, meets]
            ]
        # Fixed SQL and integers; every value is a parameter.
        walk = (
            f"SELECT m.id, {int(kind)} AS kind, m.price_per_gpu_hour * {int(gpus)} AS hourly, "  # noqa: S608  # nosec B608
            'm.price_per_gpu_hour AS price, p.name COLLATE "C" AS provider, '
            'm.provider_machine_id COLLATE "C" AS machine FROM catalog_machine m '
            f"JOIN catalog_provider p ON p.id = m.provider_id "
            f"WHERE {screened} AND {band_sql} AND {meets_sql}{by_country} "
            f"AND m.price_per_gpu_hour >= %s AND m.price_per_gpu_hour <= %s{at_prices} "
            f'ORDER BY m.price_per_gpu_hour, p.name COLLATE "C", m.provider_machine_id COLLATE "C", m.id '
            f"LIMIT {int(limit)}"
        )
        walk_params = [
            *screened_params, *band_params, *meets_params, cheapest_price, dearest_price, *price_params
        ]
        if by_country:
            # The band's cheapest in each chosen country, each walk in that country's price order.
            parts.append(
                f"(SELECT w.* FROM unnest(%s::varchar[]) AS c(code) CROSS JOIN LATERAL ({walk}) AS w)"  # noqa: S608  # nosec B608
            )
            params += [countries, *walk_params]
        else:
            parts.append(f"({walk})")
            params += walk_params
    if not parts:
        return []
    keep = " OR ".join(
        f"(kind = {int(kind)} AND place <= {int(limit)})" for kind, limit in sorted(limits.items())
    )
    sql = (
        "SELECT DISTINCT id FROM (SELECT id, kind, ROW_NUMBER() OVER (PARTITION BY kind "  # noqa: S608  # nosec B608
        "ORDER BY hourly, price, provider, machine, id) AS place FROM ("
        + " UNION ALL ".join(parts)
        + f") AS banded) AS placed WHERE {keep}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return sorted(row[0] for row in cursor.fetchall())


def meeting_by_country(query: FleetQuery) -> list[tuple[str, Decimal, int]]:
    """Each country holding machines that fit (at `query.fits[0]`) and meet every preference, with
    the cheapest hourly price there and how many there are, cheapest first (ties by country code).
    From the kept counts, in one statement: a shape's cheapest machine meets the price limits
    exactly when any of its machines does, and those that do are the shape's count up to the
    highest price per GPU-hour within the limits."""
    status_sql, status_params = availability.status_sql(query.stale_cutoff, query.countries)
    gpus_sql, gpus_params = _gpus_used_sql(query.fits[0])
    meets, meets_params = ["TRUE"], []
    if query.tier != "both":
        meets.append("m.tier = %s")
        meets_params.append(query.tier)
    highest, highest_params = [], []
    for limit in (query.max_price_per_hour, query.budget):
        if limit is not None:
            meets.append(f"m.prices[1] * g.gpus <= %s::numeric * {fleet_counts.PRICE_UNITS}")
            meets_params.append(limit)
            # price × GPUs within the limit: in whole units of price, at most limit ÷ GPUs, rounded down
            highest.append(f"FLOOR(%s::numeric * {fleet_counts.PRICE_UNITS} / g.gpus)::bigint")
            highest_params.append(limit)
    if highest:
        counted = f"COALESCE(m.cum[width_bucket(LEAST({', '.join(highest)}), m.prices)], 0)"
    else:
        counted = "m.cum[cardinality(m.cum)]"
    # Fixed SQL and integers; every value is a parameter.
    sql = (
        f"SELECT m.country, MIN(m.prices[1] * g.gpus), SUM({counted}) FROM {fleet_counts.SHAPES} m "  # noqa: S608  # nosec B608
        f"CROSS JOIN LATERAL (SELECT {gpus_sql} AS gpus) AS g "
        f"WHERE {status_sql} = {availability.SCREENED} AND g.gpus IS NOT NULL AND {' AND '.join(meets)} "
        "GROUP BY m.country ORDER BY 2, 1"
    )
    with connection.cursor() as cursor:
        fleet_counts.merge_pending(cursor)
        cursor.execute(sql, [*highest_params, *gpus_params, *status_params, *meets_params])
        return [
            (country, fleet_counts.from_units(units), int(machines))
            for country, units, machines in cursor.fetchall()
        ]


def _count_at_cheapest(query: FleetQuery, only_cheapest: dict[str, Decimal], by_scan: bool) -> dict[str, int]:
    """For the empty answer's hints: machines that break only the price limit (or only the budget)
    and cost exactly the cheapest such hourly price."""
    if not by_scan:
        return _count_at_cheapest_kept(query, only_cheapest)
    screened, params = _screened_sql(query)
    thresholds = query.fits[0]
    gpus_sql, gpus_params = _gpus_used_sql(thresholds)
    tier_ok = "TRUE" if query.tier == "both" else "m.tier = %s"
    tier_params = [] if query.tier == "both" else [query.tier]
    filters, filter_params = [], []
    for code, limit, other in (
        (reasons.BREAK_MAX_PRICE, query.max_price_per_hour, query.budget),
        (reasons.BREAK_BUDGET, query.budget, query.max_price_per_hour),
    ):
        if code not in only_cheapest:
            continue
        other_ok = "TRUE" if other is None else f"m.price_per_gpu_hour * {gpus_sql} <= %s"
        other_params = [] if other is None else [*gpus_params, other]
        filters.append(
            f"COUNT(*) FILTER (WHERE {tier_ok} AND {other_ok} "
            f"AND m.price_per_gpu_hour * {gpus_sql} > %s AND m.price_per_gpu_hour * {gpus_sql} = %s)"
        )
        filter_params += [*tier_params, *other_params, *gpus_params, limit, *gpus_params, only_cheapest[code]]
    codes = [code for code in (reasons.BREAK_MAX_PRICE, reasons.BREAK_BUDGET) if code in only_cheapest]
    # Fixed SQL and integers; every value is a parameter.
    sql = (
        f"SELECT {', '.join(filters)} FROM catalog_machine m "  # noqa: S608  # nosec B608
        f"WHERE {screened} AND {gpus_sql} IS NOT NULL"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, filter_params + params + gpus_params)
        values = cursor.fetchone()
    return dict(zip(codes, values, strict=True))


def _count_at_cheapest_kept(query: FleetQuery, only_cheapest: dict[str, Decimal]) -> dict[str, int]:
    """The same from the kept counts. Such a machine costs exactly the cheapest hourly price, so
    whether it keeps the other limit and breaks this one is decided by that price alone."""
    status_sql, status_params = availability.status_sql(query.stale_cutoff, query.countries)
    gpus_sql, gpus_params = _gpus_used_sql(query.fits[0])
    counts = {}
    for code, limit, other in (
        (reasons.BREAK_MAX_PRICE, query.max_price_per_hour, query.budget),
        (reasons.BREAK_BUDGET, query.budget, query.max_price_per_hour),
    ):
        if code not in only_cheapest:
            continue
        hourly = only_cheapest[code]
        if hourly <= limit or (other is not None and hourly > other):
            counts[code] = 0
            continue
        sql, params = fleet_counts.count_at_price_sql(
            status_sql, status_params, availability.SCREENED, gpus_sql, gpus_params, query.tier, hourly
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            counts[code] = cursor.fetchone()[0]
    return counts


# --- Measured speeds of one model, for the throughput plan and the price-per-million sort -----------


class SpeedRow(NamedTuple):
    """A machine the availability rule lets through, with the latest tokens/s speed measured on it (on
    its own GPU type) for one model and precision: what a plan and the price-per-million sort weigh.
    Thousands of these make a large plan's search, so the measurement's details are read apart, for
    the machines an answer shows (`measured_speeds`)."""

    speed_id: int
    machine_id: int
    price_per_gpu_hour: Decimal
    free_gpus: int
    memory_per_gpu_mib: int
    tier: str
    provider: str
    provider_machine_id: str
    gpu_type: str
    country: str | None
    region: str
    value: Decimal  # tokens/s as measured
    gpus: int  # GPUs the measurement ran on


def speed_rows(
    *,
    stale_cutoff: datetime,
    countries: frozenset[str] | None,
    tier: str,
    model_slug: str,
    precision: int,
    min_memory_mib: int,
) -> list[SpeedRow]:
    """Each machine available now in the chosen countries and tier, with at least `min_memory_mib`
    per GPU, that carries a tokens/s speed for this model and precision, with its latest one
    (`sizing.speeds.speed_for`), in machine order. One query, driven by the speeds' index: a
    fraction of the fleet has any."""
    machines = Machine.objects.filter(availability.available_q(stale_cutoff, countries))
    if tier != "both":
        machines = machines.filter(tier=tier)
    machines = machines.filter(memory_per_gpu_mib__gte=min_memory_mib)
    rows = (
        MeasuredSpeed.objects.filter(
            model_slug=model_slug,
            precision=precision,
            unit=MeasuredSpeed.Unit.TOKENS_PER_SECOND,
            machine__in=machines,
            gpu_type_id=F("machine__gpu_type_id"),
        )
        .order_by("machine_id", "pk")
        .values_list(
            "pk", "machine_id", "machine__price_per_gpu_hour", "machine__free_gpus",
            "machine__memory_per_gpu_mib", "machine__tier", "machine__provider__name",
            "machine__provider_machine_id", "machine__gpu_type__name", "machine__country", "machine__region",
            "value", "gpus", "measured_at",
        )
    )
    by_machine: dict[int, list[tuple]] = {}
    for row in rows:
        by_machine.setdefault(row[1], []).append(row)
    found = []
    for measured in by_machine.values():
        speeds = [
            offers.MeasuredSpeed(model_slug=model_slug, precision=precision, value=row[11],
                                 unit="tokens/s", measured_at=row[13], gpus=row[12])
            for row in measured
        ]
        latest = speed_for(speeds, model_slug, precision)
        row = measured[speeds.index(latest)]
        found.append(SpeedRow(*row[:9], row[9] or None, *row[10:13]))
    return found


def measured_speeds(speed_ids) -> dict[int, offers.MeasuredSpeed]:
    """The measurements behind these speed ids, with everything a plan's rows show of them."""
    speed_ids = list(speed_ids)
    if not speed_ids:
        return {}
    return {row.pk: measured_speed(row) for row in MeasuredSpeed.objects.filter(pk__in=speed_ids)}


# A chosen row: what `SpeedRow` holds (the GPU type by id until the last join), and the count.
ROW_COLUMNS = (
    "speed_id, machine_id, price, free, memory_per_gpu_mib, tier, provider, machine_key, gpu_type_id, "
    "country, region, value, gpus, total"
)


@dataclass(frozen=True)
class SpeedQuery:
    """The machines with a speed for one model and precision that a plan or the price-per-million sort
    may use: available now in the chosen countries and tier, fitting (`fits`: `sizing.fit`
    thresholds), within the price limit and budget, the latest measurement of each."""

    stale_cutoff: datetime
    countries: frozenset[str] | None
    tier: str
    model_slug: str
    precision: int
    fits: tuple[tuple[int, int], ...]
    max_price_per_hour: Decimal | None
    budget: Decimal | None
    # Per speed class (same figure, same GPUs measured and used), keep the cheapest machines: enough
    # copies for the target alone (target ÷ (usable speed of a copy)) plus the spares, and `keep`.
    target: Decimal | None
    efficiency: Decimal
    redundancy: int
    keep: int
    # The plans wanted on each GPU type too: a copy is then weighed against its own type's plans.
    per_gpu_type: bool = False


def speed_rows_counted(query: SpeedQuery, by_scan: bool = False) -> tuple[list[SpeedRow], int]:
    """PostgreSQL: the rows a plan can need and how many machines qualify, in one statement.

    Within a speed class every copy serves the same, so a cheaper machine is never worse: a plan
    uses at most as many copies of a class as reach the target alone plus the spare copies, so the
    class's cheapest machines up to that many copies are enough (per GPU type, for the plans on
    one GPU type). Those copies alone are a plan, so the cheapest of these one-class plans bounds
    the cheapest plan (on each GPU type, when those plans are asked for), and a copy whose class's
    copies up to and including it cost more is left out too. The `keep` machines with the lowest
    price per million tokens come as well (the sorted list's first page). The rest are counted,
    not fetched.

    The latest speed of each machine comes from the table the writes keep (`catalog.latest_speeds`);
    `by_scan` works it out from the speeds and machines instead (the reference the kept table is
    tested against). Either way the availability rule, fit and preferences apply at request time."""
    screened, screened_params = availability.available_sql(query.stale_cutoff, query.countries)
    gpus_sql, gpus_params = _gpus_used_sql(query.fits)
    tier_sql, tier_params = ("TRUE", []) if query.tier == "both" else ("m.tier = %s", [query.tier])
    if by_scan:
        source = f"({latest_speeds.latest_sql('s.model_slug = %s AND s.precision = %s')})"
    else:
        source = latest_speeds.TABLE
    limits, limit_params = [], []
    for limit in (query.max_price_per_hour, query.budget):
        if limit is not None:
            limits.append("price * fit_gpus <= %s")
            limit_params.append(limit)
    fitting = (
        f"(SELECT * FROM (SELECT m.speed_id, m.value, m.gpus, m.price_per_gpu_hour AS price, "  # noqa: S608  # nosec B608
        f"{gpus_sql} AS fit_gpus, "
        'p.name COLLATE "C" AS provider, m.provider_machine_id COLLATE "C" AS machine_key, '
        "m.machine_id, m.free_gpus AS free, m.gpu_type_id, m.memory_per_gpu_mib, m.tier, m.country, m.region "
        f"FROM {source} m JOIN catalog_provider p ON p.id = m.provider_id "
        "WHERE m.model_slug = %s AND m.precision = %s "
        f"AND {screened} AND {tier_sql} AND m.memory_per_gpu_mib >= %s) AS a "
        f"WHERE fit_gpus IS NOT NULL {''.join(' AND ' + c for c in limits)}) AS f"
    )
    fitting_params = [
        *gpus_params, *([query.model_slug, query.precision] if by_scan else []), query.model_slug,
        query.precision, *screened_params, *tier_params, min(need for _, need in query.fits), *limit_params,
    ]
    chosen, chosen_params = [], []
    if query.target is not None:
        # Copies of the machines before this one in its class (same figure, same GPUs measured and
        # used, same GPU type: the plans on one GPU type need that type's cheapest copies too),
        # cheapest first, against the copies wanted, and what those copies cost.
        classes = (
            f"SELECT *, COUNT(*) OVER () AS total, "  # noqa: S608  # nosec B608
            "COALESCE(SUM(free / fit_gpus) OVER w, 0) AS copies_before, "
            "COALESCE(SUM(free / fit_gpus * price * fit_gpus) OVER w, 0) AS price_before, "
            "CEIL(%s::numeric * gpus * 100 / (value * fit_gpus * %s::numeric)) + %s AS wanted "
            f"FROM {fitting} WINDOW w AS (PARTITION BY value, gpus, gpu_type_id, fit_gpus ORDER BY price, "
            "provider, machine_key, machine_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
        )
        # A class's wanted copies alone are a plan (spares as fast as the rest): the cheapest such
        # price bounds every plan, and a plan takes a class's copies cheapest first, so a copy whose
        # class's copies up to it cost more than that is in no cheapest plan.
        completed = (
            "CASE WHEN copies_before + free / fit_gpus >= wanted "
            "THEN price_before + (wanted - copies_before) * price * fit_gpus END"
        )
        bound_over = "PARTITION BY gpu_type_id" if query.per_gpu_type else ""
        chosen.append(
            f"SELECT {ROW_COLUMNS} FROM (SELECT *, MIN({completed}) OVER ({bound_over}) AS bound "  # noqa: S608  # nosec B608
            f"FROM ({classes}) AS k WHERE copies_before < wanted) AS c "
            "WHERE bound IS NULL OR price_before + price * fit_gpus <= bound"
        )
        chosen_params += [query.target, query.efficiency, query.redundancy, *fitting_params]
    if query.keep > 0:
        # The first machines by price per million tokens (rounded as shown, then the machines' own order).
        chosen.append(
            f"(SELECT {ROW_COLUMNS} FROM (SELECT *, COUNT(*) OVER () AS total FROM {fitting}) AS c "  # noqa: S608  # nosec B608
            "ORDER BY ROUND(price * gpus * 1000000 / (value * 3600), 4), price * fit_gpus, price, provider, "
            "machine_key, machine_id LIMIT %s)"
        )
        chosen_params += [*fitting_params, query.keep]
    if not chosen:
        return [], 0
    # Only what the plan's search and the sort weigh travels; the GPU type's name is joined last.
    sql = (
        f"SELECT r.speed_id, r.machine_id, r.price, r.free, r.memory_per_gpu_mib, r.tier, r.provider, "  # noqa: S608  # nosec B608
        "r.machine_key, g.name, r.country, r.region, r.value, r.gpus, r.total "
        f"FROM ({' UNION '.join(chosen)}) AS r "
        "JOIN catalog_gputype g ON g.id = r.gpu_type_id ORDER BY r.machine_id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, chosen_params)
        fetched = cursor.fetchall()
    total = fetched[0][-1] if fetched else 0
    return [SpeedRow(*row[:9], row[9] or None, *row[10:13]) for row in fetched], total


