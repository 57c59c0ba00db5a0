"""Writes to the catalog: loading the shipped data (the fleets: `catalog.fleets`), saving a machine or a
provider, importing a model from its config.

Every loader is an idempotent upsert keyed by slug, name, or (provider, machine id): running it
twice leaves the same rows. Bulk upserts use INSERT ... ON CONFLICT, which PostgreSQL and SQLite
both support.
"""
from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import F, QuerySet
from django.utils.text import slugify

from catalog import database
from catalog.data.gguf_files import GGUF_FILES
from catalog.data.gpu_aliases import GPU_ALIASES
from catalog.data.gpu_types import GPU_TYPES, architecture, usable_memory
from catalog.data.image_pipelines import IMAGE_PIPELINES
from catalog.data.language_models import LANGUAGE_MODELS, hf_id_of
from catalog.data.speech_models import SPEECH_MODELS
from catalog.fleets import gpu_types_by_shipped_name, load_demo_fleet
from catalog.gpu_names import gpu_name_key
from catalog.hf_config import parse_config
from catalog.models import (
    GpuAlias,
    GpuType,
    ImageComponent,
    ImagePipeline,
    LanguageModel,
    Machine,
    MeasuredSpeed,
    Provider,
    SpeechModel,
)

# --- Shipped models and GPU types -------------------------------------------------------------


def load_language_models() -> int:
    for row in LANGUAGE_MODELS:
        values = {key: value for key, value in row.items() if key != "slug"}
        values["gguf_files"] = GGUF_FILES.get(row["slug"], [])
        LanguageModel.objects.update_or_create(slug=row["slug"], defaults=values)
    return len(LANGUAGE_MODELS)


def load_image_pipelines() -> int:
    for row in IMAGE_PIPELINES:
        values = {key: value for key, value in row.items() if key not in ("slug", "components")}
        pipeline, _ = ImagePipeline.objects.update_or_create(slug=row["slug"], defaults=values)
        names = []
        for order, (name, role, parameters) in enumerate(row["components"]):
            ImageComponent.objects.update_or_create(
                pipeline=pipeline,
                name=name,
                defaults={"role": role, "parameters": parameters, "order": order},
            )
            names.append(name)
        pipeline.components.exclude(name__in=names).delete()
    return len(IMAGE_PIPELINES)


def load_speech_models() -> int:
    for row in SPEECH_MODELS:
        values = {key: value for key, value in row.items() if key != "slug"}
        SpeechModel.objects.update_or_create(slug=row["slug"], defaults=values)
    return len(SPEECH_MODELS)


def load_gpu_types() -> int:
    """Adds each shipped GPU type missing from the table and sets the shipped figures of those present.
    A shipped type staff renamed in the admin is found by the slug it was created with and keeps staff's
    name (loading again neither fails on that slug nor adds the type a second time)."""
    present = gpu_types_by_shipped_name([name for name, *_ in GPU_TYPES])
    for name, vendor, marketed, memory_mib, datasheet_url, notes in GPU_TYPES:
        usable_mib, usable_source = usable_memory(name, memory_mib)
        family, compute_capability = architecture(name)
        figures = {
            "vendor": vendor, "marketed_memory": marketed,
            "memory_mib": memory_mib, "datasheet_url": datasheet_url, "notes": notes,
            "usable_memory_mib": usable_mib, "usable_memory_source": usable_source,
            "architecture": family, "compute_capability": compute_capability,
        }
        row = present.get(name)
        if row is None:
            GpuType.objects.create(name=name, slug=slugify(name), **figures)
            continue
        for field, value in figures.items():
            setattr(row, field, value)
        row.save()
    return len(GPU_TYPES)


def load_gpu_aliases() -> int:
    """Adds each shipped alias missing from the table (compared by name key and GPU type); every other
    alias stays as staff left it. A shipped alias staff deleted comes back with the next load."""
    types = gpu_types_by_shipped_name({gpu_type_name for _, gpu_type_name, _ in GPU_ALIASES})
    for name, gpu_type_name, notes in GPU_ALIASES:
        alias = GpuAlias(name=name, gpu_type_id=types[gpu_type_name].pk, notes=notes)
        if not GpuAlias.objects.filter(key=gpu_name_key(name), gpu_type_id=alias.gpu_type_id).exists():
            alias.save()
    return len(GPU_ALIASES)


