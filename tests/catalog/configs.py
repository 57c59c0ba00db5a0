"""config.json files of today's models, with the keys their published files carry (the multimodal
ones nest the language model under text_config and list only the keys that differ from the class
defaults, as the released files do)."""

QWEN3_8B = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096,
    "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": False,
    "sliding_window": None, "use_sliding_window": False, "max_window_layers": 36, "attention_bias": False,
    "rope_theta": 1000000, "torch_dtype": "bfloat16",
}
QWEN3_30B_A3B = {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
    "intermediate_size": 6144, "moe_intermediate_size": 768, "num_hidden_layers": 48, "num_attention_heads": 32,
    "num_key_value_heads": 4, "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8,
    "decoder_sparse_step": 1, "mlp_only_layers": [], "norm_topk_prob": True, "vocab_size": 151936,
    "max_position_embeddings": 40960, "tie_word_embeddings": False, "use_sliding_window": False,
}
# Gemma 2 as google/gemma-2-*/config.json publishes it: no layer_types, so the class's own rule (layer i
# slides when i is even) and sliding_window 4096 give the alternating layers the catalog rows declare.
GEMMA2_COMMON = {
    "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "attn_logit_softcapping": 50.0,
    "final_logit_softcapping": 30.0, "cache_implementation": "hybrid", "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 8192, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4096,
    "sliding_window_size": 4096, "vocab_size": 256000,
}
GEMMA2_2B = {**GEMMA2_COMMON, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
             "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "query_pre_attn_scalar": 256}
GEMMA2_9B = {**GEMMA2_COMMON, "hidden_size": 3584, "intermediate_size": 14336, "num_hidden_layers": 42,
             "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256, "query_pre_attn_scalar": 256}
GEMMA2_27B = {**GEMMA2_COMMON, "hidden_size": 4608, "intermediate_size": 36864, "num_hidden_layers": 46,
              "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "query_pre_attn_scalar": 144}
GEMMA3_1B = {
    "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 1152,
    "intermediate_size": 6912, "num_hidden_layers": 26, "num_attention_heads": 4, "num_key_value_heads": 1,
    "head_dim": 256, "sliding_window": 512, "sliding_window_pattern": 6, "vocab_size": 262144,
    "max_position_embeddings": 32768, "query_pre_attn_scalar": 256, "rope_local_base_freq": 10000,
}
GEMMA3_27B = {
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "mm_tokens_per_image": 256,
    "text_config": {
        "head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504, "model_type": "gemma3_text",
        "num_attention_heads": 32, "num_hidden_layers": 62, "num_key_value_heads": 16,
        "query_pre_attn_scalar": 168, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window": 1024,
    },
    "vision_config": {
        "hidden_size": 1152, "image_size": 896, "intermediate_size": 4304, "model_type": "siglip_vision_model",
        "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": False,
    },
}
GPT_OSS_120B = {
    "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880,
    "intermediate_size": 2880, "num_hidden_layers": 36, "num_attention_heads": 64, "num_key_value_heads": 8,
    "head_dim": 64, "num_local_experts": 128, "num_experts_per_tok": 4, "experts_per_token": 4,
    "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention"] * 18, "vocab_size": 201088,
    "max_position_embeddings": 131072, "tie_word_embeddings": False, "attention_bias": True,
    "swiglu_limit": 7.0, "initial_context_length": 4096,
    "quantization_config": {
        "quant_method": "mxfp4",
        "modules_to_not_convert": [
            "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head",
        ],
    },
}
LLAMA4_SCOUT = {
    "architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
    "text_config": {
        "model_type": "llama4_text", "attention_chunk_size": 8192, "head_dim": 128, "hidden_size": 5120,
        "intermediate_size": 8192, "intermediate_size_mlp": 16384, "interleave_moe_layer_step": 1,
        "max_position_embeddings": 10485760, "num_attention_heads": 40, "num_experts_per_tok": 1,
        "num_hidden_layers": 48, "num_key_value_heads": 8, "num_local_experts": 16, "no_rope_layers": [],
        "use_qk_norm": True, "vocab_size": 202048, "tie_word_embeddings": False,
    },
    "vision_config": {
        "hidden_size": 1408, "image_size": 336, "intermediate_size": 5632, "model_type": "llama4_vision_model",
        "num_attention_heads": 16, "num_hidden_layers": 34, "patch_size": 14, "vision_output_dim": 4096,
        "pixel_shuffle_ratio": 0.5, "projector_input_dim": 4096, "projector_output_dim": 4096,
    },
}
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
    "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
    "num_attention_heads": 128, "num_key_value_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256,
    "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_layer_freq": 1, "kv_lora_rank": 512,
    "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "topk_method": "noaux_tc", "n_group": 8, "topk_group": 4, "num_nextn_predict_layers": 1,
    "vocab_size": 129280, "max_position_embeddings": 163840, "tie_word_embeddings": False,
    "quantization_config": {
        "activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128],
    },
}
QWEN3_NEXT = {
    "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "hidden_size": 2048,
    "intermediate_size": 5120, "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
    "head_dim": 256, "full_attention_interval": 4, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128,
    "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "num_experts": 512,
    "num_experts_per_tok": 10, "decoder_sparse_step": 1, "mlp_only_layers": [], "vocab_size": 151936,
    "max_position_embeddings": 262144, "tie_word_embeddings": False, "partial_rotary_factor": 0.25,
}
GLM_4_5_AIR = {
    "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "hidden_size": 4096,
    "intermediate_size": 10944, "moe_intermediate_size": 1408, "num_hidden_layers": 46,
    "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128, "n_routed_experts": 128,
    "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 1, "num_nextn_predict_layers": 1,
    "attention_bias": True, "use_qk_norm": False, "vocab_size": 151552, "max_position_embeddings": 131072,
    "tie_word_embeddings": False, "partial_rotary_factor": 0.5,
}
MISTRAL_SMALL_3_2 = {
    "architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
    "multimodal_projector_bias": False, "spatial_merge_size": 2,
    "text_config": {
        "model_type": "mistral", "head_dim": 128, "hidden_size": 5120, "intermediate_size": 32768,
        "max_position_embeddings": 131072, "num_attention_heads": 32, "num_hidden_layers": 40,
        "num_key_value_heads": 8, "sliding_window": None, "vocab_size": 131072,
    },
    "vision_config": {
        "model_type": "pixtral", "hidden_size": 1024, "image_size": 1540, "intermediate_size": 4096,
        "num_hidden_layers": 24, "patch_size": 14, "num_attention_heads": 16,
    },
}
PHI_4 = {
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "attention_bias": False, "hidden_size": 5120,
    "intermediate_size": 17920, "max_position_embeddings": 16384, "num_attention_heads": 40,
    "num_hidden_layers": 40, "num_key_value_heads": 10, "sliding_window": None, "tie_word_embeddings": False,
    "vocab_size": 100352, "rope_theta": 250000,
}

QWEN2_5_CODER_7B = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944,
    "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
    "max_position_embeddings": 32768, "tie_word_embeddings": False, "rope_theta": 1000000.0,
    "sliding_window": 131072, "use_sliding_window": False, "max_window_layers": 28, "torch_dtype": "bfloat16",
}
QWEN2_5_CODER_32B = {**QWEN2_5_CODER_7B, "hidden_size": 5120, "intermediate_size": 27648, "num_hidden_layers": 64,
                     "num_attention_heads": 40, "num_key_value_heads": 8, "max_window_layers": 64}
