"""The 4-bit base's format (`base_format`: nf4, the default, or gptq) travels through the query, the page,
the API (and its schema), the commands, the shareable URL and "Constraints applied", for a fine-tune at
4-bit only: another precision, or another workload, ignores it and lists nothing (a value no
precision takes is refused)."""
import json

import pytest
from django.core.management import call_command

from nodelodge.recommendations.query import QueryError, parse_query
from sizing.training import DEFAULT_TRAINING, Training
from tests.helpers import LLAMA_8B_QLORA

pytestmark = pytest.mark.django_db

FINETUNE = LLAMA_8B_QLORA
SIXTEEN = FINETUNE.replace("precision=4", "precision=16")


def item_names(body):
    return [i["name"] for i in body["items"]]


def constraints(body):
    return {c["label"]: c["value"] for c in body["constraints"]}


def test_the_query_reads_the_format_at_4_bit_and_the_address_carries_it_only_when_changed():
    query = parse_query({"workload": "finetune", "precision": "4", "base_format": "gptq"})
    assert query.training == Training(base_format="gptq")
    assert query.as_params()["base_format"] == "gptq"
    assert "base_format" not in parse_query({"workload": "finetune", "precision": "4"}).as_params()


def test_another_precision_or_workload_ignores_the_format():
    for data in ({"workload": "finetune", "precision": "16", "base_format": "gptq"},
                 {"workload": "finetune", "precision": "8", "base_format": "gptq"},
                 {"workload": "inference", "precision": "4", "base_format": "gptq"}):
        query = parse_query(data)
        assert query.training == DEFAULT_TRAINING and "base_format" not in query.as_params()


def test_a_format_no_precision_takes_is_refused_at_any_precision():
    with pytest.raises(QueryError) as error:
        parse_query({"workload": "inference", "precision": "16", "base_format": "awq"})
    assert list(error.value.errors) == ["base_format"]


def test_a_bad_format_at_4_bit_is_named_by_its_field():
    with pytest.raises(QueryError) as error:
        parse_query({"workload": "finetune", "precision": "4", "base_format": "awq"})
    assert list(error.value.errors) == ["base_format"] and "nf4 or gptq" in error.value.errors["base_format"]


def test_the_api_sizes_a_gptq_base_and_lists_it_under_constraints(client, models_and_gpus):
    nf4 = client.get("/api/v1/estimate?" + FINETUNE).json()
    gptq = client.get("/api/v1/estimate?" + FINETUNE + "&base_format=gptq").json()
    assert "Dequantized matrix" in item_names(gptq) and "Dequantized matrix" not in item_names(nf4)
    assert gptq["total_bytes"] < nf4["total_bytes"]
    assert any("prepare_model_for_kbit_training" in line for line in gptq["assumptions"])

    body = client.get("/api/v1/recommendations?" + FINETUNE + "&base_format=gptq").json()
    assert constraints(body)["4-bit base"] == "GPTQ checkpoint, group 128"
    default = client.get("/api/v1/recommendations?" + FINETUNE).json()
    assert constraints(default)["4-bit base"] == "NF4, bitsandbytes (QLoRA)"
    sixteen = client.get("/api/v1/recommendations?" + SIXTEEN + "&base_format=gptq").json()
    assert "4-bit base" not in constraints(sixteen)
    assert sixteen["memory"] == client.get("/api/v1/recommendations?" + SIXTEEN).json()["memory"]


# A value the schema refuses is a 400; DoRA on a GPTQ base, each valid alone, a 422 (they don't go together).
@pytest.mark.parametrize(("extra", "field", "status"), [("&base_format=awq", "base_format", 400),
                                                        ("&base_format=gptq&adapter=dora", "adapter", 422)])
def test_a_bad_format_or_dora_on_gptq_is_refused_naming_the_field(client, models_and_gpus, extra, field, status):
    for path in ("/api/v1/estimate?", "/api/v1/recommendations?"):
        response = client.get(path + FINETUNE + extra)
        assert response.status_code == status
        assert list(response.json()["errors"]) == [field]


def test_the_openapi_schema_lists_the_format(client):
    schema = client.get("/api/v1/openapi.json").json()
    for path in ("/api/v1/estimate", "/api/v1/recommendations"):
        parameters = {p["name"]: p for p in schema["paths"][path]["get"]["parameters"]}
        assert "base_format" in parameters and "gptq" in parameters["base_format"]["description"]


