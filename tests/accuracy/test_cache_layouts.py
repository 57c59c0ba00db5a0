"""The KV-cache items against the caches transformers really allocates, one small model of each layer
kind built from a config.json with random weights (nothing is downloaded).

The pasted config goes through the admin's reader (`catalog.hf_config.parse_config`) into the sizing
engine; the same config builds the transformers model. Full-attention layers hold every token;
sliding-window and chunked layers hold min(context, window) in transformers' static cache, as the
engine counts them; latent attention holds kv_lora_rank + qk_rope_head_dim values per token and layer.
"""
import json
import os

import pytest

from catalog.hf_config import parse_config
from sizing.architectures import architecture_from_dict, cache_groups
from sizing.specs import LanguageModelSpec

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TOKENS = 20
BASE = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "vocab_size": 128, "max_position_embeddings": 256}
CONFIGS = {
    "full (qwen3)": {**BASE, "model_type": "qwen3", "num_hidden_layers": 3},
    "sliding 5:1 (gemma3_text)": {**BASE, "model_type": "gemma3_text", "num_hidden_layers": 6, "sliding_window": 8,
                                  "sliding_window_pattern": 6},
    "alternating sliding (gpt_oss)": {
        **BASE, "model_type": "gpt_oss", "num_hidden_layers": 2, "sliding_window": 8,
        "layer_types": ["sliding_attention", "full_attention"], "num_local_experts": 4, "num_experts_per_tok": 2,
    },
    "chunked (llama4_text)": {
        **BASE, "model_type": "llama4_text", "num_hidden_layers": 4, "attention_chunk_size": 8,
        "num_local_experts": 2, "num_experts_per_tok": 1, "intermediate_size_mlp": 128,
        "interleave_moe_layer_step": 1,
    },
    "latent (deepseek_v3)": {
        **BASE, "model_type": "deepseek_v3", "num_hidden_layers": 2, "num_key_value_heads": 4, "head_dim": 8,
        "kv_lora_rank": 32, "q_lora_rank": 48, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16,
        "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "first_k_dense_replace": 1,
        "n_group": 1, "topk_group": 1, "n_shared_experts": 1,
    },
}
LINEAR = {
    **BASE, "model_type": "qwen3_next", "num_hidden_layers": 4, "linear_num_key_heads": 2,
    "linear_num_value_heads": 4, "linear_key_head_dim": 16, "linear_value_head_dim": 16,
    "linear_conv_kernel_dim": 4, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32, "full_attention_interval": 4,
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


def build(config: dict):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.utils import logging

    logging.set_verbosity_error()
    torch.manual_seed(0)
    hf_config = AutoConfig.for_model(**config)
    model = AutoModelForCausalLM.from_config(hf_config, dtype=torch.bfloat16).eval()
    return torch, hf_config, model


def attention_cache_bytes(cache) -> int:
    total = 0
    for layer in cache.layers:
        for name in ("keys", "values"):
            tensor = getattr(layer, name, None)
            if tensor is not None and hasattr(tensor, "element_size"):
                total += tensor.numel() * tensor.element_size()
    return total


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_the_cache_items_are_what_transformers_allocates(kind):
    from transformers import StaticCache

    config = CONFIGS[kind]
    torch, hf_config, model = build(config)
    cache = StaticCache(config=hf_config, max_cache_len=TOKENS)
    with torch.inference_mode():
        output = model(input_ids=torch.randint(3, 128, (1, TOKENS)), use_cache=True, past_key_values=cache)
    held = attention_cache_bytes(output.past_key_values)
    estimated = sum(group.bytes(1) for group in cache_groups(spec_from(config), TOKENS, 2))
    assert held == estimated > 0


def test_latent_attention_caches_the_latent_not_the_heads():
    """2 layers × (32 latent + 8 rotary) × 2 bytes × 20 tokens = 3,200 bytes; the expanded heads would
    be 2 × 4 heads × (16 + 8 + 16) × 2 × 20 = 12,800."""
    config = CONFIGS["latent (deepseek_v3)"]
    torch, _, model = build(config)
    with torch.inference_mode():
        output = model(input_ids=torch.randint(3, 128, (1, TOKENS)), use_cache=True)
    assert attention_cache_bytes(output.past_key_values) == 3_200
    (group,) = cache_groups(spec_from(config), TOKENS, 2)
    assert group.kind == "latent" and group.bytes(1) == 3_200


def test_linear_attention_state_is_fixed_and_its_full_layers_hold_every_token():
    """One full-attention layer: 2 × 2 KV heads × 16 × 2 bytes × 20 tokens = 2,560 bytes, as counted.
    Three linear layers keep a fixed state. The engine counts it as vLLM holds it: conv (4 − 1) × 128
    channels + 4 heads × 16 × 16, in 16-bit = 2 × (384 + 1,024) = 2,816 bytes a layer. transformers keeps
    the whole kernel (4 × 128 in 16-bit = 1,024 bytes) and a float32 recurrent state (1,024 × 4 = 4,096)."""
    torch, _, model = build(LINEAR)
    states = {}
    for tokens in (TOKENS, 2 * TOKENS):
        with torch.inference_mode():
            cache = model(input_ids=torch.randint(3, 128, (1, tokens)), use_cache=True).past_key_values
        linear = [layer for layer in cache.layers if type(layer).__name__ == "LinearAttentionLayer"]
        tensors = []
        for layer in linear:
            for part in (layer.conv_states, layer.recurrent_states):
                tensors += list(part.values() if isinstance(part, dict) else part)
        states[tokens] = sum(t.numel() * t.element_size() for t in tensors if t is not None)
        groups = {group.kind: group for group in cache_groups(spec_from(LINEAR), tokens, 2)}
        assert attention_cache_bytes(cache) == groups["full"].bytes(1) == 2_560 * tokens // TOKENS
        assert groups["linear"].bytes(1) == 3 * 2_816
    assert states[TOKENS] == states[2 * TOKENS] == 3 * (1_024 + 4_096)
