from collections import Counter

import pytest

from catalog.models import (
    GpuType,
    ImageComponent,
    ImagePipeline,
    LanguageModel,
    Machine,
    MeasuredSpeed,
    Provider,
    SpeechModel,
)
from catalog.services import load_catalog

from .configs import LLM_SLUGS, REQUIRED_SLUGS
from .reference import read_reference

pytestmark = pytest.mark.django_db

PIPELINE_SLUGS = {
    "stable-diffusion-v1-5": "stable-diffusion-v1-5",
    "stable-diffusion-xl-base-1.0": "stable-diffusion-xl",
    "stable-diffusion-3-medium": "stable-diffusion-3-medium",
    "FLUX.1-dev": "flux-1-dev",
    "FLUX.1-schnell": "flux-1-schnell",
}


def optional_int(text: str) -> int | None:
    return int(text) if text.strip() else None


def counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (
            LanguageModel, ImagePipeline, ImageComponent, SpeechModel, GpuType, Provider, Machine,
            MeasuredSpeed,
        )
    }


def test_loading_twice_leaves_the_same_rows(catalog):
    first = counts()
    machine_ids = set(Machine.objects.values_list("provider__name", "provider_machine_id", "pk"))
    load_catalog()
    assert counts() == first
    assert set(Machine.objects.values_list("provider__name", "provider_machine_id", "pk")) == machine_ids


def test_reloading_restores_an_edited_figure(catalog):
    LanguageModel.objects.filter(slug="llama-3-1-8b").update(layers=99)
    load_catalog(fleet=False)
    assert LanguageModel.objects.get(slug="llama-3-1-8b").layers == 32


def test_shipped_models_meet_the_catalog_counts(catalog):
    assert LanguageModel.objects.count() >= 20
    assert set(REQUIRED_SLUGS) <= set(LanguageModel.objects.values_list("slug", flat=True))
    assert set(ImagePipeline.objects.values_list("slug", flat=True)) >= set(PIPELINE_SLUGS.values())
    assert sorted(SpeechModel.objects.values_list("slug", flat=True)) == [
        "whisper-base", "whisper-large-v3", "whisper-large-v3-turbo", "whisper-medium", "whisper-small",
        "whisper-tiny",
    ]
    for model in LanguageModel.objects.all():
        assert model.config_url.startswith("https://huggingface.co/"), model.slug
        assert model.config_url.endswith("/blob/main/config.json"), model.slug
        assert model.parameters and model.license, model.slug


def test_every_llm_figure_matches_the_published_reference(catalog):
    rows = read_reference("llms.csv")
    assert len(rows) == len(LLM_SLUGS)
    for row in rows:
        model = LanguageModel.objects.get(slug=LLM_SLUGS[row["model"]])
        expected = {
            "parameters": int(row["params_exact"]),
            "layers": int(row["layers"]),
            "attention_heads": int(row["attention_heads"]),
            "kv_heads": optional_int(row["kv_heads"]),
            "head_dim": optional_int(row["head_dim"]),
            "hidden_size": int(row["hidden_size"]),
            "intermediate_size": int(row["intermediate_size"]),
            "vocab_size": int(row["vocab_size"]),
            "max_context": int(row["max_position_embeddings"]),
            "license": row["license"],
            "parameters_published": row["params_published"],
        }
        actual = {field: getattr(model, field) for field in expected}
        assert actual == expected, row["model"]


def test_deepseek_v3_is_computed_from_its_latent_attention(catalog):
    model = LanguageModel.objects.get(slug="deepseek-v3")
    assert model.kv_heads is None and model.head_dim is None
    assert model.architecture["mla"]["kv_lora_rank"] == 512
    assert all(m.missing_values() == [] for m in LanguageModel.objects.all())


