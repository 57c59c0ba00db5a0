"""What a one-pass prefill holds for sliding-window and chunked-local layers in transformers, against the
prefill item's terms: small models of each kind built from a config.json with random weights (nothing is
downloaded), run once over a prompt longer than their window.

transformers' DynamicSlidingWindowLayer caches a slice of the whole prompt's keys and values: a view, so
every local layer keeps the prompt's storage until the next step; with SDPA the local layers get a full
boolean [batch, 1, prompt, prompt] mask and the global ones none (is_causal)."""
import inspect
import json
import os

import pytest

from catalog.hf_config import parse_config
from sizing.architectures import architecture_from_dict, cache_groups
from sizing.calculators.inference import local_prefill
from sizing.specs import LanguageModelSpec

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TOKENS = 20
REQUESTS = 2
BASE = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "vocab_size": 128, "max_position_embeddings": 256}
CONFIGS = {
    "sliding 5:1 (gemma3_text)": {**BASE, "model_type": "gemma3_text", "num_hidden_layers": 6, "sliding_window": 8,
                                  "sliding_window_pattern": 6},
    "chunked (llama4_text)": {
        **BASE, "model_type": "llama4_text", "num_hidden_layers": 4, "attention_chunk_size": 8,
        "num_local_experts": 2, "num_experts_per_tok": 1, "intermediate_size_mlp": 128,
        "interleave_moe_layer_step": 1,
    },
}


def spec_from(config: dict) -> LanguageModelSpec:
    figures = parse_config(json.dumps(config))
    return LanguageModelSpec(
        slug="tiny", name="tiny", parameters=figures["parameters"], layers=figures["layers"],
        attention_heads=figures["attention_heads"], kv_heads=figures["kv_heads"], head_dim=figures["head_dim"],
        hidden_size=figures["hidden_size"], intermediate_size=figures["intermediate_size"],
        vocab_size=figures["vocab_size"], architecture=architecture_from_dict(figures["architecture"]),
        tied_embeddings=figures["tied_embeddings"],
    )


def prefill(config: dict):
    """One forward pass over REQUESTS prompts of TOKENS tokens with SDPA; the cache and each layer's mask."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, DynamicCache
    from transformers.utils import logging

    logging.set_verbosity_error()
    torch.manual_seed(0)
    hf_config = AutoConfig.for_model(**config)
    model = AutoModelForCausalLM.from_config(hf_config, dtype=torch.bfloat16, attn_implementation="sdpa").eval()
    masks = {}

    def keep_mask(index):
        def hook(module, args, kwargs):
            masks[index] = kwargs.get("attention_mask")
        return hook

    layers = model.model.layers
    for index, layer in enumerate(layers):
        layer.self_attn.register_forward_pre_hook(keep_mask(index), with_kwargs=True)
    cache = DynamicCache(config=hf_config)
    keyword = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    with torch.inference_mode():
        model(input_ids=torch.randint(3, 128, (REQUESTS, TOKENS)), use_cache=True, **{keyword: cache})
    local = [i for i, kind in enumerate(hf_config.layer_types) if kind != "full_attention"]
    return cache, masks, local


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_local_layers_keep_the_whole_prompt_until_the_next_step(kind):
    config = CONFIGS[kind]
    cache, _, local = prefill(config)
    spec = spec_from(config)
    stored = sum(getattr(cache.layers[i], name).untyped_storage().nbytes() for i in local
                 for name in ("keys", "values"))
    counted = next(g for g in cache_groups(spec, TOKENS, 2) if g.kind in ("sliding", "chunked")).bytes(REQUESTS)
    expected = local_prefill(spec, TOKENS, REQUESTS)
    # the cache item (the window) plus the prefill's retained term is what the layers' storage holds
    assert stored == counted + expected.retained_bytes
    assert expected.retained_bytes > 0
    # while the tensors they show hold only the window (transformers keeps window − 1 tokens)
    shown = sum(getattr(cache.layers[i], name).numel() * 2 for i in local for name in ("keys", "values"))
    assert shown < stored


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_sdpa_builds_a_full_boolean_mask_for_the_local_layers_only(kind):
    import torch

    config = CONFIGS[kind]
    _, masks, local = prefill(config)
    expected = local_prefill(spec_from(config), TOKENS, REQUESTS)
    for index, mask in masks.items():
        if index in local:
            assert mask is not None and mask.dtype == torch.bool
            assert mask.numel() <= expected.mask_elements == REQUESTS * TOKENS * TOKENS
            assert tuple(mask.shape[-2:]) == (TOKENS, TOKENS)
        else:
            assert mask is None
    assert expected.masks == 1
