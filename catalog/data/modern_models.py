"""Language models of 2025-2026, as published: explicit head dimensions, mixtures of experts, sliding,
chunked and linear-attention layers, latent attention, native FP8 and MXFP4 checkpoints.

`parameters` and `active_parameters` are recounted from the figures on the row by
`sizing.architectures.count_parameters` (the catalog tests check that they agree, and that the recount
lands within 0.5 % of the published figure named in `PUBLISHED_CHECKS`). The figures were read from
the models' config.json files or faithful copies of them; `notes` says where a row rests on something
else.
"""

HF = "https://huggingface.co/{}/blob/main/config.json"

QWEN3 = {"qk_norm": True}
# Qwen's cards (Qwen3, Qwen2.5-Coder): pre-trained to 32,768 tokens, validated to 131,072 with YaRN
# (factor 4), which the server turns on; the configs leave it off.
QWEN_YARN = {"factor": 4, "original_context": 32768, "rope_theta": 1_000_000}
# Sliding layers rotate with rope_local_base_freq (10,000), global ones with rope_theta (1,000,000): vLLM
# builds a cos/sin cache for each.
GEMMA3_TEXT = {"layer_pattern": "SSSSSF", "qk_norm": True, "norms_per_layer": 4, "local_rope": True}
# Gemma 3 4B/12B/27B load SigLIP (so400m, 896 px, no head) and a projector with the language model.
GEMMA3_VISION = {
    "kind": "siglip",
    "layers": 27,
    "hidden": 1152,
    "intermediate": 4304,
    "patch_size": 14,
    "image_size": 896,
}
LLAMA4_VISION = {
    "kind": "llama4",
    "layers": 34,
    "hidden": 1408,
    "intermediate": 5632,
    "patch_size": 14,
    "image_size": 336,
    "projector_input": 4096,
}
GPT_OSS = {
    "layer_pattern": "SF",
    "sliding_window": 128,
    "qkv_bias": True,
    "o_bias": True,
    "sinks": True,
    "native_weights": {"format": "mxfp4", "block": 32, "quantized": ["experts"]},
}
DEEPSEEK_V3 = {
    "mla": {
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
    },
    "moe": {
        "experts": 256,
        "experts_per_token": 8,
        "expert_intermediate": 2048,
        "shared_intermediate": 2048,
        "first_dense_layers": 3,
    },
    "native_weights": {
        "format": "fp8-block",
        "block": 128,
        "quantized": ["attention", "mlp", "experts", "shared_experts"],
    },
    "mtp_layers": 1,
}


def _qwen3(size, parameters, published, layers, hidden, heads, kv_heads, intermediate, tied, notes=""):
    return {
        "slug": f"qwen3-{size.lower().replace('.', '-')}",
        "name": f"Qwen3 {size}",
        "parameters": parameters,
        "parameters_published": published,
        "layers": layers,
        "attention_heads": heads,
        "kv_heads": kv_heads,
        "head_dim": 128,
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "vocab_size": 151936,
        "max_context": 40960,
        "license": "apache-2.0",
        "config_url": HF.format(f"Qwen/Qwen3-{size}"),
        "tied_embeddings": tied,
        "architecture": QWEN3,
        "notes": (
            "Head dimension 128 is set explicitly, not hidden/heads. The card serves 32,768 tokens "
            "natively, 131,072 with YaRN. " + notes
        ).strip(),
    }


def _gemma3(
    size,
    parameters,
    published,
    layers,
    hidden,
    heads,
    kv_heads,
    head_dim,
    intermediate,
    window,
    vocab,
    max_context,
    vision,
    notes,
    rope_linear_factor=8,
):
    # 4B/12B/27B: rope_scaling {"rope_type": "linear", "factor": 8.0} on the global layers; 1B: none.
    architecture = {**GEMMA3_TEXT, "sliding_window": window}
    if rope_linear_factor > 1:
        architecture["rope_linear_factor"] = rope_linear_factor
    if vision:
        architecture["vision"] = GEMMA3_VISION
    return {
        "slug": f"gemma-3-{size.lower()}",
        "name": f"Gemma 3 {size}",
        "parameters": parameters,
        "parameters_published": published,
        "layers": layers,
        "attention_heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "vocab_size": vocab,
        "max_context": max_context,
        "license": "gemma",
        "config_url": HF.format(f"google/gemma-3-{size.lower()}-it"),
        "tied_embeddings": True,
        "architecture": architecture,
        "notes": ("Five sliding-window layers to one global layer (every sixth layer is global). " + notes),
    }


