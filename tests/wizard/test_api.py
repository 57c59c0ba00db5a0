import json
from decimal import Decimal

import pytest
from django.core.management import call_command

from tests.helpers import LLAMA_8B, LLAMA_8B_ARGS, llama_8b

pytestmark = pytest.mark.django_db


def get_json(client, path, query=""):
    response = client.get(f"/api/v1/{path}" + (f"?{query}" if query else ""))
    return response.status_code, response.json()


def test_estimate_answers_the_breakdown_of_the_spec_example(client, small_fleet):
    status, body = get_json(client, "estimate", LLAMA_8B)
    assert status == 200
    assert round(body["total_gib"], 2) == 19.55
    assert [item["name"] for item in body["items"]] == ["Model weights", "KV cache", "Safety margin", "CUDA runtime"]
    assert sum(item["bytes"] for item in body["items"]) == body["total_bytes"]
    assert body["items"][1]["formula"].startswith("2 × 32 layers × 8 KV heads × 128 head dim")
    assert body["assumptions"]


def test_estimate_matches_the_estimate_command_json(client, small_fleet, capsys):
    _, body = get_json(client, "estimate", LLAMA_8B)
    call_command("estimate", *LLAMA_8B_ARGS, "--json")
    assert json.loads(capsys.readouterr().out) == body


def test_recommendations_answer_the_whole_result(client, small_fleet):
    status, body = get_json(client, "recommendations", LLAMA_8B + "&budget=100&countries=EU")
    assert status == 200
    assert set(body) >= {"memory", "machines", "alternatives", "constraints", "precision_alternatives"}
    machines = body["machines"]
    assert machines, "Llama 3.1 8B fits several machines in the EU"
    prices = [Decimal(m["price_per_hour"]) for m in machines]
    assert prices == sorted(prices)
    first = machines[0]
    for field in ("id", "provider", "tier", "gpu_type", "gpus_used", "memory_per_gpu_gib", "memory_source",
                  "country", "price_per_hour", "budget_hours", "confidence", "confidence_reasons", "limits"):
        assert field in first
    assert isinstance(first["price_per_hour"], str) and "." in first["price_per_hour"]
    assert {m["country"] for m in machines} <= {"DE", "FR", "NL"}
    labels = [c["label"] for c in body["constraints"]]
    assert "Countries" in labels


def test_alternatives_say_which_preference_they_break(client, small_fleet):
    _, body = get_json(client, "recommendations", LLAMA_8B + "&tier=secure&max_price=1.00")
    assert body["alternatives"]
    breaks = {code for alt in body["alternatives"] for code in alt["breaks"]}
    assert breaks <= {"tier", "max_price", "budget"} and breaks
    community = [alt for alt in body["alternatives"] if alt["tier"] == "community"]
    assert community and all("tier" in alt["breaks"] for alt in community)


def test_same_query_twice_gives_identical_json(client, small_fleet):
    query = LLAMA_8B + "&budget=250&max_price=3"
    _, first = get_json(client, "recommendations", query)
    _, second = get_json(client, "recommendations", query)
    for body in (first, second):
        body.pop("data_as_of")
    assert first == second


def test_recommend_command_json_is_the_api_answer(client, small_fleet, capsys):
    _, body = get_json(client, "recommendations", LLAMA_8B + "&budget=100")
    call_command("recommend", *LLAMA_8B_ARGS, "--budget", "100", "--json")
    printed = json.loads(capsys.readouterr().out)
    for payload in (body, printed):
        payload.pop("data_as_of")
    assert printed == body


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("workload=dance", "workload"),
        (llama_8b(precision=3), "precision"),
        (llama_8b(context=-1), "context"),
        (llama_8b(requests="NaN"), "requests"),
        (LLAMA_8B + "&budget=inf", "budget"),
        (LLAMA_8B + "&max_price=0", "max_price"),
        (LLAMA_8B + "&tier=gold", "tier"),
        (LLAMA_8B + "&min_reliability=1.5", "min_reliability"),
        (LLAMA_8B + "&min_reliability=0.955", "min_reliability"),
        (LLAMA_8B + "&market=spot", "market"),
        (LLAMA_8B + "&countries=ZZ", "countries"),
        ("workload=inference&model=stable-diffusion-xl&precision=16&context=4096&requests=1", "model"),
        ("workload=notebook&memory_gib=-2", "memory_gib"),
    ],
)
@pytest.mark.parametrize("endpoint", ["estimate", "recommendations"])
def test_bad_input_is_a_400_naming_the_field(client, small_fleet, endpoint, query, field):
    status, body = get_json(client, endpoint, query)
    if endpoint == "estimate" and field in ("budget", "max_price", "tier", "min_reliability", "market", "countries"):
        assert status in (200, 400)  # preferences are not part of an estimate
        return
    # A model the catalog does not hold for the workload names nothing: 404, in the same words.
    assert status == (404 if field == "model" else 400)
    assert field in body["errors"], body


