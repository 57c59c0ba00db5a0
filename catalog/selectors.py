"""Reads from the catalog. This is the one place catalog rows become the plain values `sizing` works on."""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Prefetch, QuerySet
from django.utils import timezone

from catalog.models import ImagePipeline, LanguageModel, Machine, MeasuredSpeed, SpeechModel
from sizing import offers, specs

WORKLOADS = ("inference", "finetune", "image", "speech", "notebook")
# Which catalog kinds suit each workload (SPEC §2). "inference" runs a language or a speech model;
# "speech" is accepted for callers that ask for speech recognition on its own.
KINDS_BY_WORKLOAD = {
    "inference": ("language", "speech"),
    "finetune": ("language",),
    "image": ("image",),
    "speech": ("speech",),
    "notebook": (),
}
KIND_ORDER = {"language": 0, "speech": 1, "image": 2}

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


def measured_speed(row: MeasuredSpeed) -> offers.MeasuredSpeed:
    return offers.MeasuredSpeed(
        model_slug=row.model_slug,
        precision=row.precision,
        value=float(row.value),
        unit=row.unit,
        measured_at=row.measured_at,
    )


def machine_offer(row: Machine) -> offers.MachineOffer:
    """Expects provider and gpu_type selected and measured_speeds prefetched (see `machines_with_related`)."""
    return offers.MachineOffer(
        id=row.pk,
        provider=row.provider.name,
        tier=row.tier,
        provider_machine_id=row.provider_machine_id,
        gpu_type=row.gpu_type.name,
        gpu_count=row.gpu_count,
        free_gpus=row.free_gpus,
        memory_per_gpu_mib=row.memory_per_gpu_mib,
        memory_source=row.memory_source,
        country=row.country or None,
        region=row.region,
        price_per_gpu_hour=row.price_per_gpu_hour,
        interruptible=row.interruptible,
        booking_limit_hours=row.booking_limit_hours,
        last_seen=row.last_seen_at,
        datasheet_memory_mib=row.gpu_type.memory_mib,
        memory_flag=row.memory_flag or None,
        measured_speeds=tuple(measured_speed(speed) for speed in row.measured_speeds.all()),
    )


def machines_with_related(queryset: QuerySet[Machine] | None = None) -> QuerySet[Machine]:
    """Machines with everything `machine_offer` reads, in three queries whatever their number."""
    queryset = Machine.objects.all() if queryset is None else queryset
    return queryset.select_related("provider", "gpu_type").prefetch_related(
        Prefetch("measured_speeds", queryset=MeasuredSpeed.objects.order_by("model_slug", "precision", "pk"))
    )


def available_machines(now: datetime | None = None) -> QuerySet[Machine]:
    """Machines available now (SPEC §4): online / in stock, still in their provider's feed, and heard
    from within MACHINE_STALE_AFTER_SECONDS. Ordered by price, then a stable key."""
    now = now or timezone.now()
    fresh_since = now - timedelta(seconds=settings.MACHINE_STALE_AFTER_SECONDS)
    return machines_with_related(
        Machine.objects.filter(
            is_available=True, gone_at__isnull=True, last_seen_at__gte=fresh_since, provider__is_active=True
        )
    ).order_by("price_per_gpu_hour", "pk")


def machine_offers(queryset: QuerySet[Machine] | None = None) -> list[offers.MachineOffer]:
    return [machine_offer(row) for row in machines_with_related(queryset)]


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
    return (KIND_ORDER[row.kind], parameters is None, parameters or 0, row.name, row.slug)


def models_for_workload(workload: str) -> list[CatalogModel]:
    """Active catalog rows suited to a workload, ordered by kind, parameters, then name."""
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


def specs_for(rows: Iterable[CatalogModel]) -> list[ModelSpec]:
    return [model_spec(row) for row in rows]
