"""The parameter recount against the models transformers builds from the same config.json, on the
meta device (no memory, no download): for every architecture the catalog ships, the count of
`sizing.architectures.count_parameters` (through the admin's config reader) is the number of
parameters the modeling code creates, vision towers included."""
import json
import os

import pytest

from catalog.data.language_models import LANGUAGE_MODELS
from catalog.hf_config import parse_config

from ..catalog import configs

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SHIPPED = {row["slug"]: row for row in LANGUAGE_MODELS}
MULTIMODAL = {"gemma3", "llama4", "mistral3"}


def scaled(base: dict, text: dict | None = None, **top) -> dict:
    config = {**base, **top}
    if text is not None:
        config["text_config"] = {**base["text_config"], **text}
    return config


CASES = {
    **configs.BY_SLUG,
    "mistral-small-3-2-24b": {**configs.MISTRAL_SMALL_3_2, "tie_word_embeddings": False},
    "qwen3-0-6b": scaled(configs.QWEN3_8B, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                         num_attention_heads=16, tie_word_embeddings=True),
    "qwen3-4b": scaled(configs.QWEN3_8B, hidden_size=2560, intermediate_size=9728, num_attention_heads=32,
                       tie_word_embeddings=True),
    "qwen3-14b": scaled(configs.QWEN3_8B, hidden_size=5120, intermediate_size=17408, num_hidden_layers=40,
                        num_attention_heads=40),
    "qwen3-32b": scaled(configs.QWEN3_8B, hidden_size=5120, intermediate_size=25600, num_hidden_layers=64,
                        num_attention_heads=64),
    "qwen3-235b-a22b": scaled(configs.QWEN3_30B_A3B, hidden_size=4096, intermediate_size=12288,
                              moe_intermediate_size=1536, num_hidden_layers=94, num_attention_heads=64),
    "gemma-3-4b": scaled(configs.GEMMA3_27B, text={"hidden_size": 2560, "intermediate_size": 10240,
                                                   "num_hidden_layers": 34, "num_attention_heads": 8,
                                                   "num_key_value_heads": 4, "head_dim": 256}),
    "gemma-3-12b": scaled(configs.GEMMA3_27B, text={"hidden_size": 3840, "intermediate_size": 15360,
                                                    "num_hidden_layers": 48, "num_attention_heads": 16,
                                                    "num_key_value_heads": 8, "head_dim": 256}),
    "llama-4-maverick": scaled(configs.LLAMA4_SCOUT, text={"num_local_experts": 128,
                                                           "interleave_moe_layer_step": 2,
                                                           "max_position_embeddings": 1048576}),
    "gpt-oss-20b": scaled(configs.GPT_OSS_120B, num_hidden_layers=24, num_local_experts=32,
                          layer_types=["sliding_attention", "full_attention"] * 12),
    "deepseek-r1": configs.DEEPSEEK_V3,
}


def built_parameters(config: dict) -> int:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText
    from transformers.utils import logging

    logging.set_verbosity_error()
    config = {key: value for key, value in config.items() if key != "quantization_config"}
    hf_config = AutoConfig.for_model(**config)
    factory = AutoModelForImageTextToText if config["model_type"] in MULTIMODAL else AutoModelForCausalLM
    with torch.device("meta"):
        model = factory.from_config(hf_config)
    return sum(parameter.numel() for parameter in model.parameters())


@pytest.mark.parametrize("slug", sorted(CASES))
def test_the_recount_is_what_transformers_builds(slug):
    figures = parse_config(json.dumps(CASES[slug]))
    assert figures["parameters"] == SHIPPED[slug]["parameters"] == built_parameters(CASES[slug])


def test_every_new_language_model_is_built():
    from catalog.data.modern_models import MODERN_MODELS

    # ... and the Gemma 2 rows, whose configs give their sliding windows (`configs.GEMMA2_*`).
    gemma2 = {"gemma-2-2b", "gemma-2-9b", "gemma-2-27b"}
    assert set(CASES) == {row["slug"] for row in MODERN_MODELS} | gemma2