def drop_speeds_of_other_gpu_types(machines: QuerySet[Machine] | None = None) -> int:
    """A speed holds for the GPU type it was measured on: once a machine has another GPU type, its
    measurements from before are deleted. Returns how many were."""
    speeds = MeasuredSpeed.objects.filter(gpu_type__isnull=False)
    speeds = speeds.exclude(gpu_type_id=F("machine__gpu_type_id"))
    if machines is not None:
        speeds = speeds.filter(machine__in=machines)
    deleted, _ = speeds.delete()
    return deleted


@transaction.atomic
def save_machine(machine: Machine) -> Machine:
    """Save a machine (the admin's write); measurements of a GPU type it no longer has go."""
    machine.save()
    drop_speeds_of_other_gpu_types(Machine.objects.filter(pk=machine.pk))
    return machine


@transaction.atomic
def save_provider(provider: Provider) -> Provider:
    """Save a provider (the admin's write). Its machines' copies of its tier and active flag follow in
    the same statement, by the database's triggers (migration 0014), whichever way a provider is
    written: a deactivated provider's machines stop counting as available at once."""
    provider.save()
    return provider


# --- A model from its published config.json ---------------------------------------------------


@transaction.atomic
def import_language_model(
    *,
    name: str,
    slug: str,
    config_text: str,
    config_url: str = "",
    parameters: int | None = None,
    parameters_published: str = "",
    license: str = "",
) -> tuple[LanguageModel, bool]:
    """Create the LanguageModel `slug`, or update it, from a pasted config.json; returns (row, created).

    The figures the config states (its architecture included) replace the stored ones, and an
    architecture that loads through its repository's code sets `trust_remote_code`. `parameters`
    wins; without it the count is recounted from the configuration's figures, module by module.
    Empty optional texts keep what is stored. Raises ConfigError for a text that is not a usable
    config.json and ValidationError for figures the model refuses; nothing is saved then.
    """
    figures = parse_config(config_text)
    recounted = figures.pop("parameters")
    # An architecture whose loading runs the repository's code ticks the flag; a config never unticks
    # what staff set (they may know of code the architecture table does not).
    needs_remote_code = figures.pop("trust_remote_code")
    row = LanguageModel.objects.filter(slug=slug).first()
    created = row is None
    row = row or LanguageModel(slug=slug)
    row.name = name
    for field, value in figures.items():
        setattr(row, field, value)
    row.parameters = parameters or recounted
    row.trust_remote_code = row.trust_remote_code or needs_remote_code
    for field, value in (
        ("config_url", config_url), ("parameters_published", parameters_published), ("license", license),
    ):
        if value:
            setattr(row, field, value)
    if not row.hf_id:
        row.hf_id = hf_id_of(row.config_url)
    row.full_clean()
    row.save()
    return row, created


# --- Everything -------------------------------------------------------------------------------


@transaction.atomic
def load_catalog(fleet: bool = True, now: datetime | None = None) -> dict[str, int]:
    """Load (or refresh) the shipped catalog; with `fleet`, the demo fleet too. Idempotent."""
    counts = {
        "language_models": load_language_models(),
        "image_pipelines": load_image_pipelines(),
        "speech_models": load_speech_models(),
        "gpu_types": load_gpu_types(),
        "gpu_aliases": load_gpu_aliases(),
    }
    if fleet:
        counts["machines"] = load_demo_fleet(now=now)
    return counts


def analyze_catalog_tables() -> None:
    """Refresh the planner's statistics of the catalog's tables after a bulk load.

    A freshly loaded table has no statistics until autovacuum gets to it (never, on a server
    without it), and the fleet queries then pick slow plans.
    """
    from django.apps import apps

    database.analyze(sorted({model._meta.db_table for model in apps.get_app_config("catalog").get_models()}))
