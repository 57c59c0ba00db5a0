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
