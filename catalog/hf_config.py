"""Reading a published Hugging Face `config.json` into catalog figures.

Only what the file states is taken; defaults follow the transformers library's own defaults
(num_key_value_heads = num_attention_heads, head_dim = hidden_size / num_attention_heads).
"""
import json

# Figures the config.json names directly, as catalog field -> config key.
CONFIG_KEYS = {
    "layers": "num_hidden_layers",
    "attention_heads": "num_attention_heads",
    "kv_heads": "num_key_value_heads",
    "head_dim": "head_dim",
    "hidden_size": "hidden_size",
    "intermediate_size": "intermediate_size",
    "vocab_size": "vocab_size",
    "max_context": "max_position_embeddings",
}

# Architectures whose exact parameter count `estimate_parameters_from_config` knows, with the
# library's default for tie_word_embeddings and the number of norms per layer.
DENSE_ARCHITECTURES = {
    "llama": {"tied": False, "norms_per_layer": 2},
    "mistral": {"tied": False, "norms_per_layer": 2},
    "qwen2": {"tied": False, "norms_per_layer": 2},
    "gemma2": {"tied": True, "norms_per_layer": 4},
    "phi3": {"tied": False, "norms_per_layer": 2},
}


class ConfigError(ValueError):
    """The pasted text is not a usable config.json; the message says why."""


def _positive_int(config: dict, key: str) -> int | None:
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"“{key}” must be a positive whole number, not {value!r}.")
    return value


def parse_config(text: str) -> dict:
    """Return the catalog figures stated in a config.json text. Raises ConfigError."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"Not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})."
        ) from error
    if not isinstance(config, dict):
        raise ConfigError("A config.json holds one JSON object ({ ... }).")
    # Multimodal configs nest the language model's figures.
    if "num_hidden_layers" not in config and isinstance(config.get("text_config"), dict):
        config = config["text_config"]
    figures = {field: _positive_int(config, key) for field, key in CONFIG_KEYS.items()}
    for required in ("layers", "attention_heads", "hidden_size"):
        if figures[required] is None:
            raise ConfigError(f"The configuration has no “{CONFIG_KEYS[required]}”.")
    if figures["kv_heads"] is None:
        figures["kv_heads"] = figures["attention_heads"]
    if figures["head_dim"] is None:
        if figures["hidden_size"] % figures["attention_heads"]:
            raise ConfigError("hidden_size is not divisible by num_attention_heads and no head_dim is given.")
        figures["head_dim"] = figures["hidden_size"] // figures["attention_heads"]
    if figures["attention_heads"] % figures["kv_heads"]:
        raise ConfigError("num_key_value_heads must divide num_attention_heads.")
    return figures


def estimate_parameters_from_config(config: dict) -> int | None:
    """Exact parameter count of a dense llama-like decoder; None for architectures not covered.

    Embeddings + per layer (q, k, v, o projections with their biases where the architecture has
    them, gated MLP of three matrices, the layer's norms) + final norm + output head unless tied.
    """
    model_type = config.get("model_type")
    architecture = DENSE_ARCHITECTURES.get(model_type)
    if architecture is None:
        return None
    hidden = config["hidden_size"]
    layers = config["num_hidden_layers"]
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or hidden // heads
    intermediate = config["intermediate_size"]
    vocab = config["vocab_size"]
    tied = config.get("tie_word_embeddings", architecture["tied"])

    q_size, kv_size = heads * head_dim, kv_heads * head_dim
    attention = hidden * q_size + 2 * hidden * kv_size + q_size * hidden
    if model_type == "qwen2":
        attention += q_size + 2 * kv_size  # q/k/v biases
    elif config.get("attention_bias"):
        attention += q_size + 2 * kv_size + hidden
    mlp = 3 * hidden * intermediate
    norms = architecture["norms_per_layer"] * hidden
    per_layer = attention + mlp + norms
    embeddings = vocab * hidden
    return embeddings + layers * per_layer + hidden + (0 if tied else embeddings)