def test_every_image_component_matches_the_published_reference(catalog):
    expected = {}
    for row in read_reference("image_pipelines.csv"):
        expected.setdefault(PIPELINE_SLUGS[row["pipeline"]], []).append(
            (row["component"], row["role"], int(row["params_exact"]))
        )
    for slug, components in expected.items():
        pipeline = ImagePipeline.objects.get(slug=slug)
        assert [(c.name, c.role, c.parameters) for c in pipeline.components.order_by("order")] == components
        assert pipeline.native_resolution == "1024x1024" or slug == "stable-diffusion-v1-5"


def test_every_whisper_figure_matches_the_published_reference(catalog):
    for row in read_reference("whisper.csv"):
        model = SpeechModel.objects.get(slug=row["model"])
        assert (
            model.parameters, model.encoder_layers, model.decoder_layers, model.d_model,
            model.attention_heads, model.vocab_size, model.max_source_positions, model.max_target_positions,
        ) == tuple(
            int(row[key]) for key in (
                "params_exact", "encoder_layers", "decoder_layers", "d_model", "attention_heads",
                "vocab_size", "max_source_positions", "max_target_positions",
            )
        )


def test_every_reference_gpu_is_shipped_with_the_driver_reported_memory(catalog):
    for row in read_reference("gpus.csv"):
        gpu = GpuType.objects.get(name=row["gpu"])
        assert (gpu.vendor, gpu.marketed_memory, gpu.memory_mib) == (
            row["vendor"], row["marketed"], int(row["memory_mib_reported"])
        )
        assert gpu.datasheet_url.startswith("https://")


def test_demo_fleet_covers_every_case_the_wizard_handles(catalog):
    machines = Machine.objects.select_related("gpu_type")
    assert machines.count() >= 300
    assert Provider.objects.filter(tier="secure").count() >= 3
    assert Provider.objects.filter(tier="community").count() >= 3
    countries = set(machines.exclude(country="").values_list("country", flat=True))
    assert len(countries) >= 15
    assert {"DE", "FR", "US", "JP", "CH", "GB"} <= countries
    assert machines.filter(country="").exists()
    assert machines.filter(memory_per_gpu_mib__isnull=True, memory_source="unknown").exists()
    assert machines.filter(is_available=False).exists()
    assert machines.filter(interruptible=True).exists()
    assert machines.filter(booking_limit_hours__isnull=False).exists()
    sources = set(machines.values_list("memory_source", flat=True))
    assert sources == {"datacenter", "datasheet", "host", "unknown"}
    assert set(machines.values_list("gpu_count", flat=True)) >= {1, 2, 4, 8}
    multi_gpu = [("H100 SXM 80GB", 8), ("H200", 8), ("L40S", 4), ("RTX 4090", 2), ("MI300X", 8)]
    for gpu_name, gpu_count in multi_gpu:
        assert machines.filter(gpu_type__name=gpu_name, gpu_count=gpu_count).exists(), gpu_name
    assert MeasuredSpeed.objects.count() >= 3
    assert not machines.filter(last_seen_at__isnull=True).exists()


def test_host_memory_far_from_the_datasheet_is_flagged(catalog):
    flagged = 0
    for machine in Machine.objects.filter(memory_source="host").select_related("gpu_type"):
        datasheet = machine.gpu_type.memory_mib
        deviation = abs(machine.memory_per_gpu_mib - datasheet) / datasheet
        assert bool(machine.memory_flag) == (deviation > 0.05), machine.provider_machine_id
        flagged += bool(machine.memory_flag)
    assert flagged > 0
    assert Machine.objects.filter(memory_source="host").exclude(memory_flag="").count() == flagged


def test_demo_fleet_machines_satisfy_model_validation(catalog):
    for machine in Machine.objects.select_related("provider", "gpu_type"):
        # The constraints (Meta.constraints) are the database's own: it checked each row as it took it.
        # Asked again here, Django would send a statement per constraint and machine (12 × every row).
        machine.full_clean(validate_constraints=False)
    assert Counter(Machine.objects.values_list("tier", flat=True)).keys() == {"secure", "community"}
