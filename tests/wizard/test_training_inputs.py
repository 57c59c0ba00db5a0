"""How a fine-tune is run (checkpointing, loss, LoRA rank and targets, DoRA, 8-bit AdamW) travels
through the query, the page, the API (and its schema), the commands, the shareable URL and
"Constraints applied"; a bad value is answered beside its field and keeps the rest of the query;
another workload ignores the fields (a value no workload takes is refused with any)."""
import json

import pytest
from django.core.management import call_command

from nodelodge.recommendations.query import DEFAULTS, QueryError, parse_query
from sizing.training import DEFAULT_TRAINING, Training
from tests.helpers import LLAMA_8B_QLORA

pytestmark = pytest.mark.django_db

FINETUNE = LLAMA_8B_QLORA
CHANGED = "&gradient_checkpointing=off&loss=chunked&lora_rank=64&lora_targets=all&adapter=dora&optimizer=adamw8bit"


def item(body, name):
    return next(i for i in body["items"] if i["name"] == name)


def test_the_query_reads_each_training_field_and_defaults_to_the_documentations_trainer():
    assert parse_query({"workload": "finetune"}).training == DEFAULT_TRAINING
    query = parse_query(dict(pair.split("=") for pair in (FINETUNE + CHANGED).split("&")))
    assert query.training == Training("off", "chunked", 64, "all", "dora", "adamw8bit")
    # the address carries only what differs from the defaults, so the old addresses stay as they were
    params = query.as_params()
    assert params["loss"] == "chunked" and params["lora_rank"] == "64" and params["adapter"] == "dora"
    assert "lora_rank" not in parse_query({"workload": "finetune"}).as_params()
    assert all(DEFAULTS[name] == str(value) for name, value in DEFAULT_TRAINING.as_dict().items())


def test_another_workload_ignores_the_training_fields():
    query = parse_query({"workload": "inference", "loss": "chunked", "lora_rank": "64", "adapter": "dora"})
    assert query.training == DEFAULT_TRAINING
    assert "loss" not in query.as_params() and "adapter" not in query.as_params()


def test_a_value_no_workload_takes_is_refused_with_any_workload():
    # One query means one thing on every surface: the API's schema refuses it, so the page does too.
    with pytest.raises(QueryError) as error:
        parse_query({"workload": "inference", "lora_rank": "0", "adapter": "nope"})
    assert set(error.value.errors) == {"lora_rank", "adapter"}


@pytest.mark.parametrize(("field", "value", "words"), [
    ("gradient_checkpointing", "sometimes", "on, off or offload"),
    ("loss", "sampled", "full, fused or chunked"),
    ("lora_rank", "0", "at least 1"),
    ("lora_rank", "1025", "at most 1,024"),
    ("lora_rank", "sixteen", "whole number"),
    ("lora_targets", "embeddings", "attention, qv, mlp or all"),
    ("adapter", "ia3", "lora or dora"),
    ("optimizer", "sgd", "adamw or adamw8bit"),
])
def test_a_bad_training_value_is_named_by_its_field(field, value, words):
    with pytest.raises(QueryError) as error:
        parse_query({"workload": "finetune", field: value})
    assert list(error.value.errors) == [field] and words in error.value.errors[field]


def test_the_api_sizes_each_choice_and_lists_it_under_constraints(client, models_and_gpus):
    default = client.get("/api/v1/estimate?" + FINETUNE).json()
    chunked = client.get("/api/v1/estimate?" + FINETUNE + "&loss=chunked&gradient_checkpointing=off").json()
    assert item(chunked, "Logits")["bytes"] < item(default, "Logits")["bytes"]
    assert item(chunked, "Activations")["bytes"] > item(default, "Activations")["bytes"]
    assert "no gradient checkpointing" in item(chunked, "Activations")["formula"]
    assert any("Liger" in line for line in chunked["assumptions"])

    body = client.get("/api/v1/recommendations?" + FINETUNE + CHANGED).json()
    constraints = {c["label"]: c["value"] for c in body["constraints"]}
    assert constraints["Gradient checkpointing"] == "off (every layer's activations kept)"
    assert constraints["Loss"].startswith("chunked")
    assert constraints["Adapters"] == "DoRA (LoRA with a trained magnitude), rank 64 on every linear layer of the blocks"
    assert constraints["Optimizer"] == "AdamW 8-bit (bitsandbytes)"
    assert any(i["name"] == "DoRA outputs and weight norm" for i in body["memory"]["items"])


