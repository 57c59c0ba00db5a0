"""vLLM by version (`sizing.calculators.vllm_versions`): which memory each release family pays inside
gpu_memory_utilization, the switch that turns the CUDA-graph estimate off, and the skipped vision tower."""
import re
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sizing.calculators.vllm import (
    CUDA_CONTEXT_BYTES,
    CUDA_GRAPH_BYTES,
    VllmSettings,
    serve_command,
    vllm_budget,
)
from sizing.calculators.vllm_versions import (
    DEFAULT_VERSION,
    V1_RUNNER,
    V2_RUNNER,
    known_release_pattern,
    parse_version,
)
from sizing.errors import SizingError
from sizing.units import GIB
from tests.accuracy.vllm_startup import language_spec

H100 = int(79.19 * GIB)  # what CUDA reports for an H100 80GB (vLLM's logs)
LLAMA = language_spec("llama-3-1-8b")


def llama_budget(version: str, **changes):
    values = {"gpu_memory_bytes": H100, "gpu_memory_utilization": Fraction(95, 100), "max_model_len": 8192,
              "max_num_seqs": 1024, "version": parse_version(version)}
    values.update(changes)
    return vllm_budget(LLAMA, 16, 16, VllmSettings(**values))


def test_0_19_leaves_the_logged_pool_of_the_llm_d_start_up():
    # llmd-llama31-8b-h100-tp1-8k (vLLM 0.19.0): 58.11 GiB, 476,016 tokens logged.
    budget = llama_budget("0.19.0")
    assert [item.name for item in budget.inside_items] == [
        "Model weights as loaded", "Activation peak (profiling step)", "Memory outside PyTorch"]
    assert 476_016 * 0.85 <= budget.kv_cache_tokens <= 476_016 * 1.05
    assert [item.name for item in budget.outside] == [
        "CUDA context (outside the budget)", "CUDA graphs (outside the budget)"]


def test_from_0_20_the_cuda_graph_estimate_is_paid_inside_the_budget():
    # PR #38284 shipped in 0.20.0: a published 0.20.0 start logs "CUDA graph memory profiling is enabled".
    before, after = llama_budget("0.19.1"), llama_budget("0.20.0")
    assert after.kv_cache_bytes == before.kv_cache_bytes - CUDA_GRAPH_BYTES
    assert [item.name for item in after.also_inside] == ["CUDA graphs (estimated inside the budget)"]
    assert "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0" in after.also_inside[0].formula
    assert [item.name for item in after.outside] == ["CUDA context (outside the budget)"]
    assert after.runner == V1_RUNNER and after.graphs_inside and not before.graphs_inside


def test_the_default_utilization_is_0_92_from_the_release_that_estimates_the_graphs():
    # The same PR raised CacheConfig's default: 0.19.0 logs "(0.9, …)" with no flag, 0.31.0 "(0.92, …)".
    assert [parse_version(text).default_utilization for text in ("0.8.4", "0.19.1", "0.20.0", "0.31")] == [
        Fraction(9, 10), Fraction(9, 10), Fraction(92, 100), Fraction(92, 100)]


def test_the_switch_turns_the_estimate_off_and_is_written_on_the_command():
    off = llama_budget("0.20.0", cudagraph_estimate=False)
    assert off.kv_cache_bytes == llama_budget("0.19").kv_cache_bytes
    command = serve_command("meta-llama/Llama-3.1-8B", off)
    assert command.startswith("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 vllm serve ")
    assert not serve_command("meta-llama/Llama-3.1-8B", llama_budget("0.20.0")).startswith("VLLM_")


def test_before_0_20_the_estimate_cannot_be_asked_inside_the_budget():
    with pytest.raises(SizingError) as refused:
        llama_budget("0.19", cudagraph_estimate=True)
    assert refused.value.field == "cudagraph_estimate"
    assert "0.20" in refused.value.message


MIXTRAL = language_spec("mixtral-8x7b")


