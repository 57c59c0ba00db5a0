"""Catalog rows as the plain values `sizing` works on: model specs, machine offers, measured speeds,
and the models offered for a workload. This is the one place that translation is written; the
fleet and speed queries (`catalog.counting`) build their offers and speeds through it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from django.db import router
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy

from catalog import database
from catalog.gguf_files import published_ggufs
from catalog.models import (
    GpuType,
    ImagePipeline,
    LanguageModel,
    Machine,
    MeasuredSpeed,
    Provider,
    SpeechModel,
)
from sizing import offers, specs
from sizing.calculators.vllm import DRIVER_RESERVED_BYTES
from sizing.calculators.vllm_interconnect import DEFAULT_INTERCONNECT, interconnect_of_gpu
from sizing.engine_support import GpuArchitecture, gpu_architecture
from sizing.units import MIB
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
        hf_id=row.hf_id or None,
        trust_remote_code=row.trust_remote_code,
        gguf_files=published_ggufs(row.gguf_files),
    )


def image_pipeline_spec(row: ImagePipeline) -> specs.ImagePipelineSpec:
    # .all() uses prefetched components when present; the model orders them by `order`.
    components = sorted(row.components.all(), key=lambda component: (component.order, component.pk))
    return specs.ImagePipelineSpec(
        slug=row.slug,
        name=row.name,
        components=tuple(
            specs.ImageComponent(name=c.name, role=cast(specs.ComponentRole, c.role), parameters=c.parameters)
            for c in components
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
SPEED_FIELDS = offers.SPEED_RECORD_FIELDS


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
    "gpu_slug": "gpu_type__slug",
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
    "gpu_architecture": "gpu_type__architecture",
    "gpu_compute_capability": "gpu_type__compute_capability",
    "memory_flag": "memory_flag",
    "is_available": "is_available",
    "provider_active": "provider_is_active",
    "gone": "gone_at",
    # The markets, reliability and stock (`sizing.markets`): read with the machine, no statement more.
    "interruptible_price_per_gpu_hour": "interruptible_price_per_gpu_hour",
    "interruption_notice_seconds": "interruption_notice_seconds",
    "interruption_frequency": "interruption_frequency",
    "reserved_price_per_gpu_hour": "reserved_price_per_gpu_hour",
    "reserved_term_days": "reserved_term_days",
    "reliability": "reliability",
    "reliability_measures": "reliability_measures",
    "stock": "stock",
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


def _column_sql(model, path: str, aliases: dict) -> str:
    """`path` of OFFER_COLUMNS (a column, or a relation's column after "__") as SQL on `aliases`'
    tables (model -> alias), from the models' own column names."""
    *relations, name = path.split("__")
    for relation in relations:
        model = model._meta.get_field(relation).related_model
    return f"{aliases[model]}.{model._meta.get_field(name).column}"


def _offers_select_sql() -> str:
    aliases = {Machine: "m", Provider: "p", GpuType: "g", MeasuredSpeed: "s"}
    columns = [_column_sql(Machine, path, aliases) for path in OFFER_COLUMNS.values()]
    columns += [_column_sql(MeasuredSpeed, field, aliases) for field in ("id", *SPEED_FIELDS)]
    return ", ".join(columns)


# The columns an offer reads (OFFER_COLUMNS, in order), then one measured speed's (its id, then
# SPEED_FIELDS): the select list of a statement over catalog_machine `m`, its provider `p`, its GPU type
# `g` and a LEFT JOIN of its measured speeds `s`, one row per machine and speed (`offers_from_joined`).
# Written once, as every answer reads through it.
OFFERS_SELECT_SQL = _offers_select_sql()
# The joins OFFERS_SELECT_SQL reads through, and the order that keeps a machine's speeds together
# in `machine_offers`' order.
OFFERS_JOINS_SQL = (
    f"JOIN {Provider._meta.db_table} p ON p.id = m.provider_id "
    f"JOIN {GpuType._meta.db_table} g ON g.id = m.gpu_type_id "
    f"LEFT JOIN {MeasuredSpeed._meta.db_table} s ON s.machine_id = m.id"
)
OFFERS_ORDER_SQL = "m.id, s.model_slug, s.precision, s.id"


def offers_from_joined(joined: list[tuple]) -> list[offers.MachineOffer]:
    """Offers from the rows of a statement selecting OFFERS_SELECT_SQL (PostgreSQL's own types:
    Decimal prices, aware datetimes), ordered by OFFERS_ORDER_SQL: one offer per machine, its speeds
    in order (a machine without any has one row, its speed columns NULL)."""
    columns = list(OFFER_COLUMNS.values())
    width = len(columns)
    found: list[offers.MachineOffer] = []
    values: dict | None = None
    speeds: list[offers.MeasuredSpeed] = []
    for row in joined:
        if values is None or row[0] != values["id"]:
            if values is not None:
                found.append(_offer(values, tuple(speeds)))
            values, speeds = dict(zip(columns, row[:width], strict=True)), []
        if row[width] is not None:  # the speed's id: this machine has a measured speed here
            speeds.append(offers.MeasuredSpeed(**dict(zip(SPEED_FIELDS, row[width + 1:], strict=True))))
    if values is not None:
        found.append(_offer(values, tuple(speeds)))
    return found


# The statement `_first_active` asks, compiled once per model and database alias, with its values (the
# slug stands at SLUG_PLACE's places).
_FIRST_ACTIVE_SQL: dict[tuple[type, str], tuple[str, tuple]] = {}
SLUG_PLACE = "\x00slug"


def _first_active(model, slug: str):
    """The active row of `model` with this slug, or None. Every answer asks it first: its statement is
    compiled by the ORM once (a catalog model has some 50 columns, and compiling them cost half the
    lookup) and then asked as a raw query, which reads the row into the model with the same converters."""
    using = router.db_for_read(model)
    key = (model, using)
    if key not in _FIRST_ACTIVE_SQL:
        queryset = model.objects.filter(slug=SLUG_PLACE, is_active=True).order_by("pk")[:1]
        _FIRST_ACTIVE_SQL[key] = queryset.query.sql_with_params()
    sql, params = _FIRST_ACTIVE_SQL[key]
    rows = model.objects.raw(sql, [slug if value == SLUG_PLACE else value for value in params]).using(using)
    if model is ImagePipeline:
        rows = rows.prefetch_related("components")
    return next(iter(rows), None)


def get_model(slug: str, kinds_first: tuple[str, ...] = ()) -> CatalogModel | None:
    """The active catalog row with this slug, whichever kind it is; None when there is none. Asked
    language model, speech model, image pipeline in turn, or first the one kind of `kinds_first` (a
    workload's, "image" for image generation): a workload's own model is found in one statement, and a
    slug that two kinds share names the workload's own."""
    tables = [model for model in (LanguageModel, SpeechModel, ImagePipeline) if model.kind in kinds_first]
    if len(tables) > 1 or not tables:
        tables = [LanguageModel, SpeechModel, ImagePipeline]  # the order that decides between kinds
    else:
        tables += [model for model in (LanguageModel, SpeechModel, ImagePipeline) if model not in tables]
    for model in tables:
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


def gpu_memory_sizes() -> list[int]:
    """The catalog's GPU types' memory per GPU (MiB, as the driver reports it), each once, largest first."""
    return sorted(set(GpuType.objects.values_list("memory_mib", flat=True)), reverse=True)


@dataclass(frozen=True)
class UsableMemory:
    """One GPU type's memory as CUDA reports it, where the figure comes from, its architecture (None
    where the catalog records none): which commands start on it, and what its machines' GPUs are connected
    by (`sizing.calculators.vllm_interconnect`, from the type's name): what a tensor-parallel split costs."""

    gpu_type: str
    mib: int
    source: str
    architecture: GpuArchitecture | None = None
    interconnect: str = DEFAULT_INTERCONNECT


def usable_memory_mib(memory_mib: int, recorded_usable_mib: int | None) -> int:
    """One GPU's memory as CUDA reports it, the memory vLLM budgets from: the measured usable figure
    where the catalog records one for its type, else nvidia-smi's figure less what the driver keeps from
    CUDA (`sizing`'s 469 MiB)."""
    return recorded_usable_mib or memory_mib - DRIVER_RESERVED_BYTES // MIB


def gpu_types_usable() -> list[UsableMemory]:
    """Every GPU type with the memory vLLM budgets from (`usable_memory_mib`) and where it comes from."""
    reserved_mib = DRIVER_RESERVED_BYTES // MIB
    found = []
    # A plain statement: every cluster answer reads these few rows, and compiling the ORM's query would
    # cost several times what running it does.
    with database.reads().cursor() as cursor:
        cursor.execute("SELECT name, memory_mib, usable_memory_mib, usable_memory_source, architecture, "
                       "compute_capability FROM catalog_gputype ORDER BY vendor, name")
        rows = cursor.fetchall()
    for name, memory_mib, usable_mib, source, family, compute_capability in rows:
        if not usable_mib:
            source = f"nvidia-smi {memory_mib:,} MiB less the {reserved_mib} MiB the driver keeps from CUDA"
        found.append(UsableMemory(name, usable_memory_mib(memory_mib, usable_mib), source,
                                  gpu_architecture(family, compute_capability), interconnect_of_gpu(name)))
    return found