# The DeepSeek-R1 distills keep their base models' configs (Qwen2.5-Math 7B, Qwen2.5 14B, Llama 3.1 8B,
# Llama 3.3 70B), with the bases' longest context.
R1_DISTILL_QWEN_7B = {**QWEN2_5_CODER_7B, "max_position_embeddings": 131072, "rope_theta": 10000,
                      "sliding_window": 4096}
R1_DISTILL_QWEN_14B = {**QWEN2_5_CODER_7B, "hidden_size": 5120, "intermediate_size": 13824, "num_hidden_layers": 48,
                       "num_attention_heads": 40, "num_key_value_heads": 8, "max_position_embeddings": 131072,
                       "max_window_layers": 48}
R1_DISTILL_LLAMA_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "max_position_embeddings": 131072, "tie_word_embeddings": False, "rope_theta": 500000.0,
    "attention_bias": False, "mlp_bias": False,
}
R1_DISTILL_LLAMA_70B = {**R1_DISTILL_LLAMA_8B, "hidden_size": 8192, "intermediate_size": 28672,
                        "num_hidden_layers": 80, "num_attention_heads": 64}
SEED_OSS_36B = {
    "architectures": ["SeedOssForCausalLM"], "model_type": "seed_oss", "hidden_size": 5120,
    "intermediate_size": 27648, "num_hidden_layers": 64, "num_attention_heads": 80, "num_key_value_heads": 8,
    "head_dim": 128, "vocab_size": 155136, "max_position_embeddings": 524288, "tie_word_embeddings": False,
    "attention_bias": True, "attention_out_bias": False, "mlp_bias": False, "rope_theta": 10000000.0,
}
# moonshotai/Kimi-Linear-48B-A3B-Instruct's config.json (revision e1df551a), its structural keys: three Kimi
# Delta Attention layers to one latent-attention (MLA, NoPE) layer, layers named 1-based.
KIMI_LINEAR = {
    "architectures": ["KimiLinearForCausalLM"], "model_type": "kimi_linear", "vocab_size": 163840,
    "hidden_size": 2304, "head_dim": 72, "intermediate_size": 9216, "num_hidden_layers": 27,
    "num_attention_heads": 32, "num_key_value_heads": 32, "hidden_act": "silu", "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0, "rope_scaling": None, "tie_word_embeddings": False, "first_k_dense_replace": 1,
    "moe_intermediate_size": 1024, "moe_layer_freq": 1, "moe_renormalize": True,
    "moe_router_activation_func": "sigmoid", "num_experts": 256, "num_experts_per_token": 8,
    "num_shared_experts": 1, "routed_scaling_factor": 2.446, "use_grouped_topk": True, "num_expert_group": 1,
    "topk_group": 1, "q_lora_rank": None, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "mla_use_nope": True, "num_nextn_predict_layers": 0,
    "linear_attn_config": {
        "full_attn_layers": [4, 8, 12, 16, 20, 24, 27], "head_dim": 128,
        "kda_layers": [1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23, 25, 26],
        "num_heads": 32, "short_conv_kernel_size": 4,
    },
    "model_max_length": 1048576, "use_cache": True,
}
BY_SLUG = {
    "qwen2-5-coder-7b": QWEN2_5_CODER_7B, "qwen2-5-coder-32b": QWEN2_5_CODER_32B,
    "deepseek-r1-distill-qwen-7b": R1_DISTILL_QWEN_7B, "deepseek-r1-distill-qwen-14b": R1_DISTILL_QWEN_14B,
    "deepseek-r1-distill-llama-8b": R1_DISTILL_LLAMA_8B, "deepseek-r1-distill-llama-70b": R1_DISTILL_LLAMA_70B,
    "seed-oss-36b": SEED_OSS_36B,
    "qwen3-8b": QWEN3_8B, "qwen3-30b-a3b": QWEN3_30B_A3B, "gemma-3-1b": GEMMA3_1B, "gemma-3-27b": GEMMA3_27B,
    "gpt-oss-120b": GPT_OSS_120B, "llama-4-scout": LLAMA4_SCOUT, "deepseek-v3": DEEPSEEK_V3,
    "qwen3-next-80b-a3b": QWEN3_NEXT, "glm-4-5-air": GLM_4_5_AIR, "mistral-small-3-2-24b": MISTRAL_SMALL_3_2,
    "phi-4": PHI_4, "kimi-linear-48b-a3b": KIMI_LINEAR,
    "gemma-2-2b": GEMMA2_2B, "gemma-2-9b": GEMMA2_9B, "gemma-2-27b": GEMMA2_27B,
}