@pytest.mark.parametrize("version", ["0.25.0", "0.26.0", "0.28.1"])
def test_from_0_25_a_dense_model_runs_on_the_v2_runner_whose_graphs_stay_outside(version):
    # PR #44443: the V2 runner for models without experts or linear attention; its graph estimate is 0
    # before 0.29 (vllm-project/vllm#49224), so the pool is 0.19's at the same utilization.
    budget = llama_budget(version)
    assert budget.runner == V2_RUNNER and not budget.graphs_inside
    assert budget.kv_cache_bytes == llama_budget("0.19").kv_cache_bytes
    assert "CUDA graphs (outside the budget)" in [item.name for item in budget.outside]
    moe = vllm_budget(MIXTRAL, 16, 16, VllmSettings(gpu_memory_bytes=4 * H100, tensor_parallel=4,
                                                     version=parse_version(version)))
    assert moe.runner == V1_RUNNER and moe.graphs_inside


def test_from_0_29_every_model_runs_on_the_v2_runner_which_estimates_its_graphs():
    dense = llama_budget("0.29.0")
    moe = vllm_budget(MIXTRAL, 16, 16, VllmSettings(gpu_memory_bytes=4 * H100, tensor_parallel=4,
                                                     version=parse_version("0.29.0")))
    assert (dense.runner, moe.runner) == (V2_RUNNER, V2_RUNNER)
    assert dense.graphs_inside and moe.graphs_inside
    assert dense.kv_cache_bytes == llama_budget("0.20.0").kv_cache_bytes


