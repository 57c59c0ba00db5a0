"""The GGUF files published for the catalog's models: kept with each model (shipped, edited in the admin,
checked), listed on the page and in the API, and named by every llama.cpp and Ollama answer; a type not
published for the model is sized all the same and said to be so."""
import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from catalog.data.gguf_files import GGUF_FILES
from catalog.gguf_files import gguf_files_problem, published_ggufs
from catalog.models import LanguageModel
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db

LLAMACPP = LLAMA_8B + "&engine=llamacpp"
PUBLISHED_FILE = "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
REPOSITORY = "lmstudio-community/Meta-Llama-3.1-8B-Instruct-GGUF"


def test_the_shipped_models_keep_their_published_files(models_only):
    for slug, repositories in GGUF_FILES.items():
        row = LanguageModel.objects.get(slug=slug)
        assert row.gguf_files == repositories and gguf_files_problem(row.gguf_files) is None
    llama = LanguageModel.objects.get(slug="llama-3-1-8b")
    assert [(p.repository, p.quant_type, p.file, p.bytes) for p in published_ggufs(llama.gguf_files)] == [
        (REPOSITORY, "Q4_K_M", PUBLISHED_FILE, 4_920_734_656)]
    assert LanguageModel.objects.get(slug="llama-2-7b").gguf_files == []


def test_the_api_lists_each_models_repositories_types_and_files(client, models_only):
    body = client.get("/api/v1/models?workload=inference").json()
    by_slug = {model["slug"]: model for model in body}
    coder = by_slug["qwen2-5-coder-7b"]["gguf_files"]
    assert [repo["repository"] for repo in coder] == ["Qwen/Qwen2.5-Coder-7B-Instruct-GGUF"]
    # in llama.cpp's order of types, whatever order the database keeps the object's keys in
    assert coder[0]["quant_types"] == ["F16", "Q8_0", "Q4_0", "Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K"]
    assert coder[0]["files"][5] == {"quantization": "Q4_K_M", "file": "qwen2.5-coder-7b-instruct-q4_k_m.gguf",
                                    "bytes": None}
    assert by_slug["llama-3-1-8b"]["gguf_files"][0]["files"][0]["bytes"] == 4_920_734_656
    assert by_slug["llama-2-7b"]["gguf_files"] == []


def test_an_answer_in_a_published_type_names_the_published_file(client, small_fleet):
    body = client.get(f"/api/v1/recommendations?{LLAMACPP}&quantization=Q4_K_M").json()
    gguf = body["memory"]["gguf"]
    assert gguf["file"] == PUBLISHED_FILE and gguf["published"] is True
    assert gguf["repository"] == REPOSITORY and gguf["published_bytes"] == 4_920_734_656
    assert any(f"published in {REPOSITORY}" in line for line in body["memory"]["assumptions"])
    assert body["machines"]
    for machine in body["machines"]:
        assert machine["gguf_file"] == PUBLISHED_FILE and machine["gguf_published"] is True
        assert machine["command"].startswith(f"llama-server -m {PUBLISHED_FILE} ")


def test_a_type_not_published_is_sized_and_marked_no_published_file(client, small_fleet):
    body = client.get(f"/api/v1/recommendations?{LLAMACPP}&quantization=Q5_K_M").json()
    gguf = body["memory"]["gguf"]
    assert gguf["published"] is False and gguf["repository"] is None and gguf["bytes"] > 0
    assert gguf["file"] == "Llama-3.1-8B-Q5_K_M.gguf"
    assert any(line.startswith("No published file") for line in body["memory"]["assumptions"])
    file_words = next(c["value"] for c in body["constraints"] if c["label"] == "GGUF file")
    assert "no published file" in file_words
    assert all(machine["gguf_published"] is False for machine in body["machines"])
    page = client.get(f"/?{LLAMACPP}&quantization=Q5_K_M").content.decode()
    assert "no published file: sized from llama.cpp&#x27;s own rules" in page
    german = client.get(f"/de/?{LLAMACPP}&quantization=Q5_K_M").content.decode()
    assert "keine veröffentlichte Datei" in german