MODERN_MODELS = [
    _qwen3(
        "0.6B",
        596_049_920,
        "0.6B (0.44B non-embedding)",
        28,
        1024,
        16,
        8,
        3072,
        True,
        "Output head shares the embedding matrix.",
    ),
    _qwen3(
        "4B",
        4_022_468_096,
        "4.0B (3.6B non-embedding)",
        36,
        2560,
        32,
        8,
        9728,
        True,
        "Output head shares the embedding matrix.",
    ),
    _qwen3("8B", 8_190_735_360, "8.2B (6.95B non-embedding)", 36, 4096, 32, 8, 12288, False),
    _qwen3("14B", 14_768_307_200, "14.8B (13.2B non-embedding)", 40, 5120, 40, 8, 17408, False),
    _qwen3("32B", 32_762_123_264, "32.8B (31.2B non-embedding)", 64, 5120, 64, 8, 25600, False),
    {
        "slug": "qwen3-30b-a3b",
        "name": "Qwen3 30B-A3B",
        "parameters": 30_532_122_624,
        "active_parameters": 3_353_032_704,
        "parameters_published": "30.5B total / 3.3B active",
        "layers": 48,
        "attention_heads": 32,
        "kv_heads": 4,
        "head_dim": 128,
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "vocab_size": 151936,
        "max_context": 40960,
        "license": "apache-2.0",
        "config_url": HF.format("Qwen/Qwen3-30B-A3B"),
        "architecture": {
            **QWEN3,
            "yarn": QWEN_YARN,
            "moe": {"experts": 128, "experts_per_token": 8, "expert_intermediate": 768},
        },
        "notes": (
            "Mixture of experts: 128 experts in every layer, 8 run per token. "
            "Head dimension 128 is explicit."
        ),
    },
    {
        "slug": "qwen3-235b-a22b",
        "name": "Qwen3 235B-A22B",
        "parameters": 235_093_634_560,
        "active_parameters": 22_190_763_520,
        "parameters_published": "235B total / 22B active",
        "layers": 94,
        "attention_heads": 64,
        "kv_heads": 4,
        "head_dim": 128,
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "vocab_size": 151936,
        "max_context": 40960,
        "license": "apache-2.0",
        "config_url": HF.format("Qwen/Qwen3-235B-A22B"),
        "architecture": {
            **QWEN3,
            "yarn": QWEN_YARN,
            "moe": {"experts": 128, "experts_per_token": 8, "expert_intermediate": 1536},
        },
        "notes": (
            "Mixture of experts: 128 experts in every layer, 8 run per token. "
            "Head dimension 128 is explicit."
        ),
    },
    {
        "slug": "qwen3-next-80b-a3b",
        "name": "Qwen3-Next 80B-A3B Instruct",
        "parameters": 79_674_391_296,
        "active_parameters": 3_874_929_408,
        "parameters_published": "80B total / 3B active",
        "layers": 48,
        "attention_heads": 16,
        "kv_heads": 2,
        "head_dim": 256,
        "hidden_size": 2048,
        "intermediate_size": 5120,
        "vocab_size": 151936,
        "max_context": 262144,
        "license": "apache-2.0",
        "config_url": HF.format("Qwen/Qwen3-Next-80B-A3B-Instruct"),
        "architecture": {
            "layer_pattern": "LLLF",
            "qk_norm": True,
            "attention_output_gate": True,
            "rotary_dim": 64,  # partial_rotary_factor 0.25 of head_dim 256
            "linear_attention": {
                "key_heads": 16,
                "value_heads": 32,
                "key_head_dim": 128,
                "value_head_dim": 128,
                "conv_kernel": 4,
            },
            "moe": {
                "experts": 512,
                "experts_per_token": 10,
                "expert_intermediate": 512,
                "shared_intermediate": 512,
                "shared_expert_gate": True,
            },
        },
        "notes": (
            "Three Gated DeltaNet (linear-attention) layers to one gated full-attention layer: only the 12 "
            "full-attention layers cache per token; the others keep a fixed state. 512 experts, 10 per token "
            "plus a shared expert. The active figure counts both embedding matrices."
        ),
    },
    _gemma3(
        "1B",
        999_885_952,
        "1B (698M non-embedding + 302M embedding)",
        26,
        1152,
        4,
        1,
        256,
        6912,
        512,
        262144,
        32768,
        False,
        "Text only.",
        rope_linear_factor=1,
    ),
    _gemma3(
        "4B",
        4_300_079_472,
        "4.3B (incl. 417M SigLIP vision encoder)",
        34,
        2560,
        8,
        4,
        256,
        10240,
        1024,
        262208,
        131072,
        True,
        "The count includes the SigLIP vision encoder and projector the checkpoint loads.",
    ),
    _gemma3(
        "12B",
        12_187_325_040,
        "12.2B (incl. 417M SigLIP vision encoder)",
        48,
        3840,
        16,
        8,
        256,
        15360,
        1024,
        262208,
        131072,
        True,
        "The count includes the SigLIP vision encoder and projector the checkpoint loads.",
    ),
    _gemma3(
        "27B",
        27_432_406_640,
        "27.4B (incl. 417M SigLIP vision encoder)",
        62,
        5376,
        32,
        16,
        128,
        21504,
        1024,
        262208,
        131072,
        True,
        "Head dimension 128 is explicit (hidden/heads would be 168). The count includes the SigLIP vision "
        "encoder and projector the checkpoint loads.",
    ),
    {
        "slug": "llama-4-scout",
        "name": "Llama 4 Scout 17B-16E Instruct",
        "parameters": 108_641_793_536,
        "active_parameters": 17_172_894_720,
        "parameters_published": "109B total / 17B active",
        "layers": 48,
        "attention_heads": 40,
        "kv_heads": 8,
        "head_dim": 128,
        "hidden_size": 5120,
        "intermediate_size": 8192,
        "vocab_size": 202048,
        "max_context": 10485760,
        "license": "llama4",
        "config_url": HF.format("meta-llama/Llama-4-Scout-17B-16E-Instruct"),
        "architecture": {
            "layer_pattern": "CCCF",
            "attention_chunk": 8192,
            "moe": {
                "experts": 16,
                "experts_per_token": 1,
                "expert_intermediate": 8192,
                "shared_intermediate": 8192,
                "dense_intermediate": 16384,
            },
            "vision": LLAMA4_VISION,
        },
        "notes": (
            "Three layers of 8,192-token chunked local attention to one global layer (iRoPE). 16 experts per "
            "layer, 1 per token plus a shared expert. The count includes the vision encoder the checkpoint "
            "loads; the active figure leaves it out."
        ),
    },
    {
        "slug": "llama-4-maverick",
        "name": "Llama 4 Maverick 17B-128E Instruct",
        "parameters": 401_583_781_376,
        "active_parameters": 17_184_691_200,
        "parameters_published": "400B total / 17B active",
        "layers": 48,
        "attention_heads": 40,
        "kv_heads": 8,
        "head_dim": 128,
        "hidden_size": 5120,
        "intermediate_size": 8192,
        "vocab_size": 202048,
        "max_context": 1048576,
        "license": "llama4",
        "config_url": HF.format("meta-llama/Llama-4-Maverick-17B-128E-Instruct"),
        "architecture": {
            "layer_pattern": "CCCF",
            "attention_chunk": 8192,
            "moe": {
                "experts": 128,
                "experts_per_token": 1,
                "expert_intermediate": 8192,
                "shared_intermediate": 8192,
                "layer_step": 2,
                "dense_intermediate": 16384,
            },
            "vision": LLAMA4_VISION,
        },
        "notes": (
            "MoE on every other layer (interleave_moe_layer_step 2; the dense layers use "
            "intermediate_size_mlp "
            "16,384). The chunked/global pattern is transformers' default (every fourth layer global), as "
            "its config states no other. The count includes the vision encoder; the active figure "
            "leaves it out."
        ),
    },
    {
        "slug": "gpt-oss-20b",
        "name": "gpt-oss-20b",
        "parameters": 20_914_757_184,
        "active_parameters": 4_187_440_704,
        "parameters_published": "21B total / 3.6B active",
        "layers": 24,
        "attention_heads": 64,
        "kv_heads": 8,
        "head_dim": 64,
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "vocab_size": 201088,
        "max_context": 131072,
        "license": "apache-2.0",
        "config_url": HF.format("openai/gpt-oss-20b"),
        "architecture": {
            **GPT_OSS,
            "moe": {
                "experts": 32,
                "experts_per_token": 4,
                "expert_intermediate": 2880,
                "expert_bias": True,
                "router_bias": True,
            },
        },
        "notes": (
            "Published with MXFP4 experts; attention, routers, embeddings and head in BF16. Layers alternate "
            "128-token sliding window and full attention. Head dimension 64 is explicit. The active figure "
            "counts both embedding matrices; OpenAI's 3.6B leaves the input embedding out."
        ),
    },
    {
        "slug": "gpt-oss-120b",
        "name": "gpt-oss-120b",
        "parameters": 116_829_156_672,
        "active_parameters": 5_711_982_912,
        "parameters_published": "117B total / 5.1B active",
        "layers": 36,
        "attention_heads": 64,
        "kv_heads": 8,
        "head_dim": 64,
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "vocab_size": 201088,
        "max_context": 131072,
        "license": "apache-2.0",
        "config_url": HF.format("openai/gpt-oss-120b"),
        "architecture": {
            **GPT_OSS,
            "moe": {
                "experts": 128,
                "experts_per_token": 4,
                "expert_intermediate": 2880,
                "expert_bias": True,
                "router_bias": True,
            },
        },
        "notes": (
            "Published with MXFP4 experts; attention, routers, embeddings and head in BF16. Layers alternate "
            "128-token sliding window and full attention. Head dimension 64 is explicit. The active figure "
            "counts both embedding matrices; OpenAI's 5.1B leaves the input embedding out."
        ),
    },
    {
        "slug": "deepseek-v3",
        "name": "DeepSeek-V3",
        "parameters": 671_026_404_352,
        "active_parameters": 37_552_282_624,
        "parameters_published": "671B total / 37B active",
        "layers": 61,
        "attention_heads": 128,
        "kv_heads": None,
        "head_dim": None,
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "vocab_size": 129280,
        "max_context": 163840,
        "license": "MIT code + DeepSeek Model License",
        "config_url": HF.format("deepseek-ai/DeepSeek-V3"),
        "architecture": DEEPSEEK_V3,
        "notes": (
            "Multi-head latent attention: the cache holds one latent of kv_lora_rank 512 + "
            "qk_rope_head_dim 64 "
            "values per token and layer, so KV heads and head dimension stay empty. Published in block FP8. "
            "The checkpoint also ships a 14B multi-token-prediction module (685B on Hugging Face), which "
            "serving without speculative decoding does not load; it is not counted, nor is the routing "
            "bias per expert (e_score_correction_bias), a buffer rather than a parameter."
        ),
    },
    {
        "slug": "deepseek-r1",
        "name": "DeepSeek-R1",
        "parameters": 671_026_404_352,
        "active_parameters": 37_552_282_624,
        "parameters_published": "671B total / 37B active",
        "layers": 61,
        "attention_heads": 128,
        "kv_heads": None,
        "head_dim": None,
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "vocab_size": 129280,
        "max_context": 163840,
        "license": "mit",
        "config_url": HF.format("deepseek-ai/DeepSeek-R1"),
        "architecture": DEEPSEEK_V3,
        "notes": (
            "The architecture of DeepSeek-V3: latent attention, 256 experts (8 per token) plus a shared one, "
            "published in block FP8. The multi-token-prediction module is not counted."
        ),
    },
    {
        "slug": "mistral-small-3-2-24b",
        "name": "Mistral Small 3.2 24B Instruct (2506)",
        "parameters": 24_011_361_280,
        "parameters_published": "24B",
        "layers": 40,
        "attention_heads": 32,
        "kv_heads": 8,
        "head_dim": 128,
        "hidden_size": 5120,
        "intermediate_size": 32768,
        "vocab_size": 131072,
        "max_context": 131072,
        "license": "apache-2.0",
        "config_url": HF.format("mistralai/Mistral-Small-3.2-24B-Instruct-2506"),
        "architecture": {
            "vision": {
                "kind": "pixtral",
                "layers": 24,
                "hidden": 1024,
                "intermediate": 4096,
                "patch_size": 14,
                "image_size": 1540,
            }
        },
        "notes": (
            "Head dimension 128 is explicit (hidden/heads would be 160). The count includes the Pixtral "
            "vision "
            "encoder and projector (0.44B) the checkpoint loads."
        ),
    },
    {
        "slug": "phi-4",
        "name": "Phi-4",
        "parameters": 14_659_507_200,
        "parameters_published": "14B (card) / 14.7B (checkpoint)",
        "layers": 40,
        "attention_heads": 40,
        "kv_heads": 10,
        "head_dim": 128,
        "hidden_size": 5120,
        "intermediate_size": 17920,
        "vocab_size": 100352,
        "max_context": 16384,
        "license": "mit",
        "config_url": HF.format("microsoft/phi-4"),
        "notes": "The card rounds to 14B; the checkpoint holds 14.7B.",
    },
    {
        "slug": "glm-4-5-air",
        "name": "GLM-4.5-Air",
        "parameters": 106_852_245_504,
        "active_parameters": 13_424_123_904,
        "parameters_published": "106B total / 12B active",
        "layers": 46,
        "attention_heads": 96,
        "kv_heads": 8,
        "head_dim": 128,
        "hidden_size": 4096,
        "intermediate_size": 10944,
        "vocab_size": 151552,
        "max_context": 131072,
        "license": "mit",
        "config_url": HF.format("zai-org/GLM-4.5-Air"),
        "architecture": {
            "qkv_bias": True,
            "moe": {
                "experts": 128,
                "experts_per_token": 8,
                "expert_intermediate": 1408,
                "shared_intermediate": 1408,
                "first_dense_layers": 1,
            },
            "mtp_layers": 1,
            "mtp_own_embeddings": True,
            "rotary_dim": 64,  # partial_rotary_factor 0.5 of head_dim 128
        },
        "notes": (
            "Head dimension 128 is explicit. The first layer is dense, the other 45 hold 128 experts (8 per "
            "token) and a shared one. The checkpoint also holds a multi-token-prediction layer with its own "
            "embedding and head (110B on Hugging Face), which serving without speculative decoding does not "
            "load; it is not counted. The active figure counts both embedding matrices."
        ),
    },
    {
        "slug": "kimi-linear-48b-a3b",
        "name": "Kimi-Linear 48B-A3B Instruct",
        "parameters": 49_122_675_072,
        "active_parameters": 3_484_453_248,
        "parameters_published": "48B total / 3B active",
        "layers": 27,
        "attention_heads": 32,
        "kv_heads": None,
        "head_dim": None,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "vocab_size": 163840,
        "max_context": 1048576,  # model_max_length: the config names no max_position_embeddings
        "license": "mit",
        "config_url": HF.format("moonshotai/Kimi-Linear-48B-A3B-Instruct"),
        # Its tokenizer (tiktoken) is code in the repository: vLLM and SGLang start it with
        # --trust-remote-code, as the vLLM recipe does.
        "trust_remote_code": True,
        "architecture": {
            # linear_attn_config: full_attn_layers 4, 8, …, 24 and 27 (1-based), the other 20 KDA
            "layer_pattern": "LLLFLLLFLLLFLLLFLLLFLLLFLLF",
            "mla": {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128},
            "no_rope": True,  # mla_use_nope
            "linear_attention": {
                "key_heads": 32,
                "value_heads": 32,
                "key_head_dim": 128,
                "value_head_dim": 128,
                "conv_kernel": 4,
                "kind": "kda",
            },
            "moe": {
                "experts": 256,
                "experts_per_token": 8,
                "expert_intermediate": 1024,
                "shared_intermediate": 1024,
                "first_dense_layers": 1,
            },
        },
        "notes": (
            "Three Kimi Delta Attention layers to one latent-attention layer (7 of 27, the last one too): "
            "only the latent layers cache per token (576 values, NoPE: no rotary embedding); the others keep "
            "a fixed state. 256 experts, 8 per token, and a shared one; the first layer is dense. Its "
            "context is the config's model_max_length. The active figure counts both embedding matrices."
        ),
    },
    # Models people serve on vLLM, SGLang, llama.cpp and Ollama, from their published configs.
    {
        "slug": "qwen2-5-coder-7b", "name": "Qwen2.5-Coder 7B Instruct", "parameters": 7_615_616_512,
        "parameters_published": "7.61B", "layers": 28, "attention_heads": 28, "kv_heads": 4,
        "head_dim": 128, "hidden_size": 3584, "intermediate_size": 18944, "vocab_size": 152064,
        "max_context": 32768, "license": "apache-2.0",
        "config_url": HF.format("Qwen/Qwen2.5-Coder-7B-Instruct"),
        "architecture": {"qkv_bias": True, "yarn": QWEN_YARN},
        "notes": "The architecture of Qwen2.5 7B. The card serves 131,072 tokens with YaRN (factor 4).",
    },
    {
        "slug": "qwen2-5-coder-32b", "name": "Qwen2.5-Coder 32B Instruct", "parameters": 32_763_876_352,
        "parameters_published": "32.5B (card) / 32.76B (config)", "layers": 64, "attention_heads": 40,
        "kv_heads": 8, "head_dim": 128, "hidden_size": 5120, "intermediate_size": 27648,
        "vocab_size": 152064, "max_context": 32768, "license": "apache-2.0",
        "config_url": HF.format("Qwen/Qwen2.5-Coder-32B-Instruct"),
        "architecture": {"qkv_bias": True, "yarn": QWEN_YARN},
        "notes": "The architecture of Qwen2.5 32B. The card serves 131,072 tokens with YaRN (factor 4).",
    },
    {
        "slug": "deepseek-r1-distill-qwen-7b", "name": "DeepSeek-R1-Distill-Qwen-7B",
        "parameters": 7_615_616_512, "parameters_published": "7.62B", "layers": 28, "attention_heads": 28,
        "kv_heads": 4, "head_dim": 128, "hidden_size": 3584, "intermediate_size": 18944,
        "vocab_size": 152064, "max_context": 131072, "license": "mit",
        "config_url": HF.format("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"),
        "architecture": {"qkv_bias": True},
        "notes": "The architecture of Qwen2.5-Math 7B.",
    },
    {
        "slug": "deepseek-r1-distill-qwen-14b", "name": "DeepSeek-R1-Distill-Qwen-14B",
        "parameters": 14_770_033_664, "parameters_published": "14.8B", "layers": 48, "attention_heads": 40,
        "kv_heads": 8, "head_dim": 128, "hidden_size": 5120, "intermediate_size": 13824,
        "vocab_size": 152064, "max_context": 131072, "license": "mit",
        "config_url": HF.format("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"),
        "architecture": {"qkv_bias": True},
        "notes": "The architecture of Qwen2.5 14B.",
    },
    {
        "slug": "deepseek-r1-distill-llama-8b", "name": "DeepSeek-R1-Distill-Llama-8B",
        "parameters": 8_030_261_248, "parameters_published": "8.03B", "layers": 32, "attention_heads": 32,
        "kv_heads": 8, "head_dim": 128, "hidden_size": 4096, "intermediate_size": 14336,
        "vocab_size": 128256, "max_context": 131072, "license": "mit",
        "config_url": HF.format("deepseek-ai/DeepSeek-R1-Distill-Llama-8B"),
        "architecture": {},
        "notes": "The architecture of Llama 3.1 8B.",
    },
    {
        "slug": "deepseek-r1-distill-llama-70b", "name": "DeepSeek-R1-Distill-Llama-70B",
        "parameters": 70_553_706_496, "parameters_published": "70.6B", "layers": 80, "attention_heads": 64,
        "kv_heads": 8, "head_dim": 128, "hidden_size": 8192, "intermediate_size": 28672,
        "vocab_size": 128256, "max_context": 131072, "license": "mit",
        "config_url": HF.format("deepseek-ai/DeepSeek-R1-Distill-Llama-70B"),
        "architecture": {},
        "notes": "The architecture of Llama 3.3 70B.",
    },
    {
        "slug": "seed-oss-36b", "name": "Seed-OSS 36B Instruct", "parameters": 36_151_104_512,
        "parameters_published": "36B", "layers": 64, "attention_heads": 80, "kv_heads": 8,
        "head_dim": 128, "hidden_size": 5120, "intermediate_size": 27648, "vocab_size": 155136,
        "max_context": 524288, "license": "apache-2.0",
        "config_url": HF.format("ByteDance-Seed/Seed-OSS-36B-Instruct"),
        "architecture": {"qkv_bias": True},
        "notes": (
            "80 query heads of 128 (10,240 wide) over a 5,120 hidden state, 8 KV heads; biases on the query, "
            "key and value projections, none on the output. Native context 524,288 tokens."
        ),
    },
]

