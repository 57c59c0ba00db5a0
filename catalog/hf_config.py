"""Reading a published Hugging Face `config.json` into catalog figures.

Only what the file states is taken, plus the defaults of the transformers configuration class of
its `model_type` (num_key_value_heads = num_attention_heads, head_dim = hidden_size ÷ heads, and each
class's own defaults where a nested `text_config` lists only the keys that differ). Every
architecture below is read in full: layer kinds (`layer_types`, `sliding_window_pattern`,
`no_rope_layers`, `full_attention_interval`), mixtures of experts, latent attention, linear attention,
vision towers and native quantization (`quantization_config`). A configuration this module does not
understand is refused with a message naming the field: it never guesses.
"""

from __future__ import annotations

import json
from typing import Any

from sizing.architectures import (
    CHUNKED,
    FULL,
    KIMI_DELTA,
    LINEAR,
    QUANTIZABLE_ROLES,
    SLIDING,
    architecture_from_dict,
    count_parameters,
)
from sizing.errors import MissingModelValue, SizingError
from sizing.specs import LanguageModelSpec

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

# model_type -> how its checkpoint counts, and the configuration class's defaults that matter.
ARCHITECTURES: dict[str, dict[str, Any]] = {
    "llama": {"tied": False},
    "mistral": {"tied": False},
    "mixtral": {"tied": False},
    "qwen2": {"tied": False, "conventions": {"qkv_bias": True}},
    "qwen3": {"tied": False, "conventions": {"qk_norm": True}},
    "qwen3_moe": {"tied": False, "conventions": {"qk_norm": True}},
    "qwen3_next": {"tied": False, "conventions": {"qk_norm": True, "attention_output_gate": True}},
    "gemma2": {"tied": True, "conventions": {"norms_per_layer": 4}},
    "gemma3_text": {
        "tied": True,
        "conventions": {"norms_per_layer": 4, "qk_norm": True},
        # Gemma3TextConfig defaults: the multimodal configs list only the keys that differ.
        "defaults": {
            "vocab_size": 262208,
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "num_hidden_layers": 26,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
            "head_dim": 256,
            "max_position_embeddings": 131072,
            "sliding_window": 4096,
            "sliding_window_pattern": 6,
        },
    },
    "phi3": {"tied": False},
    "llama4_text": {"tied": False},
    "gpt_oss": {"tied": False, "conventions": {"qkv_bias": True, "o_bias": True, "sinks": True}},
    "deepseek_v3": {"tied": False},
    # Kimi's tokenizer (tiktoken) is code in the model's repository: the engines load it only with
    # --trust-remote-code (`remote_code`), as the vLLM recipes start these models.
    "kimi_k2": {"tied": False, "remote_code": True},
    # KimiLinearConfig (Kimi-Linear): latent attention among Kimi Delta Attention layers, its context as
    # model_max_length (transformers maps max_position_embeddings to it).
    "kimi_linear": {"tied": False, "remote_code": True},
    "glm4_moe": {"tied": False},
    # SeedOssConfig: biases on q, k and v (attention_bias) and on the output (attention_out_bias) apart.
    "seed_oss": {"tied": False},
}
# Multimodal wrappers: the language model sits under text_config.
WRAPPERS = {"gemma3": "gemma3_text", "llama4": "llama4_text", "mistral3": None}
NOT_LANGUAGE_MODELS = {"whisper": "a speech-recognition model: add it under Speech models"}
NATIVE_QUANT_METHODS = {"fp8": "fp8-block", "mxfp4": "mxfp4"}
# Latent attention (MLA): the DeepSeek-V3 family and Kimi-Linear.
MLA_TYPES = ("deepseek_v3", "kimi_k2", "kimi_linear")
# Where the longest context is named otherwise than max_position_embeddings (transformers' attribute_map).
CONTEXT_KEYS = {"kimi_linear": "model_max_length"}
LAYER_TYPES = {
    "full_attention": FULL,
    "sliding_attention": SLIDING,
    "chunked_attention": CHUNKED,
    "linear_attention": LINEAR,
}
# Module names in modules_to_not_convert -> the roles they leave in 16-bit.
MODULE_ROLES = {
    "self_attn": "attention",
    "attn": "attention",
    "mlp.router": "router",
    "router": "router",
    "embed_tokens": "embedding",
    "lm_head": "output_head",
    "mlp.gate": "router",
    "gate": "router",
    "mlp.experts": "experts",
    "experts": "experts",
    "shared_experts": "shared_experts",
    "shared_expert": "shared_experts",
}


