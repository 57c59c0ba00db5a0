"""Published figures used by the sizing tests (copied from shared/reference/*.csv, with their sources)."""
from sizing.specs import ImageComponent, ImagePipelineSpec, LanguageModelSpec, SpeechModelSpec

# meta-llama/llama-models sku_list.py; mlc-llm model_preset.py (llama3_1_8b)
LLAMA_3_1_8B = LanguageModelSpec(
    slug="llama-3.1-8b",
    name="Llama 3.1 8B",
    parameters=8_030_261_248,
    layers=32,
    attention_heads=32,
    kv_heads=8,
    head_dim=128,
    hidden_size=4096,
    intermediate_size=14336,
    vocab_size=128_256,
    max_context=131_072,
    tied_embeddings=False,
)

# mlc-llm model_preset.py (llama3_2_1b); tied embeddings counted once
LLAMA_3_2_1B = LanguageModelSpec(
    slug="llama-3.2-1b",
    name="Llama 3.2 1B",
    parameters=1_235_814_400,
    layers=16,
    attention_heads=32,
    kv_heads=8,
    head_dim=64,
    hidden_size=2048,
    intermediate_size=8192,
    vocab_size=128_256,
    max_context=131_072,
    tied_embeddings=True,
)

# DeepSeek-V3 caches a compressed latent: no KV-head count describes its cache.
DEEPSEEK_V3 = LanguageModelSpec(
    slug="deepseek-v3",
    name="DeepSeek-V3",
    parameters=671_026_404_352,
    layers=61,
    attention_heads=128,
    kv_heads=None,
    head_dim=None,
    hidden_size=7168,
    intermediate_size=18432,
    vocab_size=129_280,
    max_context=163_840,
)

# deepseek-ai/DeepSeek-V2-Lite's config.json: latent attention without a query low-rank pair
# (q_lora_rank null), 64 routed experts (6 per token) and 2 shared ones of 1,408, the first layer dense
# (first_k_dense_replace 1). 15,706,484,224 parameters (llama-bench prints 15.71 B).
def _deepseek_v2_lite():
    from sizing.architectures import architecture_from_dict

    return LanguageModelSpec(
        slug="deepseek-v2-lite", name="DeepSeek-V2-Lite", parameters=15_706_484_224, layers=27,
        attention_heads=16, kv_heads=None, head_dim=None, hidden_size=2048, intermediate_size=10944,
        vocab_size=102_400, max_context=163_840,
        architecture=architecture_from_dict({
            "mla": {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128},
            "moe": {"experts": 64, "experts_per_token": 6, "expert_intermediate": 1408,
                    "shared_intermediate": 2 * 1408, "first_dense_layers": 1},
        }),
    )


DEEPSEEK_V2_LITE = _deepseek_v2_lite()

# Stability-AI/generative-models README; diffusers configs
SDXL = ImagePipelineSpec(
    slug="stable-diffusion-xl-base-1.0",
    name="Stable Diffusion XL base 1.0",
    components=(
        ImageComponent("unet", "denoiser", 2_567_463_684),
        ImageComponent("text_encoder (CLIP-L)", "text_encoder", 123_060_480),
        ImageComponent("text_encoder_2 (OpenCLIP bigG with projection)", "text_encoder", 694_659_840),
        ImageComponent("vae", "autoencoder", 83_653_863),
    ),
    native_resolution="1024x1024",
)

# openai/whisper README (ModelDimensions); HF config of openai/whisper-large-v3
WHISPER_LARGE_V3 = SpeechModelSpec(
    slug="whisper-large-v3",
    name="Whisper large-v3",
    parameters=1_543_490_560,
    decoder_layers=32,
    d_model=1280,
    attention_heads=20,
    max_source_positions=1500,
    max_target_positions=448,
)


def _modern(name, parameters, layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, architecture,
            tied=False):
    from sizing.architectures import architecture_from_dict

    return LanguageModelSpec(
        slug=name.lower().replace(" ", "-"), name=name, parameters=parameters, layers=layers,
        attention_heads=heads, kv_heads=kv_heads, head_dim=head_dim, hidden_size=hidden,
        intermediate_size=intermediate, vocab_size=vocab, max_context=None,
        architecture=architecture_from_dict(architecture), tied_embeddings=tied,
    )


# google/gemma-3-27b-it config.json (text_config): five sliding layers over 1,024 tokens to one global
GEMMA3_27B = _modern(
    "Gemma 3 27B", 27_432_406_640, 62, 5376, 32, 16, 128, 21504, 262208,
    {"layer_pattern": "SSSSSF", "sliding_window": 1024, "qk_norm": True, "norms_per_layer": 4,
     "vision": {"kind": "siglip", "layers": 27, "hidden": 1152, "intermediate": 4304, "patch_size": 14,
                "image_size": 896}},
    tied=True,
)
# openai/gpt-oss-120b config.json: sliding (128) and full layers alternate; attention sinks
GPT_OSS_120B = _modern(
    "gpt-oss-120b", 116_829_156_672, 36, 2880, 64, 8, 64, 2880, 201088,
    {"layer_pattern": "SF", "sliding_window": 128, "qkv_bias": True, "o_bias": True, "sinks": True,
     "moe": {"experts": 128, "experts_per_token": 4, "expert_intermediate": 2880, "expert_bias": True,
             "router_bias": True},
     "native_weights": {"format": "mxfp4", "block": 32, "quantized": ["experts"]}},
)
# meta-llama/Llama-4-Scout-17B-16E config.json: three chunked-local layers (8,192) to one global
LLAMA4_SCOUT = _modern(
    "Llama 4 Scout", 108_641_793_536, 48, 5120, 40, 8, 128, 8192, 202048,
    {"layer_pattern": "CCCF", "attention_chunk": 8192,
     "moe": {"experts": 16, "experts_per_token": 1, "expert_intermediate": 8192, "shared_intermediate": 8192,
             "dense_intermediate": 16384},
     "vision": {"kind": "llama4", "layers": 34, "hidden": 1408, "intermediate": 5632, "patch_size": 14,
                "image_size": 336, "projector_input": 4096}},
)

# black-forest-labs/flux src/flux/util.py; diffusers configs (as catalog/data/image_pipelines.py)
FLUX_1_DEV = ImagePipelineSpec(
    slug="flux-1-dev",
    name="FLUX.1 [dev]",
    components=(
        ImageComponent("transformer", "denoiser", 11_901_408_320),
        ImageComponent("text_encoder (CLIP-L)", "text_encoder", 123_060_480),
        ImageComponent("text_encoder_2 (T5 v1.1 XXL encoder)", "text_encoder", 4_762_310_656),
        ImageComponent("vae (16 channels)", "autoencoder", 83_819_683),
    ),
    native_resolution="1024x1024",
)
