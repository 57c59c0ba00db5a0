"""Image pipelines: every network the pipeline loads, with its exact parameter count."""

HF = "https://huggingface.co/{}/blob/main/model_index.json"

IMAGE_PIPELINES = [
    {
        "slug": "stable-diffusion-v1-5", "name": "Stable Diffusion 1.5", "license": "CreativeML OpenRAIL-M",
        "config_url": HF.format("stable-diffusion-v1-5/stable-diffusion-v1-5"),
        "native_resolution": "512x512", "parameters_published": "860M UNet",
        "components": [
            ("unet", "denoiser", 859_520_964),
            ("text_encoder (CLIP ViT-L/14)", "text_encoder", 123_060_480),
            ("vae", "autoencoder", 83_653_863),
        ],
    },
    {
        "slug": "stable-diffusion-xl", "name": "Stable Diffusion XL base 1.0",
        "license": "CreativeML Open RAIL++-M",
        "config_url": HF.format("stabilityai/stable-diffusion-xl-base-1.0"),
        "native_resolution": "1024x1024", "parameters_published": "2.6B UNet",
        "components": [
            ("unet", "denoiser", 2_567_463_684),
            ("text_encoder (CLIP-L)", "text_encoder", 123_060_480),
            ("text_encoder_2 (OpenCLIP bigG with projection)", "text_encoder", 694_659_840),
            ("vae", "autoencoder", 83_653_863),
        ],
    },
    {
        "slug": "stable-diffusion-3-medium", "name": "Stable Diffusion 3 Medium",
        "license": "Stability AI Community License",
        "config_url": HF.format("stabilityai/stable-diffusion-3-medium-diffusers"),
        "native_resolution": "1024x1024", "parameters_published": "2B MMDiT",
        "components": [
            ("transformer (MMDiT)", "denoiser", 2_028_328_000),
            ("text_encoder (CLIP-L with projection)", "text_encoder", 123_650_304),
            ("text_encoder_2 (CLIP-G with projection)", "text_encoder", 694_659_840),
            ("text_encoder_3 (T5 v1.1 XXL encoder)", "text_encoder", 4_762_310_656),
            ("vae (16 channels)", "autoencoder", 83_819_683),
        ],
    },
    {
        "slug": "flux-1-dev", "name": "FLUX.1 [dev]", "license": "FLUX.1 [dev] Non-Commercial License",
        "config_url": HF.format("black-forest-labs/FLUX.1-dev"),
        "native_resolution": "1024x1024", "parameters_published": "12B",
        "components": [
            ("transformer", "denoiser", 11_901_408_320),
            ("text_encoder (CLIP-L)", "text_encoder", 123_060_480),
            ("text_encoder_2 (T5 v1.1 XXL encoder)", "text_encoder", 4_762_310_656),
            ("vae (16 channels)", "autoencoder", 83_819_683),
        ],
    },
    {
        "slug": "flux-1-schnell", "name": "FLUX.1 [schnell]", "license": "apache-2.0",
        "config_url": HF.format("black-forest-labs/FLUX.1-schnell"),
        "native_resolution": "1024x1024", "parameters_published": "12B",
        "components": [
            ("transformer (no guidance embedding)", "denoiser", 11_891_178_560),
            ("text_encoder (CLIP-L)", "text_encoder", 123_060_480),
            ("text_encoder_2 (T5 v1.1 XXL encoder)", "text_encoder", 4_762_310_656),
            ("vae (16 channels)", "autoencoder", 83_819_683),
        ],
    },
]

# 2025-2026 pipelines. Transformer and VAE counts are the parameters diffusers' classes build from each
# component's published config.json (SD3Transformer2DModel, FluxTransformer2DModel,
# QwenImageTransformer2DModel, AutoencoderKLQwenImage); the same classes give SD3 Medium's and
# FLUX.1 [dev]'s reference counts above to the parameter. SD 3.5 loads SD3's three text encoders and
# 16-channel VAE; Qwen-Image's text encoder is Qwen2.5-VL-7B-Instruct, vision tower included.
SD3_TEXT_ENCODERS = [
    ("text_encoder (CLIP-L with projection)", "text_encoder", 123_650_304),
    ("text_encoder_2 (CLIP-G with projection)", "text_encoder", 694_659_840),
    ("text_encoder_3 (T5 v1.1 XXL encoder)", "text_encoder", 4_762_310_656),
]
IMAGE_PIPELINES += [
    {
        "slug": "stable-diffusion-3-5-large", "name": "Stable Diffusion 3.5 Large",
        "license": "Stability AI Community License",
        "config_url": HF.format("stabilityai/stable-diffusion-3.5-large"),
        "native_resolution": "1024x1024", "parameters_published": "8.1B MMDiT",
        "notes": "MMDiT of 38 layers (2,432 wide, RMS-normed queries and keys).",
        "components": [
            ("transformer (MMDiT, 38 layers)", "denoiser", 8_056_627_520),
            *SD3_TEXT_ENCODERS,
            ("vae (16 channels)", "autoencoder", 83_819_683),
        ],
    },
    {
        "slug": "stable-diffusion-3-5-medium", "name": "Stable Diffusion 3.5 Medium",
        "license": "Stability AI Community License",
        "config_url": HF.format("stabilityai/stable-diffusion-3.5-medium"),
        "native_resolution": "1024x1024", "parameters_published": "2.5B MMDiT-X",
        "notes": (
            "MMDiT-X of 24 layers (1,536 wide), the first 13 with a second self-attention. Its config builds "
            "2.24B parameters; the card rounds the model to 2.5B."
        ),
        "components": [
            ("transformer (MMDiT-X, 24 layers)", "denoiser", 2_243_171_520),
            *SD3_TEXT_ENCODERS,
            ("vae (16 channels)", "autoencoder", 83_819_683),
        ],
    },
    {
        "slug": "flux-1-kontext-dev", "name": "FLUX.1 Kontext [dev]",
        "license": "FLUX.1 [dev] Non-Commercial License",
        "config_url": HF.format("black-forest-labs/FLUX.1-Kontext-dev"),
        "native_resolution": "1024x1024", "parameters_published": "12B",
        "notes": (
            "Image editing with FLUX.1 [dev]'s transformer (19 double-stream and 38 single-stream blocks, "
            "guidance embedding); the count is FLUX.1 [dev]'s configuration. The reference image is encoded "
            "beside the generated one, so its attention spans twice the image tokens."
        ),
        "components": [
            ("transformer", "denoiser", 11_901_408_320),
            ("text_encoder (CLIP-L)", "text_encoder", 123_060_480),
            ("text_encoder_2 (T5 v1.1 XXL encoder)", "text_encoder", 4_762_310_656),
            ("vae (16 channels)", "autoencoder", 83_819_683),
        ],
    },
    {
        "slug": "qwen-image", "name": "Qwen-Image", "license": "apache-2.0",
        "config_url": HF.format("Qwen/Qwen-Image"),
        "native_resolution": "1328x1328", "parameters_published": "20B MMDiT",
        "notes": (
            "MMDiT of 60 layers (3,072 wide). The text encoder is Qwen2.5-VL-7B-Instruct (8.29B with its "
            "vision tower, 676,550,144 of them); the VAE is Wan-2.1's with a fine-tuned decoder."
        ),
        "components": [
            ("transformer (MMDiT, 60 layers)", "denoiser", 20_430_401_088),
            ("text_encoder (Qwen2.5-VL-7B-Instruct)", "text_encoder", 8_292_166_656),
            ("vae (Qwen-Image, 16 channels)", "autoencoder", 126_892_531),
        ],
    },
]