class ConfigError(ValueError):
    """The pasted text is not a usable config.json; the message says why."""


def _positive_int(config: dict, key: str, path: str = "") -> int | None:
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"“{path}{key}” must be a positive whole number, not {value!r}.")
    return value


def _required(config: dict, key: str, path: str = "") -> int:
    value = _positive_int(config, key, path)
    if value is None:
        raise ConfigError(f"The configuration has no “{path}{key}”.")
    return value


def _load(text: str) -> dict:
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"Not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})."
        ) from error
    if not isinstance(config, dict):
        raise ConfigError("A config.json holds one JSON object ({ ... }).")
    return config


def _text_config(config: dict[str, Any]) -> tuple[dict[str, Any], str | None, str]:
    """The language model's own config, its model_type, and the key path for messages."""
    outer_type = config.get("model_type")
    if outer_type in NOT_LANGUAGE_MODELS:
        raise ConfigError(f"“model_type” {outer_type!r} is {NOT_LANGUAGE_MODELS[outer_type]}.")
    nested = config.get("text_config")
    if outer_type in WRAPPERS or (nested is not None and "num_hidden_layers" not in config):
        if not isinstance(nested, dict):
            raise ConfigError(
                f"“model_type” {outer_type!r} keeps its language model under “text_config”, which is missing."
            )
        inner_type = nested.get("model_type") or WRAPPERS.get(str(outer_type))
        text = dict(nested)
        for key in ("tie_word_embeddings", "quantization_config"):
            if key in config and key not in text:
                text[key] = config[key]
        return text, inner_type, "text_config."
    return config, outer_type, ""


def _layer_pattern(text: dict, model_type: str, layers: int, path: str, defaults: dict) -> str:
    """One letter per layer kind, as the shortest pattern that repeats over the layers."""
    layer_types = text.get("layer_types")
    if layer_types is not None:
        if not isinstance(layer_types, list) or len(layer_types) != layers:
            raise ConfigError(f"“{path}layer_types” must list one type for each of the {layers} layers.")
        unknown = sorted({kind for kind in layer_types if kind not in LAYER_TYPES}, key=str)
        if unknown:
            raise ConfigError(
                f"“{path}layer_types” holds {unknown[0]!r}, a layer type this catalog does not "
                f"size (it knows {', '.join(LAYER_TYPES)})."
            )
        kinds = "".join(LAYER_TYPES[kind] for kind in layer_types)
    elif model_type == "gemma3_text":
        period = (
            _positive_int(text, "sliding_window_pattern", path)
            or _positive_int(text, "_sliding_window_pattern", path)
            or defaults["sliding_window_pattern"]
        )
        kinds = "".join(FULL if (i + 1) % period == 0 else SLIDING for i in range(layers))
    elif model_type == "gemma2":
        kinds = "".join(SLIDING if i % 2 == 0 else FULL for i in range(layers))
    elif model_type == "llama4_text":
        no_rope = text.get("no_rope_layers")
        if no_rope is None or no_rope == []:
            interval = _positive_int(text, "no_rope_layer_interval", path) or 4
            no_rope = [int((i + 1) % interval != 0) for i in range(layers)]
        if not isinstance(no_rope, list) or len(no_rope) != layers or set(no_rope) - {0, 1}:
            raise ConfigError(f"“{path}no_rope_layers” must hold a 0 or 1 for each of the {layers} layers.")
        kinds = "".join(CHUNKED if flag else FULL for flag in no_rope)
    elif model_type == "qwen3_next":
        interval = _positive_int(text, "full_attention_interval", path) or 4
        kinds = "".join(FULL if (i + 1) % interval == 0 else LINEAR for i in range(layers))
    elif model_type == "kimi_linear":
        kinds = _kimi_layers(text, layers, path)
    elif model_type in ("mistral", "mixtral", "phi3") and text.get("sliding_window"):
        kinds = SLIDING * layers  # these classes apply the window on every layer
    elif model_type in ("qwen2", "qwen3", "qwen3_moe") and text.get("use_sliding_window"):
        raise ConfigError(
            f"“{path}use_sliding_window” (sliding only above max_window_layers) is not a layout "
            "this catalog sizes."
        )
    else:
        kinds = FULL * layers
    for size in range(1, layers + 1):
        if all(kinds[i] == kinds[i % size] for i in range(layers)):
            return kinds[:size]
    return kinds


