import pytest

from catalog.data.modern_models import MODERN_MODELS
from catalog.hf_config import ConfigError, estimate_parameters_from_config, parse_config
from catalog.models import LanguageModel

from .configs import LLM_SLUGS
from .reference import read_reference

MODEL_TYPES = {"Llama": "llama", "Mistral": "mistral", "Qwen2.5": "qwen2", "DeepSeek-R1": "qwen2",
               "gemma": "gemma2", "Phi-3": "phi3"}


def test_parse_config_applies_the_library_defaults():
    figures = parse_config(
        '{"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 512,'
        ' "intermediate_size": 1024, "vocab_size": 1000}'
    )
    assert figures["kv_heads"] == 8 and figures["head_dim"] == 64
    assert figures["vocab_size"] == 1000 and figures["architecture"] == {}


def test_parse_config_keeps_an_explicit_head_dim():
    figures = parse_config(
        '{"model_type": "llama", "num_hidden_layers": 42, "num_attention_heads": 16, "num_key_value_heads": 8,'
        ' "head_dim": 256, "hidden_size": 3584, "intermediate_size": 14336, "vocab_size": 256000}'
    )
    assert figures["head_dim"] == 256


def test_parse_config_rejects_kv_heads_that_do_not_divide_the_heads():
    with pytest.raises(ConfigError, match="must divide"):
        parse_config(
            '{"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 3,'
            ' "hidden_size": 512}'
        )


def test_exact_counts_are_reproduced_for_every_dense_reference_model():
    checked = 0
    for row in read_reference("llms.csv"):
        model_type = next((t for prefix, t in MODEL_TYPES.items() if row["model"].startswith(prefix)), None)
        if model_type is None or "Mixtral" in row["model"]:
            continue
        config = {
            "model_type": model_type, "hidden_size": int(row["hidden_size"]),
            "num_hidden_layers": int(row["layers"]), "num_attention_heads": int(row["attention_heads"]),
            "num_key_value_heads": int(row["kv_heads"]), "head_dim": int(row["head_dim"]),
            "intermediate_size": int(row["intermediate_size"]), "vocab_size": int(row["vocab_size"]),
            "tie_word_embeddings": row["tie_word_embeddings"] == "true",
            **({"sliding_window": 4096} if model_type == "gemma2" else {}),
        }
        assert estimate_parameters_from_config(config) == int(row["params_exact"]), row["model"]
        checked += 1
    assert checked == 16


@pytest.mark.django_db
def test_shipped_models_beyond_the_reference_are_counted_the_same_way(models_only):
    tied = {"qwen2-5-0-5b": True, "gemma-2-2b": True}
    types = {"qwen2-5-0-5b": "qwen2", "gemma-2-2b": "gemma2", "mistral-nemo-12b": "mistral",
             "mistral-small-24b": "mistral", "llama-3-3-70b": "llama", "phi-3-medium-4k": "phi3"}
    extra = LanguageModel.objects.exclude(slug__in=LLM_SLUGS.values()).exclude(
        slug__in=[row["slug"] for row in MODERN_MODELS]
    )
    assert set(extra.values_list("slug", flat=True)) == set(types)
    for model in extra:
        config = {
            "model_type": types[model.slug], "hidden_size": model.hidden_size,
            "num_hidden_layers": model.layers,
            "num_attention_heads": model.attention_heads, "num_key_value_heads": model.kv_heads,
            "head_dim": model.head_dim, "intermediate_size": model.intermediate_size,
            "vocab_size": model.vocab_size, "tie_word_embeddings": tied.get(model.slug, False),
            **({"sliding_window": 4096} if types[model.slug] == "gemma2" else {}),
        }
        assert estimate_parameters_from_config(config) == model.parameters, model.slug


def test_unknown_architectures_get_no_estimate():
    assert estimate_parameters_from_config({"model_type": "mixtral"}) is None


# --- today's architectures ------------------------------------------------------------------------

import json  # noqa: E402

from catalog.data.language_models import LANGUAGE_MODELS  # noqa: E402
from sizing.architectures import architecture_from_dict  # noqa: E402

from . import configs  # noqa: E402

SHIPPED = {row["slug"]: row for row in LANGUAGE_MODELS}
FIGURES = ("layers", "attention_heads", "kv_heads", "head_dim", "hidden_size", "intermediate_size",
           "vocab_size", "max_context", "parameters", "active_parameters", "tied_embeddings",
           "trust_remote_code")


@pytest.mark.parametrize("slug", sorted(configs.BY_SLUG))
def test_pasting_a_modern_config_gives_the_shipped_row(slug):
    """Nested text_config, layer_types / sliding_window_pattern / no_rope_layers, MoE and MLA fields,
    quantization_config and explicit head_dim are read into exactly the figures the catalog ships."""
    figures = parse_config(json.dumps(configs.BY_SLUG[slug]))
    row = SHIPPED[slug]
    shipped = {name: row.get(name) for name in FIGURES}
    shipped["tied_embeddings"] = bool(shipped["tied_embeddings"])
    shipped["trust_remote_code"] = bool(shipped["trust_remote_code"])
    assert {name: figures[name] for name in FIGURES} == shipped
    # The YaRN scaling a card documents is not in the config (which leaves it off): staff add it.
    from_card = {key: value for key, value in (row.get("architecture") or {}).items() if key != "yarn"}
    assert architecture_from_dict(figures["architecture"]) == architecture_from_dict(from_card)


