"""Inputs the calculators refuse: every error names the field at fault."""
import dataclasses
import math
from decimal import Decimal

import pytest

from sizing.architectures import count_parameters
from sizing.calculators import (
    estimate_finetune,
    estimate_image,
    estimate_inference,
    estimate_notebook,
    estimate_speech,
)
from sizing.errors import MissingModelValue, SizingError
from sizing.specs import ImageComponent

from .models import DEEPSEEK_V3, LLAMA_3_1_8B, LLAMA_3_2_1B, SDXL, WHISPER_LARGE_V3


@pytest.mark.parametrize("precision", [32, 2, 0, None, "16", True])
def test_precision_outside_16_8_4_is_refused(precision):
    with pytest.raises(SizingError) as error:
        estimate_inference(LLAMA_3_1_8B, precision, 4096, 1)
    assert error.value.field == "precision"


@pytest.mark.parametrize(
    ("context", "requests", "field"),
    [
        (0, 1, "context"),
        (-5, 1, "context"),
        (4096.0, 1, "context"),
        ("4096", 1, "context"),
        (True, 1, "context"),
        (10_000_001, 1, "context"),
        (4096, 0, "requests"),
        (4096, 1.5, "requests"),
        (4096, 100_001, "requests"),
    ],
)
def test_inference_counts_must_be_sensible_whole_numbers(context, requests, field):
    with pytest.raises(SizingError) as error:
        estimate_inference(LLAMA_3_1_8B, 16, context, requests)
    assert error.value.field == field


def test_context_above_the_models_limit_names_the_limit():
    with pytest.raises(SizingError) as error:
        estimate_inference(LLAMA_3_1_8B, 16, 131_073, 1)
    assert error.value.field == "context"
    assert "131,072" in error.value.message


def test_context_at_the_models_limit_is_accepted():
    assert estimate_inference(LLAMA_3_1_8B, 16, 131_072, 1).inputs["context"] == 131_072


@pytest.mark.parametrize(
    ("sequence_length", "batch_size", "lora_rank", "field"),
    [
        (0, 1, 16, "sequence_length"),
        (200_000, 1, 16, "sequence_length"),
        (512, 0, 16, "batch_size"),
        (512, 2.0, 16, "batch_size"),
        (512, 1, 0, "lora_rank"),
    ],
)
def test_finetune_inputs_are_checked(sequence_length, batch_size, lora_rank, field):
    with pytest.raises(SizingError) as error:
        estimate_finetune(LLAMA_3_2_1B, 16, sequence_length, batch_size, lora_rank)
    assert error.value.field == field


@pytest.mark.parametrize("streams", [0, -1, 2.5, 100_001])
def test_speech_streams_are_checked(streams):
    with pytest.raises(SizingError) as error:
        estimate_speech(WHISPER_LARGE_V3, 16, streams)
    assert error.value.field == "streams"


@pytest.mark.parametrize(
    "memory_gib", [0, -1, 10_000.5, math.nan, math.inf, -math.inf, Decimal("NaN"), "24", None, True]
)
def test_notebook_memory_must_be_a_finite_positive_size(memory_gib):
    with pytest.raises(SizingError) as error:
        estimate_notebook(memory_gib)
    assert error.value.field == "memory_gib"


def test_notebook_accepts_whole_and_decimal_gib():
    assert estimate_notebook(10_000).total_bytes == 10_000 * 2**30
    assert estimate_notebook(Decimal("0.5")).total_bytes == 2**29


def test_a_missing_kv_head_count_is_named_never_taken_as_zero():
    with pytest.raises(MissingModelValue) as error:
        estimate_inference(DEEPSEEK_V3, 16, 4096, 1)
    assert error.value.value_name == "kv_heads"
    assert error.value.field == "model"
    assert "DeepSeek-V3" in error.value.message and "kv heads" in error.value.message


def test_a_recount_without_the_mlp_width_names_it():
    model = dataclasses.replace(LLAMA_3_1_8B, intermediate_size=None)
    with pytest.raises(MissingModelValue) as error:
        count_parameters(model)
    assert error.value.value_name == "intermediate_size"


@pytest.mark.parametrize("missing", ["parameters", "layers", "kv_heads", "head_dim"])
def test_inference_names_each_missing_value(missing):
    model = dataclasses.replace(LLAMA_3_1_8B, **{missing: None})
    with pytest.raises(MissingModelValue) as error:
        estimate_inference(model, 16, 4096, 1)
    assert error.value.value_name == missing


@pytest.mark.parametrize(
    "missing",
    ["parameters", "layers", "attention_heads", "kv_heads", "head_dim", "hidden_size", "vocab_size"],
)
def test_finetune_names_each_missing_value(missing):
    model = dataclasses.replace(LLAMA_3_2_1B, **{missing: None})
    with pytest.raises(MissingModelValue) as error:
        estimate_finetune(model, 4, 512, 1)
    assert error.value.value_name == missing


@pytest.mark.parametrize(
    "missing", ["parameters", "decoder_layers", "d_model", "max_source_positions", "max_target_positions"]
)
def test_speech_names_each_missing_value(missing):
    model = dataclasses.replace(WHISPER_LARGE_V3, **{missing: None})
    with pytest.raises(MissingModelValue) as error:
        estimate_speech(model, 16, 1)
    assert error.value.value_name == missing


def test_image_component_without_a_parameter_count_is_named():
    pipeline = dataclasses.replace(
        SDXL, components=(*SDXL.components[:3], ImageComponent("vae", "autoencoder", None))
    )
    with pytest.raises(MissingModelValue) as error:
        estimate_image(pipeline, 16)
    assert "vae" in error.value.value_name


def test_a_zero_published_value_is_refused_rather_than_sized():
    with pytest.raises(SizingError) as error:
        estimate_inference(dataclasses.replace(LLAMA_3_1_8B, layers=0), 16, 4096, 1)
    assert error.value.field == "model"


def test_unknown_attention_heads_keeps_inference_on_one_gpu():
    breakdown = estimate_inference(dataclasses.replace(LLAMA_3_1_8B, attention_heads=None), 16, 4096, 1)
    assert breakdown.splittable_over_heads is None
    assert not breakdown.can_split_over(2)