# The published figure each recount is checked against, what it counts, and where it comes from.
# part: total | non_embedding | with_mtp (the checkpoint with its multi-token-prediction layers).
PUBLISHED_CHECKS = {
    "qwen3-0-6b": (440_000_000, "non_embedding", "model card: 0.44B non-embedding (0.6B total)"),
    "qwen3-4b": (4_020_000_000, "total", "Hugging Face model page: 4.02B (card: 4.0B)"),
    "qwen3-8b": (6_950_000_000, "non_embedding", "model card: 6.95B non-embedding (8.2B total)"),
    "qwen3-14b": (14_800_000_000, "total", "model card: 14.8B"),
    "qwen3-32b": (32_800_000_000, "total", "model card: 32.8B"),
    "qwen3-30b-a3b": (30_500_000_000, "total", "model card: 30.5B"),
    "qwen3-235b-a22b": (235_000_000_000, "total", "model card: 235B"),
    "qwen3-next-80b-a3b": (80_000_000_000, "total", "model card: 80B"),
    "gemma-3-1b": (1_000_000_000, "total", "Gemma 3 report: 698M non-embedding + 302M embedding"),
    "gemma-3-4b": (4_300_000_000, "total", "Gemma 3 report: 4.3B with the vision encoder"),
    "gemma-3-12b": (12_200_000_000, "total", "Gemma 3 report: 12.2B with the vision encoder"),
    "gemma-3-27b": (27_400_000_000, "total", "Gemma 3 report: 27.4B with the vision encoder"),
    "llama-4-scout": (109_000_000_000, "total", "Meta: 109B total, with the vision encoder"),
    "llama-4-maverick": (400_000_000_000, "total", "Meta: 400B total, with the vision encoder"),
    "gpt-oss-20b": (21_000_000_000, "total", "OpenAI: 21B"),
    "gpt-oss-120b": (117_000_000_000, "total", "OpenAI: 117B"),
    "deepseek-v3": (671_000_000_000, "total", "DeepSeek: 671B main model (685B with the MTP module)"),
    "deepseek-r1": (671_000_000_000, "total", "DeepSeek: 671B"),
    "mistral-small-3-2-24b": (24_000_000_000, "total", "Mistral: 24B, with the vision encoder"),
    "phi-4": (14_700_000_000, "total", "Hugging Face model page: 14.7B (card: 14B)"),
    "qwen2-5-coder-7b": (6_530_000_000, "non_embedding", "model card: 7.61B, 6.53B non-embedding"),
    "qwen2-5-coder-32b": (32_800_000_000, "total", "Hugging Face model page: 32.8B (card: 32.5B)"),
    "deepseek-r1-distill-qwen-7b": (7_620_000_000, "total", "Hugging Face model page: 7.62B"),
    "deepseek-r1-distill-qwen-14b": (14_800_000_000, "total", "Hugging Face model page: 14.8B"),
    "deepseek-r1-distill-llama-8b": (8_030_000_000, "total", "Hugging Face model page: 8.03B"),
    "deepseek-r1-distill-llama-70b": (70_600_000_000, "total", "Hugging Face model page: 70.6B"),
    "seed-oss-36b": (36_000_000_000, "total", "model card: 36B"),
    "kimi-linear-48b-a3b": (
        49_122_681_728,
        "total",
        "model.safetensors.index.json: 98,245,363,456 bytes in bf16, 49,122,681,728 values with the routers' "
        "e_score_correction_bias (a buffer, not counted here; card: 48B)",
    ),
    "glm-4-5-air": (
        110_000_000_000,
        "with_mtp",
        "Hugging Face model page: 110B with the MTP layer (README: 106B)",
    ),
}
