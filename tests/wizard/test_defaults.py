"""One set of defaults: a query that leaves fields out is answered alike by the page, the API and the
commands, and the API's schema names those defaults."""
import json

import pytest
from django.core.management import call_command

from nodelodge.recommendations.query import DEFAULTS, with_defaults
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db

SHORT = "workload=inference&model=llama-3-1-8b"


def api(client, path, query):
    response = client.get(f"/api/v1/{path}?{query}")
    assert response.status_code == 200, response.content
    return response.json()


def without_time(payload: dict) -> dict:
    payload.pop("data_as_of")
    return payload


def test_the_short_query_is_sized_alike_on_the_page_the_api_and_the_command(client, small_fleet, capsys):
    estimate = api(client, "estimate", SHORT)
    assert round(estimate["total_gib"], 2) == 19.55
    assert estimate == api(client, "estimate", LLAMA_8B)
    call_command("estimate", "--model", "llama-3-1-8b", "--json")
    assert json.loads(capsys.readouterr().out) == estimate
    answer = without_time(api(client, "recommendations", SHORT))
    assert answer == without_time(api(client, "recommendations", LLAMA_8B))
    call_command("recommend", "--model", "llama-3-1-8b", "--json")
    assert without_time(json.loads(capsys.readouterr().out)) == answer
    html = client.get("/?" + SHORT).content.decode()
    assert "19.55" in html
    assert answer["machines"] and all(f'data-machine-id="{m["id"]}"' in html for m in answer["machines"])


@pytest.mark.parametrize(
    ("query", "model"),
    [("workload=finetune", "llama-3-1-8b"), ("workload=image", "stable-diffusion-xl"), ("", "llama-3-1-8b")],
)
def test_a_query_without_a_model_sizes_the_workloads_own(client, small_fleet, query, model):
    given = api(client, "estimate", query)
    full = with_defaults(dict(part.split("=") for part in query.split("&") if part))
    assert full["model"] == model
    assert given == api(client, "estimate", "&".join(f"{key}={value}" for key, value in full.items()))


def test_a_notebook_without_memory_takes_the_default_memory(client, small_fleet):
    given = api(client, "recommendations", "workload=notebook")
    assert given["memory"] == api(client, "estimate", f"workload=notebook&memory_gib={DEFAULTS['memory_gib']}")
    assert "GiB" in client.get("/?workload=notebook").content.decode()


def test_a_field_given_empty_is_still_an_answer_to_check(client, small_fleet):
    response = client.get("/api/v1/estimate?" + SHORT + "&context=")
    # Empty is allowed on its own (the schema says so); the model needs a context: a 422 naming it.
    assert response.status_code == 422 and "context" in response.json()["errors"]


def test_the_api_schema_names_the_defaults(client, db):
    schema = client.get("/api/v1/openapi.json").json()
    parameters = {p["name"]: p for p in schema["paths"]["/api/v1/recommendations"]["get"]["parameters"]}
    for name in ("workload", "precision", "kv_cache", "context", "requests", "memory_gib", "tier"):
        assert str(parameters[name]["schema"]["default"]) == DEFAULTS[name], name  # typed: 16, not "16"
    assert "llama-3-1-8b (inference)" in parameters["model"]["description"]
    assert "stable-diffusion-xl (image)" in parameters["model"]["description"]