def _kimi_layers(text: dict, layers: int, path: str) -> str:
    """Kimi-Linear's layer kinds from `linear_attn_config`: the 1-based lists of its Kimi Delta Attention
    layers and its full (latent) attention layers, which together name every layer once."""
    where = f"{path}linear_attn_config"
    linear = text.get("linear_attn_config")
    if not isinstance(linear, dict):
        raise ConfigError(f"The configuration has no “{where}”, so its layer kinds are unknown.")
    lists = {}
    for key in ("kda_layers", "full_attn_layers"):
        found = linear.get(key)
        if not isinstance(found, list) or any(isinstance(n, bool) or not isinstance(n, int) for n in found):
            raise ConfigError(f"“{where}.{key}” must list layer numbers (1 to {layers}).")
        lists[key] = found
    numbers = lists["kda_layers"] + lists["full_attn_layers"]
    if sorted(numbers) != list(range(1, layers + 1)):
        raise ConfigError(
            f"“{where}.kda_layers” and “{where}.full_attn_layers” must name each of the {layers} layers "
            f"(1 to {layers}) exactly once."
        )
    linear_layers = set(lists["kda_layers"])
    return "".join(LINEAR if number in linear_layers else FULL for number in range(1, layers + 1))


def _kimi_delta(text: dict, path: str) -> dict:
    """Kimi Delta Attention's figures: under `linear_attn_config` as published, or flat as transformers
    writes them back (linear_num_heads, linear_head_dim, linear_conv_kernel_dim). Its key and value heads
    are the same heads."""
    nested = text.get("linear_attn_config")
    if isinstance(nested, dict):
        where = f"{path}linear_attn_config."
        heads, head_dim = _required(nested, "num_heads", where), _required(nested, "head_dim", where)
        kernel = _required(nested, "short_conv_kernel_size", where)
    else:
        heads, head_dim = _required(text, "linear_num_heads", path), _required(text, "linear_head_dim", path)
        kernel = _required(text, "linear_conv_kernel_dim", path)
    return {
        "key_heads": heads,
        "value_heads": heads,
        "key_head_dim": head_dim,
        "value_head_dim": head_dim,
        "conv_kernel": kernel,
        "kind": KIMI_DELTA,
    }