def test_models_lists_published_figures_and_filters_by_workload(client, small_fleet):
    status, models = get_json(client, "models", "workload=image")
    assert status == 200
    assert {m["kind"] for m in models} == {"image"}
    sdxl = next(m for m in models if m["slug"] == "stable-diffusion-xl")
    assert sdxl["config_url"].startswith("https://")
    assert sum(c["parameters"] for c in sdxl["figures"]["components"]) == sdxl["parameters"]
    _, everything = get_json(client, "models")
    deepseek = next(m for m in everything if m["slug"] == "deepseek-v3")
    assert deepseek["missing"] == [] and deepseek["group"] == "moe"
    assert (deepseek["parameters"], deepseek["active_parameters"]) == (671_026_404_352, 37_552_282_624)
    assert deepseek["figures"]["architecture"]["mla"]["kv_lora_rank"] == 512
    oss = next(m for m in everything if m["slug"] == "gpt-oss-120b")
    eight = next(p for p in oss["precisions"] if p["value"] == 8)
    assert not eight["available"] and "no 8-bit checkpoint" in eight["reason"]
    assert get_json(client, "models", "workload=dance")[0] == 400


def test_openapi_schema_documents_the_three_endpoints(client, db):
    schema = client.get("/api/v1/openapi.json").json()
    paths = schema["paths"]
    assert {"/api/v1/estimate", "/api/v1/recommendations", "/api/v1/models"} <= set(paths)
    params = {p["name"] for p in paths["/api/v1/recommendations"]["get"]["parameters"]}
    assert params >= {"workload", "model", "precision", "context", "requests", "memory_gib", "budget",
                      "max_price", "tier", "countries"}
    assert "400" in paths["/api/v1/recommendations"]["get"]["responses"]


WHISPER_WITHOUT_CONTEXT = "workload=inference&model=whisper-large-v3&precision=16&requests=2"


def test_a_speech_model_needs_no_context_in_the_api(client, small_fleet):
    status, body = get_json(client, "recommendations", WHISPER_WITHOUT_CONTEXT)
    assert status == 200, body
    assert body["memory"]["workload"] == "speech"
    status, body = get_json(client, "estimate", WHISPER_WITHOUT_CONTEXT)
    assert status == 200 and body["total_bytes"] > 0


def test_page_api_and_cli_answer_a_speech_model_without_context_alike(client, small_fleet, capsys):
    _, body = get_json(client, "recommendations", WHISPER_WITHOUT_CONTEXT)
    call_command("recommend", "--model", "whisper-large-v3", "--precision", "16", "--requests", "2", "--json")
    printed = json.loads(capsys.readouterr().out)
    for payload in (body, printed):
        payload.pop("data_as_of")
    assert printed == body
    html = client.get("/?" + WHISPER_WITHOUT_CONTEXT).content.decode()
    assert f"{body['memory']['total_gib']:.2f}" in html
    assert body["machines"] and all(f'data-machine-id="{m["id"]}"' in html for m in body["machines"])


def test_prices_are_returned_with_the_catalogs_digits(client, make_machine):
    make_machine("A100 80GB", price_per_gpu_hour=Decimal("0.098"))
    _, body = get_json(client, "recommendations", LLAMA_8B + "&budget=100")
    machine = body["machines"][0]
    assert machine["price_per_gpu_hour"] == "0.098" and machine["price_per_hour"] == "0.098"
    # The budget sentence is computed from the same price it names: 100 / 0.098 = 1,020.4 hours.
    assert machine["budget_text"].startswith("$100.00 covers 1,020.4 hours")
    assert machine["budget_text"].endswith("at $0.098/h")


@pytest.mark.django_db(transaction=True)
def test_a_model_changed_by_another_process_is_sized_anew_at_once(client, small_fleet):
    """No copy of a model outlives a write: an update that sends no signal (as another web worker's
    or a script's write looks to this process) is in the very next answer."""
    from catalog.models import LanguageModel

    _, before = get_json(client, "estimate", LLAMA_8B)
    LanguageModel.objects.filter(slug="llama-3-1-8b").update(parameters=16_060_522_496)
    _, after = get_json(client, "estimate", LLAMA_8B)
    assert after["items"][0]["bytes"] == 2 * before["items"][0]["bytes"]


def test_every_schema_the_api_names_is_one_class_so_none_replaces_another():
    """django-ninja files each schema under its class name: two classes of one name would leave one of
    them describing the other's answers (the recommendations' groups were once described as bookings)."""
    from collections import defaultdict

    from ninja import Schema

    from nodelodge.wizard.api import api

    components = api.get_openapi_schema()["components"]["schemas"]

    def every_subclass(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from every_subclass(sub)

    modules = defaultdict(set)
    for cls in every_subclass(Schema):
        if cls.__module__.startswith("nodelodge.") and cls.__name__ in components:
            modules[cls.__name__].add(f"{cls.__module__}.{cls.__qualname__}")
    assert {name: where for name, where in modules.items() if len(where) > 1} == {}
    groups = components["GroupOut"]["properties"]
    assert "gpu_type" in groups and "idempotency_key" not in groups