def test_the_runner_asked_is_sized_and_written_on_the_command():
    v1 = llama_budget("0.26.0", model_runner=V1_RUNNER)
    assert v1.runner == V1_RUNNER and v1.graphs_inside
    assert v1.kv_cache_bytes == llama_budget("0.26.0").kv_cache_bytes - CUDA_GRAPH_BYTES
    assert serve_command("meta-llama/Llama-3.1-8B", v1).startswith("VLLM_USE_V2_MODEL_RUNNER=0 vllm serve ")
    v2 = llama_budget("0.23.0", model_runner=V2_RUNNER)
    assert v2.runner == V2_RUNNER and not v2.graphs_inside
    assert serve_command("meta-llama/Llama-3.1-8B", v2).startswith("VLLM_USE_V2_MODEL_RUNNER=1 vllm serve ")
    both = llama_budget("0.26.0", model_runner=V1_RUNNER, cudagraph_estimate=False)
    assert serve_command("meta-llama/Llama-3.1-8B", both).startswith(
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 VLLM_USE_V2_MODEL_RUNNER=0 vllm serve ")
    # Not asked, the release's choice: no variable, whatever the runner.
    assert not serve_command("meta-llama/Llama-3.1-8B", llama_budget("0.26.0")).startswith("VLLM_")


def test_a_runner_the_release_does_not_run_the_model_on_is_refused():
    with pytest.raises(SizingError) as early:
        llama_budget("0.21.0", model_runner=V2_RUNNER)
    assert early.value.field == "model_runner" and "0.22" in early.value.message
    with pytest.raises(SizingError) as moe:
        vllm_budget(MIXTRAL, 16, 16, VllmSettings(gpu_memory_bytes=4 * H100, tensor_parallel=4,
                                                  version=parse_version("0.26.0"), model_runner=V2_RUNNER))
    assert moe.value.field == "model_runner" and "0.29" in moe.value.message
    with pytest.raises(SizingError) as estimate:
        llama_budget("0.26.0", cudagraph_estimate=True)
    assert estimate.value.field == "cudagraph_estimate" and "V1 runner" in estimate.value.message
    assert llama_budget("0.29.0", cudagraph_estimate=True, model_runner=V2_RUNNER).graphs_inside


def test_before_0_9_2_the_cuda_context_is_paid_inside_the_budget():
    # The V1 worker before PR #19312 counts the used memory less PyTorch's after its profiling pass.
    early, later = llama_budget("0.8.5"), llama_budget("0.9.2")
    assert early.kv_cache_bytes == later.kv_cache_bytes - CUDA_CONTEXT_BYTES
    assert [item.name for item in early.also_inside] == ["CUDA context (inside the budget before 0.9.2)"]
    assert [item.name for item in early.outside] == ["CUDA graphs (outside the budget)"]


def test_a_failed_0_11_start_up_is_answered_does_not_start_with_its_reason():
    # vllm0112-qwen3next80b-bf16-4xa100-40g-tp4-u08-len512-nokv (engine_measurements.csv): 37.22 GiB of
    # weights per GPU logged, "Available KV cache memory: -7.16 GiB", the engine refused to start.
    budget = vllm_budget(language_spec("qwen3-next-80b-a3b"), 16, 16, VllmSettings(
        gpu_memory_bytes=int(39.38 * GIB), tensor_parallel=4, gpu_memory_utilization=Fraction(8, 10),
        max_model_len=512, version=parse_version("0.11.2")))
    assert abs(budget.weights.bytes / GIB - 37.2151) <= 37.2151 * 0.03
    fits, reason = budget.fit(512, 1)
    assert not fits and "leave nothing" in reason


@pytest.mark.parametrize("text", ["0.19", "0.9.2", "v0.21.0", "0.8", "0.27.1", "0.31.4", DEFAULT_VERSION])
def test_a_release_from_0_8_to_the_newest_known_is_taken(text):
    assert parse_version(text).text == text.removeprefix("v")


@pytest.mark.parametrize("text", ["nineteen", "0.19.x", "0..19", "1", "0.19.0.1.2", "0,19"])
def test_a_malformed_version_is_refused_by_its_field(text):
    with pytest.raises(SizingError) as refused:
        parse_version(text)
    assert refused.value.field == "engine_version"
    assert "numbers with dots" in refused.value.message


@pytest.mark.parametrize("text", ["0.7.3", "0.6", "0.32.0", "0.99", "1.0"])
def test_an_unknown_release_is_refused_naming_the_known_ones(text):
    with pytest.raises(SizingError) as refused:
        parse_version(text)
    assert refused.value.field == "engine_version"
    assert "0.8" in refused.value.message and DEFAULT_VERSION in refused.value.message


def test_the_default_is_the_newest_known_release_with_the_graphs_inside():
    assert parse_version(None).text == DEFAULT_VERSION
    assert parse_version("").estimates_cudagraphs_by_default and parse_version("").v2_estimates_cudagraphs
    assert parse_version("").default_utilization == Fraction(92, 100)


def test_skipping_the_vision_tower_takes_its_weights_out_and_writes_the_flag():
    gemma = language_spec("gemma-3-4b")
    settings = {"gpu_memory_bytes": H100, "max_model_len": 8192}
    loaded = vllm_budget(gemma, 16, 16, VllmSettings(**settings))
    skipped = vllm_budget(gemma, 16, 16, VllmSettings(**settings, skip_vision_tower=True))
    # SigLIP encoder and projector: 419,816,304 parameters × 2 bytes (Gemma 3 4B's config).
    assert loaded.weights.bytes - skipped.weights.bytes == 419_816_304 * 2
    assert "419,816,304 vision-tower parameters" in skipped.weights.formula
    assert """--limit-mm-per-prompt '{"image": 0}'""" in serve_command("google/gemma-3-4b-it", skipped)


def test_the_vision_tower_cannot_be_skipped_where_there_is_none_or_before_0_10_1():
    with pytest.raises(SizingError) as none:
        vllm_budget(LLAMA, 16, 16, VllmSettings(gpu_memory_bytes=H100, skip_vision_tower=True))
    assert none.value.field == "skip_vision_tower" and "no vision tower" in none.value.message
    with pytest.raises(SizingError) as early:
        vllm_budget(language_spec("gemma-3-4b"), 16, 16, VllmSettings(
            gpu_memory_bytes=H100, skip_vision_tower=True, version=parse_version("0.9.2")))
    assert early.value.field == "skip_vision_tower" and "0.10.1" in early.value.message


@settings(max_examples=300, deadline=None)
@given(st.from_regex(known_release_pattern(), fullmatch=True))
def test_every_release_the_schema_admits_is_taken(text):
    # The API's schema states the pattern: a schema-valid version is never refused.
    assert parse_version(text).text == (text.removeprefix("v") or DEFAULT_VERSION)


@pytest.mark.parametrize("text", ["0.7.3", "0.32", "0000000000000000000", "1.0", "0.19.x"])
def test_the_schema_leaves_out_what_is_refused(text):
    assert re.fullmatch(known_release_pattern(), text) is None
    with pytest.raises(SizingError):
        parse_version(text)
