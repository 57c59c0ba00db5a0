import pytest

from catalog.hf_config import ConfigError, estimate_parameters_from_config, parse_config
from catalog.models import LanguageModel

from .conftest import read_reference
from .test_shipped_catalog import LLM_SLUGS

MODEL_TYPES = {"Llama": "llama", "Mistral": "mistral", "Qwen2.5": "qwen2", "DeepSeek-R1": "qwen2",
               "gemma": "gemma2", "Phi-3": "phi3"}


def test_parse_config_applies_the_library_defaults():
    figures = parse_config('{"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 512}')
    assert figures["kv_heads"] == 8 and figures["head_dim"] == 64
    assert figures["vocab_size"] is None


def test_parse_config_keeps_an_explicit_head_dim():
    figures = parse_config(
        '{"num_hidden_layers": 42, "num_attention_heads": 16, "num_key_value_heads": 8,'
        ' "head_dim": 256, "hidden_size": 3584}'
    )
    assert figures["head_dim"] == 256


def test_parse_config_rejects_kv_heads_that_do_not_divide_the_heads():
    with pytest.raises(ConfigError, match="must divide"):
        parse_config(
            '{"num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 3, "hidden_size": 512}'
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
        }
        assert estimate_parameters_from_config(config) == int(row["params_exact"]), row["model"]
        checked += 1
    assert checked == 16


@pytest.mark.django_db
def test_shipped_models_beyond_the_reference_are_counted_the_same_way(models_only):
    tied = {"qwen2-5-0-5b": True, "gemma-2-2b": True}
    types = {"qwen2-5-0-5b": "qwen2", "gemma-2-2b": "gemma2", "mistral-nemo-12b": "mistral",
             "mistral-small-24b": "mistral", "llama-3-3-70b": "llama", "phi-3-medium-4k": "phi3"}
    extra = LanguageModel.objects.exclude(slug__in=LLM_SLUGS.values())
    assert set(extra.values_list("slug", flat=True)) == set(types)
    for model in extra:
        config = {
            "model_type": types[model.slug], "hidden_size": model.hidden_size,
            "num_hidden_layers": model.layers,
            "num_attention_heads": model.attention_heads, "num_key_value_heads": model.kv_heads,
            "head_dim": model.head_dim, "intermediate_size": model.intermediate_size,
            "vocab_size": model.vocab_size, "tie_word_embeddings": tied.get(model.slug, False),
        }
        assert estimate_parameters_from_config(config) == model.parameters, model.slug


def test_unknown_architectures_get_no_estimate():
    assert estimate_parameters_from_config({"model_type": "mixtral"}) is None