def _moe(text: dict, model_type: str, path: str, layers: int) -> dict | None:
    experts = (
        _positive_int(text, "num_experts", path)
        or _positive_int(text, "n_routed_experts", path)
        or _positive_int(text, "num_local_experts", path)
    )
    if not experts:
        return None
    per_token = (
        _positive_int(text, "num_experts_per_tok", path)
        or _positive_int(text, "experts_per_token", path)
        or _positive_int(text, "num_experts_per_token", path)
    )
    if per_token is None:
        raise ConfigError(f"The configuration has no “{path}num_experts_per_tok”.")
    moe: dict = {"experts": experts, "experts_per_token": per_token}
    if model_type in ("mixtral", "gpt_oss", "llama4_text"):
        moe["expert_intermediate"] = _required(text, "intermediate_size", path)
    else:
        moe["expert_intermediate"] = _required(text, "moe_intermediate_size", path)
    if model_type in ("deepseek_v3", "kimi_k2", "glm4_moe"):
        shared = _positive_int(text, "n_shared_experts", path) or 0
        moe["shared_intermediate"] = shared * moe["expert_intermediate"]
        moe["first_dense_layers"] = text.get("first_k_dense_replace") or 0
        if (text.get("moe_layer_freq") or 1) != 1:
            raise ConfigError(f"“{path}moe_layer_freq” other than 1 is not a layout this catalog sizes.")
    elif model_type == "qwen3_next":
        moe["shared_intermediate"] = _required(text, "shared_expert_intermediate_size", path)
        moe["shared_expert_gate"] = True
    elif model_type == "kimi_linear":
        shared = _positive_int(text, "num_shared_experts", path) or 0
        moe["shared_intermediate"] = shared * moe["expert_intermediate"]
        moe["first_dense_layers"] = text.get("first_k_dense_replace") or 0
        if (text.get("moe_layer_freq") or 1) != 1:
            raise ConfigError(f"“{path}moe_layer_freq” other than 1 is not a layout this catalog sizes.")
    elif model_type == "llama4_text":
        moe["shared_intermediate"] = moe["expert_intermediate"]
        moe["layer_step"] = _positive_int(text, "interleave_moe_layer_step", path) or 1
        moe["dense_intermediate"] = _required(text, "intermediate_size_mlp", path)
    elif model_type == "gpt_oss":
        moe["expert_bias"] = True
        moe["router_bias"] = True
    elif model_type == "qwen3_moe":
        moe["layer_step"] = _positive_int(text, "decoder_sparse_step", path) or 1
    if model_type in ("qwen3_moe", "qwen3_next") and text.get("mlp_only_layers"):
        raise ConfigError(
            f"“{path}mlp_only_layers” (dense layers among MoE layers) is not a layout this catalog sizes."
        )
    if model_type not in (
        "mixtral",
        "gpt_oss",
        "llama4_text",
        "deepseek_v3",
        "kimi_k2",
        "glm4_moe",
        "qwen3_moe",
        "qwen3_next",
        "kimi_linear",
    ):
        raise ConfigError(
            f"“model_type” {model_type!r} with experts is not an architecture this catalog sizes."
        )
    if moe.get("first_dense_layers") and not isinstance(moe["first_dense_layers"], int):
        raise ConfigError(f"“{path}first_k_dense_replace” must be a whole number.")
    if moe.get("first_dense_layers", 0) >= layers:
        raise ConfigError(f"“{path}first_k_dense_replace” leaves no MoE layer.")
    return moe


def _native_weights(text: dict, path: str, architecture: dict) -> dict | None:
    quant = text.get("quantization_config")
    if quant is None:
        return None
    where = f"{path}quantization_config"
    if not isinstance(quant, dict):
        raise ConfigError(f"“{where}” must be an object.")
    method = quant.get("quant_method")
    if method not in NATIVE_QUANT_METHODS:
        raise ConfigError(
            f"“{where}.quant_method” {method!r} is not a format this catalog sizes as published (it reads "
            f"{', '.join(NATIVE_QUANT_METHODS)}); paste the unquantized model's config.json and choose the "
            "precision in the wizard."
        )
    fmt = NATIVE_QUANT_METHODS[method]
    if fmt == "fp8-block":
        block = quant.get("weight_block_size")
        if not (
            isinstance(block, list)
            and len(block) == 2
            and block[0] == block[1]
            and isinstance(block[0], int)
            and block[0] > 0
        ):
            raise ConfigError(
                f"“{where}.weight_block_size” must be a square block such as [128, 128]; "
                "per-tensor FP8 is not sized here."
            )
        block = block[0]
    else:
        block = 32
    present = ["attention"]
    moe = architecture.get("moe")
    if moe is None or moe.get("first_dense_layers") or moe.get("layer_step", 1) > 1:
        present.append("mlp")
    if moe is not None:
        present.append("experts")
        if moe.get("shared_intermediate"):
            present.append("shared_experts")
    excluded = set()
    for module in quant.get("modules_to_not_convert") or []:
        if not isinstance(module, str):
            raise ConfigError(f"“{where}.modules_to_not_convert” must list module names.")
        name = module.replace("model.layers.*.", "").replace("model.", "").strip(".*")
        role = MODULE_ROLES.get(name) or MODULE_ROLES.get(name.split(".")[-1])
        if role is None:
            raise ConfigError(
                f"“{where}.modules_to_not_convert” names {module!r}, a module this catalog cannot place."
            )
        excluded.add(role)
    quantized = [role for role in QUANTIZABLE_ROLES if role in present and role not in excluded]
    if not quantized:
        raise ConfigError(f"“{where}” leaves no module quantized.")
    return {"format": fmt, "block": block, "quantized": quantized}