def test_the_defaults_are_listed_for_a_fine_tune_and_nothing_for_another_workload(client, models_and_gpus):
    finetune = client.get("/api/v1/recommendations?" + FINETUNE).json()
    labels = [c["label"] for c in finetune["constraints"]]
    assert {"Gradient checkpointing", "Loss", "Adapters", "Optimizer"} <= set(labels)
    inference = client.get(
        "/api/v1/recommendations?workload=inference&model=llama-3-1-8b&loss=chunked&lora_rank=64").json()
    assert not {"Gradient checkpointing", "Loss", "Adapters", "Optimizer"} & {c["label"] for c in inference["constraints"]}


@pytest.mark.parametrize(("extra", "field"), [
    ("&loss=sampled", "loss"), ("&lora_rank=0", "lora_rank"), ("&lora_rank=4097", "lora_rank"),
    ("&gradient_checkpointing=yes", "gradient_checkpointing"), ("&lora_targets=x", "lora_targets"),
    ("&adapter=x", "adapter"), ("&optimizer=x", "optimizer"),
])
def test_a_bad_training_value_is_a_400_naming_the_field(client, models_and_gpus, extra, field):
    for path in ("/api/v1/estimate?", "/api/v1/recommendations?"):
        response = client.get(path + FINETUNE + extra)
        assert response.status_code == 400
        assert list(response.json()["errors"]) == [field]


def test_a_rank_above_the_hidden_size_is_refused_on_the_rank(client, models_and_gpus, capsys):
    # No catalog model is narrower than the rank's limit of 1,024; a model given by its figures can be.
    small = ["--parameters", "200000000", "--layers", "4", "--attention-heads", "8", "--kv-heads", "8",
             "--head-dim", "64", "--hidden-size", "512", "--intermediate-size", "2048", "--vocab-size", "32000",
             "--workload", "finetune", "--precision", "16", "--context", "512"]
    with pytest.raises(SystemExit) as exit_info:
        call_command("estimate", *small, "--lora-rank", "600")
    assert exit_info.value.code == 2
    assert "error: lora_rank: The LoRA rank of 600 is above the model's hidden size of 512" in capsys.readouterr().err
    assert client.get("/api/v1/estimate?workload=finetune&model=llama-3-2-1b&lora_rank=1024").status_code == 200


def test_the_openapi_schema_lists_every_training_field(client):
    schema = client.get("/api/v1/openapi.json").json()
    for path in ("/api/v1/estimate", "/api/v1/recommendations"):
        names = {p["name"] for p in schema["paths"][path]["get"]["parameters"]}
        assert {"gradient_checkpointing", "loss", "lora_rank", "lora_targets", "adapter", "optimizer"} <= names


def test_the_commands_take_the_training_options(client, models_and_gpus, capsys):
    call_command("estimate", "--workload", "finetune", "--model", "llama-3-1-8b", "--precision", "4",
                 "--context", "4096", "--requests", "4", "--loss", "chunked", "--gradient-checkpointing", "off",
                 "--json")
    assert json.loads(capsys.readouterr().out) == client.get(
        "/api/v1/estimate?" + FINETUNE + "&loss=chunked&gradient_checkpointing=off").json()
    call_command("recommend", "--workload", "finetune", "--model", "llama-3-1-8b", "--precision", "4",
                 "--context", "4096", "--requests", "4", "--lora-rank", "32", "--lora-targets", "qv",
                 "--adapter", "dora", "--optimizer", "adamw8bit")
    out = capsys.readouterr().out
    assert "Adapters: DoRA (LoRA with a trained magnitude), rank 32 on q and v only" in out
    assert "Optimizer: AdamW 8-bit (bitsandbytes)" in out


def test_a_bad_rank_on_the_command_line_exits_2_naming_the_field(models_and_gpus, capsys):
    with pytest.raises(SystemExit) as exit_info:
        call_command("estimate", "--workload", "finetune", "--lora-rank", "0")
    assert exit_info.value.code == 2
    assert "error: lora_rank:" in capsys.readouterr().err