def test_the_page_lists_the_published_files_of_the_chosen_model_in_both_languages(client, small_fleet):
    page = client.get(f"/?{LLAMACPP}").content.decode()
    assert 'data-testid="gguf-published"' in page and f"<code>{REPOSITORY}</code> (Q4_K_M)" in page
    german = client.get(f"/de/?{LLAMACPP}").content.decode()
    assert "Veröffentlichte GGUF-Dateien:" in german


def test_the_what_if_says_where_its_file_is_published(client, models_only):
    query = "model=llama-3-1-8b&engine=llamacpp&gpu_memory_gib=24&quantization=Q4_K_M"
    body = client.get(f"/api/v1/capacity?{query}").json()
    assert body["file"] == PUBLISHED_FILE and body["file_repository"] == REPOSITORY
    other = client.get(f"/api/v1/capacity?{query.replace('Q4_K_M', 'IQ4_XS')}").json()
    assert other["file_repository"] is None


@pytest.mark.parametrize(("value", "words"), [
    ({"repository": "a/b"}, "A list of repositories"),
    ([{"repository": "no-owner", "files": {"Q4_K_M": {"file": "x.gguf"}}}], "owner/name"),
    ([{"repository": "a/b", "files": {"Q9_K": {"file": "x.gguf"}}}], "not a GGUF quant type"),
    ([{"repository": "a/b", "files": {"Q4_K_M": {"file": "x.bin"}}}], "ending in .gguf"),
    ([{"repository": "a/b", "files": {"Q4_K_M": {"file": "x.gguf", "bytes": -1}}}], "whole number"),
    ([{"repository": "a/b", "files": {}}], "1 to 40 files"),
    ([{"repository": f"a/b{n}", "files": {"Q4_K_M": {"file": "x.gguf"}}} for n in range(11)], "At most 10"),
])
def test_a_bad_value_is_refused_beside_its_field_and_read_as_none(models_only, value, words):
    row = LanguageModel.objects.get(slug="llama-3-1-8b")
    row.gguf_files = value
    with pytest.raises(ValidationError) as refused:
        row.full_clean()
    assert list(refused.value.message_dict) == ["gguf_files"]
    assert words in refused.value.message_dict["gguf_files"][0]
    assert published_ggufs(value) == ()


def test_the_admin_edits_the_files_and_says_what_is_wrong_beside_the_field(admin_client, models_only):
    row = LanguageModel.objects.get(slug="llama-3-1-8b")
    url = reverse("admin:catalog_languagemodel_change", args=[row.pk])
    page = admin_client.get(url).content.decode()
    assert 'name="gguf_files"' in page and REPOSITORY in page


@pytest.mark.parametrize(("slug", "quantization", "repository", "file"), [
    ("qwen3-next-80b-a3b", "Q4_K_M", "unsloth/Qwen3-Next-80B-A3B-Instruct-GGUF",
     "Qwen3-Next-80B-A3B-Instruct-Q4_K_M.gguf"),
    ("kimi-linear-48b-a3b", "Q4_K_M", "ymcki/Kimi-Linear-48B-A3B-Instruct-GGUF",
     "Kimi-Linear-48B-A3B-Instruct-jp-imatrix.Q4_K_M.gguf"),
    ("kimi-linear-48b-a3b", "MXFP4_MOE", "ymcki/Kimi-Linear-48B-A3B-Instruct-GGUF",
     "Kimi-Linear-48B-A3B-Instruct.MXFP4_MOE.gguf"),
])
def test_the_linear_attention_models_name_their_published_files(client, models_only, slug, quantization,
                                                                 repository, file):
    query = f"model={slug}&engine=llamacpp&gpu_memory_gib=80&quantization={quantization}"
    body = client.get(f"/api/v1/capacity?{query}").json()
    assert body["file"] == file and body["file_repository"] == repository
    assert body["command"].startswith(f"llama-server -m {file} ")
