"""Today's models through every surface: the API, the command and the page size and recommend each
one; the model list groups them; the KV-cache precision travels through the page, the API, the
command and the shareable URL."""
import json
import re
from decimal import Decimal

import pytest
from django.core.management import call_command

from catalog.data.modern_models import MODERN_MODELS
from tests.helpers import LLAMA_8B, LLAMA_8B_ARGS

pytestmark = pytest.mark.django_db

NATIVE = {"deepseek-v3": 8, "deepseek-r1": 8, "gpt-oss-20b": 4, "gpt-oss-120b": 4}
NEW_MODELS = [row["slug"] for row in MODERN_MODELS] + ["whisper-large-v3-turbo"]


def query_for(slug: str, **extra) -> str:
    precision = NATIVE.get(slug, 16)
    if slug.startswith("whisper"):
        base = f"workload=inference&model={slug}&precision={precision}&requests=2"
    else:
        base = f"workload=inference&model={slug}&precision={precision}&context=8192&requests=1"
    return base + "".join(f"&{key}={value}" for key, value in extra.items())


@pytest.fixture
def big_fleet(make_machine):
    return {
        "h200x8": make_machine("H200", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("3.10")),
        "h100x8": make_machine("H100 SXM 80GB", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("2.50")),
        "a100": make_machine("A100 80GB", price_per_gpu_hour=Decimal("1.60")),
        "l4": make_machine("L4", price_per_gpu_hour=Decimal("0.50")),
    }


@pytest.mark.parametrize("slug", NEW_MODELS)
def test_the_api_sizes_and_recommends_every_new_model(client, big_fleet, slug):
    response = client.get("/api/v1/recommendations?" + query_for(slug))
    assert response.status_code == 200, response.content
    body = response.json()
    memory = body["memory"]
    assert sum(item["bytes"] for item in memory["items"]) == memory["total_bytes"] > 0
    assert body["machines"], f"{slug}: no machine of an 8 × H200 fleet"
    cheapest = body["machines"][0]
    assert cheapest["gpus_used"] >= 1


@pytest.mark.parametrize("slug", ["qwen3-8b", "gemma-3-27b", "gpt-oss-120b", "deepseek-v3", "qwen3-next-80b-a3b",
                                  "whisper-large-v3-turbo"])
def test_the_command_prints_what_the_api_answers(client, big_fleet, capsys, slug):
    api = client.get("/api/v1/estimate?" + query_for(slug)).json()
    args = dict(part.split("=") for part in query_for(slug).split("&"))
    options = [item for key, value in args.items() for item in (f"--{key.replace('_', '-')}", value)]
    call_command("estimate", *options, "--json")
    assert json.loads(capsys.readouterr().out) == api


def test_the_page_shows_a_latent_cache_line_and_the_native_precision(client, big_fleet):
    html = client.get("/?" + query_for("deepseek-v3")).content.decode()
    assert "KV cache, latent attention (MLA)" in html
    assert "Model weights, block FP8 layers" in html
    assert "8-bit, block FP8 as published" in html


def test_the_model_list_groups_dense_moe_and_speech_models_with_active_parameters(client, big_fleet):
    html = client.get("/?" + LLAMA_8B).content.decode()
    headings = re.findall(r'<p class="model-group"[^>]*>([^<]*)</p>', html)
    assert headings == ["Dense language models", "Mixture-of-experts language models", "Speech recognition"]
    assert "116.83B total · 5.71B active" in html
    images = client.get("/?workload=image&model=stable-diffusion-xl&precision=16").content.decode()
    assert re.findall(r'<p class="model-group"[^>]*>([^<]*)</p>', images) == ["Image generation"]


def test_a_precision_the_model_is_not_published_in_is_disabled_with_its_reason(client, big_fleet):
    html = client.get("/?" + query_for("gpt-oss-120b")).content.decode()
    assert re.search(r'<option value="8"[^>]* disabled>8-bit \(not offered\)</option>', html)
    assert "8-bit is not offered: gpt-oss-120b is published with MXFP4 experts" in html


def test_kv_cache_precision_reaches_page_api_command_and_url(client, big_fleet, capsys):
    sixteen = client.get("/api/v1/estimate?" + LLAMA_8B).json()
    eight = client.get("/api/v1/estimate?" + LLAMA_8B + "&kv_cache=8").json()
    kv16 = next(i for i in sixteen["items"] if i["name"] == "KV cache")["bytes"]
    kv8 = next(i for i in eight["items"] if i["name"] == "KV cache")["bytes"]
    assert kv8 * 2 == kv16 == 2 * 32 * 8 * 128 * 2 * 4096
    assert "8-bit KV cache" in eight["title"]

    recommendation = client.get("/api/v1/recommendations?" + LLAMA_8B + "&kv_cache=8").json()
    assert {"label": "KV cache", "value": "8-bit"} in recommendation["constraints"]

    call_command("estimate", *LLAMA_8B_ARGS, "--kv-cache", "8", "--json")
    assert json.loads(capsys.readouterr().out) == eight

    page = client.get("/?" + LLAMA_8B + "&kv_cache=8", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="result")
    assert page["HX-Push-Url"].endswith("kv_cache=8") or "kv_cache=8&" in page["HX-Push-Url"]
    full = client.get("/?" + LLAMA_8B + "&kv_cache=8").content.decode()
    assert '<option value="8" selected>8-bit (vLLM fp8 KV cache)</option>' in full
    # The default stays out of the shareable URL, so the spec's example keeps its address.
    default = client.get("/?" + LLAMA_8B, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="result")
    assert "kv_cache" not in default["HX-Push-Url"]


def test_a_bad_kv_cache_precision_is_a_400_naming_the_field(client, big_fleet):
    response = client.get("/api/v1/estimate?" + LLAMA_8B + "&kv_cache=4")
    assert response.status_code == 400
    assert "kv_cache" in response.json()["errors"]


NEW_PIPELINES = ["stable-diffusion-3-5-large", "stable-diffusion-3-5-medium", "flux-1-kontext-dev", "qwen-image"]


@pytest.mark.parametrize("slug", NEW_PIPELINES)
def test_the_api_sizes_and_recommends_every_new_image_pipeline(client, big_fleet, slug):
    response = client.get(f"/api/v1/recommendations?workload=image&model={slug}&precision=16")
    assert response.status_code == 200, response.content
    body = response.json()
    names = [item["name"] for item in body["memory"]["items"]]
    assert any(name.startswith("Denoiser") for name in names)
    assert any(name.startswith("Text encoder") for name in names)
    assert any(name.startswith("Autoencoder") for name in names)
    assert body["machines"], slug


def test_kimi_linears_rows_start_it_with_its_repositorys_code_and_size_its_state(client, big_fleet):
    """Under vLLM every row's command of Kimi-Linear carries --trust-remote-code (its tokenizer is code in
    its repository); the budget holds the latent cache and the Kimi Delta Attention state."""
    body = client.get("/api/v1/recommendations?" + query_for("kimi-linear-48b-a3b", engine="vllm")).json()
    commands = [machine["command"] for machine in body["machines"] if machine["command"]]
    assert commands and all(" --trust-remote-code " in command for command in commands)
    kv = next(item for item in body["memory"]["items"] if item["name"] == "KV cache (vLLM blocks)")
    # 7 latent layers in blocks of 16 tokens of 576 values; 20 KDA layers' 43,417,600-byte state
    assert "× 7 layers × 18,432 bytes per block and layer" in kv["formula"]
    assert "1 request × 43,417,600 bytes of linear-attention state" in kv["formula"]
