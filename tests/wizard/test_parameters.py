"""Each input of the workload query is declared once (`parameters.PARAMETERS`): the form's field, the API's
parameter and its OpenAPI schema, and the commands' option are made from that declaration."""
from __future__ import annotations

import argparse
from decimal import Decimal

import pytest
from django import forms

from nodelodge.recommendations import parameters as declared
from nodelodge.recommendations.messages import FIELD_WORDS, MESSAGES
from nodelodge.recommendations.parameters import CHOICE, DECIMAL, INTEGER, TRAINING, Parameter, form_fields
from nodelodge.recommendations.query import DEFAULTS, WorkloadQueryForm, parameter_schema
from nodelodge.wizard import api
from nodelodge.wizard.management.commands._query import PREFERENCE_OPTIONS, QUERY_OPTIONS, add_query_arguments

# Made up for these tests: no such inputs exist.
WARMUP = Parameter(
    "warmup_steps", INTEGER, TRAINING, label="Warm-up steps", words="Warm-up", default="10", minimum=0,
    maximum=1000, read_by="takes_training",
    messages={"min_value": "No fewer than 0 steps.", "max_value": "At most 1000 steps.",
              "invalid": "Warm-up steps must be a whole number."},
    description="Fine-tuning: steps before the full learning rate.", cli_help="0 to 1000 ({default})",
)
SCHEDULER = Parameter(
    "scheduler", CHOICE, TRAINING, label="Scheduler", default="cosine",
    choices=(("cosine", "cosine"), ("linear", "linear")),
    messages={"invalid_choice": "Choose the scheduler: cosine or linear."},
)
DROPOUT = Parameter(
    "dropout_percent", DECIMAL, label="Dropout (%)", minimum=Decimal("0.1"), maximum=Decimal("50"),
    max_digits=4, decimal_places=1,
    messages={"max_decimal_places": "Dropout takes at most 1 decimal place."},
)
MADE_UP = (WARMUP, SCHEDULER, DROPOUT)


def made_up_form() -> type[forms.Form]:
    return type("MadeUpForm", (forms.Form,), form_fields(MADE_UP))


def test_a_declared_input_makes_a_form_field_with_its_limits_choices_and_messages():
    fields = made_up_form().base_fields
    assert (fields["warmup_steps"].min_value, fields["warmup_steps"].max_value) == (0, 1000)
    assert fields["warmup_steps"].label == "Warm-up steps"
    assert [value for value, _label in fields["scheduler"].choices] == ["cosine", "linear"]
    assert fields["dropout_percent"].decimal_places == 1
    form = made_up_form()({"warmup_steps": "1001", "scheduler": "step", "dropout_percent": "0.25"})
    assert not form.is_valid()
    assert form.errors["warmup_steps"] == ["At most 1000 steps."]
    assert form.errors["scheduler"] == ["Choose the scheduler: cosine or linear."]
    assert form.errors["dropout_percent"] == ["Dropout takes at most 1 decimal place."]


def test_a_declared_input_makes_the_apis_parameter_and_its_schema():
    params = api.params_schema("MadeUpParams", MADE_UP, None)
    schema = params.model_json_schema()["properties"]
    assert schema["warmup_steps"]["default"] == "10"
    assert schema["warmup_steps"]["description"] == "Fine-tuning: steps before the full learning rate."
    assert schema["scheduler"]["default"] == "cosine"
    # What the API states each accepts, as the console's own check reads it.
    form = made_up_form()
    assert parameter_schema("warmup_steps", form)["anyOf"][0] == {"type": "integer", "minimum": 0, "maximum": 1000}
    assert parameter_schema("scheduler", form) == {"type": "string", "enum": ["cosine", "linear", ""]}
    assert parameter_schema("dropout_percent", form)["anyOf"][0] == {
        "type": "number", "minimum": 0.1, "maximum": 50.0, "multipleOf": 0.1
    }
    assert api._with_default(parameter_schema("warmup_steps", form), WARMUP.default)["default"] == 10


def test_a_declared_input_makes_the_commands_option():
    parser = argparse.ArgumentParser()
    for parameter in MADE_UP:
        parameter.add_option(parser)
    helps = {action.dest: action for action in parser._actions}
    assert helps["warmup_steps"].help == "0 to 1000 (default: 10)"
    assert helps["scheduler"].choices == ["cosine", "linear"]
    assert helps["scheduler"].help == "default: cosine"
    options = parser.parse_args(["--warmup-steps", "20", "--scheduler", "linear"])
    assert (options.warmup_steps, options.scheduler, options.dropout_percent) == ("20", "linear", None)
    with pytest.raises(SystemExit):
        parser.parse_args(["--scheduler", "step"])


def test_every_surface_lists_the_declared_inputs_with_their_defaults():
    names = [parameter.name for parameter in declared.PARAMETERS]
    assert list(WorkloadQueryForm.base_fields) == names
    assert list(api.PreferenceParams.model_fields) == names
    assert list(api.WorkloadParams.model_fields) == [p.name for p in declared.ESTIMATE_PARAMETERS]
    assert [*QUERY_OPTIONS, *PREFERENCE_OPTIONS] == [p.name for p in declared.PARAMETERS if p.cli]
    assert DEFAULTS == {p.name: p.default for p in declared.PARAMETERS if p.default is not None}
    for parameter in declared.PARAMETERS:
        assert api.PreferenceParams.model_fields[parameter.name].default == parameter.default
        assert MESSAGES.get(parameter.name, {}) == parameter.messages
        if parameter.words is not None:
            assert FIELD_WORDS[parameter.name] == parameter.words


def test_the_commands_options_are_the_declared_inputs_with_their_defaults_in_the_help():
    parser = argparse.ArgumentParser()
    add_query_arguments(parser, preferences=True)
    actions = {action.dest: action for action in parser._actions}
    assert actions["lora_rank"].help == "1 to 1024 (default: 16)"
    assert actions["loss"].choices == ["full", "fused", "chunked"]
    assert actions["gpu_plans"].const == "1"
    assert "limit" not in actions  # `recommend --limit` is the table's rows, not the query's page size


@pytest.mark.django_db
def test_the_api_hands_the_values_it_read_to_the_one_parser(client, models_and_gpus, monkeypatch):
    seen = []
    real = api.parse_query
    monkeypatch.setattr(api, "parse_query", lambda values: seen.append(values) or real(values))
    response = client.get("/api/v1/estimate?workload=finetune&model=llama-3-1-8b&precision=4&lora_rank=8")
    assert response.status_code == 200
    assert seen == [{"workload": "finetune", "model": "llama-3-1-8b", "precision": "4", "lora_rank": "8"}]
    seen.clear()
    response = client.get("/api/v1/recommendations?model=llama-3-1-8b&countries=de&countries=FR&lora_rank=8")
    assert response.status_code == 200  # another workload ignores the fine-tuning inputs' values
    assert seen == [{"model": "llama-3-1-8b", "countries": "de,FR", "lora_rank": "8"}]


@pytest.mark.django_db
def test_a_bad_value_is_refused_once_naming_its_field_in_the_consoles_words(client):
    response = client.get("/api/v1/estimate?workload=finetune&model=llama-3-1-8b&lora_rank=2000")
    assert response.status_code == 400
    assert response.json() == {"errors": {"lora_rank": "The LoRA rank can be at most 1,024."}}