def _vision(config: dict, outer_type: str | None) -> dict | None:
    vision = config.get("vision_config")
    if vision is None or outer_type not in WRAPPERS:
        return None
    kind = {"gemma3": "siglip", "llama4": "llama4", "mistral3": "pixtral"}[outer_type]
    path = "vision_config."
    if not isinstance(vision, dict):
        raise ConfigError(f"“{path[:-1]}” must be an object.")
    out = {
        "kind": kind,
        "layers": _required(vision, "num_hidden_layers", path),
        "hidden": _required(vision, "hidden_size", path),
        "intermediate": _required(vision, "intermediate_size", path),
        "patch_size": _required(vision, "patch_size", path),
        "image_size": _required(vision, "image_size", path),
    }
    if kind == "llama4":
        out["projector_input"] = _required(vision, "vision_output_dim", path)
    return out


def parse_config(text: str) -> dict:
    """The catalog figures a config.json states, with `architecture` (the stored form), `parameters`
    and `active_parameters` recounted from them. Raises ConfigError naming the field at fault."""
    config = _load(text)
    outer_type = config.get("model_type")
    text_config, model_type, path = _text_config(config)
    if model_type is None:
        raise ConfigError(f"The configuration has no “{path}model_type”, so its architecture is unknown.")
    if model_type not in ARCHITECTURES:
        where = f"{path}model_type"
        raise ConfigError(
            f"“{where}” {model_type!r} is not an architecture this catalog knows "
            f"({', '.join(sorted(ARCHITECTURES))}); enter its figures by hand."
        )
    known = ARCHITECTURES[model_type]
    defaults = known.get("defaults", {})
    merged = {**defaults, **text_config}

    figures: dict[str, Any] = {field: _positive_int(merged, key, path) for field, key in CONFIG_KEYS.items()}
    if figures["max_context"] is None and model_type in CONTEXT_KEYS:
        figures["max_context"] = _positive_int(merged, CONTEXT_KEYS[model_type], path)
    for required in ("layers", "attention_heads", "hidden_size"):
        if figures[required] is None:
            raise ConfigError(f"The configuration has no “{path}{CONFIG_KEYS[required]}”.")
    layers = figures["layers"]
    architecture: dict = dict(known.get("conventions", {}))
    figures["tied_embeddings"] = bool(merged.get("tie_word_embeddings", known["tied"]))
    figures["trust_remote_code"] = bool(known.get("remote_code", False))
    if model_type in ("llama", "mistral", "mixtral") and merged.get("attention_bias"):
        architecture.update(qkv_bias=True, o_bias=True)
    if model_type == "seed_oss":
        if merged.get("attention_bias", True):
            architecture["qkv_bias"] = True
        if merged.get("attention_out_bias", False):
            architecture["o_bias"] = True
    if model_type == "glm4_moe":
        if merged.get("attention_bias"):
            architecture["qkv_bias"] = True
        if merged.get("use_qk_norm"):
            architecture["qk_norm"] = True

    mla = None
    if model_type in MLA_TYPES:
        mla = {
            key: _required(merged, key, path)
            for key in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
        }
        if merged.get("q_lora_rank") is not None:
            mla["q_lora_rank"] = _required(merged, "q_lora_rank", path)
        architecture["mla"] = mla
        if model_type == "kimi_linear":
            if merged.get("mla_use_output_gate"):
                raise ConfigError(
                    f"“{path}mla_use_output_gate” (a gated latent attention) is not a layout this catalog "
                    "sizes."
                )
            if merged.get("mla_use_nope"):
                architecture["no_rope"] = True  # NoPE: nothing rotated, no cos/sin cache
        figures["kv_heads"] = None
        figures["head_dim"] = None
        mtp = merged.get("num_nextn_predict_layers") or 0
        if mtp:
            architecture["mtp_layers"] = mtp
    elif model_type == "glm4_moe" and merged.get("num_nextn_predict_layers"):
        architecture["mtp_layers"] = merged["num_nextn_predict_layers"]
        architecture["mtp_own_embeddings"] = True
    else:
        if figures["kv_heads"] is None:
            figures["kv_heads"] = figures["attention_heads"]
        if figures["head_dim"] is None:
            if figures["hidden_size"] % figures["attention_heads"]:
                raise ConfigError(
                    f"“{path}hidden_size” is not divisible by “{path}num_attention_heads” and no "
                    "head_dim is given."
                )
            figures["head_dim"] = figures["hidden_size"] // figures["attention_heads"]
        if figures["attention_heads"] % figures["kv_heads"]:
            raise ConfigError(f"“{path}num_key_value_heads” must divide “{path}num_attention_heads”.")

    pattern = _layer_pattern(merged, model_type, layers, path, defaults)
    if pattern != FULL:
        architecture["layer_pattern"] = pattern
    if SLIDING in pattern:
        window = _positive_int(merged, "sliding_window", path)
        if window is None:
            raise ConfigError(f"Some layers slide but the configuration has no “{path}sliding_window”.")
        architecture["sliding_window"] = window
    if CHUNKED in pattern:
        architecture["attention_chunk"] = _required(merged, "attention_chunk_size", path)
    if LINEAR in pattern and model_type == "kimi_linear":
        architecture["linear_attention"] = _kimi_delta(merged, path)
    elif LINEAR in pattern:
        architecture["linear_attention"] = {
            "key_heads": _required(merged, "linear_num_key_heads", path),
            "value_heads": _required(merged, "linear_num_value_heads", path),
            "key_head_dim": _required(merged, "linear_key_head_dim", path),
            "value_head_dim": _required(merged, "linear_value_head_dim", path),
            "conv_kernel": _required(merged, "linear_conv_kernel_dim", path),
        }
    moe = _moe(merged, model_type, path, layers)
    if moe is not None:
        architecture["moe"] = moe
    vision = _vision(config, outer_type)
    if vision is not None:
        architecture["vision"] = vision
    native = _native_weights(merged, path, architecture)
    if native is not None:
        architecture["native_weights"] = native
    architecture.update(_rope(merged, model_type, pattern, figures["head_dim"], path))

    try:
        parsed = architecture_from_dict(architecture)
    except SizingError as error:
        raise ConfigError(error.message) from error
    spec = LanguageModelSpec(
        slug="pasted",
        name="The pasted model",
        parameters=None,
        layers=layers,
        attention_heads=figures["attention_heads"],
        kv_heads=figures["kv_heads"],
        head_dim=figures["head_dim"],
        hidden_size=figures["hidden_size"],
        intermediate_size=figures["intermediate_size"],
        vocab_size=figures["vocab_size"],
        max_context=figures["max_context"],
        architecture=parsed,
        tied_embeddings=figures["tied_embeddings"],
    )
    try:
        counted = count_parameters(spec)
    except MissingModelValue as error:
        key = CONFIG_KEYS.get(error.value_name, error.value_name)
        raise ConfigError(
            f"The configuration has no “{path}{key}”, so its parameters cannot be counted."
        ) from error
    figures["architecture"] = parsed.as_dict()
    figures["parameters"] = counted.total
    figures["active_parameters"] = counted.active if moe is not None else None
    return figures


