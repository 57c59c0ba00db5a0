"""A context beyond a model's own maximum where its card documents YaRN: sized, with the override
that turns the scaling on in each command, and refused only beyond the scaled context."""
import json
from fractions import Fraction

import pytest

from catalog.data.language_models import LANGUAGE_MODELS
from catalog.models import LanguageModel
from catalog.rows import language_model_spec
from sizing.architectures import architecture_from_dict
from sizing.calculators import estimate_finetune, estimate_inference
from sizing.calculators.vllm import VllmSettings, serve_command, vllm_budget
from sizing.calculators.vllm_inference import estimate_vllm
from sizing.capacity import Capacity
from sizing.cluster import cluster_commands, cluster_need
from sizing.engine_support import gpu_architecture
from sizing.errors import SizingError
from sizing.units import GIB

ROWS = {row["slug"]: row for row in LANGUAGE_MODELS}
QWEN3_MOE = language_model_spec(LanguageModel(**ROWS["qwen3-30b-a3b"]))
LLAMA_8B = language_model_spec(LanguageModel(**ROWS["llama-3-1-8b"]))
H100 = int(Fraction(7919, 100) * GIB)
HOPPER = gpu_architecture("hopper", "9.0")


def override_of(command: str, flag: str) -> dict:
    return json.loads(command.split(f"{flag} '", 1)[1].split("'", 1)[0])


def test_the_longest_context_is_the_cards_yarn_context_and_the_native_one_stays_the_default():
    assert QWEN3_MOE.max_context == 40960
    assert QWEN3_MOE.longest_context == 4 * 32768 == 131072
    assert LLAMA_8B.longest_context == LLAMA_8B.max_context == 131072
    assert QWEN3_MOE.scaled_beyond_native(40961) and not QWEN3_MOE.scaled_beyond_native(40960)
    assert not LLAMA_8B.scaled_beyond_native(131072)
    # vLLM's own default max_model_len stays the config's
    budget = vllm_budget(QWEN3_MOE, 16, 16, VllmSettings(gpu_memory_bytes=H100))
    assert budget.max_model_len == 40960


def test_a_context_up_to_the_scaled_one_is_sized_and_says_yarn_beyond_it_is_refused():
    scaled = estimate_inference(QWEN3_MOE, precision=16, context=131072, requests=1)
    native = estimate_inference(QWEN3_MOE, precision=16, context=32768, requests=1)
    assert scaled.total_bytes > native.total_bytes
    assert any("YaRN" in words and "131,072" in words for words in scaled.assumptions)
    assert not any("YaRN" in words for words in native.assumptions)
    with pytest.raises(SizingError) as refused:
        estimate_inference(QWEN3_MOE, precision=16, context=131073, requests=1)
    assert "at most 131,072 tokens" in refused.value.message
    with pytest.raises(SizingError):
        estimate_inference(LLAMA_8B, precision=16, context=131073, requests=1)
    trained = estimate_finetune(QWEN3_MOE, precision=4, sequence_length=65536, batch_size=1)
    assert any("YaRN" in words for words in trained.assumptions)


def test_vllm_turns_the_scaling_on_only_where_the_context_needs_it():
    long = serve_command("Qwen/Qwen3-30B-A3B", vllm_budget(
        QWEN3_MOE, 16, 16, VllmSettings(gpu_memory_bytes=H100, max_model_len=131072)))
    assert "--max-model-len 131072" in long
    assert override_of(long, "--hf-overrides") == {"rope_parameters": {
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768, "rope_theta": 1000000}}
    short = serve_command("Qwen/Qwen3-30B-A3B", vllm_budget(
        QWEN3_MOE, 16, 16, VllmSettings(gpu_memory_bytes=H100, max_model_len=40960)))
    assert "--hf-overrides" not in short
    with pytest.raises(SizingError) as refused:
        vllm_budget(QWEN3_MOE, 16, 16, VllmSettings(gpu_memory_bytes=H100, max_model_len=131073))
    assert refused.value.field == "max_model_len"
    breakdown = estimate_vllm(QWEN3_MOE, precision=16, context=100_000, requests=1)
    assert any("YaRN" in words for words in breakdown.assumptions)


def test_a_machine_row_holds_up_to_the_scaled_context_and_its_command_carries_the_override():
    capacity = Capacity(QWEN3_MOE, 16, 16, 100_000, 1, engine="vllm")
    held = capacity.on_machine(2, 81559 * 2**20, HOPPER)
    assert 40960 < held.max_context_at_requests <= 131072
    assert "--max-model-len 100000" in held.command and "--hf-overrides" in held.command
    transformers = Capacity(QWEN3_MOE, 16, 16, 4096, 1).on_machine(8, 81559 * 2**20)
    assert transformers.max_context_at_requests == 131072


def test_the_cluster_commands_turn_it_on_for_vllm_and_sglang():
    need = cluster_need(QWEN3_MOE, 16, 16, 131072, 1, gpus_per_machine=1, machines=2,
                        usable_bytes=H100)
    vllm, sglang, *_rest = cluster_commands(QWEN3_MOE, need, 131072, 1, HOPPER, "H100 SXM 80GB")
    assert "--hf-overrides" in vllm[-1]
    assert sglang and all(override_of(command, "--json-model-override-args") == {"rope_scaling": {
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}} for command in sglang)


@pytest.mark.parametrize(("yarn", "message"), [
    ({"factor": 1, "original_context": 32768, "rope_theta": 1000000}, "at least 2"),
    ({"factor": 4, "rope_theta": 1000000}, "is required"),
    ({"factor": 4, "original_context": 32768, "rope_theta": 1000000, "beta": 32}, "not a figure"),
    ("4x", "must be an object"),
])
def test_the_stored_yarn_is_checked_field_by_field(yarn, message):
    with pytest.raises(SizingError) as refused:
        architecture_from_dict({"yarn": yarn})
    assert message in refused.value.message and "architecture.yarn" in refused.value.message


def test_the_stored_yarn_reads_back_as_written():
    stored = {"qkv_bias": True, "yarn": {"factor": 4, "original_context": 32768, "rope_theta": 1000000}}
    assert architecture_from_dict(stored).as_dict() == stored