def test_gemma3_nested_config_takes_the_class_defaults_it_leaves_out():
    figures = parse_config(json.dumps(configs.GEMMA3_27B))
    assert figures["vocab_size"] == 262208 and figures["max_context"] == 131072
    assert figures["architecture"]["layer_pattern"] == "SSSSSF"
    assert figures["architecture"]["vision"]["kind"] == "siglip"


def test_gpt_oss_quantization_config_leaves_attention_and_router_in_16_bit():
    native = parse_config(json.dumps(configs.GPT_OSS_120B))["architecture"]["native_weights"]
    assert native == {"format": "mxfp4", "block": 32, "quantized": ["experts"]}


def test_deepseek_fp8_block_size_is_read():
    native = parse_config(json.dumps(configs.DEEPSEEK_V3))["architecture"]["native_weights"]
    assert native == {"format": "fp8-block", "block": 128,
                      "quantized": ["attention", "mlp", "experts", "shared_experts"]}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"model_type": "mamba"}, "“model_type” 'mamba'"),
        ({"model_type": None}, "“model_type”"),
        ({"layer_types": ["sliding_attention", "mamba"] * 18}, "“layer_types” holds 'mamba'"),
        ({"layer_types": ["full_attention"] * 3}, "“layer_types” must list one type"),
        ({"quantization_config": {"quant_method": "gptq", "bits": 4}}, "“quantization_config.quant_method”"),
        ({"quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": ["model.vision_tower"]}},
         "“quantization_config.modules_to_not_convert” names 'model.vision_tower'"),
        ({"num_experts_per_tok": None, "experts_per_token": None}, "“num_experts_per_tok”"),
        ({"sliding_window": None}, "“sliding_window”"),
    ],
)
def test_a_config_it_does_not_understand_is_refused_naming_the_field(change, field):
    config = {**configs.GPT_OSS_120B, **change}
    with pytest.raises(ConfigError) as error:
        parse_config(json.dumps(config))
    assert field in str(error.value)


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({**configs.DEEPSEEK_V3, "quantization_config": {"quant_method": "fp8"}},
         "“quantization_config.weight_block_size”"),
        ({**configs.DEEPSEEK_V3, "kv_lora_rank": None}, "“kv_lora_rank”"),
        ({**configs.QWEN3_NEXT, "linear_num_value_heads": None}, "“linear_num_value_heads”"),
        ({**configs.QWEN3_30B_A3B, "mlp_only_layers": [0]}, "“mlp_only_layers”"),
        ({"model_type": "gemma3"}, "“text_config”"),
        ({**configs.LLAMA4_SCOUT, "text_config": {**configs.LLAMA4_SCOUT["text_config"],
                                                  "attention_chunk_size": None}},
         "“text_config.attention_chunk_size”"),
        ({"model_type": "whisper"}, "speech-recognition model"),
        ({**configs.KIMI_LINEAR, "linear_attn_config": None}, "“linear_attn_config”"),
        ({**configs.KIMI_LINEAR, "linear_attn_config": {**configs.KIMI_LINEAR["linear_attn_config"],
                                                        "full_attn_layers": [4, 8, 12, 16, 20, 24]}},
         "must name each of the 27 layers"),
        ({**configs.KIMI_LINEAR, "linear_attn_config": {**configs.KIMI_LINEAR["linear_attn_config"],
                                                        "kda_layers": "1-3"}},
         "“linear_attn_config.kda_layers”"),
        ({**configs.KIMI_LINEAR, "linear_attn_config": {**configs.KIMI_LINEAR["linear_attn_config"],
                                                        "num_heads": None}},
         "“linear_attn_config.num_heads”"),
        ({**configs.KIMI_LINEAR, "mla_use_output_gate": True}, "“mla_use_output_gate”"),
        ({**configs.KIMI_LINEAR, "moe_layer_freq": 2}, "“moe_layer_freq”"),
    ],
)
def test_missing_architecture_fields_are_named(config, field):
    with pytest.raises(ConfigError) as error:
        parse_config(json.dumps(config))
    assert field in str(error.value)


def test_kimi_linear_layers_are_read_one_based_and_its_context_from_model_max_length():
    """full_attn_layers [4, 8, …, 24, 27] are the 0-based layers 3, 7, …, 23 and 26; the context is
    model_max_length (transformers maps max_position_embeddings to it), 1,048,576; the KDA heads are
    both its key and value heads."""
    figures = parse_config(json.dumps(configs.KIMI_LINEAR))
    architecture = architecture_from_dict(figures["architecture"])
    assert [index for index in range(27) if architecture.kind_of_layer(index) == "F"] == [
        3, 7, 11, 15, 19, 23, 26]
    assert figures["max_context"] == 1_048_576
    linear = architecture.linear_attention
    assert linear is not None and linear.kind == "kda" and linear.conv_dim == 12_288
    flat = {key: value for key, value in configs.KIMI_LINEAR.items() if key != "linear_attn_config"}
    flat.update(layer_types=["full_attention" if architecture.kind_of_layer(index) == "F" else
                             "linear_attention" for index in range(27)],
                linear_num_heads=32, linear_head_dim=128, linear_conv_kernel_dim=4)
    assert parse_config(json.dumps(flat))["architecture"] == figures["architecture"]
