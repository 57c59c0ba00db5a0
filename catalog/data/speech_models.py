"""Whisper sizes. The decoder attends to its own 448 token positions and to the 1500 encoder frames
of the 30-second window; decoder and encoder use the same number of attention heads."""

HF = "https://huggingface.co/{}/blob/main/config.json"


def _whisper(size, parameters, published, layers, d_model, heads, vocab_size, mel_bins=80):
    return {
        "slug": f"whisper-{size}", "name": f"Whisper {size}", "parameters": parameters,
        "parameters_published": published, "encoder_layers": layers, "decoder_layers": layers,
        "d_model": d_model, "attention_heads": heads, "max_source_positions": 1500,
        "max_target_positions": 448, "vocab_size": vocab_size, "mel_bins": mel_bins, "license": "mit",
        "config_url": HF.format(f"openai/whisper-{size}"), "notes": "",
    }


SPEECH_MODELS = [
    _whisper("tiny", 37_760_640, "39M", 4, 384, 6, 51865),
    _whisper("base", 72_593_920, "74M", 6, 512, 8, 51865),
    _whisper("small", 241_734_912, "244M", 12, 768, 12, 51865),
    _whisper("medium", 763_857_920, "769M", 24, 1024, 16, 51865),
    _whisper("large-v3", 1_543_490_560, "1550M", 32, 1280, 20, 51866, 128),
    {
        **_whisper("large-v3-turbo", 808_878_080, "809M", 32, 1280, 20, 51866, 128),
        "name": "Whisper large-v3-turbo", "decoder_layers": 4,
        "notes": (
            "large-v3 with its decoder cut from 32 layers to 4: the decoder's KV cache is an eighth of "
            "large-v3's. The count is large-v3's 1,543,490,560 less 28 decoder layers of 26,236,160."
        ),
    },
]
