"""The rotary embeddings' cos/sin caches vLLM counts in "Model loading took" (`vllm_loading.rotary_caches`):
one row per position, rotary_dim values, 2 bytes, whole on every GPU. Pure Python."""
import json
from fractions import Fraction

import pytest

from catalog.hf_config import ConfigError, parse_config
from sizing.calculators.vllm import VllmSettings, vllm_budget
from sizing.calculators.vllm_loading import rotary_caches
from sizing.units import GIB
from tests.accuracy import rotary
from tests.accuracy.vllm_startup import language_spec
from tests.catalog import configs

H100 = int(Fraction(7919, 100) * GIB)


def settings(**values):
    return VllmSettings(gpu_memory_bytes=H100, **{"max_model_len": 8192, **values})


def test_gemma3_4b_loads_a_linear_scaled_global_cache_and_a_local_one_beside_its_weights():
    """rope_scaling linear ×8 on the global layers (131,072 × 8 positions) and the sliding layers' own
    base (131,072): 1,179,648 × 256 × 2 bytes = 0.5625 GiB on top of 4,300,079,472 × 2 bytes."""
    gemma = language_spec("gemma-3-4b")
    weights = vllm_budget(gemma, 16, 16, settings()).weights
    assert weights.bytes == 4_300_079_472 * 2 + (1_048_576 + 131_072) * 256 * 2
    assert "1,048,576 + 131,072 positions × 256 × 2 bytes" in weights.formula


def test_gemma3_1b_has_no_linear_scaling_but_still_two_caches():
    assert rotary_caches(language_spec("gemma-3-1b")).positions == (32_768, 32_768)


def test_llama4_scouts_ten_million_position_cache_is_whole_on_every_gpu_of_the_group():
    scout = language_spec("llama-4-scout")
    four = vllm_budget(scout, 16, 16, settings(tensor_parallel=4)).weights
    assert four.bytes == -(-108_641_793_536 * 2 // 4) + 10_485_760 * 128 * 2


def test_mla_rotates_only_its_rotary_part_of_the_head():
    assert rotary_caches(language_spec("deepseek-v3")).width == 64


def test_nope_latent_attention_builds_no_rotary_cache():
    """Kimi-Linear's latent layers rotate nothing (mla_use_nope): its 1,048,576 positions cost no cache,
    and its weights are the checkpoint alone, 49,122,675,072 × 2 bytes ÷ 2 GPUs."""
    kimi = language_spec("kimi-linear-48b-a3b")
    assert rotary_caches(kimi).bytes == 0
    weights = vllm_budget(kimi, 16, 16, settings(tensor_parallel=2)).weights
    assert weights.bytes == 49_122_675_072
    assert "no rotary cos/sin cache" in weights.formula
    assert parse_config(json.dumps(configs.KIMI_LINEAR))["architecture"]["no_rope"] is True


def test_a_partial_rotary_factor_narrows_the_cache():
    assert rotary_caches(language_spec("qwen3-next-80b-a3b")).width == 64
    assert rotary_caches(language_spec("glm-4-5-air")).width == 64


def test_yarn_turned_on_at_start_covers_the_scaled_context():
    """Qwen3-30B-A3B: 40,960 positions natively; beyond, the served YaRN cache is 32,768 × 4 positions."""
    qwen = language_spec("qwen3-30b-a3b")
    assert rotary_caches(qwen).positions == (40_960,)
    assert rotary_caches(qwen, yarn_on=True).positions == (131_072,)
    native = vllm_budget(qwen, 16, 16, settings(max_model_len=32_768)).weights.bytes
    scaled = vllm_budget(qwen, 16, 16, settings(max_model_len=131_072)).weights.bytes
    assert scaled - native == (131_072 - 40_960) * 128 * 2


@pytest.mark.parametrize("log", rotary.LOGS, ids=lambda log: log.model_slug)
def test_held_out_logs_of_model_loading_are_within_3_percent(log):
    assert abs(log.error()) <= Fraction(3, 100)


def test_a_pasted_config_gives_the_rope_figures_vllm_sizes_its_caches_by():
    gemma = parse_config(json.dumps(configs.GEMMA3_27B))["architecture"]
    assert gemma["rope_linear_factor"] == 8 and gemma["local_rope"] is True
    assert parse_config(json.dumps(configs.QWEN3_NEXT))["architecture"]["rotary_dim"] == 64
    assert "rope_linear_factor" not in parse_config(json.dumps(configs.LLAMA4_SCOUT))["architecture"]


def test_a_fractional_linear_factor_is_refused_with_the_field_named():
    bad = {**configs.LLAMA_LIKE_CONFIG, "rope_scaling": {"rope_type": "linear", "factor": 2.5}}
    with pytest.raises(ConfigError, match="rope_scaling.factor"):
        parse_config(json.dumps(bad))


def test_the_cache_is_explained_in_german():
    from django.utils import translation

    with translation.override("de"):
        formula = vllm_budget(language_spec("gemma-3-4b"), 16, 16, settings()).weights.formula
    assert "Rotations-Cos/Sin-Caches" in formula


@pytest.mark.parametrize("stored", [{"rope_linear_factor": 0}, {"rotary_dim": "64"}, {"local_rope": "yes"}])
def test_a_bad_rope_figure_in_a_stored_architecture_is_refused_naming_it(stored):
    from sizing.architectures import architecture_from_dict
    from sizing.errors import SizingError

    with pytest.raises(SizingError, match=f"architecture.{next(iter(stored))}"):
        architecture_from_dict(stored)


def test_the_rope_figures_survive_the_stored_form():
    from sizing.architectures import architecture_from_dict

    arch = architecture_from_dict({"rope_linear_factor": 8, "local_rope": True, "rotary_dim": 64})
    assert architecture_from_dict(arch.as_dict()) == arch