# A Llama-shaped config.json, as the admin's import reads it.
LLAMA_LIKE_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
}

# The language models the catalog must ship.
REQUIRED_SLUGS = [
    "llama-3-1-8b", "llama-3-1-70b", "llama-3-1-405b", "llama-3-2-1b", "llama-3-2-3b", "llama-2-7b",
    "llama-2-70b", "mistral-7b-v0-3", "mixtral-8x7b", "qwen2-5-7b", "qwen2-5-14b", "qwen2-5-32b",
    "qwen2-5-72b", "gemma-2-9b", "gemma-2-27b", "phi-3-mini-4k", "deepseek-r1-distill-qwen-32b",
    "deepseek-v3",
]
# reference/llms.csv names -> catalog slugs
LLM_SLUGS = dict(zip(
    [
        "Llama-3.1-8B", "Llama-3.1-70B", "Llama-3.1-405B", "Llama-3.2-1B", "Llama-3.2-3B", "Llama-2-7b",
        "Llama-2-70b", "Mistral-7B-v0.3", "Mixtral-8x7B-v0.1", "Qwen2.5-7B", "Qwen2.5-14B", "Qwen2.5-32B",
        "Qwen2.5-72B", "gemma-2-9b", "gemma-2-27b", "Phi-3-mini-4k-instruct",
        "DeepSeek-R1-Distill-Qwen-32B", "DeepSeek-V3",
    ],
    REQUIRED_SLUGS,
    strict=True,
))