def _rope(text: dict, model_type: str, pattern: str, head_dim: int | None, path: str) -> dict:
    """What sizes vLLM's rotary cos/sin caches beyond one cache of max_position_embeddings × head_dim:
    linear RoPE scaling (`rope_scaling` or `rope_parameters` of type linear: the cache covers max × factor),
    Gemma 3's sliding layers rotating with their own base (a second cache), a partial rotary factor."""
    found: dict = {}
    scaling = text.get("rope_scaling") or text.get("rope_parameters") or {}
    if isinstance(scaling, dict) and (scaling.get("rope_type") or scaling.get("type")) == "linear":
        factor = scaling.get("factor")
        if not isinstance(factor, int | float) or factor < 1 or factor != int(factor):
            raise ConfigError(f"“{path}rope_scaling.factor” must be a whole number of at least 1.")
        if factor > 1:
            found["rope_linear_factor"] = int(factor)
    if model_type == "gemma3_text" and SLIDING in pattern:
        found["local_rope"] = True  # vLLM's Gemma3Attention: rope_local_base_freq on sliding layers
    partial = text.get("partial_rotary_factor")
    if partial is not None and head_dim is not None:
        if not isinstance(partial, int | float) or not 0 < partial <= 1:
            raise ConfigError(f"“{path}partial_rotary_factor” must be above 0 and at most 1.")
        if partial < 1:
            found["rotary_dim"] = int(head_dim * partial)
    return found


def estimate_parameters_from_config(config: dict) -> int | None:
    """The recounted parameters of a config, or None when it cannot be read."""
    try:
        return parse_config(json.dumps(config))["parameters"]
    except ConfigError:
        return None
