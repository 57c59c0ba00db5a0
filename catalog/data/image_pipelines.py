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