def test_the_commands_take_the_format(client, models_and_gpus, capsys):
    call_command("estimate", "--workload", "finetune", "--model", "llama-3-1-8b", "--precision", "4",
                 "--context", "4096", "--requests", "4", "--base-format", "gptq", "--json")
    assert json.loads(capsys.readouterr().out) == client.get(
        "/api/v1/estimate?" + FINETUNE + "&base_format=gptq").json()
    call_command("recommend", "--workload", "finetune", "--model", "llama-3-1-8b", "--precision", "4",
                 "--context", "4096", "--requests", "4", "--base-format", "gptq")
    assert "4-bit base: GPTQ checkpoint, group 128" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        call_command("estimate", "--workload", "finetune", "--precision", "4", "--base-format", "gptq",
                     "--adapter", "dora")
    assert exit_info.value.code == 2
    assert "error: adapter: DoRA is not run on a GPTQ base" in capsys.readouterr().err


def test_the_page_shows_the_field_for_a_4_bit_fine_tune_and_keeps_it_in_the_url(client, models_and_gpus):
    html = client.get("/?" + FINETUNE + "&base_format=gptq").content.decode()
    assert 'id="id_base_format"' in html and '<option value="gptq" selected>' in html
    assert "Dequantized matrix" in html
    page = client.get("/?" + FINETUNE + "&base_format=gptq&shown=finetune:language:ok:4-bit",
                      HTTP_HX_REQUEST="true", HTTP_HX_TARGET="result")
    assert "base_format=gptq" in page["HX-Push-Url"] and "HX-Retarget" not in page  # the result alone
    # switching the precision to 4 from a 16-bit form sends the whole wizard, with the field
    switched = client.get("/?" + FINETUNE + "&shown=finetune:language:ok", HTTP_HX_REQUEST="true",
                          HTTP_HX_TARGET="result")
    assert switched["HX-Retarget"] == "#wizard" and 'id="id_base_format"' in switched.content.decode()
    sixteen = client.get("/?" + SIXTEEN + "&base_format=gptq&shown=finetune:language:ok:4-bit",
                         HTTP_HX_REQUEST="true", HTTP_HX_TARGET="result")
    assert sixteen["HX-Retarget"] == "#wizard"
    assert "base_format" not in sixteen["HX-Push-Url"] and 'id="id_base_format"' not in sixteen.content.decode()
    assert 'id="id_base_format"' not in client.get("/?workload=inference&precision=4").content.decode()


def test_a_bad_format_on_the_page_is_worded_beside_its_field_and_the_rest_is_kept(client, models_and_gpus):
    html = client.get("/?" + FINETUNE + "&base_format=awq&loss=chunked&budget=77").content.decode()
    assert 'id="err-base_format"' in html and "Choose the 4-bit base: nf4 or gptq." in html
    assert 'aria-invalid="true"' in html.split('id="id_base_format"')[1].split(">")[0]
    assert '<option value="chunked" selected>' in html and 'value="77"' in html


def test_a_preset_keeps_the_chosen_format(client, models_and_gpus):
    import html as html_lib
    import re

    page = client.get("/?" + FINETUNE + "&base_format=gptq").content.decode()
    links = dict((name, html_lib.unescape(href)) for href, name in re.findall(
        r'<a href="([^"]+)"(?: aria-current="true")?>(HF Trainer|Unsloth)</a>', page))
    assert "base_format=gptq" in links["Unsloth"] and "base_format=gptq" in links["HF Trainer"]
    assert 'aria-current="true">HF Trainer</a>' in page  # the trainer's choices are still the defaults


def test_the_german_page_and_api_word_the_format(client, models_and_gpus):
    html = client.get("/de/?" + FINETUNE + "&base_format=gptq").content.decode()
    assert "4-Bit-Basis" in html and "Dequantisierte Matrix" in html and "GPTQ-Checkpoint, Gruppe 128" in html
    for english in ("Dequantized matrix", "GPTQ checkpoint, frozen", "On a GPTQ base the activations"):
        assert english not in html, english
    body = client.get("/api/v1/recommendations?" + FINETUNE + "&base_format=gptq", HTTP_ACCEPT_LANGUAGE="de").json()
    assert constraints(body)["4-Bit-Basis"] == "GPTQ-Checkpoint, Gruppe 128"