def test_the_figures_command_takes_the_training_options(db, capsys):
    figures = ["--parameters", "8030261248", "--layers", "32", "--attention-heads", "32", "--kv-heads", "8",
               "--head-dim", "128", "--hidden-size", "4096", "--intermediate-size", "14336",
               "--vocab-size", "128256", "--workload", "finetune", "--precision", "16", "--context", "512"]
    call_command("estimate", *figures, "--loss", "fused", "--json")
    body = json.loads(capsys.readouterr().out)
    assert item(body, "Logits")["bytes"] == 512 * 128_256 * 6
    with pytest.raises(SystemExit):
        call_command("estimate", *figures, "--lora-rank", "8192")
    assert "lora_rank" in capsys.readouterr().err


def test_the_page_shows_the_fields_for_a_fine_tune_only_and_keeps_them_in_the_url(client, models_and_gpus):
    html = client.get("/?" + FINETUNE + "&loss=chunked").content.decode()
    assert 'id="id_gradient_checkpointing"' in html and 'id="id_lora_rank"' in html
    assert '<option value="chunked" selected>' in html
    page = client.get("/?" + FINETUNE + "&loss=chunked", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="result")
    assert "loss=chunked" in page["HX-Push-Url"]
    default = client.get("/?" + FINETUNE, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="result")
    assert "loss" not in default["HX-Push-Url"] and "lora_rank" not in default["HX-Push-Url"]
    inference = client.get("/?workload=inference&model=llama-3-1-8b").content.decode()
    assert 'id="id_lora_rank"' not in inference


def test_a_bad_value_on_the_page_is_worded_beside_its_field_and_the_rest_is_kept(client, models_and_gpus):
    html = client.get("/?" + FINETUNE + "&loss=chunked&lora_rank=0&budget=77").content.decode()
    assert 'id="err-lora_rank"' in html and "The LoRA rank must be at least 1." in html
    assert 'aria-invalid="true"' in html.split('id="id_lora_rank"')[1].split(">")[0]
    assert '<option value="chunked" selected>' in html and 'value="77"' in html


def test_the_german_page_words_the_training_fields(client, models_and_gpus):
    html = client.get("/de/?" + FINETUNE + "&lora_rank=0").content.decode()
    assert "Gradient-Checkpointing" in html and "Der LoRA-Rang muss mindestens 1 sein." in html
    body = client.get("/api/v1/recommendations?" + FINETUNE + "&optimizer=adamw8bit",
                      HTTP_ACCEPT_LANGUAGE="de").json()
    constraints = {c["label"]: c["value"] for c in body["constraints"]}
    assert constraints["Optimierer"] == "AdamW 8-Bit (bitsandbytes)"


def test_a_preset_link_fills_only_the_training_fields_and_keeps_the_rest(client, models_and_gpus):
    import html as html_lib
    import re
    from urllib.parse import parse_qs, urlsplit

    page = client.get("/?" + FINETUNE + "&budget=77").content.decode()
    links = dict((name, html_lib.unescape(href)) for href, name in re.findall(
        r'<a href="([^"]+)"(?: aria-current="true")?>(HF Trainer|Unsloth)</a>', page))
    assert set(links) == {"HF Trainer", "Unsloth"}
    assert 'aria-current="true">HF Trainer</a>' in page  # the defaults are the HF Trainer's
    unsloth = {key: values[-1] for key, values in parse_qs(urlsplit(links["Unsloth"]).query).items()}
    assert unsloth["gradient_checkpointing"] == "offload" and unsloth["loss"] == "fused"
    assert unsloth["lora_targets"] == "all" and unsloth["optimizer"] == "adamw8bit" and unsloth["lora_rank"] == "16"
    assert unsloth["budget"] == "77" and unsloth["model"] == "llama-3-1-8b" and unsloth["requests"] == "4"
    followed = client.get(links["Unsloth"]).content.decode()
    assert 'aria-current="true">Unsloth</a>' in followed and "CPU memory" in followed


def test_the_german_fine_tune_page_words_every_new_choice_in_german(client, models_and_gpus):
    html = client.get("/de/?" + FINETUNE + CHANGED.replace("chunked", "fused")).content.decode()
    for english in ("How you train", "every layer", "never whole", "The loss is a fused", "DoRA outputs",
                    "trainable parameters × 8 bytes", "AdamW 8-bit", "Fill in as"):
        assert english not in html, english
    assert "Wie Sie trainieren" in html and "DoRA-Ausgaben und Gewichtsnorm" in html
