"""What serving under vLLM reads from the catalog: each language model's Hugging Face id and each GPU
type's usable memory as CUDA reports it, with where it comes from; rows.py hands both to sizing."""
import csv
from pathlib import Path

import pytest
from django.conf import settings

from catalog import rows as catalog_rows
from catalog.data.gpu_types import GPU_TYPES, USABLE_MEMORY
from catalog.data.language_models import LANGUAGE_MODELS, hf_id_of
from catalog.models import GpuType, LanguageModel
from sizing.calculators.vllm import DRIVER_RESERVED_BYTES

pytestmark = pytest.mark.django_db
REFERENCE = Path(settings.BASE_DIR) / "catalog" / "data" / "reference"


def test_every_shipped_language_model_names_the_hub_id_its_configuration_comes_from(models_and_gpus):
    for row in LANGUAGE_MODELS:
        assert row["hf_id"] and row["config_url"].startswith(f"https://huggingface.co/{row['hf_id']}/"), row["slug"]
    assert LanguageModel.objects.get(slug="llama-3-1-8b").hf_id == "meta-llama/Llama-3.1-8B"
    assert catalog_rows.get_model_spec("qwen3-8b").hf_id == "Qwen/Qwen3-8B"


def test_a_hub_id_is_read_only_from_a_hub_address():
    assert hf_id_of("https://huggingface.co/google/gemma-2-9b/blob/main/config.json") == "google/gemma-2-9b"
    assert hf_id_of("https://example.com/config.json") == ""
    assert hf_id_of("https://huggingface.co/") == ""


def test_usable_memory_is_below_the_driver_total_and_says_where_it_comes_from(models_and_gpus):
    for name, _vendor, _marketed, memory_mib, _url, _notes in GPU_TYPES:
        row = GpuType.objects.get(name=name)
        assert row.usable_memory_source, name
        if name in USABLE_MEMORY:
            assert row.usable_memory_mib == USABLE_MEMORY[name][0] <= memory_mib
        else:
            assert row.usable_memory_mib is None and "nvidia-smi" in row.usable_memory_source


def test_the_h100s_usable_figure_is_what_vllm_logs_as_its_total(models_and_gpus):
    with (REFERENCE / "vllm_startup_logs.csv").open(encoding="utf-8") as handle:
        logged = {row["gpu_total_gib"] for row in csv.DictReader(handle) if row["gpu"] == "NVIDIA H100 80GB HBM3"}
    assert logged == {"79.19"}
    assert GpuType.objects.get(name="H100 SXM 80GB").usable_memory_mib == int(79.19 * 1024)


def test_the_driver_reservation_vllm_sizes_with_is_the_catalogs_measured_one(models_and_gpus):
    h100 = GpuType.objects.get(name="H100 SXM 80GB")
    assert (h100.memory_mib - h100.usable_memory_mib) * 2**20 == DRIVER_RESERVED_BYTES


def test_staff_see_and_edit_both_figures_in_the_admin(admin_client, models_and_gpus):
    h100 = GpuType.objects.get(name="H100 SXM 80GB")
    listed = admin_client.get("/admin/catalog/gputype/").content.decode()
    assert "81090" in listed.replace(",", "").replace(".", "")
    form = admin_client.get(f"/admin/catalog/gputype/{h100.pk}/change/").content.decode()
    assert 'name="usable_memory_mib"' in form and 'name="usable_memory_source"' in form
    model = LanguageModel.objects.get(slug="llama-3-1-8b")
    page = admin_client.get(f"/admin/catalog/languagemodel/{model.pk}/change/").content.decode()
    assert 'name="hf_id"' in page and 'value="meta-llama/Llama-3.1-8B"' in page
    found = admin_client.get("/admin/catalog/languagemodel/", {"q": "meta-llama/Llama-3.1-8B"}).content.decode()
    assert "Llama 3.1 8B" in found
