"""`estimate` picks the calculator from the workload and the kind of model."""
import pytest

from sizing.calculators import estimate
from sizing.errors import SizingError

from .models import LLAMA_3_1_8B, LLAMA_3_2_1B, SDXL, WHISPER_LARGE_V3


def test_language_model_inference_goes_to_the_inference_calculator():
    breakdown = estimate("inference", LLAMA_3_1_8B, 16, 4096, 1, None)
    assert breakdown.workload == "inference"
    assert f"{breakdown.total_gib:.2f}" == "19.55"


def test_speech_model_under_inference_uses_requests_as_streams():
    breakdown = estimate("inference", WHISPER_LARGE_V3, 16, 999, 8, None)
    assert breakdown.workload == "speech"
    assert breakdown.inputs["streams"] == 8
    assert breakdown.total_bytes == 10_660_630_528  # beam 5, see test_other_workloads


def test_finetune_takes_context_as_sequence_length_and_requests_as_batch_size():
    breakdown = estimate("finetune", LLAMA_3_2_1B, 4, 512, 1, None)
    assert breakdown.workload == "finetune"
    assert breakdown.total_bytes == 3_675_592_642  # see test_other_workloads


def test_image_ignores_context_and_requests():
    breakdown = estimate("image", SDXL, 16, None, None, None)
    assert breakdown.total_bytes == 10_024_683_478  # see test_other_workloads


def test_notebook_needs_no_model():
    assert estimate("notebook", None, None, None, None, 24.5).total_bytes == 26_306_674_688


@pytest.mark.parametrize(
    ("workload", "model"),
    [
        ("image", LLAMA_3_1_8B),
        ("inference", SDXL),
        ("finetune", WHISPER_LARGE_V3),
        ("finetune", SDXL),
        ("speech", LLAMA_3_1_8B),
    ],
)
def test_a_model_of_the_wrong_kind_is_refused(workload, model):
    with pytest.raises(SizingError) as error:
        estimate(workload, model, 16, 4096, 1, None)
    assert error.value.field == "model"


def test_unknown_workload_is_refused():
    with pytest.raises(SizingError) as error:
        estimate("render", LLAMA_3_1_8B, 16, 4096, 1, None)
    assert error.value.field == "workload"


@pytest.mark.parametrize(
    ("workload", "model", "precision", "context", "requests", "memory_gib", "field"),
    [
        ("inference", LLAMA_3_1_8B, None, 4096, 1, None, "precision"),
        ("inference", LLAMA_3_1_8B, 16, None, 1, None, "context"),
        ("inference", LLAMA_3_1_8B, 16, 4096, None, None, "requests"),
        ("inference", None, 16, 4096, 1, None, "model"),
        ("notebook", None, None, None, None, None, "memory_gib"),
        ("inference", WHISPER_LARGE_V3, 16, None, None, None, "requests"),
    ],
)
def test_missing_inputs_name_their_field(workload, model, precision, context, requests, memory_gib, field):
    with pytest.raises(SizingError) as error:
        estimate(workload, model, precision, context, requests, memory_gib)
    assert error.value.field == field


@pytest.mark.parametrize(
    ("context", "requests", "field"), [(0, 1, "context"), (512, 0, "requests"), (200_000, 1, "context")]
)
def test_finetune_errors_are_reported_under_the_forms_field_names(context, requests, field):
    with pytest.raises(SizingError) as error:
        estimate("finetune", LLAMA_3_2_1B, 16, context, requests, None)
    assert error.value.field == field


def test_speech_stream_errors_are_reported_as_requests():
    with pytest.raises(SizingError) as error:
        estimate("inference", WHISPER_LARGE_V3, 16, None, 0, None)
    assert error.value.field == "requests"
