"""Language models as published. `parameters` is the exact count built from the configuration
(embeddings, every layer's attention, MLP and norms, the final norm, and the output head unless it
shares the embedding matrix); `parameters_published` is the model card's rounded figure.
None means the configuration does not publish that figure."""

from catalog.data.modern_models import MODERN_MODELS

HF = "https://huggingface.co/{}/blob/main/config.json"

LANGUAGE_MODELS = [
    {
        "slug": "llama-3-1-8b", "name": "Llama 3.1 8B", "parameters": 8_030_261_248,
        "parameters_published": "8.03B", "layers": 32, "attention_heads": 32, "kv_heads": 8,
        "head_dim": 128, "hidden_size": 4096, "intermediate_size": 14336, "vocab_size": 128256,
        "max_context": 131072, "license": "llama3.1", "config_url": HF.format("meta-llama/Llama-3.1-8B"),
        "notes": "",
    },
    {
        "slug": "llama-3-1-70b", "name": "Llama 3.1 70B", "parameters": 70_553_706_496,
        "parameters_published": "70.6B", "layers": 80, "attention_heads": 64, "kv_heads": 8,
        "head_dim": 128, "hidden_size": 8192, "intermediate_size": 28672, "vocab_size": 128256,
        "max_context": 131072, "license": "llama3.1", "config_url": HF.format("meta-llama/Llama-3.1-70B"),
        "notes": "",
    },
    {
        "slug": "llama-3-1-405b", "name": "Llama 3.1 405B", "parameters": 405_853_388_800,
        "parameters_published": "405B", "layers": 126, "attention_heads": 128, "kv_heads": 8,
        "head_dim": 128, "hidden_size": 16384, "intermediate_size": 53248, "vocab_size": 128256,
        "max_context": 131072, "license": "llama3.1", "config_url": HF.format("meta-llama/Llama-3.1-405B"),
        "notes": "Separate output head (embeddings not tied).",
    },
    {
        "slug": "llama-3-2-1b", "name": "Llama 3.2 1B", "parameters": 1_235_814_400,
        "parameters_published": "1.23B", "layers": 16, "attention_heads": 32, "kv_heads": 8,
        "head_dim": 64, "hidden_size": 2048, "intermediate_size": 8192, "vocab_size": 128256,
        "max_context": 131072, "license": "llama3.2", "config_url": HF.format("meta-llama/Llama-3.2-1B"),
        "tied_embeddings": True,
        "notes": "Output head shares the embedding matrix.",
    },
    {
        "slug": "llama-3-2-3b", "name": "Llama 3.2 3B", "parameters": 3_212_749_824,
        "parameters_published": "3.21B", "layers": 28, "attention_heads": 24, "kv_heads": 8,
        "head_dim": 128, "hidden_size": 3072, "intermediate_size": 8192, "vocab_size": 128256,
        "max_context": 131072, "license": "llama3.2", "config_url": HF.format("meta-llama/Llama-3.2-3B"),
        "tied_embeddings": True,
        "notes": "Output head shares the embedding matrix.",
    },
    {
        "slug": "llama-2-7b", "name": "Llama 2 7B", "parameters": 6_738_415_616,
        "parameters_published": "6.74B", "layers": 32, "attention_heads": 32, "kv_heads": 32,
        "head_dim": 128, "hidden_size": 4096, "intermediate_size": 11008, "vocab_size": 32000,
        "max_context": 4096, "license": "llama2", "config_url": HF.format("meta-llama/Llama-2-7b-hf"),
        "notes": "No grouped-query attention: KV heads = attention heads.",
    },
    {
        "slug": "llama-2-70b", "name": "Llama 2 70B", "parameters": 68_976_648_192,
        "parameters_published": "68.98B", "layers": 80, "attention_heads": 64, "kv_heads": 8,
        "head_dim": 128, "hidden_size": 8192, "intermediate_size": 28672, "vocab_size": 32000,
        "max_context": 4096, "license": "llama2", "config_url": HF.format("meta-llama/Llama-2-70b-hf"),
        "notes": "",
    },
    {
        "slug": "mistral-7b-v0-3", "name": "Mistral 7B v0.3", "parameters": 7_248_023_552,
        "parameters_published": "7.25B", "layers": 32, "attention_heads": 32, "kv_heads": 8,
        "head_dim": 128, "hidden_size": 4096, "intermediate_size": 14336, "vocab_size": 32768,
        "max_context": 32768, "license": "apache-2.0", "config_url": HF.format("mistralai/Mistral-7B-v0.3"),
        "notes": "No sliding window (sliding_window null).",
    },
    {
        "slug": "mixtral-8x7b", "name": "Mixtral 8x7B v0.1", "parameters": 46_702_792_704,
        "parameters_published": "46.7B total / 12.9B active", "layers": 32, "attention_heads": 32,
        "kv_heads": 8, "head_dim": 128, "hidden_size": 4096, "intermediate_size": 14336,
        "vocab_size": 32000, "max_context": 32768, "license": "apache-2.0",
        "config_url": HF.format("mistralai/Mixtral-8x7B-v0.1"),
        "notes": "Mixture of experts: 8 experts per layer, 2 run per token, but all eight must be in memory.",
        "active_parameters": 12_879_925_248,
        "architecture": {"moe": {"experts": 8, "experts_per_token": 2, "expert_intermediate": 14336}},
    },
    {
        "slug": "qwen2-5-7b", "name": "Qwen2.5 7B", "parameters": 7_615_616_512,
        "parameters_published": "7.61B", "layers": 28, "attention_heads": 28, "kv_heads": 4,
        "head_dim": 128, "hidden_size": 3584, "intermediate_size": 18944, "vocab_size": 152064,
        "max_context": 131072, "license": "apache-2.0", "config_url": HF.format("Qwen/Qwen2.5-7B"),
        "architecture": {"qkv_bias": True},
        "notes": "The Instruct variant serves 32,768 tokens without YaRN scaling.",
    },
    {
        "slug": "qwen2-5-14b", "name": "Qwen2.5 14B", "parameters": 14_770_033_664,
        "parameters_published": "14.7B", "layers": 48, "attention_heads": 40, "kv_heads": 8,
        "head_dim": 128, "hidden_size": 5120, "intermediate_size": 13824, "vocab_size": 152064,
        "max_context": 131072, "license": "apache-2.0", "config_url": HF.format("Qwen/Qwen2.5-14B"),
        "architecture": {"qkv_bias": True},
        "notes": "",
    },
    {
        "slug": "qwen2-5-32b", "name": "Qwen2.5 32B", "parameters": 32_763_876_352,
        "parameters_published": "32.5B (card) / 32.76B (config)", "layers": 64, "attention_heads": 40,
        "kv_heads": 8, "head_dim": 128, "hidden_size": 5120, "intermediate_size": 27648,
        "vocab_size": 152064, "max_context": 131072, "license": "apache-2.0",
        "config_url": HF.format("Qwen/Qwen2.5-32B"),
        "architecture": {"qkv_bias": True},
        "notes": "The card's rounded figure is below the configuration's exact count.",
    },
    {
        "slug": "qwen2-5-72b", "name": "Qwen2.5 72B", "parameters": 72_706_203_648,
        "parameters_published": "72.7B", "layers": 80, "attention_heads": 64, "kv_heads": 8,
        "head_dim": 128, "hidden_size": 8192, "intermediate_size": 29568, "vocab_size": 152064,
        "max_context": 131072, "license": "Qwen License Agreement",
        "config_url": HF.format("Qwen/Qwen2.5-72B"),
        "architecture": {"qkv_bias": True},
        "notes": "Not Apache-licensed, unlike the smaller Qwen2.5 models.",
    },
    {
        "slug": "gemma-2-9b", "name": "Gemma 2 9B", "parameters": 9_241_705_984,
        "parameters_published": "9.24B", "layers": 42, "attention_heads": 16, "kv_heads": 8,
        "head_dim": 256, "hidden_size": 3584, "intermediate_size": 14336, "vocab_size": 256000,
        "max_context": 8192, "license": "gemma", "config_url": HF.format("google/gemma-2-9b"),
        "tied_embeddings": True,
        "architecture": {"layer_pattern": "SF", "sliding_window": 4096, "norms_per_layer": 4},
        "notes": "Head dimension 256 is not hidden/heads. Layers alternate sliding-window (4096) and global.",
    },
    {
        "slug": "gemma-2-27b", "name": "Gemma 2 27B", "parameters": 27_227_128_320,
        "parameters_published": "27.2B", "layers": 46, "attention_heads": 32, "kv_heads": 16,
        "head_dim": 128, "hidden_size": 4608, "intermediate_size": 36864, "vocab_size": 256000,
        "max_context": 8192, "license": "gemma", "config_url": HF.format("google/gemma-2-27b"),
        "tied_embeddings": True,
        "architecture": {"layer_pattern": "SF", "sliding_window": 4096, "norms_per_layer": 4},
        "notes": "Head dimension 128 is not hidden/heads. Layers alternate sliding-window (4096) and global.",
    },
    {
        "slug": "phi-3-mini-4k", "name": "Phi-3 mini 4k instruct", "parameters": 3_821_079_552,
        "parameters_published": "3.82B", "layers": 32, "attention_heads": 32, "kv_heads": 32,
        "head_dim": 96, "hidden_size": 3072, "intermediate_size": 8192, "vocab_size": 32064,
        "max_context": 4096, "license": "mit", "config_url": HF.format("microsoft/Phi-3-mini-4k-instruct"),
        "notes": "Sliding window 2047.",
    },
    {
        "slug": "deepseek-r1-distill-qwen-32b", "name": "DeepSeek-R1-Distill-Qwen-32B",
        "parameters": 32_763_876_352, "parameters_published": "32.76B", "layers": 64,
        "attention_heads": 40, "kv_heads": 8, "head_dim": 128, "hidden_size": 5120,
        "intermediate_size": 27648, "vocab_size": 152064, "max_context": 131072, "license": "mit",
        "config_url": HF.format("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"),
        "architecture": {"qkv_bias": True},
        "notes": "The architecture of Qwen2.5 32B.",
    },
    # Beyond reference/llms.csv: exact counts computed from the published config.json files.
    {
        "slug": "qwen2-5-0-5b", "name": "Qwen2.5 0.5B", "parameters": 494_032_768,
        "parameters_published": "0.49B", "layers": 24, "attention_heads": 14, "kv_heads": 2,
        "head_dim": 64, "hidden_size": 896, "intermediate_size": 4864, "vocab_size": 151936,
        "max_context": 32768, "license": "apache-2.0", "config_url": HF.format("Qwen/Qwen2.5-0.5B"),
        "tied_embeddings": True,
        "notes": "Output head shares the embedding matrix; q/k/v projections carry biases.",
        "architecture": {"qkv_bias": True},
    },
    {
        "slug": "gemma-2-2b", "name": "Gemma 2 2B", "parameters": 2_614_341_888,
        "parameters_published": "2.61B", "layers": 26, "attention_heads": 8, "kv_heads": 4,
        "head_dim": 256, "hidden_size": 2304, "intermediate_size": 9216, "vocab_size": 256000,
        "max_context": 8192, "license": "gemma", "config_url": HF.format("google/gemma-2-2b"),
        "tied_embeddings": True,
        "architecture": {"layer_pattern": "SF", "sliding_window": 4096, "norms_per_layer": 4},
        "notes": "Head dimension 256 is not hidden/heads. Four norms per layer; output head tied. Layers "
                 "alternate sliding-window (4096) and global.",
    },
    {
        "slug": "mistral-nemo-12b", "name": "Mistral Nemo 12B (2407)", "parameters": 12_247_782_400,
        "parameters_published": "12.2B", "layers": 40, "attention_heads": 32, "kv_heads": 8,
        "head_dim": 128, "hidden_size": 5120, "intermediate_size": 14336, "vocab_size": 131072,
        "max_context": 1024000, "license": "apache-2.0",
        "config_url": HF.format("mistralai/Mistral-Nemo-Base-2407"),
        "notes": (
            "Head dimension 128 is not hidden/heads. The configuration allows 1,024,000 positions; the "
            "card states a 128k-token context window."
        ),
    },
    {
        "slug": "mistral-small-24b", "name": "Mistral Small 24B (2501)", "parameters": 23_572_403_200,
        "parameters_published": "24B", "layers": 40, "attention_heads": 32, "kv_heads": 8,
        "head_dim": 128, "hidden_size": 5120, "intermediate_size": 32768, "vocab_size": 131072,
        "max_context": 32768, "license": "apache-2.0",
        "config_url": HF.format("mistralai/Mistral-Small-24B-Base-2501"),
        "notes": "Head dimension 128 is not hidden/heads.",
    },
    {
        "slug": "llama-3-3-70b", "name": "Llama 3.3 70B Instruct", "parameters": 70_553_706_496,
        "parameters_published": "70.6B", "layers": 80, "attention_heads": 64, "kv_heads": 8,
        "head_dim": 128, "hidden_size": 8192, "intermediate_size": 28672, "vocab_size": 128256,
        "max_context": 131072, "license": "llama3.3",
        "config_url": HF.format("meta-llama/Llama-3.3-70B-Instruct"),
        "notes": "The architecture of Llama 3.1 70B.",
    },
    {
        "slug": "phi-3-medium-4k", "name": "Phi-3 medium 4k instruct", "parameters": 13_960_238_080,
        "parameters_published": "14B", "layers": 40, "attention_heads": 40, "kv_heads": 10,
        "head_dim": 128, "hidden_size": 5120, "intermediate_size": 17920, "vocab_size": 32064,
        "max_context": 4096, "license": "mit", "config_url": HF.format("microsoft/Phi-3-medium-4k-instruct"),
        "notes": "",
    },
    *MODERN_MODELS,
]


def hf_id_of(config_url: str) -> str:
    """The Hub id a configuration's address names: https://huggingface.co/<org>/<name>/blob/… ."""
    prefix = "https://huggingface.co/"
    if not config_url.startswith(prefix):
        return ""
    parts = config_url[len(prefix):].split("/")
    return "/".join(parts[:2]) if len(parts) >= 2 and parts[0] and parts[1] else ""


for _row in LANGUAGE_MODELS:
    _row.setdefault("hf_id", hf_id_of(_row.get("config_url", "")))
